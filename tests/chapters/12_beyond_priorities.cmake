# Chapter 12: beyond priorities: green contexts and stream memory operations. Results (every
# value against the CPU) in every GPU test; the ratios (green context latency, release latency) in
# the timing tests. A part the device or driver cannot run says SKIP: (alone: exit 77, which
# CTest reports as skipped).

# Results only, small and quick.
chapter_test(NAME result LABELS gpu
             ARGS --no-timing --flood-ms 2 --short-us 5 --releases 5 --watchdog-ms 20 --repeats 1
             MATCH "CHECK short_kernel_results: 0 of [0-9]+ values differ from the CPU reference ... PASS|SKIP: no green"
                   "CHECK green_latency_ratio: skipped \\(--no-timing|SKIP: no green"
                   "CHECK stream_release_results: 0 of [0-9]+ values differ .* PASS|SKIP: no stream memory"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The lesson at its defaults: every property.
chapter_test(NAME lesson LABELS gpu timing
             MATCH "CHECK green_latency_ratio: .* <= 0\\.01x .* PASS|SKIP: no green"
                   "CHECK release_latency: .* <= 100\\.0 us .* PASS|SKIP: no stream memory"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# One test per part (--part NAME).
chapter_test(NAME part.green LABELS gpu timing ARGS --part green
             MATCH "== Part 1 of 2: green" "SMs: [0-9]+ on the device .* asked 16"
                   "CHECK short_kernel_results: 0 of [0-9]+ values differ"
                   "CHECK every_flood_block_ran: ([0-9]+) of \\1 floods"
                   "CHECK green_latency_ratio: .* <= 0\\.01x .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 2")
chapter_test(NAME part.memops LABELS gpu timing ARGS --part memops
             MATCH "== Part 2 of 2: memops" "CHECK release_latency: .* PASS"
                   "CHECK stream_release_results: 0 of [0-9]+ values differ"
                   "CHECK released_by_stream: .* PASS" "CHECK watchdog_ended_wait: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 1")

# The commands the lesson suggests ("Try:" and "What to try next").
chapter_test(NAME try.sms_8 LABELS gpu timing ARGS --part green --sms 8
             MATCH "asked 8" "CHECK green_latency_ratio: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.green_svg LABELS gpu timing
             ARGS --part green --svg ${CMAKE_CURRENT_BINARY_DIR}/12_green.svg
             MATCH "SVG written to .*12_green.svg|SKIP: no green" "All [1-9][0-9]* checks passed|SKIP: no green"
             NO_MATCH "FAIL")
chapter_test(NAME try.long_watchdog LABELS gpu timing ARGS --part memops --watchdog-ms 500
             MATCH "the watchdog wrote it after 500 ms" "CHECK watchdog_ended_wait: .* PASS"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")

# The launch environments users run under: every check passes or says why it is skipped.
chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "CHECK green_latency_ratio: skipped \\(CUDA_LAUNCH_BLOCKING=1|SKIP: no green"
                   "CHECK stream_release_results: 0 of [0-9]+ values differ|SKIP: no stream memory"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME env.one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK short_kernel_results: 0 of [0-9]+ values differ|SKIP: no green"
                   "CHECK stream_release_results: 0 of [0-9]+ values differ|SKIP: no stream memory"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, green, memops, got 'nosuch'")

# Every integer flag: below its minimum, negative, not a number, too big.
chapter_integer_flags(flood-ms:1:200 short-us:1:1000 sms:1:256 releases:1:10000
                      watchdog-ms:10:10000 repeats:1:100)

# No compute-sanitizer tests: its support for green contexts is not documented, and a tool that
# serializes streams would hold the memops part's flag waits until the watchdog. The kernels of
# this chapter are the simplest of the repository; chapter 13 runs the sanitizer on its parts.

# PyTorch's green contexts (green_contexts.py, the README's section "In PyTorch"): where python3
# can import torch and sees a GPU. It says so when this PyTorch has no green contexts, and checks
# the product in the green context against the whole device's, and that it is slower on its SMs.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(green_script ${PROJECT_SOURCE_DIR}/chapters/12_beyond_priorities/green_contexts.py)
  add_test(NAME ${CHAPTER}.python.green_contexts
           COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} --exit 0
                   --match "CHECK green_context_result: 0 of [0-9]+ values differ .* PASS|does not expose green contexts"
                   --match "All [1-9][0-9]* checks passed" --no-match FAIL
                   -- ${Python3_EXECUTABLE} ${green_script})
  set_tests_properties(${CHAPTER}.python.green_contexts PROPERTIES LABELS "gpu;timing;python"
                       SKIP_RETURN_CODE 77 RUN_SERIAL TRUE TIMEOUT 300
                       ENVIRONMENT "PYTHONUNBUFFERED=1")
  add_test(NAME ${CHAPTER}.python.args.sms_zero
           COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} --exit 2
                   --match "--sms expects an integer from 1 to 256, got '0'"
                   -- ${Python3_EXECUTABLE} ${green_script} --sms 0)
  set_tests_properties(${CHAPTER}.python.args.sms_zero PROPERTIES LABELS "args;host;python")
endif()
