# The tests of chapter 09's exercise, chapters/09_graph_capture/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/09_graph_capture.cmake is present (label solved).

# As given, the capture ends with cudaErrorStreamCaptureUnjoined: no graph, capture_ended fails.
exercise_test(FAILS_WITH capture_ended
              MATCH "cudaStreamEndCapture returned cudaSuccess"
                    "CHECK capture_ended: .* PASS"
                    "CHECK graph_shape: prepare -> 4 parallel branches -> combine: 6 kernel nodes, 8 edges, one root, one leaf ... PASS"
                    "CHECK replay_results: 0 of 65536 values differ from the CPU reference ... PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")
# Two streams: the smallest fork/join.
exercise_test(NAME two_streams FAILS_WITH capture_ended ARGS --streams 2 --elements 1001 --replays 7
              MATCH "CHECK graph_shape: prepare -> 2 parallel branches -> combine: 4 kernel nodes, 4 edges, one root, one leaf ... PASS"
                    "CHECK replay_results: 0 of 1001 values differ"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.streams_one EXE ${exe} ARGS --streams 1 EXIT 2
               MATCH "--streams expects an integer from 2 to 16, got '1'" LABELS args host)
  chapter_test(NAME args.replays_negative EXE ${exe} ARGS --replays -1 EXIT 2
               MATCH "--replays expects an integer from 1 to 10000, got '-1'"
               LABELS args host)
  chapter_test(NAME args.elements_too_small EXE ${exe} ARGS --elements 15 EXIT 2
               MATCH "--elements expects .*got '15'" LABELS args host)
endforeach()
