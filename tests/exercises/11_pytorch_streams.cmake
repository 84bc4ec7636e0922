# The tests of chapter 11's exercise, chapters/11_pytorch_streams/exercise.py (Python: registered
# from tests/CMakeLists.txt, run with the python3 found at configure time; each test is skipped,
# exit 77, where that Python cannot import torch or torch sees no CUDA device): what a student's
# script must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved script too where
# the instructor's solutions/11_pytorch_streams.cmake is present (label solved).

# 8 rounds of 1 Mi values behind a 20 ms producer: read early, every value is stale; with a
# host-side wait a round takes 20 ms to issue (bar: at most 0.5 of the producer's delay).
exercise_test(TIMING FAILS_WITH consumer_results
              MATCH "CHECK consumer_results: 0 of 8388608 values differ from the CPU reference ... PASS"
                    "CHECK host_not_blocked: .* <= 0\\.50x .* PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

# Bad command lines: exit 2 before torch is imported (these run without torch).
exercise_args_test(NAME args.unknown_flag ARGS --no-such-flag
                   MATCH "unrecognized arguments: --no-such-flag")
exercise_args_test(NAME args.rounds_zero ARGS --rounds 0
                   MATCH "argument --rounds: expects an integer from 1 to 50, got '0'")
exercise_args_test(NAME args.spin_ms_text ARGS --spin-ms long
                   MATCH "argument --spin-ms: expects an integer from 5 to 200, got 'long'")
exercise_args_test(NAME args.elements_too_small ARGS --elements 1023
                   MATCH "argument --elements: expects an integer from 1024 to 16777216, got '1023'")
