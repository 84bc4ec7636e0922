# Tests of chapter 09 (graph capture). CHAPTER is set by cuda_streams_chapter().

# Results: capture status, the graph's shape, replays, in-place updates, the pitfalls.
chapter_test(NAME results ARGS --no-timing
             MATCH "CHECK capture_status: .* PASS"
                   "CHECK graph_shape: prepare -> 4 parallel branches -> combine: 6 kernel nodes, 8 edges ... PASS"
                   "CHECK replay_results: 0 of [0-9]+ values differ.* PASS"
                   "CHECK set_params_results: 0 of [0-9]+ values differ.* PASS"
                   "CHECK exec_update: .* PASS"
                   "CHECK exec_update_results: 0 of [0-9]+ values differ.* PASS"
                   "CHECK chain_results: .* PASS"
                   "CHECK sync_rejected_during_capture: .* PASS"
                   "CHECK error_not_sticky: .* PASS"
                   "CHECK capture_modes: .* PASS"
                   "CHECK graph_branches_spun: .* PASS"
                   "CHECK graph_branches_within_ideal: skipped \\(--no-timing was given\\)"
                   "cudaStreamSynchronize\\(capturing stream\\) returned cuda[A-Za-z]+"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL"
             LABELS gpu)
chapter_test(NAME results.three_streams ARGS --no-timing --streams 3 --elements 1000 --replays 7
             MATCH "CHECK graph_shape: prepare -> 3 parallel branches -> combine: 5 kernel nodes, 6 edges ... PASS"
                   "All [1-9][0-9]* checks passed"
             LABELS gpu)
chapter_test(NAME results.sixteen_streams ARGS --no-timing --streams 16 --elements 4099 --replays 3 --kernels 10
             MATCH "CHECK graph_shape: prepare -> 16 parallel branches -> combine: 18 kernel nodes, 32 edges ... PASS"
                   "All [1-9][0-9]* checks passed"
             LABELS gpu)
chapter_test(NAME results.no_error_demos ARGS --no-timing --no-error-demos
             MATCH "CHECK capture_modes: skipped \\(--no-error-demos" "All [1-9][0-9]* checks passed"
             NO_MATCH "returned cudaErrorStreamCapture"
             LABELS gpu)
chapter_test(NAME results.dot ARGS --no-timing --no-error-demos --dot ${CMAKE_CURRENT_BINARY_DIR}/results_fork_join.dot
             MATCH "wrote the captured graph to .*results_fork_join.dot" "All [1-9][0-9]* checks passed" LABELS gpu)
chapter_test(NAME results.trace ARGS --no-timing --no-error-demos
             --trace ${CMAKE_CURRENT_BINARY_DIR}/graph_capture_trace.json
             MATCH "Trace written to .*graph_capture_trace.json" LABELS gpu)

# Timing: one graph launch costs the host 3% of the launches it replaces or less, and the chain
# a quarter less time per kernel or more.
chapter_test(NAME timing.launch_cost ARGS --no-error-demos
             MATCH "CHECK graph_issue_cost: .* PASS" "CHECK graph_launch_cost: .* PASS" "per kernel"
             LABELS gpu timing)

