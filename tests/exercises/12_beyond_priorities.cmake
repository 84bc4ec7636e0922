# Exercise of chapter 12: stream A waits on a flag for a value it already holds, so its consumer
# reads before stream B's producer wrote; the fix waits for the value B writes after its producer.
exercise_solution(
  REPLACE [=[const cuuint32_t ready = round;]=]
          [=[const cuuint32_t ready = round + 1;]=])

# 4 rounds of 1024 values behind a 5 ms producer: let through early, every value is wrong.
exercise_test(FAILS_WITH consumer_results
              MATCH "CHECK consumer_results: 0 of 4096 values differ from the CPU reference ... PASS"
                    "CHECK no_wait_hung: .* PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN ITEMS ${EXERCISE} ${EXERCISE}_solved)
  chapter_test(NAME args.rounds_zero EXE ${exe} ARGS --rounds 0 EXIT 2
               MATCH "--rounds expects an integer from 1 to 50, got '0'" LABELS args host exercise)
endforeach()
