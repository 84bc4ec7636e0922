# Exercise of chapter 13: a PDL consumer reads before cudaGridDependencySynchronize; the fix reads
# after it. exercise_solution() passes its texts through a CMake list, so they contain no ';': the
# wait moves into the read through the comma operator.
exercise_solution(
  REPLACE [=[const unsigned int x = data[i]]=]
          [=[const unsigned int x = (cudaGridDependencySynchronize(), data[i])]=])

# 4 rounds of 1024 values behind a 5 ms producer: read early, every value is stale.
exercise_test(FAILS_WITH consumer_results
              MATCH "CHECK consumer_results: 0 of 4096 values differ from the CPU reference ... PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN ITEMS ${EXERCISE} ${EXERCISE}_solved)
  chapter_test(NAME args.rounds_zero EXE ${exe} ARGS --rounds 0 EXIT 2
               MATCH "--rounds expects an integer from 1 to 50, got '0'" LABELS args host exercise)
endforeach()
