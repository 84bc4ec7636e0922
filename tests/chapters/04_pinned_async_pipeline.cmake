# Chapter 04: pinned memory, cudaHostRegister and the copy/compute pipeline.

# Every result the program checks against the CPU, in every run.
set(ch04_results
    "CHECK seed_two_streams: 0 of [0-9]+ values differ from the CPU reference ... PASS"
    "CHECK pageable_round_trip: 0 of [0-9]+ values differ from the CPU reference ... PASS"
    "CHECK registered_pointer_is_pinned: .* ... PASS"
    "CHECK registered_round_trip: 0 of [0-9]+ values differ from the CPU reference ... PASS"
    "CHECK pipeline_serial: 0 of [0-9]+ values differ from the CPU reference ... PASS"
    "CHECK pipeline_depth_first: 0 of [0-9]+ values differ from the CPU reference ... PASS"
    "CHECK pipeline_breadth_first: 0 of [0-9]+ values differ from the CPU reference ... PASS"
    "All [0-9]+ checks passed")

# Results at the default size, with the timelines (one row per stream) drawn.
chapter_test(NAME result LABELS gpu ARGS --no-timing
             MATCH ${ch04_results}
                   "CHECK seed_two_streams: 0 of 67108864 values"
                   "Depth-first: for each chunk" "Breadth-first: for each wave"
                   "stream 3 "
                   "CHECK bound_depth_first: skipped \\(--no-timing\\)"
             NO_MATCH "FAIL")
# Chunks that do not divide the data, a stream count that does not divide the chunks.
chapter_test(NAME result.uneven_chunks LABELS gpu ARGS --mib 7 --chunks 5 --streams 3 --no-timing
             MATCH ${ch04_results} "sizes differ by one element at most"
             NO_MATCH "FAIL")
# One stream: every order is serial, and the results are still right.
chapter_test(NAME result.one_stream LABELS gpu ARGS --mib 8 --chunks 3 --streams 1 --no-timing
             MATCH ${ch04_results}
             NO_MATCH "FAIL")
# More streams than chunks: the spare streams stay idle.
chapter_test(NAME result.spare_streams LABELS gpu ARGS --mib 4 --chunks 2 --streams 8 --no-timing
             MATCH ${ch04_results} "only 2 of the 8 streams get a chunk"
             NO_MATCH "FAIL")
# Below 32 MiB the program measures and prints, but skips the timing checks, saying why.
chapter_test(NAME result.too_small_to_time LABELS gpu ARGS --mib 16 --chunks 64 --repeats 1
             MATCH ${ch04_results}
                   "CHECK pinned_vs_pageable_h2d: skipped \\(--mib below 32 is too small"
                   "CHECK bound_depth_first: skipped \\(--mib below 32 is too small"
                   "ideal bound: [0-9.]+ ms"
             NO_MATCH "FAIL")

# The timed properties at the default size (256 MiB, 32 chunks, 4 streams).
chapter_test(NAME timing.pageable_vs_pinned LABELS gpu timing
             MATCH "CHECK pinned_vs_pageable_h2d: .* ... PASS"
                   "CHECK pinned_vs_pageable_d2h: .* ... PASS"
                   "CHECK pageable_async_call_blocks_h2d: .* ... PASS"
                   "CHECK pageable_async_call_blocks_d2h: .* ... PASS"
                   "CHECK pinned_async_call_returns_h2d: .* ... PASS"
                   "CHECK pinned_async_call_returns_d2h: .* ... PASS")
chapter_test(NAME timing.host_register LABELS gpu timing
             MATCH "CHECK registered_vs_pinned_h2d: .* ... PASS"
                   "CHECK registered_vs_pinned_d2h: .* ... PASS"
                   "CHECK registered_async_call_returns_h2d: .* ... PASS")
chapter_test(NAME timing.pipeline LABELS gpu timing
             MATCH "CHECK chunked_async_rate_h2d: .* ... PASS"
                   "CHECK chunked_async_rate_d2h: .* ... PASS"
                   "CHECK bound_depth_first: .* ... PASS"
                   "CHECK bound_breadth_first: .* ... PASS"
                   "CHECK speedup_depth_first: .* ... PASS"
                   "CHECK speedup_breadth_first: .* ... PASS"
                   "kernel calibrated once: [0-9]+ multiply-adds per element"
                   "All [0-9]+ checks passed")
# Another pipeline shape: more streams, fewer and larger chunks.
chapter_test(NAME timing.pipeline_8_streams_16_chunks LABELS gpu timing
             ARGS --streams 8 --chunks 16
             MATCH "CHECK bound_depth_first: .* ... PASS"
                   "CHECK bound_breadth_first: .* ... PASS"
                   "CHECK speedup_depth_first: .* ... PASS"
                   "CHECK speedup_breadth_first: .* ... PASS"
                   "All [0-9]+ checks passed")

# Every flag's validation: zero, negative, not a number, too big. Nothing runs; exit 2.
foreach(flag_range IN ITEMS "mib;65536" "chunks;1024" "streams;64" "repeats;1000")
  list(GET flag_range 0 flag)
  list(GET flag_range 1 most)
  math(EXPR too_big "${most} + 1")
  set(expects "--${flag} expects an integer from 1 to ${most}")
  chapter_test(NAME args.${flag}_zero LABELS args host ARGS --${flag} 0 EXIT 2
               MATCH "${expects}, got '0'")
  chapter_test(NAME args.${flag}_negative LABELS args host ARGS --${flag} -3 EXIT 2
               MATCH "${expects}, got '-3'")
  chapter_test(NAME args.${flag}_not_a_number LABELS args host ARGS --${flag} many EXIT 2
               MATCH "${expects}, got 'many'")
  chapter_test(NAME args.${flag}_too_big LABELS args host ARGS --${flag} ${too_big} EXIT 2
               MATCH "${expects}, got '${too_big}'")
  chapter_test(NAME args.${flag}_needs_value LABELS args host ARGS --${flag} EXIT 2
               MATCH "--${flag} needs a value")
endforeach()
# A size inside the flag's range that this machine cannot hold: host memory is checked before
# the GPU is touched, device memory right after the device is chosen; both name the flag.
chapter_test(NAME args.mib_does_not_fit LABELS args host ARGS --mib 65536 EXIT 2
             MATCH "--mib 65536: needs [0-9.]+ GiB of (host|device) memory")

# Small and quick under compute-sanitizer (which adds --no-timing).
chapter_sanitizer_tests(ARGS --mib 8 --chunks 4)
