# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 02's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 02: the concurrent run's kernels go to the default stream; the fix gives
# each kernel a stream of its own. exercise_solution() passes its texts through a CMake list, so
# they contain no ';': each replacement is an expression inside a statement of the exercise.
exercise_solution(
  REPLACE [[for (cudaStream_t& stream : streams) stream = 0]]
          [[for (cudaStream_t& stream : streams) CS_CHECK(cudaStreamCreate(&stream))]])
