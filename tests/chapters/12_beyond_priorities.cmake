# Chapter 12: beyond priorities: green contexts and stream memory operations. Results (every
# value against the CPU) in every GPU test; the ratios (green context latency, release latency) in
# the timing tests. A part says SKIP: (alone: exit 77, which CTest reports as skipped) only where
# a query says it cannot run: a driver older than a function it needs (cudaDriverGetVersion), or
# CUDA_ERROR_NOT_SUPPORTED from cuDeviceGetDevResource or the first cuStreamWriteValue32; the
# tests accept those reasons only. Where a capable GPU (H200, CUDA 13.0) skips a part anyway, the
# whole-program tests still pass on its SKIP: line, but part.* exits 77 with that reason, which
# strict mode (the gpu-ci presets) fails.
set(green_absent "SKIP: no green contexts(: driver .* older than | here: .*CUDA_ERROR_NOT_SUPPORTED)")
set(memops_absent
    "SKIP: no stream memory operations(: driver .* older than | here: .*CUDA_ERROR_NOT_SUPPORTED)")

# Results only, small and quick.
chapter_test(NAME result LABELS gpu
             ARGS --no-timing --flood-ms 2 --short-us 5 --releases 5 --watchdog-ms 20 --repeats 1
             MATCH "CHECK short_kernel_results: 0 of [0-9]+ values differ from the CPU reference ... PASS|${green_absent}"
                   "CHECK green_latency_ratio: skipped \\(--no-timing|${green_absent}"
                   "CHECK stream_release_results: 0 of [0-9]+ values differ .* PASS|${memops_absent}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The lesson at its defaults: every property.
chapter_test(NAME lesson LABELS gpu timing
             MATCH "CHECK green_latency_ratio: .* <= 0\\.01x .* PASS|${green_absent}"
                   "CHECK release_latency: .* <= 100\\.0 us .* PASS|${memops_absent}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# One test per part (--part NAME).
# part.green also draws the timeline as a picture (the lesson's "--svg", no run of its own).
chapter_test(NAME part.green LABELS gpu timing
             ARGS --part green --svg ${CMAKE_CURRENT_BINARY_DIR}/12_green.svg
             MATCH "== Part 1 of 2: green" "SMs: [0-9]+ on the device .* asked 16"
                   "SVG written to .*12_green.svg"
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
# The control: --broken has B write the round before A's value; the watchdog releases every round.
chapter_test(NAME control.released_by_stream LABELS gpu timing control ARGS --part memops --broken
             EXIT 1 MATCH "CHECK released_by_stream: 3 of 3 rounds released by the watchdog \\.\\.\\. FAIL"
                   "CHECK stream_release_results: 0 of [0-9]+ values differ")

# The commands the lesson suggests ("Try:" and "What to try next").
chapter_test(NAME try.sms_8 LABELS gpu timing ARGS --part green --sms 8
             MATCH "asked 8" "CHECK green_latency_ratio: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.long_watchdog LABELS gpu timing ARGS --part memops --watchdog-ms 500
             MATCH "the wait ended after 5[0-9][0-9]\\.[0-9] ms, the watchdog fired" "CHECK watchdog_ended_wait: .* PASS"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")

# The launch environments users run under: every check passes or says why it is skipped.
chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "CHECK green_latency_ratio: skipped \\(CUDA_LAUNCH_BLOCKING=1|${green_absent}"
                   "CHECK stream_release_results: 0 of [0-9]+ values differ|${memops_absent}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME env.one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK short_kernel_results: 0 of [0-9]+ values differ|${green_absent}"
                   "CHECK stream_release_results: 0 of [0-9]+ values differ|${memops_absent}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, green, memops, got 'nosuch'")

# Every integer flag: below its minimum, negative, not a number, too big.
chapter_integer_flags(flood-ms:1:50 short-us:1:1000 sms:1:256 releases:1:1000
                      watchdog-ms:20:500 repeats:1:20)

# Every integer flag at its minimum and its maximum: each check passes, or says why it cannot
# hold there. --watchdog-ms 500 is try.long_watchdog. Each test takes under a second on an H200.
chapter_test(NAME extreme.minimums LABELS gpu timing
             ARGS --flood-ms 1 --short-us 1 --sms 1 --releases 1 --watchdog-ms 20 --repeats 1
             MATCH "CHECK short_kernel_results: 0 of [0-9]+ values differ .* PASS"
                   "CHECK every_flood_block_ran: 4 of 4 floods"
                   "CHECK green_latency_ratio: skipped \\(a 1 us kernel against 1 ms flood blocks: the bar needs blocks of 8 ms"
                   "CHECK release_latency: skipped \\(a median of 1 releases"
                   "CHECK released_by_stream: .* PASS" "CHECK watchdog_ended_wait: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extreme.flood_ms_max LABELS gpu timing ARGS --part green --flood-ms 50 --repeats 1
             MATCH "flood blocks of 50 ms" "CHECK green_latency_ratio: .* <= 0\\.01x .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extreme.short_us_repeats_max LABELS gpu timing
             ARGS --part green --short-us 1000 --repeats 20 --flood-ms 1
             MATCH "A 1000 us kernel .* \\(fastest of 20 runs\\)"
                   "CHECK every_flood_block_ran: 42 of 42 floods"
                   "CHECK green_latency_ratio: skipped \\(a 1000 us kernel against 1 ms flood blocks: the bar needs blocks of 207 ms"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
# --sms 256 is more than a device has: part 1's checks say so; part 2 times 1000 releases.
chapter_test(NAME extreme.sms_releases_max LABELS gpu timing ARGS --sms 256 --releases 1000
             MATCH "CHECK green_latency_ratio: skipped \\(--sms 256: the device's [0-9]+ SMs cannot give 256 and keep [0-9]+ for the flood\\)"
                   "CHECK short_kernel_results: skipped \\(--sms 256"
                   "median of 1000: " "CHECK release_latency: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# No control test for green_latency_ratio: its denominator is the run without a green context (the
# same kernel at the highest priority), and no flag or setting removes the green context alone.

# No compute-sanitizer tests: its support for green contexts is not documented, and a tool that
# serializes streams would hold the memops part's flag waits until the watchdog. The kernels of
# this chapter are the simplest of the repository; chapter 13 runs the sanitizer on its parts.

# PyTorch's green contexts (green_contexts.py, the README's section "In PyTorch"): where python3
# can import torch (elsewhere the script could only say SKIP:, which a strict run rightly refuses)
# and sees a GPU. It says SKIP: (77) only when this PyTorch has no torch.cuda.green_contexts (any
# other error fails), and checks the product in the green context against the whole device's, and
# that it is slower on its SMs. Its argument test needs Python only.
_cuda_streams_torch_python(green_python)
if(green_python)
  set(green_script ${PROJECT_SOURCE_DIR}/chapters/12_beyond_priorities/green_contexts.py)
  _cuda_streams_torch_ask_python("${green_python}" green_torch)
  if(green_torch_OK)
    add_test(NAME ${CHAPTER}.python.green_contexts
             COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} --exit 0
                     --match "CHECK green_context_result: 0 of [0-9]+ values differ .* PASS"
                     --match "CHECK fewer_sms_slower: (.* PASS|skipped \\(--sms [0-9]+ is over a quarter of the device\\))"
                     --match "All [1-9][0-9]* checks passed" --no-match FAIL
                     -- ${green_python} ${green_script})
    set_tests_properties(${CHAPTER}.python.green_contexts PROPERTIES LABELS "gpu;timing;python"
                         SKIP_RETURN_CODE 77 RUN_SERIAL TRUE TIMEOUT 300
                         ENVIRONMENT "PYTHONUNBUFFERED=1")
  else()
    message(STATUS "cuda-streams: chapter 12: ${green_torch_WHY}: green_contexts.py is not tested")
  endif()
  add_test(NAME ${CHAPTER}.python.args.sms_zero
           COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} --exit 2
                   --match "--sms expects an integer from 1 to 256, got '0'"
                   -- ${green_python} ${green_script} --sms 0)
  set_tests_properties(${CHAPTER}.python.args.sms_zero PROPERTIES LABELS "args;host;python")
endif()
