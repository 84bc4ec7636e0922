# Tests of chapter 10 (stream-ordered memory). CHAPTER is set by cuda_streams_chapter().

# Results: pool counters, the created pool, two-stream use with events.
chapter_test(NAME results ARGS --no-timing
             MATCH "CHECK pool_counters_while_allocated: .* PASS"
                   "CHECK pool_counters_after_free: .* PASS"
                   "CHECK created_pool_keeps_memory: .* PASS"
                   "CHECK other_stream_frees: 0 of [0-9]+ values differ.* PASS"
                   "CHECK owner_frees_after_event: 0 of [0-9]+ values differ.* PASS"
                   "CHECK pool_empty_after_two_streams: .* PASS"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL"
             LABELS gpu)
chapter_test(NAME results.small ARGS --no-timing --bytes 4096 --elements 1
             MATCH "All [0-9]+ checks passed" LABELS gpu)
chapter_test(NAME results.odd_sizes ARGS --no-timing --bytes 1000001 --elements 1000003
             MATCH "All [0-9]+ checks passed" LABELS gpu)
chapter_test(NAME results.trace ARGS --no-timing --trace ${CMAKE_CURRENT_BINARY_DIR}/stream_ordered_memory_trace.json
             MATCH "Trace written to .*stream_ordered_memory_trace.json" LABELS gpu)

# Timing: a pool that keeps its memory makes an allocate/free cycle at most half as costly as
# cudaMalloc/cudaFree; the threshold-0 cost is printed beside it.
chapter_test(NAME timing.cycle_cost
             MATCH "CHECK kept_pool_cycle_cost: .* PASS" "threshold 0 " "UINT64_MAX "
             LABELS gpu timing)

# Every flag's validation: exit 2 and a message naming the flag and its range; nothing runs.
function(ch10_rejects name message)
  chapter_test(NAME args.${name} ARGS ${ARGN} EXIT 2 MATCH "${message}" NO_MATCH "Device [0-9]"
               LABELS args host)
endfunction()
ch10_rejects(bytes_zero "--bytes expects a whole number from 4096 to 17179869184" --bytes 0)
ch10_rejects(bytes_too_small "--bytes expects a whole number from 4096 to 17179869184.*got '4095'"
             --bytes 4095)
ch10_rejects(bytes_negative "--bytes expects a whole number from 4096 to 17179869184.*got '-1M'"
             --bytes -1M)
ch10_rejects(bytes_not_a_number "--bytes expects a whole number from 4096 to 17179869184.*got 'lots'"
             --bytes lots)
ch10_rejects(bytes_bad_suffix "--bytes expects a whole number from 4096 to 17179869184.*got '64MB'"
             --bytes 64MB)
ch10_rejects(bytes_too_big "--bytes expects a whole number from 4096 to 17179869184.*got '17G'"
             --bytes 17G)
ch10_rejects(cycles_zero "--cycles expects an integer from 1 to 100000, got '0'" --cycles 0)
ch10_rejects(cycles_negative "--cycles expects an integer from 1 to 100000, got '-50'" --cycles -50)
ch10_rejects(cycles_not_a_number "--cycles expects an integer from 1 to 100000, got 'ten'" --cycles ten)
ch10_rejects(cycles_too_big "--cycles expects an integer from 1 to 100000, got '100001'" --cycles 100001)
ch10_rejects(elements_zero "--elements expects an integer from 1 to 67108864, got '0'" --elements 0)
ch10_rejects(elements_negative "--elements expects an integer from 1 to 67108864, got '-7'" --elements -7)
ch10_rejects(elements_not_a_number "--elements expects an integer from 1 to 67108864, got '2.5'"
             --elements 2.5)
ch10_rejects(elements_too_big "--elements expects an integer from 1 to 67108864, got '67108865'"
             --elements 67108865)
ch10_rejects(no_timing_with_value "--no-timing takes no value, got 'yes'" --no-timing=yes)
ch10_rejects(device_too_big "--device expects an integer from 0 to 1023, got '1024'" --device 1024)

chapter_sanitizer_tests(ARGS --bytes 1M --elements 4096)
