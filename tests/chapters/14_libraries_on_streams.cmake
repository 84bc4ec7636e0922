# Chapter 14: cuBLAS, cuRAND, cuFFT, Thrust and CUB on the streams you give them. Results (every
# library's output against the CPU) in every GPU test; the ratios (GEMM concurrency, host time
# blocked by Thrust's policies, CUB's issue time, FFT/copy overlap) in the timing tests. Not yet
# run on a GPU: the bars are the lesson's, sized for an H200 (see the README).

# Results only, small and quick: every part, no timing check.
chapter_test(NAME result LABELS gpu
             ARGS --no-timing --size 256 --gemms 2 --elements 65536 --chunks 4 --replays 2
             MATCH "Libraries: cuBLAS [0-9]+, cuRAND [0-9]+, cuFFT [0-9]+, Thrust [0-9.]+, CUB [0-9.]+"
                   "CHECK gemm_results: 0 of [0-9]+ values differ .* PASS"
                   "CHECK gemm_concurrency: skipped \\(--no-timing was given\\)"
                   "CHECK shared_handle_results: 0 of [0-9]+ values differ .* PASS"
                   "CHECK ordered_consumer_sum: 0 of 1 values differ .* PASS"
                   "CHECK unordered_consumer_is_stale: .* PASS"
                   "CHECK thrust_results: 0 of [0-9]+ values differ .* PASS"
                   "CHECK cub_sum_results: 0 of 3 values differ .* PASS"
                   "CHECK fft_points: 0 of 24 values differ .* PASS"
                   "CHECK replay_results: 0 of [0-9]+ values differ .* PASS"
                   "CHECK sync_policy_refuses_capture: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The lesson at its defaults: every property.
chapter_test(NAME lesson LABELS gpu timing
             MATCH "CHECK gemm_concurrency: .* >= 1\\.08x .* PASS"
                   "CHECK transform_nosync_blocked: .* <= 0\\.50x .* PASS"
                   "CHECK sort_nosync_blocked: .* <= 0\\.50x .* PASS"
                   "CHECK reduce_waits_either_way: .* >= 0\\.50x .* PASS"
                   "CHECK cub_issued_while_producer_ran: .* <= 0\\.50x .* PASS"
                   "CHECK cudafree_waits: .* >= 0\\.50x .* PASS"
                   "CHECK fft_overlap: .* <= 0\\.85x .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "skipped")

# One test per part (--part NAME); the parts without a timed check run in parallel.
chapter_test(NAME part.cublas LABELS gpu timing ARGS --part cublas
             MATCH "== Part 1 of 7: cublas" "CHECK gemm_results: 0 of [0-9]+ values differ"
                   "CHECK gemm_concurrency: .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" "== Part 2")
chapter_test(NAME part.shared_handle LABELS gpu ARGS --part shared_handle
             MATCH "== Part 2 of 7: shared_handle" "CHECK shared_handle_results: 0 of [0-9]+ values"
                   "All 1 checks passed"
             NO_MATCH "FAIL" "== Part 1" "== Part 3")
chapter_test(NAME part.curand LABELS gpu ARGS --part curand
             MATCH "== Part 3 of 7: curand" "CHECK ordered_consumer_sum: 0 of 1 values differ"
                   "CHECK unordered_consumer_is_stale: .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" "== Part 2" "== Part 4")
chapter_test(NAME part.thrust LABELS gpu timing ARGS --part thrust
             MATCH "== Part 4 of 7: thrust" "CHECK thrust_results: 0 of [0-9]+ values differ"
                   "CHECK transform_nosync_blocked: .* PASS" "CHECK sort_nosync_blocked: .* PASS"
                   "CHECK reduce_waits_either_way: .* PASS" "All 4 checks passed"
             NO_MATCH "FAIL" "== Part 3" "== Part 5")
chapter_test(NAME part.cub LABELS gpu timing ARGS --part cub
             MATCH "== Part 5 of 7: cub" "CHECK cub_sum_results: 0 of 3 values differ"
                   "CHECK cub_issued_while_producer_ran: .* PASS" "CHECK cudafree_waits: .* PASS"
                   "All 3 checks passed"
             NO_MATCH "FAIL" "== Part 4" "== Part 6")
chapter_test(NAME part.cufft LABELS gpu timing ARGS --part cufft
             MATCH "== Part 6 of 7: cufft" "CHECK fft_points: 0 of 24 values differ"
                   "CHECK fft_overlap: .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" "== Part 5" "== Part 7")
chapter_test(NAME part.capture LABELS gpu ARGS --part capture
             MATCH "== Part 7 of 7: capture" "CHECK replay_results: 0 of [0-9]+ values differ"
                   "CHECK sync_policy_refuses_capture: .* PASS" "All 2 checks passed"
             NO_MATCH "FAIL" "== Part 6")

# Controls: --broken removes each timed effect (handles on the default stream, par for
# par_nosync, cudaMalloc for CUB's storage, one stream for the FFTs); each check must FAIL.
chapter_test(NAME control.gemm_concurrency ARGS --part cublas --broken EXIT 1
             LABELS gpu timing control MATCH "CHECK gemm_concurrency: .* FAIL")
chapter_test(NAME control.transform_nosync_blocked ARGS --part thrust --broken EXIT 1
             LABELS gpu timing control
             MATCH "CHECK transform_nosync_blocked: .* FAIL" "CHECK sort_nosync_blocked: .* FAIL")
chapter_test(NAME control.cub_issued_while_producer_ran ARGS --part cub --broken EXIT 1
             LABELS gpu timing control MATCH "CHECK cub_issued_while_producer_ran: .* FAIL")
chapter_test(NAME control.fft_overlap ARGS --part cufft --broken EXIT 1
             LABELS gpu timing control MATCH "CHECK fft_overlap: .* FAIL")

# The commands the lesson suggests ("Try:" and "What to try next").
chapter_test(NAME try.two_streams LABELS gpu timing ARGS --part cublas --streams 2
             MATCH "CHECK gemm_concurrency: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME try.broken LABELS gpu timing ARGS --part cublas --broken EXIT 1
             MATCH "a handle per stream, none given its stream" "CHECK gemm_results: 0 of"
                   "CHECK gemm_concurrency: .* FAIL")
chapter_test(NAME try.fixed LABELS gpu ARGS --part curand --fixed
             MATCH "CHECK unordered_consumer_is_stale: skipped \\(--fixed was given\\)"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The launch environments users run under: every check passes or says why it is skipped.
chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "CHECK gemm_concurrency: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "CHECK unordered_consumer_is_stale: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "CHECK transform_nosync_blocked: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "CHECK cub_issued_while_producer_ran: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "CHECK fft_overlap: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                   "CHECK replay_results: 0 of" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME env.one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK gemm_concurrency: skipped \\(CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK unordered_consumer_is_stale: skipped \\(CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK transform_nosync_blocked: .* PASS"
                   "CHECK cub_issued_while_producer_ran: .* PASS"
                   "CHECK fft_overlap: skipped \\(CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
# A bug that a setting hides is not shown: --broken says SKIP there (exit 77).
chapter_test(NAME env.broken_launch_blocking LABELS gpu ENV CUDA_LAUNCH_BLOCKING=1
             ARGS --part cublas --broken EXIT 77
             MATCH "SKIP: the bug cannot be shown under CUDA_LAUNCH_BLOCKING=1")
chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, cublas, shared_handle, curand, thrust, cub, cufft, capture, got 'nosuch'")
chapter_test(NAME args.broken_and_fixed LABELS args host ARGS --broken --fixed EXIT 2
             MATCH "--broken and --fixed exclude each other" NO_MATCH "Device [0-9]")

# Every integer flag: below its minimum, negative, not a number, too big.
chapter_integer_flags(streams:2:8 size:128:1024 gemms:1:32 elements:2:4194304 fft-size:8:16384
                      chunks:4:32 replays:1:100)

# Every flag at its minimum and at its maximum: results at every size (no timing at the minima,
# where a GEMM is shorter than its issue cost and the check says so), every property at the
# maxima.
chapter_test(NAME extremes.min LABELS gpu
             ARGS --no-timing --streams 2 --size 128 --gemms 1 --elements 2 --fft-size 8 --chunks 4
                  --replays 1
             MATCH "CHECK gemm_results: 0 of 32768 values differ" "CHECK fft_points: 0 of 24 values"
                   "CHECK unordered_consumer_is_stale: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME extremes.max LABELS gpu timing
             ARGS --streams 8 --size 1024 --gemms 32 --elements 4194304 --fft-size 16384 --chunks 32
                  --replays 100
             MATCH "CHECK gemm_concurrency: .* PASS" "CHECK thrust_results: 0 of"
                   "CHECK fft_overlap: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# compute-sanitizer: small inputs, and --fixed (the tool serializes kernels: part curand's race
# cannot show, and part capture's refused capture would be reported as an API error).
chapter_sanitizer_tests(ARGS --fixed --size 128 --gemms 1 --elements 4096 --fft-size 64 --chunks 4
                        --replays 1)

# Controls: under CUDA_LAUNCH_BLOCKING=1 (bars not adapted) each launch waits for its kernel.
# (Not gemm_concurrency: issuing a GEMM then takes as long as running it, and the check skips as
# host-paced, rightly; its control is control.gemm_concurrency, --broken.)
chapter_control(CHECK transform_nosync_blocked ARGS --part thrust)
chapter_control(CHECK cub_issued_while_producer_ran ARGS --part cub)
# Not fft_overlap: copies stay asynchronous under the setting, and the H200 measured 0.64x there.
