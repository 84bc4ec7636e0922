# Chapter 11: the seeds' PyTorch examples. The C++ tests exist where libtorch was found (the
# target exists); the Python tests where the configured Python imports torch
# (CUDA_STREAMS_TORCH_PYTHON, set by cuda_streams_torch_chapter()).

set(chapter11_results
    "tensor\\(\\[6, 6, 6, 6, 6\\], device='cuda:[0-9]+'\\)"
    "tensor\\(\\[5, 8, 9, 8, 5\\], device='cuda:[0-9]+'\\)"
    "CHECK seed_t1_plus_t2: 0 of 5 values differ"
    "CHECK seed_t1_times_t2: 0 of 5 values differ"
    "CHECK stream_guard: .* PASS|CHECK stream_context: .* PASS"
    "CHECK pool_is_reused: .* PASS"
    "CHECK seed_res1_equals_t1_times_2: 0 of"
    "CHECK seed_res2_equals_t2_times_3: 0 of"
    "CHECK seed_C_equals_A_mm_A: 0 of"
    "CHECK seed_D_equals_B_mm_B: 0 of"
    "CHECK fixed_normal_sum: .* PASS"
    "CHECK fixed_record_stream: .* PASS"
    "CHECK priority_mapping: .* PASS"
    "CHECK tensors_on_current_device: .* PASS"
    "CHECK graph_replay_matches_eager: 0 of 16384 values differ from the CPU reference"
    "CHECK graph_replay_reads_new_input: 0 of 16384 values differ from the CPU reference"
    "All [1-9][0-9]* checks passed")
# The broken examples must be caught as broken, in words, every time.
set(chapter11_timed
    "torch.Size\\(\\[1000, 1000\\]\\) torch.Size\\(\\[1000, 1000\\]\\)"
    "CHECK seed_sync_serializes: [0-9.]+x >= 1.50x .* PASS"
    "CHECK seed_normal_sum_race_shown: sum\\(\\) read A before normal_\\(\\): it returned.* PASS"
    "CHECK seed_free_without_record_stream_shown: the allocator gave A's block to the next tensor at once.* PASS"
    "CHECK graph_replay_speedup: [0-9.]+x >= 1.50x .* PASS")
# Each part's heading and its checks (--part NAME); the C++ and the Python print the same lines.
# Parts serialize and capture run with --no-timing (their timed checks are the whole lesson's,
# test `all`, and the try.* tests'), so that they need not run alone.
set(chapter11_parts
    "streams|1|CHECK current_is_default: .* PASS|CHECK pool_is_reused: .* PASS"
    "seeds|2|tensor\\(\\[6, 6, 6, 6, 6\\], device='cuda:[0-9]+'\\)|tensor\\(\\[5, 8, 9, 8, 5\\], device='cuda:[0-9]+'\\)"
    "serialize|3|CHECK seed_res1_equals_t1_times_2: 0 of|CHECK seed_sync_serializes: skipped \\(--no-timing was given\\)"
    "matmul|4|CHECK seed_C_equals_A_mm_A: 0 of|CHECK seed_D_equals_B_mm_B: 0 of"
    "race|5|CHECK seed_normal_sum_race_shown: sum\\(\\) read A before normal_\\(\\): it returned.* PASS|CHECK fixed_normal_sum: .* PASS"
    "record|6|CHECK seed_free_without_record_stream_shown: the allocator gave A's block.* PASS|CHECK fixed_record_stream: .* PASS"
    "priorities|7|CHECK priority_mapping: .* PASS|cudaStreamGetPriority"
    "devices|8|CHECK tensors_on_current_device: .* PASS|CHECK seed_z_equals_x_plus_y: 0 of 2 values differ"
    "capture|9|CHECK graph_replay_matches_eager: 0 of 16384 values differ from the CPU reference|CHECK graph_replay_speedup: skipped \\(--no-timing was given\\)")
