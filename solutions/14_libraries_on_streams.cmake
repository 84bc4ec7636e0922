# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 14's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 14: the handle was never given its stream, so its GEMM ran in the legacy
# default stream, which does not wait for a non-blocking stream: it multiplied the zeros that
# were there before the producer wrote A and B. The fix is one call, right after cublasCreate.
exercise_solution(
  REPLACE [=[if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {]=]
          [=[if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS || cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS) {]=])
