# The tests of chapter 02's exercise, chapters/02_default_vs_custom_streams/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/02_default_vs_custom_streams.cmake is present (label solved).

# 8 kernels of 2 ms: one after another 16 ms, side by side about 2 ms (bar 0.75 x 8 = 6x). As
# given, every kernel goes to the legacy default stream and they run one after another (1.0x).
exercise_test(TIMING FAILS_WITH concurrency_speedup
              MATCH "CHECK kernel_runs: 0 of 16 values differ from the CPU reference ... PASS"
                    "CHECK kernel_spins: .* PASS"
                    "CHECK concurrency_speedup: .* >= .* PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

# Bad command lines: exit 2 and the flag's range, before any CUDA call.
foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.kernels_too_few EXE ${exe} ARGS --kernels 1 EXIT 2
               MATCH "--kernels expects an integer from 2 to 32, got '1'" LABELS args host)
  chapter_test(NAME args.kernel_ms_text EXE ${exe} ARGS --kernel-ms long EXIT 2
               MATCH "--kernel-ms expects a number from 0.5 to 20, got 'long'"
               LABELS args host)
  chapter_test(NAME args.repeats_zero EXE ${exe} ARGS --repeats 0 EXIT 2
               MATCH "--repeats expects an integer from 1 to 20, got '0'" LABELS args host)
  chapter_test(NAME args.connections_env EXE ${exe} EXIT 2 ENV CUDA_DEVICE_MAX_CONNECTIONS=0
               MATCH "CUDA_DEVICE_MAX_CONNECTIONS must be an integer from 1 to 32, got '0'"
               LABELS args host)
endforeach()
