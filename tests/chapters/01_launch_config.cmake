# Chapter 01: the launch configuration. No timing: every check is a result.
chapter_test(NAME lesson LABELS gpu
             MATCH "CHECK coverage_1d: 0 of 1000003 values differ from the CPU reference ... PASS"
                   "CHECK coverage_2d: 0 of 777000 values differ"
                   "CHECK coverage_3d: 0 of 231000 values differ"
                   "CHECK block_sums_default_stream: 0 of [0-9]+ values differ"
                   "CHECK block_sums_created_stream: 0 of [0-9]+ values differ"
                   "CHECK invalid_block_size_rejected: rejected"
                   "CHECK invalid_grid_y_rejected: rejected"
                   "CHECK invalid_shared_memory_rejected: rejected"
                   "cudaOccupancyMaxPotentialBlockSize: block [0-9]+"
                   "All [0-9]+ checks passed"
             NO_MATCH "FAIL")
# 48 KB and more of dynamic shared memory needs the opt-in on every GPU since Volta.
chapter_test(NAME large_shared_memory LABELS gpu
             MATCH "CHECK large_shared_refused_by_default: the launch was rejected ... PASS"
                   "CHECK large_shared_after_opt_in: 0 of 1048576 values differ")
# The smallest sizes: one element, the smallest block.
chapter_test(NAME one_element LABELS gpu ARGS --elements 1 --block 32 --no-invalid-launches
             MATCH "CHECK coverage_1d: 0 of 1 values differ" "All [0-9]+ checks passed")

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

# The deliberate invalid launches are errors to memcheck; the rest of the lesson must be clean.
chapter_sanitizer_tests(ARGS --no-invalid-launches --elements 100003)
