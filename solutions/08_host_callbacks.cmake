# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 08's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 08: the hand-off host functions go into a stream of their own, so they run
# before the batches they hand over are done; the fix queues each in its batch's stream, after
# the copy back. exercise_solution() passes its texts through a CMake list, so they contain no ';'.
exercise_solution(
  REPLACE [[cudaStream_t handoff_stream = bookkeeping_stream]]
          [[cudaStream_t handoff_stream = stream]])
