# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 04's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 04: the pipeline's host buffers are pageable (malloc), so every
# cudaMemcpyAsync holds the host and nothing overlaps; the fix allocates them pinned.
# exercise_solution() passes its texts through a CMake list, so they contain no ';'.
exercise_solution(
  REPLACE [[p = std::malloc(bytes)]] [[CS_CHECK(cudaMallocHost(&p, bytes))]]
  REPLACE [[std::free(p)]] [[CS_CHECK(cudaFreeHost(p))]])
