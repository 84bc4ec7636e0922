# Tests of chapter 08 (host functions in stream order). CHAPTER is set by cuda_streams_chapter().

# Results: the log's order, the values each host function saw, the queue hand-off, the older
# callback, and the host function captured into a graph (the whole lesson, every part).
chapter_test(NAME results
             MATCH "CHECK host_functions_in_stream_order: .* PASS"
                   "CHECK host_functions_saw_prior_work: .* PASS"
                   "CHECK handoff_order: .* PASS"
                   "CHECK handoff_results: 0 of [0-9]+ values differ.* PASS"
                   "CHECK rule_demo_returned: .* PASS"
                   "CHECK stream_callback: called with cudaSuccess.* PASS"
                   "CHECK host_function_in_graph: .* PASS"
                   "CHECK stream_callback_not_capturable: .* PASS"
                   "inside a host function returned cuda[A-Za-z]+"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL"
             LABELS gpu)
# More streams and steps than the default, one batch stream, odd sizes.
chapter_test(NAME results.many_streams ARGS --streams 12 --steps 40 --batches 5 --batch-elements 1000
             MATCH "CHECK host_functions_in_stream_order: 480 of 480 .* PASS"
                   "CHECK host_functions_saw_prior_work: 480 of 480 .* PASS"
                   "All [1-9][0-9]* checks passed"
             LABELS gpu)
chapter_test(NAME results.one_stream ARGS --streams 1 --steps 3 --batches 1 --batch-elements 1
             MATCH "CHECK handoff_order: 1 of 1 .* PASS" "All [1-9][0-9]* checks passed" LABELS gpu)
# --no-error-demos (used by the sanitizer tests) skips exactly the calls that fail on purpose.
chapter_test(NAME results.no_error_demos ARGS --no-error-demos
             MATCH "CHECK rule_demo_returned: skipped \\(--no-error-demos"
                   "CHECK stream_callback_not_capturable: skipped \\(--no-error-demos"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "inside a host function returned"
             LABELS gpu)
chapter_test(NAME results.trace ARGS --trace ${CMAKE_CURRENT_BINARY_DIR}/host_callbacks_trace.json
             MATCH "Trace written to .*host_callbacks_trace.json" LABELS gpu)

# One test per part of the lesson (--part NAME).
chapter_test(NAME part.order ARGS --part order
             MATCH "== Part 1 of 6: order" "CHECK host_functions_in_stream_order: 24 of 24 .* PASS"
                   "CHECK host_functions_saw_prior_work: 24 of 24 .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" "== Part 2"
             LABELS gpu)
chapter_test(NAME part.handoff ARGS --part handoff
             MATCH "== Part 2 of 6: handoff" "CHECK handoff_order: 8 of 8 .* PASS"
                   "CHECK handoff_results: 0 of 524288 values differ.* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" "== Part 1" "== Part 3"
             LABELS gpu)
chapter_test(NAME part.rule ARGS --part rule
             MATCH "== Part 3 of 6: rule" "inside a host function returned cuda[A-Za-z]+"
                   "CHECK rule_demo_returned: .* PASS" "All 1 checks passed"
             NO_MATCH "FAIL" "== Part 2" "== Part 4"
             LABELS gpu)
chapter_test(NAME part.stall ARGS --part stall
             MATCH "== Part 4 of 6: stall" "CHECK host_function_holds_its_stream: .* >= 0\\.90x .* PASS"
                   "CHECK other_stream_not_held: .* <= 0\\.50x .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" "== Part 3" "== Part 5"
             LABELS gpu timing)
chapter_test(NAME part.callback ARGS --part callback
             MATCH "== Part 5 of 6: callback" "CHECK stream_callback: called with cudaSuccess.* PASS"
                   "CHECK stream_callback_not_capturable: .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" "== Part 4" "== Part 6"
             LABELS gpu)
