# Chapter 03: stream priorities. The range and clamping are results; the latency ratio and the
# no-preemption fraction are timing. A device with one priority level states that the bars do
# not apply (check skipped), which the timing tests accept.

# Results only, small and quick: clamping, every flood block counted, the short kernel's values.
chapter_test(NAME result LABELS gpu
             ARGS --no-timing --flood-ms 5 --running-ms 2 --settle-us 500 --repeats 2
             MATCH "this device says: +-?[0-9]+ \\(greatest\\) \\.\\. -?[0-9]+ \\(least\\)"
                   "CHECK clamp_to_greatest: cudaStreamCreateWithPriority\\(-100\\) gave .* PASS"
                   "CHECK clamp_to_least: cudaStreamCreateWithPriority\\(\\+100\\) gave .* PASS"
                   "CHECK short_kernel_results: 0 of [0-9]+ values differ from the CPU reference ... PASS"
                   "CHECK every_flood_block_ran: ([0-9]+) of \\1 floods .* PASS"
                   "CHECK priority_latency_ratio: skipped \\(--no-timing\\)"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")

# The lesson at its defaults: 20 us flood blocks against a 20 ms flood.
chapter_test(NAME timing LABELS gpu timing
             MATCH "CHECK priority_latency_ratio: (.* <= 0\\.50x .* PASS|skipped \\(this device has one)"
                   "CHECK running_blocks_not_preempted: (.* >= 0\\.90x .* PASS|skipped \\()"
                   "CHECK short_kernel_results: 0 of [0-9]+ values differ"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")
# Ten times longer flood blocks: the high-priority kernel waits longer for a free slot, and
# still far less than behind the whole flood.
chapter_test(NAME timing.long_blocks LABELS gpu timing ARGS --block-us 200
             MATCH "CHECK priority_latency_ratio: (.* <= 0\\.50x .* PASS|skipped \\(this device has one)"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")

# The timeline goes to a Chrome trace when asked.
chapter_test(NAME trace LABELS gpu
             ARGS --no-timing --flood-ms 2 --running-ms 1 --settle-us 200 --repeats 1
                  --trace ${CMAKE_CURRENT_BINARY_DIR}/03_stream_priorities_trace.json
             MATCH "Trace written to .*03_stream_priorities_trace\\.json" "F = flood"
             NO_MATCH "FAIL")

# Every integer flag: zero (where not allowed), negative, not a number, too big.
foreach(spec IN ITEMS "flood-ms;1;1000" "block-us;5;10000" "short-us;1;1000" "running-ms;1;1000"
                      "settle-us;0;100000" "repeats;1;100")
  list(GET spec 0 flag)
  list(GET spec 1 min)
  list(GET spec 2 max)
  string(REPLACE "-" "_" name ${flag})
  math(EXPR too_big "${max} + 1")
  set(bad_values -3 ten ${too_big})
  set(bad_names negative not_a_number too_big)
  if(min GREATER 0)
    list(APPEND bad_values 0)
    list(APPEND bad_names zero)
  endif()
  foreach(bad bad_name IN ZIP_LISTS bad_values bad_names)
    chapter_test(NAME args.${name}_${bad_name} LABELS args host ARGS --${flag} ${bad} EXIT 2
                 MATCH "--${flag} expects an integer from ${min} to ${max}, got '${bad}'")
  endforeach()
endforeach()
chapter_test(NAME args.block_us_below_min LABELS args host ARGS --block-us 4 EXIT 2
             MATCH "--block-us expects an integer from 5 to 10000, got '4'")
# Flags that must agree with each other.
chapter_test(NAME args.blocks_too_long_for_flood LABELS args host ARGS --flood-ms 1 --block-us 200
             EXIT 2
             MATCH "--block-us 200 with --flood-ms 1: the flood needs at least 10 waves of blocks, so --block-us must be at most 100")
chapter_test(NAME args.settle_too_long LABELS args host ARGS --running-ms 5 --settle-us 3000 EXIT 2
             MATCH "--settle-us 3000: .* must be at most half of --flood-ms and of --running-ms \\(2500 us here\\)")

chapter_sanitizer_tests(ARGS --flood-ms 1 --block-us 100 --running-ms 1 --settle-us 200 --repeats 1)
