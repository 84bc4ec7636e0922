# Exercise of chapter 02: the concurrent run's kernels go to the default stream; the fix gives
# each kernel a stream of its own. exercise_solution() passes its texts through a CMake list, so
# they contain no ';': each replacement is an expression inside a statement of the exercise.
exercise_solution(
  REPLACE [[for (cudaStream_t& stream : streams) stream = 0]]
          [[for (cudaStream_t& stream : streams) CS_CHECK(cudaStreamCreate(&stream))]])

# 8 kernels of 2 ms: one after another 16 ms, side by side about 2 ms (bar 0.75 x 8 = 6x). As
# given, every kernel goes to the legacy default stream and they run one after another (1.0x).
exercise_test(TIMING FAILS_WITH concurrency_speedup
              MATCH "CHECK kernel_runs: 0 of 16 values differ from the CPU reference ... PASS"
                    "CHECK kernel_spins: .* PASS"
                    "CHECK concurrency_speedup: .* >= .* PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

# Bad command lines: exit 2 and the flag's range, before any CUDA call.
foreach(exe IN ITEMS ${EXERCISE} ${EXERCISE}_solved)
  chapter_test(NAME args.kernels_too_few EXE ${exe} ARGS --kernels 1 EXIT 2
               MATCH "--kernels expects an integer from 2 to 32, got '1'" LABELS args host exercise)
  chapter_test(NAME args.kernel_ms_text EXE ${exe} ARGS --kernel-ms long EXIT 2
               MATCH "--kernel-ms expects a number from 0.5 to 20, got 'long'"
               LABELS args host exercise)
  chapter_test(NAME args.repeats_zero EXE ${exe} ARGS --repeats 0 EXIT 2
               MATCH "--repeats expects an integer from 1 to 20, got '0'" LABELS args host exercise)
  chapter_test(NAME args.connections_env EXE ${exe} EXIT 2 ENV CUDA_DEVICE_MAX_CONNECTIONS=0
               MATCH "CUDA_DEVICE_MAX_CONNECTIONS must be an integer from 1 to 32, got '0'"
               LABELS args host exercise)
endforeach()
