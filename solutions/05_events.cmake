# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 05's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 05: the consumer in stream B does not wait for the slow producer in stream
# A; the fix makes B wait on the GPU for the event recorded after the producer. exercise_solution()
# passes its texts through a CMake list, so they contain no ';': the wait joins the record's
# statement through the comma operator.
exercise_solution(
  REPLACE [[CS_CHECK(cudaEventRecord(produced, producer_stream))]]
          [[CS_CHECK(cudaEventRecord(produced, producer_stream)),
        CS_CHECK(cudaStreamWaitEvent(consumer_stream, produced, 0))]])
