# Chapter 05: events. The consumer's results are checked in every test that runs on a GPU; the
# timing properties (event timing, the host not blocked, polling, flag costs) in the timing tests.

# Results only, small and quick.
chapter_test(NAME result LABELS gpu
             ARGS --no-timing --kernel-ms 1 --producer-ms 1 --rounds 4 --elements 100003
                  --overlap-ms 2 --records 100 --wait-ms 2 --repeats 2
             MATCH "CHECK consumer_results: 0 of 400012 values differ from the CPU reference ... PASS"
                   "s\\.wait_stream\\(other\\) +cudaEventRecord\\(e, other\\). cudaStreamWaitEvent\\(s, e, 0\\)"
                   "CHECK event_timing_error: skipped \\(--no-timing was given\\)"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
# One value, one round: the smallest sizes.
chapter_test(NAME one_element LABELS gpu
             ARGS --no-timing --elements 1 --rounds 1 --kernel-ms 1 --overlap-ms 1 --records 1
                  --wait-ms 1 --repeats 1
             MATCH "CHECK consumer_results: 0 of 1 values differ" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The lesson at its defaults: every timing property.
chapter_test(NAME timing LABELS gpu timing
             MATCH "CHECK event_timing_error: .* <= 10\\.00% .* PASS"
                   "CHECK unsynchronized_host_clock: .* <= 0\\.50x .* PASS"
                   "CHECK consumer_results: 0 of 20971520 values differ"
                   "CHECK host_not_blocked_by_wait: .* <= 0\\.50x .* PASS"
                   "CHECK host_worked_while_gpu_ran: [1-9][0-9]* units .* PASS"
                   "CHECK polled_while_kernel_ran: .* >= 0\\.50x .* PASS"
                   "CHECK disable_timing_cost: .* <= 1\\.50x .* PASS"
                   "CHECK blocking_sync_cpu: .* <= 0\\.50x .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
# A longer kernel: the unsynchronized host clock stays at the launch's cost.
# It is also the maximum test: every part's own flags at their maximum (--kernel-ms 100,
# --producer-ms 100, --elements 64M, --overlap-ms 100, --records 100000, --wait-ms 200), one round
# and one repeat to keep it short (their maximum is in extremes.max_counts). At one repeat only the
# timing part's checks are pinned; the others must pass or skip saying why, and none may FAIL.
chapter_test(NAME timing.long_kernel LABELS gpu timing
             ARGS --kernel-ms 100 --producer-ms 100 --rounds 1 --elements 64M --overlap-ms 100
                  --records 100000 --wait-ms 200 --repeats 1
             MATCH "CHECK event_timing_error: .* PASS" "CHECK unsynchronized_host_clock: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# Every flag at its minimum, timed: each check passes or says why it is skipped (one round of one
# value, one repeat of one record: disable_timing_cost skips, too few events to time).
chapter_test(NAME extremes.min LABELS gpu timing
             ARGS --kernel-ms 1 --producer-ms 1 --rounds 1 --elements 1 --overlap-ms 1 --records 1
                  --wait-ms 1 --repeats 1
             MATCH "CHECK consumer_results: 0 of 1 values differ"
                   "CHECK disable_timing_cost: skipped \\(--records x --repeats below 1000"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
# The counts at their maximum (--rounds 100, --repeats 100), the rest at its minimum.
chapter_test(NAME extremes.max_counts LABELS gpu timing
             ARGS --rounds 100 --repeats 100 --kernel-ms 1 --producer-ms 1 --elements 1K
                  --overlap-ms 1 --records 10 --wait-ms 1
             MATCH "CHECK consumer_results: 0 of 102400 values differ"
                   "CHECK disable_timing_cost: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# One test per part of the lesson (--part NAME).
chapter_test(NAME part.timing LABELS gpu timing ARGS --part timing
             MATCH "== Part 1 of 4: timing" "CHECK event_timing_error: .* PASS"
                   "CHECK unsynchronized_host_clock: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 2")
chapter_test(NAME part.dependency LABELS gpu timing ARGS --part dependency
             MATCH "== Part 2 of 4: dependency" "CHECK consumer_results: 0 of 20971520 values differ"
                   "CHECK host_not_blocked_by_wait: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 1" "== Part 3")
chapter_test(NAME part.query LABELS gpu timing ARGS --part query
             MATCH "== Part 3 of 4: query" "CHECK host_worked_while_gpu_ran: [1-9][0-9]* units .* PASS"
                   "CHECK polled_while_kernel_ran: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 2" "== Part 4")
chapter_test(NAME part.flags LABELS gpu timing ARGS --part flags --wait-ms 20
             MATCH "== Part 4 of 4: flags" "CHECK disable_timing_cost: .* PASS"
                   "CHECK blocking_sync_cpu: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 3")

# The commands the lesson suggests ("Try:" and "What to try next").
chapter_test(NAME try.long_kernel LABELS gpu timing ARGS --part timing --kernel-ms 100 --repeats 2
             MATCH "CHECK unsynchronized_host_clock: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.slow_producer LABELS gpu timing ARGS --part dependency --producer-ms 20 --rounds 5
             MATCH "CHECK consumer_results: 0 of 5242880 values differ" "CHECK host_not_blocked_by_wait: .* PASS"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.long_query LABELS gpu timing ARGS --part query --overlap-ms 100
             MATCH "CHECK polled_while_kernel_ran: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.many_records LABELS gpu timing ARGS --part flags --records 50000
             MATCH "CHECK disable_timing_cost: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.long_wait LABELS gpu timing ARGS --part flags --wait-ms 200 --repeats 2
             MATCH "CHECK blocking_sync_cpu: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")

# The launch environments users run under: every check passes or says why it is skipped.
chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1 ARGS --wait-ms 20
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "CHECK unsynchronized_host_clock: skipped \\(CUDA_LAUNCH_BLOCKING=1: the launch returned only after the kernel, so the host clock measured it too"
                   "Under CUDA_LAUNCH_BLOCKING=1 the launch returned only after the kernel"
                   "CHECK consumer_results: 0 of 20971520 values differ"
                   "CHECK host_not_blocked_by_wait: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "CHECK host_worked_while_gpu_ran: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "CHECK polled_while_kernel_ran: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "CHECK blocking_sync_cpu: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME env.one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             ARGS --wait-ms 20
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "One hardware queue: the consumer's wait sits in it behind the producer"
                   "CHECK consumer_results: 0 of 20971520 values differ"
                   "CHECK host_not_blocked_by_wait: .* PASS" "CHECK blocking_sync_cpu: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "skipped")
chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, timing, dependency, query, flags, got 'nosuch'")

# Every integer flag: below its minimum, negative, not a number, too big.
chapter_integer_flags(kernel-ms:1:100 producer-ms:1:100 rounds:1:100 overlap-ms:1:100
                      records:1:100000 wait-ms:1:200 repeats:1:100)
# --elements is a size: K, M and G suffixes, at most 64M values.
set(bad_values 0 -5 lots 65M)
set(bad_names zero negative not_a_number too_big)
foreach(bad bad_name IN ZIP_LISTS bad_values bad_names)
  chapter_test(NAME args.elements_${bad_name} LABELS args host ARGS --elements ${bad} EXIT 2
               MATCH "--elements expects a whole number from 1 to 67108864 .*got '${bad}'")
endforeach()

chapter_sanitizer_tests(ARGS --kernel-ms 1 --producer-ms 1 --rounds 2 --elements 4K --overlap-ms 1
                             --records 20 --wait-ms 1 --repeats 1)

# Controls: under CUDA_LAUNCH_BLOCKING=1 each launch returns after its kernel, so the host waits.
chapter_control(CHECK host_not_blocked_by_wait ARGS --part dependency)
chapter_control(CHECK polled_while_kernel_ran ARGS --part query)
