# The tests of chapter 13's exercise, chapters/13_dependent_launch_and_graphs/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/13_dependent_launch_and_graphs.cmake is present (label solved).

# 4 rounds of 1024 values behind a 5 ms producer: read early, every value is stale.
exercise_test(FAILS_WITH consumer_results
              MATCH "CHECK consumer_results: 0 of 4096 values differ from the CPU reference ... PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.rounds_zero EXE ${exe} ARGS --rounds 0 EXIT 2
               MATCH "--rounds expects an integer from 1 to 50, got '0'" LABELS args host)
endforeach()
