# Chapter 02: the default stream vs created streams, built twice: with the legacy default stream
# (02_default_vs_custom_streams) and with --default-stream per-thread (..._per_thread).
set(ch02_legacy ${CHAPTER})
set(ch02_per_thread ${CHAPTER}_per_thread)

# Results: every part, run once without timing, verifies its kernels against the host's records.
foreach(exe IN ITEMS ${ch02_legacy} ${ch02_per_thread})
  chapter_test(NAME result EXE ${exe} ARGS --no-timing LABELS gpu
               MATCH "CHECK concurrency_kernel_runs: 0 of [0-9]+ values differ.*PASS"
                     "CHECK threads_kernel_runs: 0 of [0-9]+ values differ.*PASS"
                     "CHECK seed_mm_C \\(4096 entries\\): 0 of 4096 values differ.*PASS"
                     "CHECK seed_res2 \\(t2 \\* 3\\): 0 of 1000000 values differ.*PASS"
                     "torch.Size\\(\\[1000, 1000\\]\\) torch.Size\\(\\[1000, 1000\\]\\)"
                     "All [1-9][0-9]* checks passed")
endforeach()

# One test per part, in each build: the part alone, with the timed checks that prove its lesson.
# Stream 0 is the legacy default stream in the first build and each host thread's own stream in
# the per-thread build, so parts legacy and threads prove opposite things in the two.
set(ch02_streams_both "CHECK cudaStreamLegacy_serializes: .* PASS"
                      "CHECK cudaStreamPerThread_does_not_serialize: .* PASS")
set(ch02_${ch02_legacy}_legacy "CHECK stream0_serializes_blocking_streams: .* PASS" ${ch02_streams_both})
set(ch02_${ch02_per_thread}_legacy "CHECK stream0_does_not_serialize: .* PASS" ${ch02_streams_both})
set(ch02_${ch02_legacy}_threads "CHECK threads_share_the_legacy_stream: .* PASS")
set(ch02_${ch02_per_thread}_threads "CHECK threads_run_concurrently: .* PASS")
foreach(exe IN ITEMS ${ch02_legacy} ${ch02_per_thread})
  set(ch02_${exe}_concurrency "CHECK concurrency_speedup: .* PASS")
  set(ch02_${exe}_connections "CHECK (false_dependencies|depth_first_within_ideal): .* PASS")
  set(ch02_${exe}_seed_mm "CHECK seed_mm_two_streams: .* PASS")
  set(ch02_${exe}_seed_sync "CHECK seed_sync_inside_is_serial: .* PASS"
                            "CHECK seed_sync_once_overlaps: .* PASS")
  foreach(part IN ITEMS concurrency legacy threads connections seed_mm seed_sync)
    chapter_test(NAME part.${part} EXE ${exe} ARGS --part ${part} LABELS gpu timing
                 MATCH "== Part [1-6] of 6: ${part}:" ${ch02_${exe}_${part}}
                       "All [1-9][0-9]* checks passed"
                 NO_MATCH "FAIL")
  endforeach()
endforeach()

# Hardware queues: the variable must be in the environment before the program starts.
foreach(exe IN ITEMS ${ch02_legacy} ${ch02_per_thread})
  chapter_test(NAME timing.connections_8 EXE ${exe} ARGS --part connections LABELS gpu timing
               ENV CUDA_DEVICE_MAX_CONNECTIONS=8
               MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=8:" "  hardware queues: 8, streams per queue: up to"
                     "CHECK false_dependencies: .* PASS" "CHECK breadth_first_no_slower: .* PASS")
  chapter_test(NAME timing.connections_32 EXE ${exe} ARGS --part connections LABELS gpu timing
               ENV CUDA_DEVICE_MAX_CONNECTIONS=32
               MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=32:" "  hardware queues: 32, streams per queue: up to"
                     "CHECK depth_first_within_ideal: .* PASS"
                     "CHECK breadth_first_within_ideal: .* PASS")
endforeach()