# The flags at their extremes not met above (--streams 3 and 16, --kernels 10 and 10000 and
# --replays 10000 are): every check passes or says why it is skipped.
chapter_test(NAME extremes.min ARGS --no-timing --streams 3 --elements 1 --replays 1 --kernels 10
             MATCH "CHECK replay_results: 0 of 1 values differ.* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu)
chapter_test(NAME extremes.elements_max ARGS --no-timing --no-error-demos --elements 67108864 --replays 1
             MATCH "CHECK replay_results: 0 of 67108864 values differ.* PASS"
                   "CHECK exec_update_results: 0 of 67108864 values differ.* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu)
chapter_test(NAME extremes.replays_max ARGS --part replay --replays 100000 --elements 1024
             MATCH "CHECK replay_results: 0 of 1024 values differ.* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu)
chapter_test(NAME extremes.kernels_max ARGS --part cost --kernels 100000 --no-timing
             MATCH "CHECK graph_issue_cost: skipped \\(--no-timing was given\\)"
                   "CHECK graph_launch_cost: skipped \\(--no-timing was given\\)"
                   "CHECK chain_results: the counter reached 600000 = 6 chains x 100000 kernels.* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu)

# One test per part of the lesson (--part NAME).
chapter_test(NAME part.capture ARGS --part capture
             MATCH "== Part 1 of 7: capture" "CHECK eager_results: 0 of 65536 values differ.* PASS"
                   "CHECK capture_status: .* PASS" "CHECK graph_shape: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 2" LABELS gpu)
chapter_test(NAME part.replay ARGS --part replay
             MATCH "== Part 2 of 7: replay" "CHECK replay_results: 0 of 65536 values differ.* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 1" "== Part 3" LABELS gpu)
chapter_test(NAME part.branches ARGS --part branches
             MATCH "== Part 3 of 7: branches" "one graph replay .* branches at once"
                   "CHECK graph_branches_spun: each of the 4 branches. spin kernels ran 1\\.00 ms or more .* PASS"
                   "CHECK graph_branches_concurrent: .* >= 2\\.00 .* PASS"
                   "CHECK graph_branches_within_ideal: .* <= 4\\.20 .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 2" "== Part 4" LABELS gpu timing)
chapter_test(NAME part.update ARGS --part update
             MATCH "== Part 4 of 7: update" "now adds 7 instead of 1"
                   "CHECK set_params_results: 0 of 65536 values differ.* PASS" "CHECK exec_update: .* PASS"
                   "CHECK exec_update_results: 0 of 65536 values differ.* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 3" "== Part 5" LABELS gpu)
chapter_test(NAME part.cost ARGS --part cost
             MATCH "== Part 5 of 7: cost" "CHECK graph_issue_cost: .* <= 0\\.03x .* PASS"
                   "CHECK graph_launch_cost: .* <= 0\\.75x .* PASS"
                   "CHECK chain_results: the counter reached 24000 = 24 chains x 1000 kernels.* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 4" "== Part 6" LABELS gpu timing)
chapter_test(NAME part.sync ARGS --part sync
             MATCH "== Part 6 of 7: sync" "cudaStreamSynchronize\\(capturing stream\\) returned cuda[A-Za-z]+"
                   "CHECK sync_rejected_during_capture: .* PASS" "CHECK error_not_sticky: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 5" "== Part 7" LABELS gpu)
chapter_test(NAME part.modes ARGS --part modes
             MATCH "== Part 7 of 7: modes" "ThreadLocal +other thread +cudaSuccess"
                   "CHECK capture_modes: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 6" LABELS gpu)

# The commands the lesson suggests ("Try:" and "What to try next").
chapter_test(NAME try.dot ARGS --part capture --dot fork_join.dot
             MATCH "wrote the captured graph to fork_join.dot" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu)
chapter_test(NAME try.many_replays ARGS --part replay --replays 10000 --elements 4096
             MATCH "CHECK replay_results: 0 of 4096 values differ.* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu)
chapter_test(NAME try.sixteen_branches ARGS --part branches --streams 16
             MATCH "16 branches of" "CHECK graph_branches_spun: each of the 16 branches.* PASS"
                   "CHECK graph_branches_concurrent: .* >= 8\\.00 .* PASS"
                   "CHECK graph_branches_within_ideal: .* <= 16\\.80 .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu timing)
chapter_test(NAME try.three_streams_update ARGS --part update --streams 3 --elements 1000
             MATCH "CHECK exec_update: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL" LABELS gpu)
chapter_test(NAME try.kernels_100 ARGS --part cost --kernels 100
             MATCH "CHECK graph_issue_cost: skipped \\(fewer than 1000 kernels\\)"
                   "CHECK graph_launch_cost: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL"
             LABELS gpu timing)
chapter_test(NAME try.kernels_10000 ARGS --part cost --kernels 10000
             MATCH "CHECK graph_issue_cost: .* PASS" "CHECK graph_launch_cost: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL"
             LABELS gpu timing)
chapter_test(NAME try.kernels_10 ARGS --part cost --kernels 10
             MATCH "CHECK graph_issue_cost: skipped \\(fewer than 100 kernels\\)"
                   "CHECK graph_launch_cost: skipped \\(fewer than 100 kernels\\)"
                   "CHECK chain_results: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu)
chapter_test(NAME try.sync_no_error_demos ARGS --part sync --no-error-demos
             MATCH "CHECK sync_rejected_during_capture: skipped \\(--no-error-demos\\)"
                   "CHECK error_not_sticky: skipped \\(--no-error-demos\\)"
             NO_MATCH "FAIL" "returned cudaErrorStreamCapture" LABELS gpu)

# The launch environments users run under: every check passes or says why it is skipped.
chapter_test(NAME env.launch_blocking ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "issued into +4 streams .* branches at once" "one graph replay .* branches at once"
                   "CHECK graph_issue_cost: skipped \\(CUDA_LAUNCH_BLOCKING=1: each kernel launch returns only when its kernel is done"
                   "CHECK graph_launch_cost: [0-9.]+x <= 0\\.75x .* PASS" "us per kernel"
                   "CHECK capture_status: .* PASS" "CHECK graph_shape: .* PASS"
                   "CHECK replay_results: 0 of 65536 values differ"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu timing)
chapter_test(NAME env.one_connection ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "issued into +4 streams .* branches at once" "one graph replay .* branches at once"
                   "CHECK graph_issue_cost: .* PASS" "CHECK graph_launch_cost: .* PASS"
                   "CHECK capture_status: .* PASS" "CHECK graph_shape: .* PASS"
                   "CHECK replay_results: 0 of 65536 values differ"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" LABELS gpu timing)
# A control: with CUDA_LAUNCH_BLOCKING=1 hidden from the bars, every launch waits for its kernel
# and the graph's launch for the whole chain, so issuing costs what running costs (about 0.1x).
chapter_control(CHECK graph_issue_cost ARGS --part cost)
chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, capture, replay, branches, update, cost, sync, modes, got 'nosuch'")

# Every flag's validation: exit 2 and a message naming the flag and its range; nothing runs.
function(ch09_rejects name message)
  chapter_test(NAME args.${name} ARGS ${ARGN} EXIT 2 MATCH "${message}" NO_MATCH "Device [0-9]"
               LABELS args host)
endfunction()
ch09_rejects(streams_two "--streams expects an integer from 3 to 16, got '2'" --streams 2)
ch09_rejects(streams_zero "--streams expects an integer from 3 to 16, got '0'" --streams 0)
ch09_rejects(streams_negative "--streams expects an integer from 3 to 16, got '-4'" --streams -4)
ch09_rejects(streams_not_a_number "--streams expects an integer from 3 to 16, got 'four'" --streams four)
ch09_rejects(streams_too_big "--streams expects an integer from 3 to 16, got '17'" --streams 17)
ch09_rejects(elements_zero "--elements expects an integer from 1 to 67108864, got '0'" --elements 0)
ch09_rejects(elements_negative "--elements expects an integer from 1 to 67108864, got '-1'" --elements -1)
ch09_rejects(elements_not_a_number "--elements expects an integer from 1 to 67108864, got '1e6'"
             --elements 1e6)
ch09_rejects(elements_too_big "--elements expects an integer from 1 to 67108864, got '67108865'"
             --elements 67108865)
ch09_rejects(replays_zero "--replays expects an integer from 1 to 100000, got '0'" --replays 0)
ch09_rejects(replays_negative "--replays expects an integer from 1 to 100000, got '-5'" --replays -5)
ch09_rejects(replays_not_a_number "--replays expects an integer from 1 to 100000, got 'x'" --replays x)
ch09_rejects(replays_too_big "--replays expects an integer from 1 to 100000, got '100001'" --replays 100001)
ch09_rejects(kernels_zero "--kernels expects an integer from 10 to 100000, got '0'" --kernels 0)
ch09_rejects(kernels_too_few "--kernels expects an integer from 10 to 100000, got '9'" --kernels 9)
ch09_rejects(kernels_negative "--kernels expects an integer from 10 to 100000, got '-1000'" --kernels -1000)
ch09_rejects(kernels_not_a_number "--kernels expects an integer from 10 to 100000, got '1k'" --kernels 1k)
ch09_rejects(kernels_too_big "--kernels expects an integer from 10 to 100000, got '100001'" --kernels 100001)
ch09_rejects(dot_empty "--dot expects a non-empty FILE" --dot=)
ch09_rejects(dot_missing "--dot needs a value" --dot)
ch09_rejects(dot_unwritable "--dot /nonexistent-directory/graph.dot: cannot write this file"
             --dot /nonexistent-directory/graph.dot)
ch09_rejects(dot_is_a_directory "--dot /: cannot write this file" --dot /)
ch09_rejects(no_error_demos_with_value "--no-error-demos takes no value, got '1'" --no-error-demos=1)
ch09_rejects(device_not_a_number "--device expects an integer from 0 to 1023, got 'gpu0'" --device gpu0)
ch09_rejects(svg_empty "--svg expects a non-empty FILE" --svg=)

chapter_sanitizer_tests(ARGS --no-error-demos --streams 3 --elements 1000 --replays 3 --kernels 20)
