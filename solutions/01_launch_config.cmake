# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 01's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 01: the grid is rounded down, so the last columns and rows are never
# visited; the fix rounds it up and guards the threads that the rounded-up grid puts past the
# edges (without the guard they count visits to the next row's elements, or past the array).
exercise_solution(
  REPLACE [[const dim3 blocks(width / block, height / block)]]
          [[const dim3 blocks((width + block - 1) / block, (height + block - 1) / block)]]
  REPLACE [[atomicAdd(&visits[y * width + x], 1u)]]
          [[if (x < width && y < height) atomicAdd(&visits[y * width + x], 1u)]])
