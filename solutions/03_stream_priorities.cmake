# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 03's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 03: the latency-sensitive kernel's stream has the flood's (default)
# priority; the fix creates it at the device's greatest priority. exercise_solution() passes its
# texts through a CMake list, so they contain no ';'.
exercise_solution(
  REPLACE [[cudaStreamCreate(&urgent)]]
          [[cudaStreamCreateWithPriority(&urgent, cudaStreamNonBlocking, greatest)]])
