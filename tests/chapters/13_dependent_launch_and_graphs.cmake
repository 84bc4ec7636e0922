# Chapter 13: programmatic dependent launch and conditional graph nodes. Results (every value
# against the CPU) in every GPU test; the ratios (PDL, graph loop) in the timing tests. A part says
# SKIP: (alone: exit 77, which CTest reports as skipped) only where a query says it cannot run:
# PDL below compute capability 9.0; conditional nodes with a driver older than CUDA 12.3
# (cudaDriverGetVersion) or where cudaGraphConditionalHandleCreate / cudaGraphAddNode answer
# cudaErrorNotSupported. The tests accept those reasons only. Where a capable GPU (H200, CUDA 13.0)
# skips a part anyway, the whole-program tests still pass on its SKIP: line, but part.* exits 77
# with that reason, which strict mode (the gpu-ci presets) fails.
set(pdl_absent "SKIP: PDL needs compute capability 9\\.0")
set(loop_absent "SKIP: no conditional graph nodes(: driver .* older than | here: .*cudaErrorNotSupported)")

# Results only, small and quick.
chapter_test(NAME result LABELS gpu
             ARGS --no-timing --chain 50 --iterations 20 --repeats 1
             MATCH "CHECK chain_results: 0 of [0-9]+ values differ from the CPU reference ... PASS|${pdl_absent}"
                   "CHECK read_after_sync_results: 0 of [0-9]+ values differ .* PASS|${pdl_absent}"
                   "CHECK pdl_edges_in_graph: the capture kept PDL: 49 of the chain's 49 edges programmatic \\(0 without PDL\\) ... PASS|${pdl_absent}"
                   "CHECK read_before_sync_is_stale: [1-9][0-9]* of [0-9]+ values stale ... PASS|${pdl_absent}"
                   "CHECK loop_results: 0 of [0-9]+ values differ .* PASS|${loop_absent}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The lesson at its defaults: every property.
chapter_test(NAME lesson LABELS gpu timing
             MATCH "CHECK pdl_prologue_overlap: .* <= 0\\.90x .* PASS|${pdl_absent}"
                   "CHECK graph_loop_ratio: .* <= 0\\.75x .* PASS|${loop_absent}"
                   "CHECK graph_loop_host_time: .* <= 0\\.03x .* PASS|${loop_absent}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# One test per part (--part NAME).
chapter_test(NAME part.pdl LABELS gpu timing ARGS --part pdl
             MATCH "== Part 1 of 2: pdl" "CHECK chain_results: 0 of [0-9]+ values differ"
                   "CHECK pdl_prologue_overlap: .* PASS" "CHECK pdl_edges_in_graph: .* PASS"
                   "CHECK pdl_no_gain_long_kernels: .* >= 0\\.90x .* PASS"
                   "CHECK read_after_sync_results: 0 of [0-9]+ values differ"
                   "CHECK read_before_sync_is_stale: [1-9][0-9]* of [0-9]+ values stale ... PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 2")
chapter_test(NAME part.graph LABELS gpu timing ARGS --part graph
             MATCH "== Part 2 of 2: graph" "CHECK loop_results: 0 of [0-9]+ values differ"
                   "CHECK graph_loop_ratio: .* PASS" "CHECK graph_loop_host_time: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "== Part 1")

# The commands the lesson suggests ("Try:" and "What to try next").
chapter_test(NAME try.short_prologue LABELS gpu timing ARGS --part pdl --prologue-us 1
             MATCH "CHECK chain_results: 0 of"
                   "CHECK pdl_prologue_overlap: skipped \\(a 1 us prologue is too short"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.fixed LABELS gpu timing ARGS --part pdl --fixed
             MATCH "CHECK read_after_sync_results: 0 of" "CHECK read_before_sync_is_stale: skipped \\(--fixed"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.few_iterations LABELS gpu timing ARGS --part graph --iterations 10
             MATCH "CHECK loop_results: 0 of"
                   "CHECK graph_loop_ratio: skipped \\(10 iterations cannot hide the graph launch's own cost"
                   "CHECK graph_loop_host_time: skipped \\(10 iterations cannot hide"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")

# The launch environments users run under: every check passes or says why it is skipped.
chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "CHECK pdl_prologue_overlap: skipped \\(CUDA_LAUNCH_BLOCKING=1|${pdl_absent}"
                   "CHECK read_before_sync_is_stale: skipped \\(CUDA_LAUNCH_BLOCKING=1|${pdl_absent}"
                   "CHECK loop_results: 0 of [0-9]+ values differ|${loop_absent}"
                   "CHECK graph_loop_host_time: skipped \\(CUDA_LAUNCH_BLOCKING=1|${loop_absent}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME env.one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK chain_results: 0 of [0-9]+ values differ|${pdl_absent}"
                   "CHECK loop_results: 0 of [0-9]+ values differ|${loop_absent}"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, pdl, graph, got 'nosuch'")

# Every integer flag: below its minimum, negative, not a number, too big.
chapter_integer_flags(chain:10:10000 prologue-us:1:1000 iterations:1:10000 repeats:1:20)

# Every integer flag at its minimum and its maximum: each check passes, or says why it cannot
# hold there (--prologue-us 1 is try.short_prologue). Each test takes about a second or less on
# an H200.
chapter_test(NAME extreme.chain_iterations_max_repeats_min LABELS gpu timing
             ARGS --chain 10000 --iterations 10000 --repeats 1
             MATCH "10000 dependent kernels" "CHECK pdl_prologue_overlap: .* PASS"
                   "the chain's 9999 edges programmatic" "CHECK read_before_sync_is_stale: .* PASS"
                   "10000 iterations, per iteration \\(medians of 1 runs\\)"
                   "CHECK graph_loop_ratio: .* PASS" "CHECK graph_loop_host_time: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extreme.chain_iterations_min_prologue_max LABELS gpu timing
             ARGS --chain 10 --iterations 1 --prologue-us 1000
             MATCH "10 dependent kernels" "in a stream, 1000 us prologue each"
                   "CHECK pdl_prologue_overlap: .* PASS" "the chain's 9 edges programmatic"
                   "CHECK graph_loop_ratio: skipped \\(1 iterations cannot hide"
                   "CHECK graph_loop_host_time: skipped \\(1 iterations cannot hide"
                   "CHECK loop_results: 0 of" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extreme.repeats_max LABELS gpu timing ARGS --repeats 20 --chain 10 --iterations 100
             MATCH "CHECK pdl_prologue_overlap: .* PASS" "CHECK read_before_sync_is_stale: .* PASS"
                   "100 iterations, per iteration \\(medians of 20 runs\\)"
                   "CHECK graph_loop_ratio: .* PASS" "CHECK graph_loop_host_time: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# A build without compute_90 code (compute_75 PTX and sm_75, as nvcc without -arch makes), built
# here for this test only: on a 9.0 device it says so, names the build that works, and fails,
# instead of timing PDL kernels that neither trigger nor wait.
add_executable(${CHAPTER}_sm75 ${CMAKE_CURRENT_SOURCE_DIR}/dependent_launch_and_graphs.cu)
set_target_properties(${CHAPTER}_sm75 PROPERTIES CUDA_ARCHITECTURES 75)
target_link_libraries(${CHAPTER}_sm75 PRIVATE cuda_streams::common)
cuda_streams_warnings(${CHAPTER}_sm75)
chapter_test(NAME refuses_without_sm90 EXE ${CHAPTER}_sm75 LABELS gpu ARGS --part pdl --chain 10 --repeats 1
             EXIT 1
             MATCH "CHECK pdl_device_code: the PDL kernels were compiled for compute_75.* FAIL"
                   "Build for this GPU: nvcc -arch=native"
             NO_MATCH "CHECK chain_results")

# compute-sanitizer: the PDL part with the fixed consumer only (--fixed: the broken one reads
# early on purpose, and a tool that serializes kernels makes its early read not stale, so its
# check could not hold), and the graph part under racecheck and synccheck. memcheck and initcheck
# are not run on the graph part: with CUDA 13.0 on the H200 each of them stopped the while node's
# launch once in three runs with cudaErrorIllegalAddress while reporting no access of the
# program (ERROR SUMMARY: 0), where plain runs and a minimal while-node program under memcheck
# never failed. So loop_body runs under memcheck and initcheck nowhere in the suite: a gap, kept
# in view here until a later tool release runs the node cleanly.
chapter_sanitizer_tests(ARGS --part pdl --fixed --chain 20 --repeats 1)
chapter_sanitizer_tests(NAME graph TOOLS racecheck synccheck
                        ARGS --part graph --iterations 20 --repeats 1)

# Controls: under CUDA_LAUNCH_BLOCKING=1 no kernel can start before the one ahead has returned,
# and the graph's launch returns only when its loop has run, so the host waits for the whole
# loop: about 0.28x of the host loop's time on the H200's figures (4.8 us against 17.0 us per
# iteration), far above graph_loop_host_time's 0.03x.
chapter_control(CHECK pdl_prologue_overlap ARGS --part pdl --chain 100)
chapter_control(CHECK graph_loop_host_time ARGS --part graph)
