# Chapter 07: every case is a pair. A broken variant passes its test when it reproduces its bug
# (exit status 3, and the words that say what went wrong); a fixed variant when it is right (0).
# The producers spin 50 ms against consumers of microseconds, so neither may ever flip.

chapter_test(NAME list LABELS host ARGS --list
             MATCH "host-read" "cross-stream" "reuse" "use-after-free" "over-sync" "legacy-default"
                   "hidden-by-setting")

# host-read: reading a pinned buffer right after cudaMemcpyAsync.
chapter_test(NAME host_read.broken LABELS gpu ARGS --case host-read --broken EXIT 3
             MATCH "BUG REPRODUCED: the host read [0-9]+ of 1048576 expected values"
                   "CHECK host_read_after_sync: 0 of 1048576 values differ"
                   "Exit status 3: the bug was reproduced")
chapter_test(NAME host_read.fixed LABELS gpu ARGS --case host-read --fixed
             MATCH "CHECK host_read_after_event_sync: 0 of 1048576 values differ" "All [1-9][0-9]* checks passed"
             NO_MATCH "BUG REPRODUCED")

# cross-stream: the seed's normal_() on stream p and sum() on stream c.
chapter_test(NAME cross_stream.broken LABELS gpu ARGS --case cross-stream --broken EXIT 3
             MATCH "BUG REPRODUCED: the consumer read [0-9]+ of 1048576 expected values \\(sum [0-9]+ instead of 3145726\\)")
chapter_test(NAME cross_stream.fixed LABELS gpu ARGS --case cross-stream --fixed
             MATCH "CHECK cross_stream_sum: the consumer read 1048576 of 1048576 expected values \\(sum 3145726, as on the CPU\\) ... PASS"
             NO_MATCH "BUG REPRODUCED")

# reuse: the next iteration overwrites a buffer another stream still reads.
chapter_test(NAME reuse.broken LABELS gpu ARGS --case reuse --broken EXIT 3
             MATCH "BUG REPRODUCED: the reader saw [0-9]+ of 1048576 values of iteration 1")
chapter_test(NAME reuse.fixed LABELS gpu ARGS --case reuse --fixed
             MATCH "CHECK reader_saw_iteration_1: 0 of 1048576 values differ"
                   "CHECK buffer_holds_iteration_2: 0 of 1048576 values differ"
             NO_MATCH "BUG REPRODUCED")

# use-after-free: cudaFreeAsync on the allocating stream while another stream reads.
chapter_test(NAME use_after_free.broken LABELS gpu ARGS --case use-after-free --broken EXIT 3
             MATCH "returned the same block"
                   "BUG REPRODUCED: the reader saw [0-9]+ of 1048576 values of its own buffer")
chapter_test(NAME use_after_free.fixed LABELS gpu ARGS --case use-after-free --fixed
             MATCH "CHECK reader_saw_its_buffer: 0 of 1048576 values differ"
                   "CHECK next_allocation_holds_its_data: 0 of 1048576 values differ"
                   "plain cudaFree of an unrelated buffer"
             NO_MATCH "BUG REPRODUCED")

# over-sync: right but slow; both variants measure both versions.
chapter_test(NAME over_sync.broken LABELS gpu timing ARGS --case over-sync --broken EXIT 3
             MATCH "CHECK over_synced_result: 0 of 16384 values differ"
                   "CHECK synced_once_result: 0 of 16384 values differ"
                   "CHECK over_sync_slowdown: .* PASS"
                   "BUG REPRODUCED: synchronizing after every launch made the same, correct work [0-9.]+x slower")
chapter_test(NAME over_sync.fixed LABELS gpu timing ARGS --case over-sync --fixed
             MATCH "CHECK synced_once_result: 0 of 16384 values differ"
                   "CHECK sync_once_speedup: .* PASS"
             NO_MATCH "BUG REPRODUCED")
chapter_test(NAME over_sync.fixed_no_timing LABELS gpu ARGS --case over-sync --fixed --no-timing
             MATCH "CHECK synced_once_result: 0 of 16384 values differ" "CHECK over_sync_slowdown: skipped \\(--no-timing")

