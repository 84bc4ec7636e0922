# Chapter 01: the launch configuration. No timing: every check is a result.
chapter_test(NAME lesson LABELS gpu
             MATCH "CHECK coverage_1d: 0 of 1000003 values differ from the CPU reference ... PASS"
                   "CHECK coverage_2d: 0 of 777000 values differ"
                   "CHECK coverage_3d: 0 of 231000 values differ"
                   "CHECK block_sums_dynamic_shared: 0 of [0-9]+ values differ"
                   "CHECK block_sums_default_stream: 0 of [0-9]+ values differ"
                   "CHECK block_sums_created_stream: 0 of [0-9]+ values differ"
                   "CHECK invalid_block_size_rejected: rejected"
                   "CHECK invalid_grid_y_rejected: rejected"
                   "CHECK invalid_shared_memory_rejected: rejected"
                   "CHECK valid_launch_after_rejections: launch cudaSuccess, run cudaSuccess ... PASS"
                   "cudaOccupancyMaxPotentialBlockSize: block [0-9]+"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
# 48 KB and more of dynamic shared memory needs the opt-in on every GPU since Volta.
chapter_test(NAME large_shared_memory LABELS gpu
             MATCH "CHECK large_shared_refused_by_default: the launch was rejected ... PASS"
                   "CHECK large_shared_after_opt_in: 0 of 1048576 values differ")
# The smallest sizes: one element, the smallest block (a command of the lesson's "What to try").
chapter_test(NAME one_element LABELS gpu ARGS --elements 1 --block 32 --no-invalid-launches
             MATCH "CHECK coverage_1d: 0 of 1 values differ" "All [1-9][0-9]* checks passed")

# The largest sizes through the whole lesson: the most elements, the largest block (the smallest
# are one_element above).
chapter_test(NAME extremes.max LABELS gpu ARGS --elements 268435456 --block 1024
             MATCH "CHECK coverage_1d: 0 of 268435456 values differ"
                   "CHECK block_sums_dynamic_shared: 0 of [0-9]+ values differ"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# One test per part (--part NAME), in the lesson's order.
chapter_test(NAME part.limits LABELS gpu ARGS --part limits
             MATCH "== Part 1 of 6: limits" "seed \\(cc 1.x\\) +this device" "threads per block +512"
                   "CHECK block_at_max_threads: 0 of [0-9]+ values differ" "All 1 checks passed"
                   NO_MATCH "== Part 2")
chapter_test(NAME part.coverage LABELS gpu ARGS --part coverage
             MATCH "== Part 2 of 6: coverage" "CHECK coverage_1d: 0 of 1000003 values differ"
                   "CHECK coverage_2d: 0 of 777000 values differ"
                   "CHECK coverage_3d: 0 of 231000 values differ" "All 3 checks passed")
chapter_test(NAME part.shared LABELS gpu ARGS --part shared
             MATCH "== Part 3 of 6: shared" "CHECK block_sums_dynamic_shared: 0 of 3907 values differ"
                   "CHECK large_shared_refused_by_default: the launch was rejected ... PASS"
                   "CHECK large_shared_after_opt_in: 0 of 1048576 values differ" "All 3 checks passed")
chapter_test(NAME part.stream LABELS gpu ARGS --part stream
             MATCH "== Part 4 of 6: stream" "CHECK block_sums_default_stream: 0 of 3907 values differ"
                   "CHECK block_sums_created_stream: 0 of 3907 values differ"
                   "Timeline: the sum in the default stream, then in a created stream"
                   "All 2 checks passed")
chapter_test(NAME part.invalid LABELS gpu ARGS --part invalid
             MATCH "== Part 5 of 6: invalid" "CHECK invalid_block_size_rejected: rejected"
                   "CHECK invalid_grid_y_rejected: rejected" "CHECK invalid_shared_memory_rejected: rejected"
                   "CHECK valid_launch_after_rejections: .* PASS"
                   "3 of 3 invalid launches were reported by cudaGetLastError" "All 4 checks passed")
chapter_test(NAME part.invalid_not_run LABELS gpu ARGS --part invalid --no-invalid-launches
             MATCH "not run \\(--no-invalid-launches\\)" "No check ran. [1-9][0-9]* skipped")
chapter_test(NAME part.occupancy LABELS gpu ARGS --part occupancy
             MATCH "== Part 6 of 6: occupancy" "cudaOccupancyMaxPotentialBlockSize: block [0-9]+"
                   "CHECK block_sums_occupancy_pick: (0 of [0-9]+ values differ .* PASS|skipped \\(the picked block size is not a power of two)"
             NO_MATCH "FAIL")

# The commands of the lesson's "Try:" lines and "What to try next".
chapter_test(NAME try.coverage_block_32 LABELS gpu ARGS --part coverage --block 32
             MATCH "1000003 x 1 x 1 elements: visit<<<dim3\\(31251, 1, 1\\), dim3\\(32, 1, 1\\)>>>"
                   "All 3 checks passed")
chapter_test(NAME try.coverage_block_1024 LABELS gpu ARGS --part coverage --block 1024
             MATCH "1000003 x 1 x 1 elements: visit<<<dim3\\(977, 1, 1\\), dim3\\(1024, 1, 1\\)>>>"
                   "All 3 checks passed")
chapter_test(NAME try.shared_block_1024 LABELS gpu ARGS --part shared --block 1024
             MATCH "block_sums<<<977, 1024, 4096 bytes>>>" "All 3 checks passed")
chapter_test(NAME try.stream_svg LABELS gpu ARGS --part stream --svg 01_stream.svg
             MATCH "01_stream.svg" "All 2 checks passed")
chapter_test(NAME try.invalid_launch_blocking LABELS gpu ARGS --part invalid
             ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "3 of 3 invalid launches were reported by cudaGetLastError right after the launch \\(under CUDA_LAUNCH_BLOCKING=1\\)"
                   "All 4 checks passed")
chapter_test(NAME try.no_invalid_launches LABELS gpu ARGS --no-invalid-launches
             MATCH "CHECK large_shared_refused_by_default: skipped \\(--no-invalid-launches" "not run \\(--no-invalid-launches\\)"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.elements_max LABELS gpu ARGS --elements 268435456 --part coverage
             MATCH "CHECK coverage_1d: 0 of 268435456 values differ" "All 3 checks passed")
chapter_test(NAME try.occupancy_elements_max LABELS gpu ARGS --part occupancy --elements 268435456
             MATCH "cudaOccupancyMaxPotentialBlockSize: block [0-9]+"
                   "CHECK block_sums_occupancy_pick: (0 of [0-9]+ values differ .* PASS|skipped \\(the picked block size is not a power of two)"
             NO_MATCH "FAIL")

# The whole lesson under the two launch settings: neither changes what it proves.
chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1: every kernel launch waits for its kernel"
                   "Neither setting changes what this chapter checks"
                   "3 of 3 invalid launches were reported by cudaGetLastError right after the launch \\(under CUDA_LAUNCH_BLOCKING=1\\)"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME env.max_connections_1 LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1: the streams share 1 hardware work queue"
                   "Neither setting changes what this chapter checks"
                   "3 of 3 invalid launches were reported by cudaGetLastError right after the launch\\."
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

chapter_test(NAME args.block_not_power_of_two LABELS args host ARGS --block 48 EXIT 2
             MATCH "--block expects a power of two from 32 to 1024, got '48'")
chapter_test(NAME args.block_too_big LABELS args host ARGS --block 2048 EXIT 2
             MATCH "--block expects an integer from 32 to 1024, got '2048'")
chapter_test(NAME args.elements_zero LABELS args host ARGS --elements 0 EXIT 2
             MATCH "--elements expects an integer from 1 to 268435456, got '0'")
chapter_test(NAME args.elements_not_a_number LABELS args host ARGS --elements many EXIT 2
             MATCH "--elements expects an integer .* got 'many'")
chapter_test(NAME args.device_negative LABELS args host ARGS --device -1 EXIT 2
             MATCH "--device expects an integer from 0 to 1023, got '-1'")
chapter_test(NAME args.trace_needs_file LABELS args host ARGS --trace EXIT 2
             MATCH "--trace needs a value")
# An output file that cannot be written stops the program before it runs, not after.
chapter_test(NAME args.trace_unwritable LABELS args host ARGS --trace /nonexistent-directory/t.json
             EXIT 2 MATCH "--trace /nonexistent-directory/t.json: cannot write this file"
             NO_MATCH "Device [0-9]")
chapter_test(NAME args.svg_unwritable LABELS args host ARGS --svg /nonexistent-directory/t.svg
             EXIT 2 MATCH "--svg /nonexistent-directory/t.svg: cannot write this file"
             NO_MATCH "Device [0-9]")
chapter_bad_values(FLAG part CASES nosuch=nosuch
                   EXPECT "--part expects one of all, limits, coverage, shared, stream, invalid, occupancy, got '<value>'")
chapter_test(NAME args.connections_env_0 LABELS args host EXIT 2 ENV CUDA_DEVICE_MAX_CONNECTIONS=0
             MATCH "CUDA_DEVICE_MAX_CONNECTIONS must be an integer from 1 to 32, got '0'")
# A control run (chapter_control) hides CUDA_LAUNCH_BLOCKING=1 from the bars; without it, refused.
chapter_test(NAME args.control_without_launch_blocking LABELS args host EXIT 2
             ENV CUDA_STREAMS_CONTROL=1
             MATCH "CUDA_STREAMS_CONTROL=1 makes a control run under CUDA_LAUNCH_BLOCKING=1, which is not set")

# The deliberate invalid launches are errors to memcheck; the rest of the lesson must be clean.
chapter_sanitizer_tests(ARGS --no-invalid-launches --elements 100003)
