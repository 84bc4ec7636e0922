# The tests of chapter 08's exercise, chapters/08_host_callbacks/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/08_host_callbacks.cmake is present (label solved).

# 8 batches behind a 5 ms first stage: handed over early, the worker sees zeros every time.
exercise_test(FAILS_WITH worker_saw_results second_stage_results
              MATCH "CHECK handoff_order: 8 of 8 batches .* PASS"
                    "CHECK worker_saw_results: 8 of 8 .* PASS"
                    "CHECK second_stage_results: 0 of 524288 values differ from the CPU reference ... PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.batches_zero EXE ${exe} ARGS --batches 0 EXIT 2
               MATCH "--batches expects an integer from 1 to 64, got '0'" LABELS args host)
  chapter_test(NAME args.batch_elements_text EXE ${exe} ARGS --batch-elements many EXIT 2
               MATCH "--batch-elements expects .*got 'many'" LABELS args host)
  chapter_test(NAME args.stage_ms_too_big EXE ${exe} ARGS --stage-ms 101 EXIT 2
               MATCH "--stage-ms expects an integer from 1 to 100, got '101'"
               LABELS args host)
endforeach()
