# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 10's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 10: the step loop allocates and frees with cudaMalloc/cudaFree, so every
# step maps memory and waits for the device; the fix allocates in stream order from the default
# pool and raises the pool's release threshold, so that the pool keeps the block across the
# synchronization at the end of each step. Switching to cudaMallocAsync alone is not enough: at
# threshold 0 the pool hands the memory back at every synchronization (chapter 10 measures that
# cycle at about 1.4x of cudaMalloc's). exercise_solution() passes its texts through a CMake
# list, so they contain no ';'.
exercise_solution(
  REPLACE [[cudaMalloc(&scratch, bytes)]] [[cudaMallocAsync(&scratch, bytes, stream)]]
  REPLACE [[cudaFree(scratch)]] [[cudaFreeAsync(scratch, stream)]]
  REPLACE [[std::printf("The steps may draw from]]
          [[set_release_threshold(pool, UINT64_MAX), std::printf("The steps may draw from]])
