# Tests of chapter 10 (stream-ordered memory). CHAPTER is set by cuda_streams_chapter().

# Results: pool counters, the created pool, two-stream use with events.
chapter_test(NAME results ARGS --no-timing
             MATCH "CHECK pool_counters_while_allocated: .* PASS"
                   "CHECK pool_counters_after_free: .* PASS"
                   "CHECK created_pool_keeps_memory: .* PASS"
                   "CHECK trim_gives_memory_back: .* PASS"
                   "CHECK kept_pool_cycle_cost: skipped \\(--no-timing was given\\)"
                   "CHECK other_stream_frees: 0 of [0-9]+ values differ.* PASS"
                   "CHECK owner_frees_after_event: 0 of [0-9]+ values differ.* PASS"
                   "CHECK pool_empty_after_two_streams: .* PASS"
                   "CHECK issued_while_producer_ran: skipped \\(--no-timing was given\\)"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL"
             LABELS gpu)
chapter_test(NAME results.small ARGS --no-timing --bytes 4096 --elements 1
             MATCH "All [1-9][0-9]* checks passed" LABELS gpu)
chapter_test(NAME results.odd_sizes ARGS --no-timing --bytes 1000001 --elements 1000003
             MATCH "All [1-9][0-9]* checks passed" LABELS gpu)
chapter_test(NAME results.trace ARGS --no-timing --trace ${CMAKE_CURRENT_BINARY_DIR}/stream_ordered_memory_trace.json
             MATCH "Trace written to .*stream_ordered_memory_trace.json" LABELS gpu)

# Timing: a pool that keeps its memory makes an allocate/free cycle at most half as costly as
# cudaMalloc/cudaFree; the threshold-0 cost is printed beside it. The host issues part streams'
# work while the producer still runs.
chapter_test(NAME timing.cycle_cost
             MATCH "CHECK kept_pool_cycle_cost: .* <= 0\\.50x .* PASS" "threshold 0 " "UINT64_MAX "
                   "CHECK issued_while_producer_ran: .* <= 0\\.50x .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL"
             LABELS gpu timing)

# One test per part of the lesson (--part NAME).
chapter_test(NAME part.counters LABELS gpu ARGS --part counters
             MATCH "== Part 1 of 4: counters" "CHECK pool_counters_while_allocated: .* PASS"
                   "CHECK pool_counters_after_free: .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" "== Part 2")
chapter_test(NAME part.keep LABELS gpu ARGS --part keep
             MATCH "== Part 2 of 4: keep" "CHECK created_pool_keeps_memory: .* PASS"
                   "CHECK trim_gives_memory_back: .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" "== Part 1" "== Part 3")
chapter_test(NAME part.cost LABELS gpu timing ARGS --part cost
             MATCH "== Part 3 of 4: cost" "CHECK kept_pool_cycle_cost: .* <= 0\\.50x .* PASS"
                   "All 1 checks passed"
             NO_MATCH "FAIL" "== Part 2" "== Part 4")
chapter_test(NAME part.streams LABELS gpu timing ARGS --part streams
             MATCH "== Part 4 of 4: streams" "CHECK other_stream_frees: 0 of 1048576 values differ"
                   "CHECK owner_frees_after_event: 0 of 1048576 values differ"
                   "CHECK pool_empty_after_two_streams: .* PASS"
                   "CHECK issued_while_producer_ran: .* <= 0\\.50x .* PASS" "All 4 checks passed"
             NO_MATCH "FAIL" "== Part 3")

