# The tests of chapter 01's exercise, chapters/01_launch_config/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/01_launch_config.cmake is present (label solved).

# 1000 x 777 elements in 16 x 16 blocks: as given the grid stops 8 columns and 9 rows short.
exercise_test(FAILS_WITH coverage_2d
              MATCH "visit<<<dim3\\(63, 49\\), dim3\\(16, 16\\), 0, stream>>>"
                    "CHECK coverage_2d: 0 of 777000 values differ from the CPU reference ... PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")
# An array smaller than one block: as given, a grid of no block at all.
exercise_test(NAME small FAILS_WITH coverage_2d ARGS --width 7 --height 3 --block 32
              MATCH "CHECK coverage_2d: 0 of 21 values differ from the CPU reference ... PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.block_too_big EXE ${exe} ARGS --block 33 EXIT 2
               MATCH "--block expects an integer from 1 to 32, got '33'" LABELS args host)
  chapter_test(NAME args.width_zero EXE ${exe} ARGS --width 0 EXIT 2
               MATCH "--width expects an integer from 1 to 8192, got '0'" LABELS args host)
  chapter_test(NAME args.height_text EXE ${exe} ARGS --height tall EXIT 2
               MATCH "--height expects an integer from 1 to 8192, got 'tall'" LABELS args host)
endforeach()
