# The tests of chapter 10's exercise, chapters/10_stream_ordered_memory/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/10_stream_ordered_memory.cmake is present (label solved).

# 64 MiB per step, 50 cycles: cudaMalloc + cudaFree about 140 us a cycle on an H200, the kept
# pool about 14 us (0.1x; bar 0.5), the exercise as given about 1.0x.
exercise_test(TIMING FAILS_WITH step_cycle_cost
              MATCH "CHECK reference_results: 0 of 55 values differ from the CPU reference ... PASS"
                    "CHECK step_results: 0 of 55 values differ from the CPU reference ... PASS"
                    "CHECK step_cycle_cost: .* <= 0\\.50x .* PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.bytes_too_small EXE ${exe} ARGS --bytes 1K EXIT 2
               MATCH "--bytes expects .*4096.*got '1K'" LABELS args host)
  chapter_test(NAME args.bytes_text EXE ${exe} ARGS --bytes big EXIT 2
               MATCH "--bytes expects .*got 'big'" LABELS args host)
  chapter_test(NAME args.cycles_zero EXE ${exe} ARGS --cycles 0 EXIT 2
               MATCH "--cycles expects an integer from 1 to 1000, got '0'" LABELS args host)
  chapter_test(NAME args.cycles_too_many EXE ${exe} ARGS --cycles 1001 EXIT 2
               MATCH "--cycles expects an integer from 1 to 1000, got '1001'"
               LABELS args host)
endforeach()