# The commands the lesson suggests ("Try:" and "What to try next").
chapter_test(NAME try.odd_bytes LABELS gpu ARGS --part counters --bytes 1000001
             MATCH "CHECK pool_counters_while_allocated: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME try.keep_1g LABELS gpu ARGS --part keep --bytes 1G
             MATCH "CHECK created_pool_keeps_memory: .* reserved 1\\.0 GiB kept .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
# (--bytes 4K is the flag's minimum.)
chapter_test(NAME try.small_blocks LABELS gpu timing ARGS --part cost --bytes 4K
             MATCH "allocate 4\\.0 KiB" "CHECK kept_pool_cycle_cost: .* <= 0\\.50x .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME try.large_blocks LABELS gpu timing ARGS --part cost --bytes 1G --cycles 20
             MATCH "allocate 1\\.0 GiB" "CHECK kept_pool_cycle_cost: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME try.threshold_32m LABELS gpu timing ARGS --part cost --threshold 32M
             MATCH "threshold 32\\.0 MiB" "CHECK kept_pool_cycle_cost: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME try.many_elements LABELS gpu timing ARGS --part streams --elements 16777216
             MATCH "CHECK other_stream_frees: 0 of 16777216 values differ"
                   "CHECK owner_frees_after_event: 0 of 16777216 values differ"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# Every flag at its extremes, the whole lesson: all minima at once; all maxima at once but the
# cycles (16 GiB blocks: 3 cycles each way), and the most cycles at the default size.
chapter_test(NAME extremes.min LABELS gpu timing
             ARGS --bytes 4096 --cycles 1 --threshold 0 --elements 1
             MATCH "CHECK kept_pool_cycle_cost: .* <= 0\\.50x .* PASS"
                   "CHECK other_stream_frees: 0 of 1 values differ"
                   "CHECK issued_while_producer_ran: .* <= 0\\.50x .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extremes.max LABELS gpu timing
             ARGS --bytes 16G --cycles 3 --threshold 16G --elements 67108864
             MATCH "CHECK created_pool_keeps_memory: .* PASS"
                   "CHECK kept_pool_cycle_cost: .* <= 0\\.50x .* PASS"
                   "CHECK other_stream_frees: 0 of 67108864 values differ"
                   "CHECK issued_while_producer_ran: .* <= 0\\.50x .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extremes.cycles_max LABELS gpu timing ARGS --part cost --cycles 1000
             MATCH "1000 cycles each" "CHECK kept_pool_cycle_cost: .* <= 0\\.50x .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The launch environments users run under: every check passes or says why it is skipped.
chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "Under CUDA_LAUNCH_BLOCKING=1 each cycle's touch launch waited for its kernel"
                   "CHECK kept_pool_cycle_cost: .* PASS"
                   "CHECK other_stream_frees: 0 of 1048576 values differ"
                   "CHECK owner_frees_after_event: 0 of 1048576 values differ"
                   "CHECK issued_while_producer_ran: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "Under CUDA_LAUNCH_BLOCKING=1 the producer had finished before the host issued"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME env.one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "One hardware queue: B's waits sit in the queue that A's work also uses"
                   "CHECK kept_pool_cycle_cost: .* PASS"
                   "CHECK other_stream_frees: 0 of 1048576 values differ"
                   "CHECK owner_frees_after_event: 0 of 1048576 values differ"
                   "CHECK issued_while_producer_ran: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "skipped")
chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, counters, keep, cost, streams, got 'nosuch'")

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
ch10_rejects(cycles_zero "--cycles expects an integer from 1 to 1000, got '0'" --cycles 0)
ch10_rejects(cycles_negative "--cycles expects an integer from 1 to 1000, got '-50'" --cycles -50)
ch10_rejects(cycles_not_a_number "--cycles expects an integer from 1 to 1000, got 'ten'" --cycles ten)
ch10_rejects(cycles_too_big "--cycles expects an integer from 1 to 1000, got '1001'" --cycles 1001)
ch10_rejects(elements_zero "--elements expects an integer from 1 to 67108864, got '0'" --elements 0)
ch10_rejects(elements_negative "--elements expects an integer from 1 to 67108864, got '-7'" --elements -7)
ch10_rejects(elements_not_a_number "--elements expects an integer from 1 to 67108864, got '2.5'"
             --elements 2.5)
ch10_rejects(elements_too_big "--elements expects an integer from 1 to 67108864, got '67108865'"
             --elements 67108865)
ch10_rejects(no_timing_with_value "--no-timing takes no value, got 'yes'" --no-timing=yes)
ch10_rejects(device_too_big "--device expects an integer from 0 to 1023, got '1024'" --device 1024)
chapter_bad_values(FLAG threshold
                   EXPECT "--threshold expects a whole number from 0 to 17179869184.*got '<value>'"
                   CASES negative=-1 not_a_number=lots bad_suffix=32MB too_big=17G)

chapter_sanitizer_tests(ARGS --bytes 1M --elements 4096 --cycles 2)

# Control: under CUDA_LAUNCH_BLOCKING=1 the producer's launch, inside the timed issue, waits for it.
chapter_control(CHECK issued_while_producer_ran ARGS --part streams)