chapter_test(NAME part.graph ARGS --part graph
             MATCH "== Part 6 of 6: graph" "a graph of 3 nodes, 1 of them a host node"
                   "CHECK host_function_in_graph: 3 replays. the host node ran 3 times and saw the counter at 1, 2, 3 ... PASS"
                   "All 1 checks passed"
             NO_MATCH "FAIL" "== Part 5"
             LABELS gpu)

# The commands the lesson suggests ("Try:" and "What to try next").
chapter_test(NAME try.many_streams_trace
             ARGS --part order --streams 8 --steps 32 --trace host_callbacks.json
             MATCH "CHECK host_functions_in_stream_order: 256 of 256 .* PASS"
                   "Trace written to .*host_callbacks.json" "All 2 checks passed"
             NO_MATCH "FAIL" LABELS gpu)
chapter_test(NAME try.handoff_one_stream ARGS --part handoff --streams 1 --batches 16
             MATCH "CHECK handoff_results: 0 of 1048576 values differ.* PASS"
                   "order: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15"
                   "CHECK handoff_order: 16 of 16 .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" LABELS gpu)
chapter_test(NAME try.rule_no_error_demos ARGS --part rule --no-error-demos
             MATCH "CHECK rule_demo_returned: skipped \\(--no-error-demos" "No check ran. 1 skipped"
             NO_MATCH "FAIL" "inside a host function returned" LABELS gpu)
chapter_test(NAME try.long_host_function ARGS --part stall --host-ms 100
             MATCH "a host function that sleeps 100 ms" "CHECK host_function_holds_its_stream: .* PASS"
                   "CHECK other_stream_not_held: .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" LABELS gpu timing)
chapter_test(NAME try.callback_no_error_demos ARGS --part callback --no-error-demos
             MATCH "CHECK stream_callback: called with cudaSuccess.* PASS"
                   "CHECK stream_callback_not_capturable: skipped \\(--no-error-demos" "All 1 checks passed"
             NO_MATCH "FAIL" LABELS gpu)

