# Chapter 05: events. The consumer's results are checked in every test that runs on a GPU; the
# timing properties (event timing, the host not blocked, polling, flag costs) in the timing tests.

# Results only, small and quick.
chapter_test(NAME result LABELS gpu
             ARGS --no-timing --kernel-ms 1 --producer-ms 1 --rounds 4 --elements 100003
                  --overlap-ms 2 --records 100 --wait-ms 2 --repeats 2
             MATCH "CHECK consumer_results: 0 of 400012 values differ from the CPU reference ... PASS"
                   "s\\.wait_stream\\(other\\) +cudaEventRecord\\(e, other\\). cudaStreamWaitEvent\\(s, e, 0\\)"
                   "CHECK event_timing_error: skipped \\(--no-timing\\)"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")
# One value, one round: the smallest sizes.
chapter_test(NAME one_element LABELS gpu
             ARGS --no-timing --elements 1 --rounds 1 --kernel-ms 1 --overlap-ms 1 --records 1
                  --wait-ms 1 --repeats 1
             MATCH "CHECK consumer_results: 0 of 1 values differ" "All [0-9]+ checks passed"
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
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")
# A longer kernel: the unsynchronized host clock stays at the launch's cost.
chapter_test(NAME timing.long_kernel LABELS gpu timing
             ARGS --kernel-ms 100 --rounds 2 --wait-ms 20 --repeats 3
             MATCH "CHECK event_timing_error: .* PASS" "CHECK unsynchronized_host_clock: .* PASS"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")

# Every integer flag: zero, negative, not a number, too big.
foreach(spec IN ITEMS "kernel-ms;1;1000" "producer-ms;1;1000" "rounds;1;1000" "overlap-ms;1;1000"
                      "records;1;1000000" "wait-ms;1;1000" "repeats;1;100")
  list(GET spec 0 flag)
  list(GET spec 1 min)
  list(GET spec 2 max)
  string(REPLACE "-" "_" name ${flag})
  math(EXPR too_big "${max} + 1")
  set(bad_values 0 -3 ten ${too_big})
  set(bad_names zero negative not_a_number too_big)
  foreach(bad bad_name IN ZIP_LISTS bad_values bad_names)
    chapter_test(NAME args.${name}_${bad_name} LABELS args host ARGS --${flag} ${bad} EXIT 2
                 MATCH "--${flag} expects an integer from ${min} to ${max}, got '${bad}'")
  endforeach()
endforeach()
# --elements is a size: K, M and G suffixes, at most 64M values.
set(bad_values 0 -5 lots 65M)
set(bad_names zero negative not_a_number too_big)
foreach(bad bad_name IN ZIP_LISTS bad_values bad_names)
  chapter_test(NAME args.elements_${bad_name} LABELS args host ARGS --elements ${bad} EXIT 2
               MATCH "--elements expects a whole number from 1 to 67108864 .*got '${bad}'")
endforeach()

chapter_sanitizer_tests(ARGS --kernel-ms 1 --producer-ms 1 --rounds 2 --elements 4K --overlap-ms 1
                             --records 20 --wait-ms 1 --repeats 1)
