# The tests of chapter 04's exercise, chapters/04_pinned_async_pipeline/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/04_pinned_async_pipeline.cmake is present (label solved).

# 64 MiB in 16 chunks over 4 streams: pageable about 1.0x of serial (the pageable copies, about
# 12 ms, hold the host and dwarf the 1.3 ms of kernels that could overlap), pinned about 0.45x on
# an H200 (bar 0.7 with two or more copy engines).
exercise_test(TIMING FAILS_WITH overlapped_vs_serial
              MATCH "CHECK serial_results: 0 of 16777216 values differ from the CPU reference ... PASS"
                    "CHECK overlapped_results: 0 of 16777216 values differ from the CPU reference ... PASS"
                    "CHECK timeline_run_results: 0 of 16777216 values differ"
                    "CHECK overlapped_vs_serial: .* <= .* PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.mib_too_small EXE ${exe} ARGS --mib 8 EXIT 2
               MATCH "--mib expects .*16.*1024.*got '8'" LABELS args host)
  chapter_test(NAME args.chunks_one EXE ${exe} ARGS --chunks 1 EXIT 2
               MATCH "--chunks expects an integer from 2 to 64, got '1'" LABELS args host)
  chapter_test(NAME args.streams_text EXE ${exe} ARGS --streams many EXIT 2
               MATCH "--streams expects an integer from 2 to 16, got 'many'" LABELS args host)
  chapter_test(NAME args.kernel_us_negative EXE ${exe} ARGS --kernel-us -5 EXIT 2
               MATCH "--kernel-us expects an integer from 10 to 10000, got '-5'"
               LABELS args host)
endforeach()