# Every flag at its extremes, the whole lesson: all minima at once, then all maxima at once
# (16 streams x 500 steps of host functions, 64 batches of 1M ints, a 200 ms host function).
chapter_test(NAME extremes.min
             ARGS --streams 1 --steps 1 --batches 1 --batch-elements 1 --host-ms 1
             MATCH "CHECK host_functions_in_stream_order: 1 of 1 .* PASS"
                   "CHECK handoff_order: 1 of 1 .* PASS"
                   "CHECK host_function_holds_its_stream: .* PASS"
                   "CHECK other_stream_not_held: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu timing)
chapter_test(NAME extremes.max
             ARGS --streams 16 --steps 500 --batches 64 --batch-elements 1048576 --host-ms 200
             MATCH "CHECK host_functions_in_stream_order: 8000 of 8000 .* PASS"
                   "CHECK handoff_order: 64 of 64 .* PASS"
                   "CHECK handoff_results: 0 of 67108864 values differ"
                   "CHECK host_function_holds_its_stream: .* PASS"
                   "CHECK other_stream_not_held: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu timing)

# The launch environments users run under: every check passes or says why it is skipped, and the
# program says what the setting did to a slow host function.
chapter_test(NAME env.launch_blocking ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "Under CUDA_LAUNCH_BLOCKING=1 cudaLaunchHostFunc returned (only after|before) the host function had run"
                   "CHECK other_stream_not_held: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "CHECK host_functions_in_stream_order: .* PASS" "CHECK handoff_results: 0 of .* PASS"
                   "CHECK host_function_holds_its_stream: .* PASS" "CHECK host_function_in_graph: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL"
             LABELS gpu timing)
chapter_test(NAME env.one_connection ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "With one hardware queue stream B's kernel (waited|still did not wait) for the host function"
                   "CHECK other_stream_not_held: skipped \\(CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK host_functions_in_stream_order: .* PASS" "CHECK handoff_results: 0 of .* PASS"
                   "CHECK host_function_holds_its_stream: .* PASS" "CHECK host_function_in_graph: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL"
             LABELS gpu timing)
chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, order, handoff, rule, stall, callback, graph, got 'nosuch'")

# Every flag's validation: exit 2 and a message naming the flag and its range; nothing runs.
function(ch08_rejects name message)
  chapter_test(NAME args.${name} ARGS ${ARGN} EXIT 2 MATCH "${message}" NO_MATCH "Device [0-9]"
               LABELS args host)
endfunction()
ch08_rejects(streams_zero "--streams expects an integer from 1 to 16, got '0'" --streams 0)
ch08_rejects(streams_negative "--streams expects an integer from 1 to 16, got '-2'" --streams -2)
ch08_rejects(streams_not_a_number "--streams expects an integer from 1 to 16, got 'two'" --streams two)
ch08_rejects(streams_too_big "--streams expects an integer from 1 to 16, got '17'" --streams 17)
ch08_rejects(streams_missing "--streams needs a value" --streams)
ch08_rejects(steps_zero "--steps expects an integer from 1 to 500, got '0'" --steps 0)
ch08_rejects(steps_negative "--steps expects an integer from 1 to 500, got '-1'" --steps -1)
ch08_rejects(steps_not_a_number "--steps expects an integer from 1 to 500, got '8x'" --steps 8x)
ch08_rejects(steps_too_big "--steps expects an integer from 1 to 500, got '501'" --steps 501)
ch08_rejects(batches_zero "--batches expects an integer from 1 to 64, got '0'" --batches 0)
ch08_rejects(batches_negative "--batches expects an integer from 1 to 64, got '-8'" --batches -8)
ch08_rejects(batches_not_a_number "--batches expects an integer from 1 to 64, got '1.5'" --batches 1.5)
ch08_rejects(batches_too_big "--batches expects an integer from 1 to 64, got '65'" --batches 65)
ch08_rejects(batch_elements_zero "--batch-elements expects an integer from 1 to 1048576, got '0'"
             --batch-elements 0)
ch08_rejects(batch_elements_negative "--batch-elements expects an integer from 1 to 1048576, got '-1'"
             --batch-elements -1)
ch08_rejects(batch_elements_not_a_number
             "--batch-elements expects an integer from 1 to 1048576, got 'many'" --batch-elements many)
ch08_rejects(batch_elements_too_big
             "--batch-elements expects an integer from 1 to 1048576, got '1048577'"
             --batch-elements 1048577)
ch08_rejects(host_ms_zero "--host-ms expects an integer from 1 to 200, got '0'" --host-ms 0)
ch08_rejects(host_ms_negative "--host-ms expects an integer from 1 to 200, got '-5'" --host-ms -5)
ch08_rejects(host_ms_not_a_number "--host-ms expects an integer from 1 to 200, got 'long'" --host-ms long)
ch08_rejects(host_ms_too_big "--host-ms expects an integer from 1 to 200, got '201'" --host-ms 201)
ch08_rejects(no_error_demos_with_value "--no-error-demos takes no value, got 'yes'" --no-error-demos=yes)
ch08_rejects(device_negative "--device expects an integer from 0 to 1023, got '-1'" --device -1)
ch08_rejects(trace_empty "--trace expects a non-empty FILE" --trace=)
ch08_rejects(stray_argument "unexpected argument 'extra'" extra)

# Control: under CUDA_LAUNCH_BLOCKING=1 (bars not adapted) stream B's kernel waits for stream A's
# host function (measured on an H200; the settings test prints what the setting did), so the check
# that it does not must FAIL. host_function_holds_its_stream needs none: a run without its
# effect (work after a host function that does not wait for it) is what the check refuses.
chapter_control(CHECK other_stream_not_held ARGS --part stall)

chapter_sanitizer_tests(ARGS --no-error-demos --streams 2 --steps 4 --batches 2 --batch-elements 1024)