# What the two launch settings change, in the program's words.
set(chapter11_launch_blocking
    "Environment: CUDA_LAUNCH_BLOCKING=1"
    "CHECK seed_sync_serializes: skipped \\(CUDA_LAUNCH_BLOCKING=1: each kernel launch returns only when its kernel is done"
    "seed [0-9.]+ ms, fixed [0-9.]+ ms \\(median of 3 runs, 2 ms spins\\)"
    "CHECK fixed_normal_sum: .* PASS"
    # the slow sum() had finished before A was freed: record_stream had nothing to wait for
    "CHECK fixed_record_stream: skipped \\(CUDA_LAUNCH_BLOCKING=1: sum\\(\\) on the side stream had finished before A was freed"
    "CHECK graph_replay_matches_eager: 0 of 16384 values differ from the CPU reference .*PASS|CHECK graph_replay_matches_eager: skipped \\(CUDA_LAUNCH_BLOCKING=1"
    "All [1-9][0-9]* checks passed")
set(chapter11_launch_blocking_args --repeats 3 --replays 50 --spin-ms 2 --matrix 128)
set(chapter11_one_queue_args --repeats 3 --replays 50 --matrix 128)
set(chapter11_one_queue
    "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
    "CHECK seed_sync_serializes: skipped \\(CUDA_DEVICE_MAX_CONNECTIONS=1: stream1's multiply waits"
    "seed [0-9.]+ ms, fixed [0-9.]+ ms \\(median of 3 runs, 10 ms spins\\)"
    "CHECK graph_replay_matches_eager: 0 of 16384 values differ from the CPU reference"
    "CHECK graph_replay_speedup: .* PASS"
    "All [1-9][0-9]* checks passed")

