# Chapter 06: several devices. The one-GPU tests run everywhere there is a GPU; the tests that
# need two devices carry the label multigpu and skip (77) on a machine with one.

# Everything this machine can run; on one GPU the two-device parts are listed as skipped.
chapter_test(NAME all LABELS gpu timing ARGS --part all
             MATCH "CHECK nonexistent_device_rejected: .* PASS"
                   "CHECK stream_owner: .* PASS"
                   "CHECK split_result: 0 of 8388608 values differ"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME enumerate LABELS gpu ARGS --part enumerate
             MATCH "== Part 1 of 7: enumerate" "current device: 0"
                   "CHECK nonexistent_device_rejected: cudaSetDevice\\([0-9]+\\) returned cudaErrorInvalidDevice, device 0 is still current ... PASS")
chapter_test(NAME ownership LABELS gpu ARGS --part ownership
             MATCH "== Part 2 of 7: ownership" "CHECK stream_owner: streams created on devices .* PASS"
                   "CHECK memory_owner: .* PASS"
                   "CHECK seed_c_equals_a_plus_b: 0 of 2 values differ"
                   "CHECK seed_z_equals_x_plus_y: 0 of 2 values differ"
                   "CHECK seed_c_on_cuda1: .* PASS"
                   "All [1-9][0-9]* checks passed")
chapter_test(NAME split LABELS gpu ARGS --part split
             MATCH "== Part 4 of 7: split" "CHECK split_result: 0 of 8388608 values differ" "device 0" "All [1-9][0-9]* checks passed")
chapter_test(NAME split_device_list LABELS gpu ARGS --part split --devices 0 --elements 1000003 --steps 100
             MATCH "Devices used: 0 of" "CHECK split_result: 0 of 1000003 values differ")
# A device index the machine does not have is a bad command line once the device count is known.
chapter_test(NAME devices_not_present LABELS gpu ARGS --part split --devices 0,1000 EXIT 2
             MATCH "--devices 0,1000: device 1000 does not exist. this machine has [0-9]+ CUDA device")
chapter_test(NAME trace_file LABELS gpu ARGS --part split --elements 64K --steps 16 --trace split_trace.json
             MATCH "Trace written to split_trace.json")