# legacy-default: stream 0 hides the race between blocking streams.
chapter_test(NAME legacy_default.broken LABELS gpu ARGS --case legacy-default --broken EXIT 3
             MATCH "CHECK blocking_streams_look_right: with cudaStreamCreate streams the consumer read 1048576 of 1048576 expected values .* PASS"
                   "BUG REPRODUCED: with non-blocking streams the consumer read [0-9]+ of 1048576 expected values")
chapter_test(NAME legacy_default.fixed LABELS gpu ARGS --case legacy-default --fixed
             MATCH "CHECK event_wait_sum: the consumer read 1048576 of 1048576 expected values .* PASS"
             NO_MATCH "BUG REPRODUCED")

# hidden-by-setting: the seed's race, run again (a new process each) with the defaults, under
# CUDA_LAUNCH_BLOCKING=1 and under CUDA_DEVICE_MAX_CONNECTIONS=1: lost with the defaults, hidden by
# at least one setting (launch blocking always hides it); the fix is right under all three.
chapter_test(NAME hidden_by_setting.broken LABELS gpu ARGS --case hidden-by-setting --broken EXIT 3
             MATCH "CHECK hidden_race_by_default: with the default settings the race was lost ... PASS"
                   "BUG REPRODUCED: the same code gave the right sum under [12] of the 2 settings"
                   "CUDA_LAUNCH_BLOCKING=1 07_broken_vs_fixed_sync --case cross-stream --broken .* -> exit status 77")
chapter_test(NAME hidden_by_setting.fixed LABELS gpu ARGS --case hidden-by-setting --fixed
             MATCH "CHECK fixed_right_under_every_setting: the fixed code was right under 3 of the 3 settings ... PASS"
             NO_MATCH "BUG REPRODUCED")

# Every case at once.
chapter_test(NAME all.broken LABELS gpu timing ARGS --case all --broken EXIT 3
             MATCH "Exit status 3: the bug was reproduced" NO_MATCH "bug NOT reproduced")
chapter_test(NAME all.fixed LABELS gpu timing ARGS --case all --fixed
             MATCH "All [1-9][0-9]* checks passed" NO_MATCH "BUG REPRODUCED" "FAIL")
chapter_test(NAME trace_file LABELS gpu ARGS --case cross-stream --fixed --trace cross_stream.json
             MATCH "Trace written to cross_stream.json")

# Command-line validation, before any CUDA call.
chapter_test(NAME args.case_unknown LABELS args host ARGS --case nope --fixed EXIT 2
             MATCH "--case expects one of host-read, cross-stream, reuse, use-after-free, over-sync, legacy-default, hidden-by-setting, all, got 'nope'")
chapter_test(NAME args.part_unknown LABELS args host ARGS --part nosuch EXIT 2
             MATCH "--part expects one of all, host-read, cross-stream, reuse, use-after-free, over-sync, legacy-default, hidden-by-setting, got 'nosuch'")
chapter_test(NAME args.case_and_part LABELS args host ARGS --case reuse --part host-read EXIT 2
             MATCH "--case reuse and --part host-read: give one")
chapter_test(NAME args.broken_and_fixed LABELS args host ARGS --case host-read --broken --fixed EXIT 2
             MATCH "--broken and --fixed: give one of them, not both")