# The lesson: the whole program, in both builds.
foreach(exe IN ITEMS ${ch02_legacy} ${ch02_per_thread})
  set(default_stream legacy)  # what each build must say it was built with
  if(exe STREQUAL "${ch02_per_thread}")
    set(default_stream per-thread)
  endif()
  chapter_test(NAME lesson EXE ${exe} LABELS gpu timing
               MATCH "== Part 6 of 6: seed_sync" "Build: --default-stream ${default_stream}"
                     "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
  # CUDA_LAUNCH_BLOCKING=1: one host thread cannot overlap streams; the overlap checks skip with
  # the reason, and the program says what it changed. 8 streams in part connections: each of its
  # launches now waits for its kernel, so 32 streams would take 32 x 8 kernel times per layout.
  chapter_test(NAME env.launch_blocking EXE ${exe} LABELS gpu timing ENV CUDA_LAUNCH_BLOCKING=1
               ARGS --streams 8
               MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                     "CHECK concurrency_speedup: skipped \\(CUDA_LAUNCH_BLOCKING=1"
                     "CHECK cudaStreamLegacy_serializes: .* \\(blocking time / one kernel's\\) \\.\\.\\. PASS"
                     "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
  # CUDA_DEVICE_MAX_CONNECTIONS=1: every stream shares one hardware queue.
  chapter_test(NAME env.one_connection EXE ${exe} LABELS gpu timing
               ENV CUDA_DEVICE_MAX_CONNECTIONS=1
               MATCH "CUDA_DEVICE_MAX_CONNECTIONS=1: the streams share 1 hardware work queue"
                     "hardware queues: 1, streams per queue: up to 32"
                     "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
endforeach()

# Bad command lines: exit 2 and one line naming the flag and its range, before any CUDA call.
chapter_bad_values(FLAG kernels CASES zero=0 negative=-1 text=many too_big=65
                   EXPECT "--kernels expects an integer from 1 to 64, got '<value>'")
chapter_bad_values(FLAG kernel-ms CASES zero=0 negative=-2 text=fast too_small=0.05 too_big=21
                   EXPECT "--kernel-ms expects a number from 0.1 to 20, got '<value>'")
chapter_bad_values(FLAG threads CASES zero=0 negative=-4 text=four too_big=33
                   EXPECT "--threads expects an integer from 1 to 32, got '<value>'")
chapter_bad_values(FLAG streams CASES zero=0 negative=-32 text=lots too_big=129
                   EXPECT "--streams expects an integer from 1 to 128, got '<value>'")
chapter_bad_values(FLAG matrix CASES zero=0 negative=-1000 text=big too_small=15 too_big=4097
                   EXPECT "--matrix expects an integer from 16 to 4096, got '<value>'")
chapter_bad_values(FLAG repeats CASES zero=0 negative=-5 text=five too_big=51
                   EXPECT "--repeats expects an integer from 1 to 50, got '<value>'")
chapter_bad_values(FLAG part CASES unknown=overlap
                   EXPECT "--part expects one of all, concurrency, legacy, threads, connections, seed_mm, seed_sync, got '<value>'")
chapter_test(NAME args.part_nosuch ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, concurrency, legacy, threads, connections, seed_mm, seed_sync, got 'nosuch'"
             LABELS args host)
chapter_test(NAME args.part_missing_value ARGS --part EXIT 2 MATCH "--part needs a value"
             LABELS args host)
# The per-thread build parses the same flags.
chapter_test(NAME args.kernels_zero EXE ${ch02_per_thread} ARGS --kernels 0 EXIT 2
             MATCH "--kernels expects an integer from 1 to 64, got '0'" LABELS args host)
# CUDA_DEVICE_MAX_CONNECTIONS is validated like a flag: the driver takes 1..32.
foreach(case_value IN ITEMS "zero=0" "text=eight" "too_big=33" "negative=-8")
  string(REPLACE "=" ";" pair ${case_value})
  list(GET pair 0 case)
  list(GET pair 1 value)
  chapter_test(NAME args.connections_env_${case} ARGS --part connections EXIT 2
               ENV CUDA_DEVICE_MAX_CONNECTIONS=${value}
               MATCH "CUDA_DEVICE_MAX_CONNECTIONS must be an integer from 1 to 32, got '${value}'"
               LABELS args host)
endforeach()

# Every flag at its minimum, then the counts at their maximum and the longest kernels: each check
# passes or says why it is skipped.
foreach(exe IN ITEMS ${ch02_legacy} ${ch02_per_thread})
  chapter_test(NAME extremes.min EXE ${exe} LABELS gpu timing
               ARGS --kernels 1 --kernel-ms 0.1 --threads 1 --streams 1 --matrix 16 --repeats 1
               MATCH "CHECK seed_mm_C \\(256 entries\\): 0 of 256 values differ.*PASS"
                     "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
  chapter_test(NAME extremes.max_counts EXE ${exe} LABELS gpu timing
               ARGS --kernels 64 --threads 32 --streams 128 --matrix 4096 --repeats 1
               MATCH "CHECK concurrency_speedup: .* PASS" "CHECK false_dependencies: .* PASS"
                     "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
endforeach()
chapter_test(NAME extremes.max_kernel_ms LABELS gpu timing
             ARGS --kernel-ms 20 --kernels 2 --threads 2 --streams 2 --repeats 1 --matrix 16
             MATCH "CHECK stream0_serializes_blocking_streams: .* PASS"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME extremes.max_kernel_ms EXE ${ch02_per_thread} LABELS gpu timing
             ARGS --kernel-ms 20 --kernels 2 --threads 2 --streams 2 --repeats 1 --matrix 16
             MATCH "CHECK stream0_does_not_serialize: .* PASS"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
# The most repeats, on the quickest part that times something.
foreach(exe IN ITEMS ${ch02_legacy} ${ch02_per_thread})
  chapter_test(NAME extremes.repeats_max EXE ${exe} LABELS gpu timing ARGS --part seed_mm --repeats 50
               MATCH "CHECK seed_mm_two_streams: .* PASS" "All [1-9][0-9]* checks passed"
               NO_MATCH "FAIL")
endforeach()

# compute-sanitizer (memcheck, synccheck, initcheck) on a small, quick run of every part.
# racecheck looks for hazards in shared memory, which only seed_mm's tiled matmul uses: it runs
# that part. Run on every part, it once reported "Internal Sanitizer Error: Detected a failure to
# track a kernel launch" and failed (1 run in 3 on the H200, in part threads, while two host
# threads launched at once): the tool losing a launch, not a hazard in the program.
foreach(exe IN ITEMS ${ch02_legacy} ${ch02_per_thread})
  chapter_sanitizer_tests(EXE ${exe} TOOLS memcheck synccheck initcheck
                          ARGS --kernels 2 --kernel-ms 0.1 --threads 2 --streams 4 --matrix 64)
  chapter_sanitizer_tests(EXE ${exe} TOOLS racecheck ARGS --part seed_mm --matrix 64)
endforeach()

# The commands the lesson suggests under "What to try next" (each must exit 0).
chapter_test(NAME try.one_queue_concurrency ARGS --part concurrency LABELS gpu timing
             ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "CUDA_DEVICE_MAX_CONNECTIONS=1: the streams share 1 hardware work queue"
                   "CHECK concurrency_speedup: .* \\(0.75 x ideal .*: 8 kernels in 1 turn\\) \\.\\.\\. PASS"
                   "All [1-9][0-9]* checks passed")
chapter_test(NAME try.kernels_32 ARGS --part concurrency --kernels 32 LABELS gpu timing
             MATCH "CHECK concurrency_speedup: .* PASS")
chapter_test(NAME try.kernel_ms_0_1 ARGS --part concurrency --kernel-ms 0.1 LABELS gpu timing
             MATCH "CHECK concurrency_speedup: .* PASS")
chapter_test(NAME try.legacy_10ms ARGS --part legacy --kernel-ms 10 LABELS gpu timing
             MATCH "CHECK stream0_serializes_blocking_streams: .* PASS")
chapter_test(NAME try.streams_48_on_16 ARGS --part connections --streams 48 LABELS gpu timing
             ENV CUDA_DEVICE_MAX_CONNECTIONS=16
             MATCH "hardware queues: 16, streams per queue: up to 3" "All [1-9][0-9]* checks passed")
chapter_test(NAME try.trace ARGS --part concurrency --trace ch02.json LABELS gpu timing
             MATCH "ch02.json" "All [1-9][0-9]* checks passed")
# The "Try:" line of each part.
chapter_test(NAME try.threads_16 EXE ${ch02_per_thread} ARGS --part threads --threads 16
             LABELS gpu timing MATCH "CHECK threads_run_concurrently: .* PASS")
chapter_test(NAME try.seed_mm_128 ARGS --part seed_mm --matrix 128 LABELS gpu timing
             MATCH "CHECK seed_mm_C \\(16384 entries\\): 0 of 16384 values differ.*PASS"
                   "All [1-9][0-9]* checks passed")
chapter_test(NAME try.seed_sync_10ms ARGS --part seed_sync --kernel-ms 10 LABELS gpu timing
             MATCH "CHECK seed_sync_once_overlaps: .* PASS" "All [1-9][0-9]* checks passed")

# Control: under CUDA_LAUNCH_BLOCKING=1 (bars not adapted) the N streams run one kernel at a time.
chapter_control(CHECK concurrency_speedup ARGS --part concurrency)
