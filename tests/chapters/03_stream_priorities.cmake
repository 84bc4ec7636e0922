# Chapter 03: stream priorities. The range and clamping are results; the latency ratio and the
# no-preemption fraction are timing. A timed check is skipped only for a reason the program
# queried before measuring (--no-timing, the launch settings, a device with one priority level,
# a flood wave that cannot fill the SMs); anything it measured passes or fails.
set(ch03_latency_ok "CHECK priority_latency_ratio: ([0-9][0-9.e+-]*x <= 0\\.50x .* PASS|skipped \\(this device has one stream priority level)")
set(ch03_preemption_ok "CHECK running_blocks_not_preempted: (.* >= 0\\.90x .* PASS|skipped \\((this device has one stream priority level|one wave of flood blocks leaves thread slots free))")

# Results only, small and quick: clamping, every flood block counted, the short kernel's values.
chapter_test(NAME result LABELS gpu
             ARGS --no-timing --flood-ms 5 --running-ms 2 --settle-us 500 --repeats 2
             MATCH "this device says: +-?[0-9]+ \\(greatest\\) \\.\\. -?[0-9]+ \\(least\\)"
                   "CHECK clamp_to_greatest: cudaStreamCreateWithPriority\\(-100\\) gave .* PASS"
                   "CHECK clamp_to_least: cudaStreamCreateWithPriority\\(\\+100\\) gave .* PASS"
                   "CHECK short_kernel_results: 0 of [0-9]+ values differ from the CPU reference ... PASS"
                   "CHECK every_flood_block_ran: ([0-9]+) of \\1 floods .* PASS"
                   "CHECK priority_latency_ratio: skipped \\(--no-timing"
                   "CHECK every_level_kept: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The lesson at its defaults: 20 us flood blocks against a 20 ms flood.
chapter_test(NAME timing LABELS gpu timing
             MATCH "${ch03_latency_ok}"
                   "${ch03_preemption_ok}"
                   "CHECK short_kernel_results: 0 of [0-9]+ values differ"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
# Ten times longer flood blocks: the high-priority kernel waits longer for a free slot, and
# still far less than behind the whole flood.
chapter_test(NAME timing.long_blocks LABELS gpu timing ARGS --block-us 200
             MATCH "${ch03_latency_ok}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The timeline goes to a Chrome trace when asked.
chapter_test(NAME trace LABELS gpu
             ARGS --no-timing --flood-ms 2 --running-ms 1 --settle-us 200 --repeats 1
                  --trace ${CMAKE_CURRENT_BINARY_DIR}/03_stream_priorities_trace.json
             MATCH "Trace written to .*03_stream_priorities_trace\\.json" "F = flood"
             NO_MATCH "FAIL")

# One test per part (--part NAME).
chapter_test(NAME part.range LABELS gpu ARGS --part range
             MATCH "== Part 1 of 4: range" "this device says: +-?[0-9]+ \\(greatest\\)"
                   "CHECK every_level_kept: .* PASS" "CHECK clamp_to_greatest: .* PASS"
                   "CHECK clamp_to_least: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 2")
chapter_test(NAME part.pytorch LABELS gpu ARGS --part pytorch
             MATCH "== Part 2 of 4: pytorch" "torch.cuda.Stream.priority_range\\(\\) would return"
                   "CHECK torch_levels_kept: 0 of 10 not kept by CUDA ... PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 1")
chapter_test(NAME part.latency LABELS gpu timing ARGS --part latency
             MATCH "== Part 3 of 4: latency"
                   "${ch03_latency_ok}"
                   "CHECK short_kernel_results: 0 of [0-9]+ values differ"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 4")
# The flood (128-thread blocks, at most 32 registers a thread) fills every SM's thread slots on
# every GPU from compute capability 7.5 on: a skip for free slots here would be a regression.
chapter_test(NAME part.preemption LABELS gpu timing ARGS --part preemption
             MATCH "== Part 4 of 4: preemption" "holds all of every SM's thread slots"
                   "${ch03_preemption_ok}"
                   "CHECK every_flood_block_ran: ([0-9]+) of \\1 floods .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 3")

# Under the two launch settings the program says what changed, skips the two timed checks with
# the reason, and passes the rest.
chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "CHECK priority_latency_ratio: skipped \\(CUDA_LAUNCH_BLOCKING=1: the flood's launch returned only after"
                   "CHECK running_blocks_not_preempted: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "short kernel from +latency: median"
                   "CHECK clamp_to_greatest: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME env.one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK priority_latency_ratio: skipped \\(CUDA_DEVICE_MAX_CONNECTIONS=1: the short kernel shares one hardware queue with the flood"
                   "CHECK running_blocks_not_preempted: skipped \\(CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK clamp_to_least: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The commands the lesson suggests under "What to try next".
# (--block-us 2000 is also the flag's maximum, --short-us 1 and --settle-us 0 their minimum.)
chapter_test(NAME try.block_us_2000 LABELS gpu timing ARGS --part latency --block-us 2000
             MATCH "each running 2000 us" "${ch03_latency_ok}" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME try.short_us_1 LABELS gpu timing ARGS --part latency --short-us 1
             MATCH "each running 1\\.0 us" "${ch03_latency_ok}" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME try.short_us_500 LABELS gpu timing ARGS --part latency --short-us 500
             MATCH "${ch03_latency_ok}" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.settle_us_0 LABELS gpu timing ARGS --settle-us 0
             MATCH "submitted 0 us after" "${ch03_latency_ok}" "${ch03_preemption_ok}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME try.running_ms_50 LABELS gpu timing ARGS --part preemption --running-ms 50
             MATCH "each running 50\\.0 ms" "${ch03_preemption_ok}" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME try.trace_and_svg LABELS gpu timing
             ARGS --part latency --trace ${CMAKE_CURRENT_BINARY_DIR}/03_priorities.json
                  --svg ${CMAKE_CURRENT_BINARY_DIR}/03_priorities.svg
             MATCH "Trace written to .*03_priorities\\.json" "${ch03_latency_ok}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# Every flag at its extremes (the rest at their defaults or small): each timed check passes or
# says which queried reason skipped it. All minima at once; the maxima of the lengths with one
# run each; the most repeats with a short flood.
chapter_test(NAME extremes.min LABELS gpu timing
             ARGS --flood-ms 1 --block-us 5 --short-us 1 --running-ms 1 --settle-us 0 --repeats 1
             MATCH "${ch03_latency_ok}" "${ch03_preemption_ok}" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extremes.max LABELS gpu timing
             ARGS --flood-ms 100 --block-us 2000 --short-us 1000 --running-ms 100 --settle-us 2500
                  --repeats 1
             MATCH "${ch03_latency_ok}" "${ch03_preemption_ok}" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extremes.repeats_max LABELS gpu timing ARGS --repeats 20 --flood-ms 5
             MATCH "medians of 20 runs" "${ch03_latency_ok}" "${ch03_preemption_ok}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
# A control: with the "high" stream at the least priority too, the short kernel waits behind the
# flood from both streams, and the latency check must fail (the latency ratio is near 1).
chapter_test(NAME control.priority_latency_ratio LABELS gpu timing control
             ARGS --part latency --same-priority --flood-ms 10 --repeats 3 EXIT 1
             MATCH "CHECK priority_latency_ratio: .* FAIL")

chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, range, pytorch, latency, preemption, got 'nosuch'")

# Every integer flag: below its minimum, negative, not a number, too big.
chapter_integer_flags(flood-ms:1:100 block-us:5:2000 short-us:1:1000 running-ms:1:100
                      settle-us:0:2500 repeats:1:20)
chapter_test(NAME args.same_priority_with_value LABELS args host ARGS --same-priority=yes EXIT 2
             MATCH "--same-priority takes no value, got 'yes'")
# Flags that must agree with each other.
chapter_test(NAME args.blocks_too_long_for_flood LABELS args host ARGS --flood-ms 1 --block-us 200
             EXIT 2
             MATCH "--block-us 200 with --flood-ms 1: the flood needs at least 10 waves of blocks, so --block-us must be at most 100")
chapter_test(NAME args.settle_too_long LABELS args host ARGS --running-ms 2 --settle-us 2500 EXIT 2
             MATCH "--settle-us 2500: .* must be at most half of --flood-ms and of --running-ms \\(1000 us here\\)")

chapter_sanitizer_tests(ARGS --flood-ms 1 --block-us 100 --running-ms 1 --settle-us 200 --repeats 1)

# Control: under CUDA_LAUNCH_BLOCKING=1 the flood has ended before the short kernel is issued.
chapter_control(CHECK priority_latency_ratio ARGS --part latency --flood-ms 10 --repeats 3)
