# The tests of chapter 03's exercise, chapters/03_stream_priorities/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/03_stream_priorities.cmake is present (label solved).

# A 20 ms flood of 20 us blocks, the short kernel submitted 1 ms in: behind the flood it finishes
# at 1.0 of the flood, ahead of it at about 0.05 (bar 0.5); as given, at the flood's priority, it
# waits behind it. One priority level (a query): skipped (77).
exercise_test(TIMING FAILS_WITH short_kernel_finished
              MATCH "CHECK short_kernel_results: 0 of [0-9]+ values differ from the CPU reference ... PASS"
                    "CHECK every_flood_block_ran: ([0-9]+) of \\1 floods .* PASS"
                    "CHECK short_kernel_finished: .* <= 0\\.50x .* PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.flood_ms_too_small EXE ${exe} ARGS --flood-ms 4 EXIT 2
               MATCH "--flood-ms expects an integer from 5 to 200, got '4'" LABELS args host)
  chapter_test(NAME args.block_us_text EXE ${exe} ARGS --block-us short EXIT 2
               MATCH "--block-us expects an integer from 10 to 1000, got 'short'"
               LABELS args host)
  chapter_test(NAME args.repeats_too_big EXE ${exe} ARGS --repeats 21 EXIT 2
               MATCH "--repeats expects an integer from 1 to 20, got '21'" LABELS args host)
  chapter_test(NAME args.blocks_too_long EXE ${exe} ARGS --flood-ms 5 --block-us 600 EXIT 2
               MATCH "--block-us 600 with --flood-ms 5: the flood needs at least 10 waves of blocks, so --block-us must be at most 500"
               LABELS args host)
endforeach()
