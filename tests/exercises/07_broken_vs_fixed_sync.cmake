# The tests of chapter 07's exercise, chapters/07_broken_vs_fixed_sync/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/07_broken_vs_fixed_sync.cmake is present (label solved).

# 3 rounds of 4 chunks, each chunk's kernel waits 8 ms: the racing copies take old values every
# time. Issuing a round must take at most 0.5 of one chunk's delay, so a host-side wait fails too.
exercise_test(TIMING FAILS_WITH host_buffer
              MATCH "CHECK host_buffer: 0 of 12582912 values differ from the CPU reference ... PASS"
                    "CHECK host_not_blocked: .* <= 0\\.50x .* PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.chunks_too_big EXE ${exe} ARGS --chunks 33 EXIT 2
               MATCH "--chunks expects an integer from 1 to 32, got '33'" LABELS args host)
  chapter_test(NAME args.delay_ms_too_small EXE ${exe} ARGS --delay-ms 1 EXIT 2
               MATCH "--delay-ms expects an integer from 2 to 100, got '1'"
               LABELS args host)
  chapter_test(NAME args.elements_too_small EXE ${exe} ARGS --elements 31 EXIT 2
               MATCH "--elements expects .*got '31'" LABELS args host)
endforeach()