# Every flag at its extremes: the smallest job through every part this machine can run, the
# largest job and the most steps through the split (whose result is checked element by element).
chapter_test(NAME extremes.min LABELS gpu timing ARGS --part all --elements 1024 --steps 1
             MATCH "CHECK split_result: 0 of 1024 values differ" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extremes.elements_max LABELS gpu ARGS --part split --elements 256M --steps 64
             MATCH "CHECK split_result: 0 of 268435456 values differ" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extremes.steps_max LABELS gpu ARGS --part split --steps 1048576
             MATCH "1048576 steps each" "CHECK split_result: 0 of 8388608 values differ"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# Two devices or more: on one GPU each exits 77 with "SKIP: needs 2 devices (this machine has
# 1)", decided from cudaGetDeviceCount (a strict runner allows exactly that reason).
chapter_test(NAME foreign_stream LABELS gpu multigpu ARGS --part foreign-stream
             MATCH "== Part 3 of 7: foreign-stream" "CHECK foreign_stream_launch_rejected: the launch returned cuda.* PASS"
                   "CHECK foreign_event_record_rejected: .* PASS"
                   "CHECK refused_launch_did_not_run: 0 of"
                   "CHECK launch_with_owner_current: 0 of")
chapter_test(NAME split_two_devices LABELS gpu multigpu ARGS --part scaling --devices 0,1 --no-timing
             MATCH "CHECK scaling_split_result: 0 of 8388608 values differ")
chapter_test(NAME peer LABELS gpu multigpu timing ARGS --part peer
             MATCH "== Part 5 of 7: peer" "CHECK peer_bandwidth: .* PASS" "cudaMemcpyPeerAsync 0 -> 1: [0-9.]+ GB/s" "CHECK peer_copy_0_to_1: 0 of"
                   "CHECK peer_copy_1_to_0: 0 of" "All [1-9][0-9]* checks passed")
chapter_test(NAME cross_event LABELS gpu multigpu ARGS --part cross-event
             MATCH "== Part 6 of 7: cross-event" "CHECK cross_device_wait: 0 of 4194304 values differ" "All [1-9][0-9]* checks passed")
chapter_test(NAME scaling LABELS gpu multigpu timing ARGS --part scaling
             MATCH "== Part 7 of 7: scaling" "CHECK scaling_speedup: .* PASS")

# The whole program, small: on one GPU the two-device parts say why they are skipped.
chapter_test(NAME all_small LABELS gpu ARGS --part all --elements 64K --steps 64
             MATCH "CHECK (foreign-stream: skipped \\(needs 2 devices|foreign_stream_launch_rejected: .* PASS)"
                   "CHECK (peer: skipped \\(needs 2 devices|peer_bandwidth: .* PASS)"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The commands the lesson suggests ("Try:" and "What to try next"); each exits 0.
chapter_test(NAME try.enumerate_device LABELS gpu ARGS --part enumerate --device 0
             MATCH "current device: 0" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.scaling_reversed LABELS gpu multigpu timing ARGS --part scaling --devices 1,0
             MATCH "The job on device 1 alone" "CHECK scaling_speedup: .* PASS" NO_MATCH "FAIL")
chapter_test(NAME try.ownership_devices LABELS gpu ARGS --part ownership --devices 0
             MATCH "CHECK seed_c_on_cuda1: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.few_steps LABELS gpu ARGS --part split --steps 64
             MATCH "CHECK split_result: 0 of 8388608 values differ" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME try.svg LABELS gpu ARGS --part split --svg split.svg
             MATCH "split.svg" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")

# The launch environments users run under: every check passes or says why it is skipped, and
# the program says what the setting changes.
chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "every kernel launch waits for its kernel to finish"
                   "CHECK split_result: 0 of 8388608 values differ" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME env.one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "the streams share 1 hardware work queue"
                   "CHECK split_result: 0 of 8388608 values differ" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# Command-line validation, before any CUDA call.
chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, enumerate, ownership, foreign-stream, split, peer, cross-event, scaling, got 'nosuch'")
chapter_test(NAME args.part_unknown LABELS args host ARGS --part everything EXIT 2
             MATCH "--part expects one of all, enumerate, ownership, foreign-stream, split, peer, cross-event, scaling, got 'everything'")
chapter_test(NAME args.devices_duplicate LABELS args host ARGS --devices 0,0 EXIT 2
             MATCH "--devices expects a comma-separated list of distinct integers from 0 to 1023, got '0,0'")
chapter_test(NAME args.devices_not_a_number LABELS args host ARGS --devices 0,one EXIT 2
             MATCH "--devices expects a comma-separated list .* got '0,one'")
chapter_test(NAME args.devices_empty_item LABELS args host ARGS --devices 0,,1 EXIT 2
             MATCH "--devices expects a comma-separated list .* got '0,,1'")
chapter_test(NAME args.devices_negative LABELS args host ARGS --devices -1 EXIT 2
             MATCH "--devices expects a comma-separated list .* got '-1'")
chapter_test(NAME args.devices_too_big LABELS args host ARGS --devices 0,5000 EXIT 2
             MATCH "--devices expects a comma-separated list of distinct integers from 0 to 1023, got '0,5000'")
chapter_test(NAME args.devices_needs_value LABELS args host ARGS --devices EXIT 2
             MATCH "--devices needs a value")
chapter_test(NAME args.elements_zero LABELS args host ARGS --elements 0 EXIT 2
             MATCH "--elements expects a whole number from 1024 to 268435456 .* got '0'")
chapter_test(NAME args.elements_negative LABELS args host ARGS --elements -5 EXIT 2
             MATCH "--elements expects a whole number .* got '-5'")
chapter_test(NAME args.elements_not_a_number LABELS args host ARGS --elements lots EXIT 2
             MATCH "--elements expects a whole number .* got 'lots'")
chapter_test(NAME args.elements_too_big LABELS args host ARGS --elements 1G EXIT 2
             MATCH "--elements expects a whole number from 1024 to 268435456 .* got '1G'")
chapter_test(NAME args.steps_zero LABELS args host ARGS --steps 0 EXIT 2
             MATCH "--steps expects an integer from 1 to 1048576, got '0'")
chapter_test(NAME args.steps_negative LABELS args host ARGS --steps -3 EXIT 2
             MATCH "--steps expects an integer from 1 to 1048576, got '-3'")
chapter_test(NAME args.steps_not_a_number LABELS args host ARGS --steps many EXIT 2
             MATCH "--steps expects an integer .* got 'many'")
chapter_test(NAME args.steps_too_big LABELS args host ARGS --steps 2000000 EXIT 2
             MATCH "--steps expects an integer from 1 to 1048576, got '2000000'")

# No control test for the scaling check: it needs two devices, and no run here could show it.

# The deliberate invalid calls are errors to compute-sanitizer; the rest must be clean.
chapter_sanitizer_tests(ARGS --part all --elements 64K --steps 64 --no-invalid-calls)