# With neither flag, the whole lesson: every case broken, then fixed.
chapter_test(NAME lesson LABELS gpu timing EXIT 0
             MATCH "CHECK host_read_bug_shown: the bug showed ... PASS"
                   "CHECK legacy_default_bug_shown: the bug showed ... PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
# The whole lesson with --no-timing: over-sync's bug (its running time) cannot be shown, and says so.
chapter_test(NAME lesson_no_timing LABELS gpu ARGS --no-timing EXIT 0
             MATCH "CHECK over_sync_slowdown: skipped \\(cannot be shown with --no-timing"
                   "CHECK host_read_bug_shown: the bug showed ... PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")
chapter_test(NAME args.broken_without_timing LABELS args host ARGS --case over-sync --broken --no-timing EXIT 2
             MATCH "--no-timing with --broken: over-sync's bug is its running time")
chapter_test(NAME args.delay_zero LABELS args host ARGS --delay-ms 0 --fixed EXIT 2
             MATCH "--delay-ms expects an integer from 1 to 10000, got '0'")
chapter_test(NAME args.delay_negative LABELS args host ARGS --delay-ms -5 --fixed EXIT 2
             MATCH "--delay-ms expects an integer from 1 to 10000, got '-5'")
chapter_test(NAME args.delay_not_a_number LABELS args host ARGS --delay-ms slow --fixed EXIT 2
             MATCH "--delay-ms expects an integer .* got 'slow'")
chapter_test(NAME args.delay_too_big LABELS args host ARGS --delay-ms 20000 --fixed EXIT 2
             MATCH "--delay-ms expects an integer from 1 to 10000, got '20000'")
chapter_test(NAME args.elements_zero LABELS args host ARGS --elements 0 --fixed EXIT 2
             MATCH "--elements expects a whole number from 1024 to 67108864 .* got '0'")
chapter_test(NAME args.elements_negative LABELS args host ARGS --elements -1 --fixed EXIT 2
             MATCH "--elements expects a whole number .* got '-1'")
chapter_test(NAME args.elements_not_a_number LABELS args host ARGS --elements many --fixed EXIT 2
             MATCH "--elements expects a whole number .* got 'many'")
chapter_test(NAME args.elements_too_big LABELS args host ARGS --elements 1G --fixed EXIT 2
             MATCH "--elements expects a whole number from 1024 to 67108864 .* got '1G'")

# The fixed variants must be clean under every tool (the broken ones are wrong on purpose), one
# case per set. hidden-by-setting has none: it runs cross-stream (checked here) again in child
# processes, each under a setting of its own, and under the tool that whole run had not ended
# after 5 minutes on an H200.
foreach(case IN ITEMS host-read cross-stream reuse use-after-free over-sync legacy-default)
  chapter_sanitizer_tests(NAME ${case} ARGS --case ${case} --fixed --elements 256K)
endforeach()

# One test per part (--part is the same as --case; with neither --broken nor --fixed a part runs
# broken, then fixed).
foreach(part IN ITEMS host-read cross-stream reuse use-after-free legacy-default hidden-by-setting)
  chapter_test(NAME part.${part} LABELS gpu ARGS --part ${part}
               MATCH "== Part [0-9] of 7: ${part}" "BUG REPRODUCED" "All [1-9][0-9]* checks passed"
               NO_MATCH "FAIL")
endforeach()
chapter_test(NAME part.over-sync LABELS gpu timing ARGS --part over-sync
             MATCH "== Part 5 of 7: over-sync" "CHECK over_sync_slowdown: .* PASS"
                   "CHECK sync_once_speedup: .* PASS" "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The commands the lesson suggests ("Try:" and "What to try next").
chapter_test(NAME try.short_delay LABELS gpu timing ARGS --delay-ms 1
             MATCH "All [1-9][0-9]* checks passed" NO_MATCH "FAIL" "bug NOT reproduced")
chapter_test(NAME try.host_read_short_delay LABELS gpu ARGS --part host-read --delay-ms 1
             MATCH "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.reuse_short_delay LABELS gpu ARGS --part reuse --delay-ms 5
             MATCH "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.use_after_free_fixed LABELS gpu ARGS --part use-after-free --fixed
             MATCH "plain cudaFree of an unrelated buffer" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.over_sync_no_timing LABELS gpu ARGS --part over-sync --fixed --no-timing
             MATCH "CHECK synced_once_result: 0 of 16384" "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.legacy_default_broken LABELS gpu ARGS --part legacy-default --broken EXIT 3
             MATCH "CHECK blocking_streams_look_right: .* PASS" "BUG REPRODUCED")
chapter_test(NAME try.hidden_by_setting_fixed LABELS gpu ARGS --part hidden-by-setting --fixed
             MATCH "CHECK fixed_right_under_every_setting: .* PASS" NO_MATCH "FAIL")
chapter_test(NAME try.one_connection_cross_stream LABELS gpu ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             ARGS --part cross-stream MATCH "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.launch_blocking_cross_stream LABELS gpu ENV CUDA_LAUNCH_BLOCKING=1
             ARGS --part cross-stream
             MATCH "CHECK cross_stream_bug_shown: skipped \\(cannot be shown under CUDA_LAUNCH_BLOCKING=1"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.launch_blocking_host_read LABELS gpu ENV CUDA_LAUNCH_BLOCKING=1
             ARGS --part host-read
             MATCH "CHECK host_read_bug_shown: (skipped \\(did not show under CUDA_LAUNCH_BLOCKING=1|the bug showed)"
                   "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
chapter_test(NAME try.small_buffers LABELS gpu ARGS --part cross-stream --elements 1024
             MATCH "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
# The flags' other extremes (--delay-ms 1 and --elements 1024 are the two tests above): the
# longest spin still loses the race (and takes 10 s), the largest buffers are still right.
chapter_test(NAME extremes.delay_max LABELS gpu ARGS --case cross-stream --broken --delay-ms 10000
             EXIT 3 MATCH "BUG REPRODUCED: the consumer read [0-9]+ of 1048576 expected values"
             NO_MATCH "FAIL")
chapter_test(NAME extremes.elements_max LABELS gpu ARGS --part cross-stream --elements 64M
             MATCH "CHECK cross_stream_bug_shown: the bug showed ... PASS"
                   "CHECK cross_stream_sum: the consumer read 67108864 of 67108864 expected values"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL")

# The whole lesson under the two settings: each broken variant shows its bug or says that the
# setting hides it (a skipped check); every fixed variant is right; exit 0. Under
# CUDA_LAUNCH_BLOCKING=1 nothing is timed (over-sync's checks are skipped), so it need not run alone.
# The cross-stream lines are anchored at the line's start: part hidden-by-setting echoes its child
# runs' cross-stream lines indented, and those alone would match.
chapter_test(NAME launch_blocking LABELS gpu ENV CUDA_LAUNCH_BLOCKING=1
             MATCH "Environment: CUDA_LAUNCH_BLOCKING=1"
                   "CHECK host_read_bug_shown: (skipped \\(did not show under CUDA_LAUNCH_BLOCKING=1|the bug showed)"
                   "^CHECK cross_stream_bug_shown: skipped \\(cannot be shown under CUDA_LAUNCH_BLOCKING=1"
                   "^CHECK cross_stream_sum: .* PASS" "CHECK fixed_right_under_every_setting: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "bug NOT reproduced")
chapter_test(NAME one_connection LABELS gpu timing ENV CUDA_DEVICE_MAX_CONNECTIONS=1
             MATCH "Environment: CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "^CHECK cross_stream_bug_shown: skipped \\(cannot be shown under CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "CHECK reuse_bug_shown: skipped \\(cannot be shown under CUDA_DEVICE_MAX_CONNECTIONS=1"
                   "^CHECK cross_stream_sum: .* PASS" "CHECK sync_once_speedup: .* PASS"
                   "All [1-9][0-9]* checks passed"
             NO_MATCH "FAIL" "bug NOT reproduced")

# Each broken variant under each setting: its bug shows (exit 3), or the program says the setting
# hides it and exits 77. The pairs that the H200's whole-program runs showed as hidden must say so
# (EXIT 77 and the words; without a GPU the program's own SKIP line stands in): under
# CUDA_LAUNCH_BLOCKING=1 every case but hidden-by-setting (whose runs reset the settings) and
# host-read, under CUDA_DEVICE_MAX_CONNECTIONS=1 every race between two streams (the quick side's
# work waits in the one queue behind the slow stream's next kernel, held by the spin). Under
# CUDA_LAUNCH_BLOCKING=1 host-read keeps a narrow race (the copy itself stays asynchronous): it
# showed in 3 runs of 9 on the H200, so either outcome passes (EXIT 3 77, with its words).
# Every fixed variant is right under both.
foreach(setting IN ITEMS CUDA_LAUNCH_BLOCKING CUDA_DEVICE_MAX_CONNECTIONS)
  foreach(case IN ITEMS host-read cross-stream reuse use-after-free over-sync legacy-default hidden-by-setting)
    set(hidden_here FALSE)
    if((setting STREQUAL "CUDA_LAUNCH_BLOCKING" AND NOT case MATCHES "^(hidden-by-setting|host-read)$") OR
       (setting STREQUAL "CUDA_DEVICE_MAX_CONNECTIONS" AND
        case MATCHES "^(cross-stream|reuse|use-after-free|legacy-default)$"))
      set(hidden_here TRUE)
    endif()
    set(labels gpu)
    if(case STREQUAL "over-sync" AND setting STREQUAL "CUDA_DEVICE_MAX_CONNECTIONS")
      set(labels gpu timing)  # under CUDA_LAUNCH_BLOCKING=1 over-sync times nothing
    endif()
    if(hidden_here)
      chapter_test(NAME env.${setting}.${case}.broken LABELS ${labels} ENV ${setting}=1
                   ARGS --case ${case} --broken EXIT 77
                   MATCH "SKIP: (the bug cannot be shown under ${setting}=1|no usable CUDA device)")
    elseif(case STREQUAL "host-read" AND setting STREQUAL "CUDA_LAUNCH_BLOCKING")
      chapter_test(NAME env.${setting}.${case}.broken LABELS ${labels} ENV ${setting}=1
                   ARGS --case ${case} --broken EXIT 3 77
                   MATCH "BUG REPRODUCED|SKIP: (the bug did not show under CUDA_LAUNCH_BLOCKING=1|no usable CUDA device|no CUDA device found)"
                   NO_MATCH "FAIL")
    else()
      chapter_test(NAME env.${setting}.${case}.broken LABELS ${labels} ENV ${setting}=1
                   ARGS --case ${case} --broken EXIT 3 MATCH "BUG REPRODUCED" NO_MATCH "FAIL")
    endif()
    chapter_test(NAME env.${setting}.${case}.fixed LABELS ${labels} ENV ${setting}=1
                 ARGS --case ${case} --fixed MATCH "All [1-9][0-9]* checks passed" NO_MATCH "FAIL")
  endforeach()
endforeach()

# Hardware queues between 2 and 32 (CUDA_DEVICE_MAX_CONNECTIONS=N): where N is set above 1, each
# race first probes whether its two streams share a queue (a kernel held behind a spin in the slow
# stream, then one in the quick stream: does the quick one end before the spin?). Where they do,
# the quick side waits behind the slow stream's held kernel as under N=1, and the program says so
# (exit 77, "measured"); otherwise the bug shows (exit 3). legacy-default has a third stream, the
# legacy one: with 2 queues two of the three share one, and on the H200 the bug showed in 1 run of
# 3 and stayed hidden in 2 although the probe found p and c on queues of their own; there it says
# the three streams share 2 queues (exit 77) when the bug does not show. With 8 or 32 queues,
# streams created back to back get queues of their own (chapter 03): the bug shows.
foreach(connections IN ITEMS 2 3 8 32)
  set(outcome EXIT 3 MATCH "BUG REPRODUCED")
  if(connections LESS 4)
    set(outcome EXIT 3 77
        MATCH "BUG REPRODUCED|SKIP: (the bug cannot be shown under CUDA_DEVICE_MAX_CONNECTIONS=${connections}: (measured: the quick side's work waited|p, c and the legacy stream share ${connections} hardware queues)|no usable CUDA device|no CUDA device found)")
  endif()
  chapter_test(NAME env.connections_${connections}.legacy-default.broken LABELS gpu
               ENV CUDA_DEVICE_MAX_CONNECTIONS=${connections} ARGS --case legacy-default --broken
               ${outcome} NO_MATCH "FAIL")
endforeach()
foreach(case IN ITEMS cross-stream reuse use-after-free)
  chapter_test(NAME env.connections_2.${case}.broken LABELS gpu ENV CUDA_DEVICE_MAX_CONNECTIONS=2
               ARGS --case ${case} --broken EXIT 3 77
               MATCH "BUG REPRODUCED|SKIP: (the bug cannot be shown under CUDA_DEVICE_MAX_CONNECTIONS=2: measured: the quick side's work waited|no usable CUDA device|no CUDA device found)"
               NO_MATCH "FAIL")
endforeach()

# Control: under CUDA_LAUNCH_BLOCKING=1 every launch already waits: synchronizing once gains nothing.
chapter_control(CHECK sync_once_speedup ARGS --part over-sync --fixed)
