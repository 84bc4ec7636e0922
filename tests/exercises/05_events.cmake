# The tests of chapter 05's exercise, chapters/05_events/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/05_events.cmake is present (label solved).

# 8 rounds of 1 Mi values behind a 30 ms producer: without the wait every value is stale; with a
# host-side wait the round takes 30 ms to issue (bar: at most 0.5 of the producer's delay).
exercise_test(TIMING FAILS_WITH consumer_results
              MATCH "CHECK consumer_results: 0 of 8388608 values differ from the CPU reference ... PASS"
                    "CHECK host_not_blocked: .* <= 0\\.50x .* PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.rounds_zero EXE ${exe} ARGS --rounds 0 EXIT 2
               MATCH "--rounds expects an integer from 1 to 50, got '0'" LABELS args host)
  chapter_test(NAME args.elements_too_big EXE ${exe} ARGS --elements 17M EXIT 2
               MATCH "--elements expects .*got '17M'" LABELS args host)
  chapter_test(NAME args.producer_ms_text EXE ${exe} ARGS --producer-ms slow EXIT 2
               MATCH "--producer-ms expects an integer from 5 to 200, got 'slow'"
               LABELS args host)
endforeach()