if(TARGET ${CHAPTER})
  chapter_test(NAME all LABELS gpu timing
               MATCH ${chapter11_results} ${chapter11_timed}
                     "CHECK pool_stream_non_blocking: .* PASS"
                     "cudaDeviceGetStreamPriorityRange: least -?[0-9]+, greatest -?[0-9]+"
               NO_MATCH "FAIL")
  # Results only, small and quick: what the sanitizer runs too.
  chapter_test(NAME results LABELS gpu ARGS --no-timing --matrix 128 --spin-ms 2
               MATCH ${chapter11_results}
                     "CHECK seed_sync_serializes: skipped \\(--no-timing was given\\)"
               NO_MATCH "FAIL")
  chapter_test(NAME trace_file LABELS gpu ARGS --no-timing --matrix 64 --spin-ms 2
               --trace pytorch_streams_trace.json
               MATCH "Trace written to pytorch_streams_trace.json")
  # The seed's torch.cuda.device(1) example; skipped (77) with fewer than two devices.
  chapter_test(NAME multi_device LABELS gpu multigpu ARGS --multi-device
               MATCH "CHECK device_guard_sets_device: .* PASS"
                     "CHECK seed_tensors_on_gpu1: .* PASS"
                     "CHECK seed_z_stays_on_gpu0: .* PASS"
                     "CHECK seed_c_equals_a_plus_b: 0 of 2 values differ"
                     "All [1-9][0-9]* checks passed")

  # One test per part of the lesson (--part NAME); the timed parts are labelled timing.
  foreach(part IN LISTS chapter11_parts)
    string(REPLACE "|" ";" fields "${part}")
    list(POP_FRONT fields name number)
    set(labels gpu)
    set(no_timing)
    if(name MATCHES "^(race|record)$")
      list(APPEND labels timing)
    elseif(name MATCHES "^(serialize|capture)$")
      set(no_timing --no-timing)
    endif()
    chapter_test(NAME part.${name} LABELS ${labels} ARGS --part ${name} ${no_timing}
                 MATCH "== Part ${number} of 9: ${name}" ${fields} "All [1-9][0-9]* checks passed"
                 NO_MATCH "FAIL" "== Part [^${number}] of 9")
  endforeach()
  # The capture part at --replays 1 (the flag's minimum): replays match the CPU's results; one
  # replay is too few to claim a ratio, and the check says so.
  chapter_test(NAME capture LABELS gpu ARGS --part capture --replays 1
               MATCH "CHECK graph_replay_matches_eager: 0 of 16384 values differ from the CPU reference"
                     "CHECK graph_replay_reads_new_input: 0 of 16384 values differ from the CPU reference"
                     "CHECK graph_replay_speedup: skipped \\(fewer than 20 replays\\)"
                     "All [1-9][0-9]* checks passed"
               NO_MATCH "FAIL")
  # Control: under CUDA_LAUNCH_BLOCKING=1 (bars not adapted) stream1's spin is over before the
  # host issues stream2's work, so the fixed version serializes too and the check must FAIL.
  chapter_control(CHECK seed_sync_serializes ARGS --part serialize)
  # The commands the lesson suggests.
  chapter_test(NAME try.short_spin LABELS gpu timing ARGS --spin-ms 1
               MATCH "CHECK seed_sync_serializes: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
  foreach(try IN ITEMS "serialize;--spin-ms;1" "matmul;--matrix;4096" "race;--spin-ms;1"
                      "record;--spin-ms;1")
    list(POP_FRONT try part)
    string(REPLACE ";" "_" suffix "${try}")
    string(REPLACE "--" "" suffix "${suffix}")
    string(REPLACE "-" "_" suffix "${suffix}")
    set(labels gpu timing)
    if(part STREQUAL "matmul")  # no timed check: it need not run alone
      set(labels gpu)
    endif()
    chapter_test(NAME try.${part}.${suffix} LABELS ${labels} ARGS --part ${part} ${try}
                 MATCH "== Part [0-9] of 9: ${part}" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
  endforeach()
  chapter_test(NAME try.many_replays LABELS gpu timing ARGS --part capture --replays 1000
               MATCH "CHECK graph_replay_speedup: .* PASS" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
  # The launch environments users run under: every check passes or says why it is skipped (with
  # fewer timed repeats and replays than the lesson's, and under launch blocking shorter spins:
  # the same checks in less time).
  chapter_test(NAME env.launch_blocking LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
               ARGS ${chapter11_launch_blocking_args}
               MATCH ${chapter11_launch_blocking} NO_MATCH "FAIL")
  chapter_test(NAME env.one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
               ARGS ${chapter11_one_queue_args}
               MATCH ${chapter11_one_queue} NO_MATCH "FAIL")
  # The flags at their extremes (the others: try.short_spin at --spin-ms 1, capture at
  # --replays 1, try.matmul.matrix_4096 at --matrix 4096): every check passes or says why not.
  chapter_test(NAME extremes.min LABELS gpu ARGS --matrix 16 --spin-ms 1 --repeats 1 --replays 1
               --no-timing
               MATCH "CHECK seed_C_equals_A_mm_A: 0 of 256 values differ" ${chapter11_results}
               NO_MATCH "FAIL")
  chapter_test(NAME extremes.spin_ms_max LABELS gpu ARGS --part race --spin-ms 1000
               MATCH "CHECK seed_normal_sum_race_shown: sum\\(\\) read A before normal_\\(\\): it returned.* PASS"
                     "CHECK fixed_normal_sum: .* PASS" "All [1-9][0-9]* checks passed"
               NO_MATCH "FAIL")
  chapter_test(NAME extremes.repeats_max LABELS gpu timing ARGS --part serialize --repeats 100
               --spin-ms 1
               MATCH "== Part 3 of 9: serialize" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
  chapter_test(NAME extremes.replays_max LABELS gpu timing ARGS --part capture --replays 10000
               MATCH "CHECK graph_replay_matches_eager: 0 of 16384 values differ"
                     "CHECK graph_replay_speedup: .* PASS" "All [1-9][0-9]* checks passed"
               NO_MATCH "FAIL")
  chapter_test(NAME args.part_nosuch LABELS args host ARGS --part nosuch EXIT 2
               MATCH "--part expects one of all, streams, seeds, serialize, matmul, race, record, priorities, devices, capture")
  chapter_bad_values(FLAG replays CASES zero=0 text=many too_big=10001
                     EXPECT "--replays expects an integer from 1 to 10000, got '<value>'")

  chapter_test(NAME args.matrix_zero LABELS args host ARGS --matrix 0 EXIT 2
               MATCH "--matrix expects an integer from 16 to 4096, got '0'")
  chapter_test(NAME args.matrix_negative LABELS args host ARGS --matrix -5 EXIT 2
               MATCH "--matrix expects an integer from 16 to 4096, got '-5'")
  chapter_test(NAME args.matrix_not_a_number LABELS args host ARGS --matrix big EXIT 2
               MATCH "--matrix expects an integer from 16 to 4096, got 'big'")
  chapter_test(NAME args.matrix_too_big LABELS args host ARGS --matrix 5000 EXIT 2
               MATCH "--matrix expects an integer from 16 to 4096, got '5000'")
  chapter_test(NAME args.spin_ms_zero LABELS args host ARGS --spin-ms 0 EXIT 2
               MATCH "--spin-ms expects an integer from 1 to 1000, got '0'")
  chapter_test(NAME args.spin_ms_negative LABELS args host ARGS --spin-ms -1 EXIT 2
               MATCH "--spin-ms expects an integer from 1 to 1000, got '-1'")
  chapter_test(NAME args.spin_ms_not_a_number LABELS args host ARGS --spin-ms soon EXIT 2
               MATCH "--spin-ms expects an integer from 1 to 1000, got 'soon'")
  chapter_test(NAME args.spin_ms_too_big LABELS args host ARGS --spin-ms 1001 EXIT 2
               MATCH "--spin-ms expects an integer from 1 to 1000, got '1001'")
  chapter_test(NAME args.repeats_zero LABELS args host ARGS --repeats 0 EXIT 2
               MATCH "--repeats expects an integer from 1 to 100, got '0'")
  chapter_test(NAME args.repeats_negative LABELS args host ARGS --repeats -3 EXIT 2
               MATCH "--repeats expects an integer from 1 to 100, got '-3'")
  chapter_test(NAME args.repeats_not_a_number LABELS args host ARGS --repeats many EXIT 2
               MATCH "--repeats expects an integer from 1 to 100, got 'many'")
  chapter_test(NAME args.repeats_too_big LABELS args host ARGS --repeats 101 EXIT 2
               MATCH "--repeats expects an integer from 1 to 100, got '101'")
  chapter_test(NAME args.multi_device_takes_no_value LABELS args host ARGS --multi-device=yes EXIT 2
               MATCH "--multi-device takes no value, got 'yes'")

  # libtorch keeps its cached device memory and its stream pools until the process ends, which
  # memcheck's leak check reports; the cross-stream races shown on purpose are outside what
  # any sanitizer tool checks. racecheck and synccheck look at every kernel that runs here.
  # Every kernel launch costs time under the tools (racecheck most), so the program runs the
  # fewest: --no-timing (given by chapter_sanitizer_tests) skips the timed loops of parts serialize
  # and capture, whose thousands of launches took racecheck 300 s.
  chapter_sanitizer_tests(TOOLS racecheck synccheck ARGS --matrix 64 --spin-ms 2 --repeats 1 --replays 1)
endif()

if(CUDA_STREAMS_TORCH_PYTHON)
  set(python_test ${CHAPTER}.python)
  set(python_expect)
  foreach(regex IN LISTS chapter11_results chapter11_timed)
    list(APPEND python_expect --match "${regex}")
  endforeach()
  add_test(NAME ${python_test}
           COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} --exit 0 ${python_expect} --no-match FAIL
                   -- ${CUDA_STREAMS_TORCH_PYTHON} ${CUDA_STREAMS_TORCH_SCRIPT})
  set_tests_properties(${python_test} PROPERTIES LABELS "gpu;timing;python" SKIP_RETURN_CODE 77
                       TIMEOUT 300 RUN_SERIAL TRUE ENVIRONMENT "PYTHONUNBUFFERED=1")

  set(python_test ${CHAPTER}.python.results)
  set(python_expect)
  foreach(regex IN LISTS chapter11_results)
    list(APPEND python_expect --match "${regex}")
  endforeach()
  add_test(NAME ${python_test}
           COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} --exit 0 ${python_expect} --no-match FAIL
                   -- ${CUDA_STREAMS_TORCH_PYTHON} ${CUDA_STREAMS_TORCH_SCRIPT}
                   --no-timing --matrix 128 --spin-ms 2)
  set_tests_properties(${python_test} PROPERTIES LABELS "gpu;python" SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "PYTHONUNBUFFERED=1")

  # The Python capture part, and the Python script under the two launch settings.
  function(chapter11_python_test name labels)
    cmake_parse_arguments(T "" "" "ARGS;MATCH;ENV" ${ARGN})
    set(expect)
    foreach(regex IN LISTS T_MATCH)
      list(APPEND expect --match "${regex}")
    endforeach()
    add_test(NAME ${CHAPTER}.python.${name}
             COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} --exit 0 ${expect} --no-match FAIL
                     -- ${CUDA_STREAMS_TORCH_PYTHON} ${CUDA_STREAMS_TORCH_SCRIPT} ${T_ARGS})
    set_tests_properties(${CHAPTER}.python.${name} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 77
                         TIMEOUT 300 RUN_SERIAL TRUE ENVIRONMENT "PYTHONUNBUFFERED=1;${T_ENV}")
  endfunction()
  # The capture part's results (its speedup is checked by the whole script, test python): with
  # --no-timing it need not run alone.
  chapter11_python_test(capture "gpu;python" ARGS --part capture --no-timing
                        MATCH "== Part 9 of 9: capture"
                              "CHECK graph_replay_matches_eager: 0 of 16384 values differ from the CPU reference"
                              "CHECK graph_replay_reads_new_input: 0 of 16384 values differ from the CPU reference"
                              "CHECK graph_replay_speedup: skipped \\(--no-timing was given\\)"
                              "All [1-9][0-9]* checks passed")
  # The README's "Try:" of part 7, in Python.
  chapter11_python_test(part.priorities "gpu;python" ARGS --part priorities
                        MATCH "== Part 7 of 9: priorities" "CHECK priority_mapping: .* PASS"
                              "All [1-9][0-9]* checks passed")
  chapter11_python_test(env.launch_blocking "gpu;timing;python" ENV CUDA_LAUNCH_BLOCKING=1
                        ARGS ${chapter11_launch_blocking_args} MATCH ${chapter11_launch_blocking})
  chapter11_python_test(env.one_connection "gpu;timing;python" ENV CUDA_DEVICE_MAX_CONNECTIONS=1
                        ARGS ${chapter11_one_queue_args} MATCH ${chapter11_one_queue})

  # Bad command lines exit 2 before torch is imported.
  foreach(bad IN ITEMS "--spin-ms;0" "--matrix;5000" "--repeats;many" "--replays;0")
    list(GET bad 0 flag)
    list(GET bad 1 value)
    string(REGEX REPLACE "^--" "" flag_name ${flag})
    string(REPLACE "-" "_" flag_name ${flag_name})
    set(python_test ${CHAPTER}.python.args.${flag_name}_${value})
    add_test(NAME ${python_test}
             COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} --exit 2
                     --match "argument ${flag}: expects an integer from [0-9]+ to [0-9]+, got '${value}'"
                     -- ${CUDA_STREAMS_TORCH_PYTHON} ${CUDA_STREAMS_TORCH_SCRIPT} ${flag} ${value})
    set_tests_properties(${python_test} PROPERTIES LABELS "args;host;python" SKIP_RETURN_CODE 77
                         TIMEOUT 60)
  endforeach()
endif()
