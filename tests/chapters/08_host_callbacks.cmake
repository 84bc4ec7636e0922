# Tests of chapter 08 (host functions in stream order). CHAPTER is set by cuda_streams_chapter().

# Results: the log's order, the values each host function saw, the queue hand-off, the older
# callback, and the host function captured into a graph.
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
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL"
             LABELS gpu)
# More streams and steps than the default, one batch stream, odd sizes.
chapter_test(NAME results.many_streams ARGS --streams 12 --steps 40 --batches 5 --batch-elements 1000
             MATCH "CHECK host_functions_in_stream_order: 480 of 480 .* PASS"
                   "CHECK host_functions_saw_prior_work: 480 of 480 .* PASS"
                   "All [0-9]+ checks passed"
             LABELS gpu)
chapter_test(NAME results.one_stream ARGS --streams 1 --steps 3 --batches 1 --batch-elements 1
             MATCH "CHECK handoff_order: 1 of 1 .* PASS" "All [0-9]+ checks passed" LABELS gpu)
# --no-error-demos (used by the sanitizer tests) skips exactly the calls that fail on purpose.
chapter_test(NAME results.no_error_demos ARGS --no-error-demos
             MATCH "CHECK rule_demo_returned: skipped" "CHECK stream_callback_not_capturable: skipped"
                   "All [0-9]+ checks passed"
             NO_MATCH "inside a host function returned"
             LABELS gpu)
chapter_test(NAME results.trace ARGS --trace ${CMAKE_CURRENT_BINARY_DIR}/host_callbacks_trace.json
             MATCH "Trace written to .*host_callbacks_trace.json" LABELS gpu)

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
ch08_rejects(no_error_demos_with_value "--no-error-demos takes no value, got 'yes'" --no-error-demos=yes)
ch08_rejects(device_negative "--device expects an integer from 0 to 1023, got '-1'" --device -1)
ch08_rejects(trace_empty "--trace expects a non-empty FILE" --trace=)
ch08_rejects(stray_argument "unexpected argument 'extra'" extra)

chapter_sanitizer_tests(ARGS --no-error-demos --streams 2 --steps 4 --batches 2 --batch-elements 1024)
