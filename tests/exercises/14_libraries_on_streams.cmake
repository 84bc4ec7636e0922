# The tests of chapter 14's exercise, chapters/14_libraries_on_streams/exercise.cu: what a
# student's program must print (exercise_test(), label exercise), what the exercise as handed out
# fails (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too
# where the instructor's solutions/14_libraries_on_streams.cmake is present (label solved).

# A 256 x 256 SGEMM behind a 5 ms producer: on the default stream it multiplies the zeros that
# were there before, and every value is wrong.
exercise_test(FAILS_WITH gemm_results
              MATCH "CHECK gemm_results: 0 of 65536 values differ from the CPU reference ... PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.size_too_small EXE ${exe} ARGS --size 15 EXIT 2
               MATCH "--size expects an integer from 16 to 1024, got '15'" LABELS args host)
endforeach()
