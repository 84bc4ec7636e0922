# Chapter 12: beyond priorities. Results (every value against the CPU) in every GPU test; the
# ratios (green context latency, PDL, release latency, graph loop) in the timing tests. A part
# the device or driver cannot run says SKIP: (alone: exit 77, which CTest reports as skipped).

# Results only, small and quick.
chapter_test(NAME result LABELS gpu
             ARGS --no-timing --flood-ms 2 --short-us 5 --chain 50 --releases 5 --watchdog-ms 20
                  --iterations 20 --repeats 1
             MATCH "CHECK short_kernel_results: 0 of [0-9]+ values differ from the CPU reference ... PASS|SKIP: no green"
                   "CHECK chain_results: 0 of [0-9]+ values differ .* PASS|SKIP: PDL needs"
                   "CHECK loop_results: 0 of [0-9]+ values differ .* PASS"
                   "CHECK green_latency_ratio: skipped \\(--no-timing|SKIP: no green"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")

# The lesson at its defaults: every property.
chapter_test(NAME lesson LABELS gpu timing
             MATCH "CHECK green_latency_ratio: .* <= 0\\.01x .* PASS|SKIP: no green"
                   "CHECK pdl_prologue_overlap: .* <= 0\\.90x .* PASS|SKIP: PDL needs"
                   "CHECK release_latency: .* <= 100\\.00 us .* PASS|SKIP: no stream memory"
                   "CHECK graph_loop_ratio: .* <= 0\\.50x .* PASS"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")

# One test per part (--part NAME).
chapter_test(NAME part.green LABELS gpu timing ARGS --part green
             MATCH "== Part 1 of 4: green" "SMs: [0-9]+ on the device .* asked 16"
                   "CHECK short_kernel_results: 0 of [0-9]+ values differ"
                   "CHECK every_flood_block_ran: ([0-9]+) of \\1 floods"
                   "CHECK green_latency_ratio: .* <= 0\\.01x .* PASS" "All [0-9]+ checks passed"
             NO_MATCH "FAIL" "== Part 2")
chapter_test(NAME part.pdl LABELS gpu timing ARGS --part pdl
             MATCH "== Part 2 of 4: pdl" "CHECK chain_results: 0 of [0-9]+ values differ"
                   "CHECK pdl_prologue_overlap: .* PASS" "CHECK pdl_no_gain_in_graph: .* PASS"
                   "CHECK read_after_sync_results: 0 of [0-9]+ values differ"
                   "CHECK read_before_sync_is_stale: [1-9][0-9]* of [0-9]+ values stale ... PASS"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL" "== Part 1" "== Part 3")
chapter_test(NAME part.memops LABELS gpu timing ARGS --part memops
             MATCH "== Part 3 of 4: memops" "CHECK release_latency: .* PASS"
                   "CHECK stream_release_results: 0 of [0-9]+ values differ"
                   "CHECK released_by_stream: .* PASS" "CHECK watchdog_ended_wait: .* PASS"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL" "== Part 2" "== Part 4")
chapter_test(NAME part.graph LABELS gpu timing ARGS --part graph
             MATCH "== Part 4 of 4: graph" "CHECK loop_results: 0 of [0-9]+ values differ"
                   "CHECK graph_loop_ratio: .* PASS" "All [0-9]+ checks passed"
             NO_MATCH "FAIL" "== Part 3")

# The commands the lesson suggests ("Try:" and "What to try next").
chapter_test(NAME try.sms_8 LABELS gpu timing ARGS --part green --sms 8
             MATCH "asked 8" "CHECK green_latency_ratio: .* PASS" "All [0-9]+ checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.short_prologue LABELS gpu timing ARGS --part pdl --prologue-us 1
             MATCH "CHECK chain_results: 0 of" "All [0-9]+ checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.long_watchdog LABELS gpu timing ARGS --part memops --watchdog-ms 500
             MATCH "the watchdog wrote it after 500 ms" "CHECK watchdog_ended_wait: .* PASS"
                   "All [0-9]+ checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.few_iterations LABELS gpu timing ARGS --part graph --iterations 10
             MATCH "CHECK loop_results: 0 of" "All [0-9]+ checks passed" NO_MATCH "FAIL")

# The launch environments users run under: every check passes or says why it is skipped.
chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "CHECK green_latency_ratio: skipped \\(CUDA_LAUNCH_BLOCKING=1|SKIP: no green"
                   "CHECK pdl_prologue_overlap: skipped \\(CUDA_LAUNCH_BLOCKING=1|SKIP: PDL needs"
                   "CHECK read_before_sync_is_stale: skipped \\(CUDA_LAUNCH_BLOCKING=1|SKIP: PDL needs"
                   "CHECK loop_results: 0 of [0-9]+ values differ"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME env.one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK stream_release_results: 0 of [0-9]+ values differ|SKIP: no stream memory"
                   "CHECK loop_results: 0 of [0-9]+ values differ"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, green, pdl, memops, graph, got 'nosuch'")

# Every integer flag: zero (or below its minimum), negative, not a number, too big.
foreach(spec IN ITEMS "flood-ms;1;200" "short-us;1;1000" "sms;1;256" "chain;10;100000"
                      "prologue-us;1;1000" "releases;1;10000" "watchdog-ms;10;10000"
                      "iterations;1;1000000" "repeats;1;100")
  list(GET spec 0 flag)
  list(GET spec 1 min)
  list(GET spec 2 max)
  math(EXPR too_big "${max} + 1")
  math(EXPR too_small "${min} - 1")
  chapter_bad_values(FLAG ${flag} EXPECT "--${flag} expects an integer from ${min} to ${max}, got '<value>'"
                     CASES below_min=${too_small} negative=-3 not_a_number=ten too_big=${too_big})
endforeach()

# compute-sanitizer: the PDL and graph parts. Green contexts and stream memory operations are
# left out: the sanitizer's support for them is not documented, and a tool that serializes
# streams would make a flag wait hang until the watchdog.
chapter_sanitizer_tests(ARGS --part pdl --chain 20 --repeats 1)
if(CUDA_STREAMS_SANITIZER)
  foreach(tool IN ITEMS memcheck racecheck synccheck initcheck)
    set(test_name ${CHAPTER}.sanitizer_graph.${tool})
    add_test(NAME ${test_name}
             COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} --exit 0 --match "(ERROR|RACECHECK) SUMMARY: 0"
                     -- ${CUDA_STREAMS_SANITIZER} --tool ${tool} --error-exitcode 99
                     $<TARGET_FILE:${CHAPTER}> --no-timing --part graph --iterations 20 --repeats 1)
    set_tests_properties(${test_name} PROPERTIES LABELS "sanitizer;gpu" SKIP_RETURN_CODE 77 TIMEOUT 600)
  endforeach()
endif()
