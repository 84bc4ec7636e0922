# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 07's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 07: each chunk's event is recorded in the copy stream instead of the compute
# stream, so the copy stream's wait on it waits for nothing and the copies race their producer;
# the fix records it after the chunk's kernels, in the compute stream. exercise_solution() passes
# its texts through a CMake list, so they contain no ';'.
exercise_solution(
  REPLACE [[cudaEventRecord(computed[c], copy_stream)]]
          [[cudaEventRecord(computed[c], compute_stream)]])
