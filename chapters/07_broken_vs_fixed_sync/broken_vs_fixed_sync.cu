// Chapter 07: broken and fixed synchronization, side by side. PyTorch's notes warn that in
// `with torch.cuda.stream(s): B = torch.sum(A)` sum() "may start execution before normal_()
// finishes!" Each case is a pair: --broken omits the wait it needs (over-sync: waits after every
// launch instead of once), --fixed is the one-line fix. In the races the slow side spins
// --delay-ms (50 ms), so the broken variant loses its race every time.
// clang-format off
//   cmake --preset default && cmake --build --preset default && build/bin/07_broken_vs_fixed_sync
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/07_broken_vs_fixed_sync/broken_vs_fixed_sync.cu common/src/*.cpp -o 07_broken_vs_fixed_sync
//   build/bin/07_broken_vs_fixed_sync --case cross-stream --broken     # exit 3: bug reproduced
// clang-format on
// --part NAME is --case NAME; --list, --help. Exit 0: all passed; 3: --broken showed its bug
// ("BUG REPRODUCED: ..."); 77: a setting hides it, or no GPU; 1: a check failed; 2: bad flags.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "broken_vs_fixed_sync_lab.cuh"
#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

constexpr int kBlock = 256;
constexpr std::uint32_t kFirstValues = 1u, kSecondValues = 1u << 30;  // a writer's 1st and 2nd fill

// Kernels (each grid-stride loop covers any n with any grid)
#define FOR_EACH_INDEX(i, n) \
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += gridDim.x * blockDim.x)

// The slow side of every race: holds its stream for a fixed time, whatever the clocks.
__global__ void spin_kernel(unsigned long long ns) {
  for (const auto start = cs::globaltimer_ns(); cs::globaltimer_ns() - start < ns;) continue;
}

// out[i] = base + i: every element has a value of its own, so a reader can tell whose data it saw.
__global__ void fill_kernel(std::uint32_t* out, std::size_t n, std::uint32_t base) {
  FOR_EACH_INDEX(i, n) out[i] = base + static_cast<std::uint32_t>(i);
}

__global__ void copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n) {
  FOR_EACH_INDEX(i, n) out[i] = in[i];
}

// The stand-in for normal_(): small whole numbers 1..5, so every sum is exact in any order.
__global__ void produce_kernel(float* a, std::size_t n) {
  FOR_EACH_INDEX(i, n) a[i] = static_cast<float>(i % 5 + 1);
}

// B = sum(A), and how many A[i] held the producer's value, so the program can say what it saw.
__global__ void sum_and_count_kernel(const float* a, std::size_t n, double* sum,
                                     unsigned long long* matches) {
  double partial = 0;
  unsigned long long seen = 0;
  FOR_EACH_INDEX(i, n) {
    partial += a[i];
    seen += a[i] == static_cast<float>(i % 5 + 1) ? 1 : 0;
  }
  for (int offset = 16; offset > 0; offset /= 2) {  // warp shuffles, then one atomic per warp
    partial += __shfl_down_sync(0xffffffffu, partial, offset);
    seen += __shfl_down_sync(0xffffffffu, seen, offset);
  }
  if (threadIdx.x % 32 != 0) return;
  atomicAdd(sum, partial);
  atomicAdd(matches, seen);
}

// One of over-sync's small kernels: a short wait, then x -> 3x + k + 1 (order matters).
__global__ void step_kernel(std::uint32_t* data, std::size_t n, unsigned k, unsigned long long ns) {
  for (const auto start = cs::globaltimer_ns(); cs::globaltimer_ns() - start < ns;) continue;
  FOR_EACH_INDEX(i, n) data[i] = 3u * data[i] + k + 1u;
}

// Lazy loading (default since CUDA 12.2) loads a kernel at its first launch, which may wait for
// running work and order a racing consumer by accident: launch each one up front.
void load_every_kernel() {
  lab::SumBuffers scratch(2);
  spin_kernel<<<1, 1>>>(0);
  fill_kernel<<<1, kBlock>>>(scratch.counter, 1, 1u);
  copy_kernel<<<1, kBlock>>>(scratch.counter, scratch.counter, 1);
  produce_kernel<<<1, kBlock>>>(scratch.a, 2);
  sum_and_count_kernel<<<1, kBlock>>>(scratch.a, 2, scratch.sum, scratch.matches);
  step_kernel<<<1, kBlock>>>(scratch.counter, 1, 0u, 0);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaDeviceSynchronize());
}

// Where CUDA_DEVICE_MAX_CONNECTIONS is set above 1: do two streams share a hardware queue? If so,
// quick's kernel waits behind slow's held kernel (a false dependency, chapter 02), as a race would.
void probe_queues(lab::Lab& lab, cudaStream_t slow, cudaStream_t quick) {
  if (!lab.env.connections_from_env || lab.env.max_connections == 1) return;
  spin_kernel<<<1, 1, 0, slow>>>(lab.delay_ns());
  spin_kernel<<<1, 1, 0, slow>>>(0);  // slow's next item: held until the spin ends
  spin_kernel<<<1, 1, 0, quick>>>(0);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(quick));
  lab.queue_shared = cudaStreamQuery(slow) == cudaSuccess;  // the spin had ended first
  CS_CHECK(cudaDeviceSynchronize());
}

// Part 1: host-read: the host reads a pinned buffer right after cudaMemcpyAsync
void part_host_read(lab::Lab& lab, bool broken) {
  const std::size_t n = lab.n, bytes = n * sizeof(std::uint32_t);
  std::uint32_t *device = nullptr, *host = nullptr;
  CS_CHECK(cudaMalloc(&device, bytes));
  CS_CHECK(cudaMallocHost(&host, bytes));  // pinned: the copy really is asynchronous
  std::fill(host, host + n, 0u);
  cudaStream_t stream = nullptr;
  cudaEvent_t copied = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CS_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  const std::vector<std::uint32_t> want = lab::values_from(1u, n);
  spin_kernel<<<1, 1, 0, stream>>>(lab.delay_ns());  // the slow producer
  fill_kernel<<<lab.grid(), kBlock, 0, stream>>>(device, n, 1u);
  CS_CHECK_LAUNCH();
  // core: host-read (13 lines)
  CS_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
  CS_CHECK(cudaEventRecord(copied, stream));
  if (broken) {  // the bug: the copy was only queued, and the host reads at once
    const std::size_t seen = n - cs::compare(host, want.data(), n).wrong;
    lab.bug_verdict("host_read_bug_shown", seen < n,
                    cs::format("the host read %zu of %zu expected values", seen, n),
                    lab.hides(lab::kOnlyTheCopyRaced, nullptr, "did not show"));
    CS_CHECK(cudaStreamSynchronize(stream));  // the same buffer, read again: the data was late
    cs::verify("host_read_after_sync", host, want.data(), n);
  } else {
    CS_CHECK(cudaEventSynchronize(copied));  // the fix (cudaStreamSynchronize would do too)
    cs::verify("host_read_after_event_sync", host, want.data(), n);
  }
  CS_CHECK(cudaEventDestroy(copied));
  CS_CHECK(cudaStreamDestroy(stream));
  CS_CHECK(cudaFreeHost(host));
  CS_CHECK(cudaFree(device));
}

// The seed's scene (also part 6's): a slow producer fills A on p; c sums A, after p's event if wait
bool seed_scene(lab::Lab& lab, unsigned stream_flags, bool wait, bool legacy_kernel,
                std::string* saw, const std::string& title) {
  lab::SumBuffers buf(lab.n);
  cudaStream_t p = nullptr, c = nullptr;  // core: legacy-default (6 lines)
  cudaEvent_t produced = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&p, stream_flags));
  CS_CHECK(cudaStreamCreateWithFlags(&c, stream_flags));
  if (!wait) probe_queues(lab, p, c);
  CS_CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  cs::Timeline timeline;
  timeline.start(p);
  auto span = timeline.span("stream p", "delay", p, "slow producer");
  spin_kernel<<<1, 1, 0, p>>>(lab.delay_ns());  // core: cross-stream (12 lines)
  span = timeline.span("stream p", "produce", p, "normal_()");
  produce_kernel<<<lab.grid(), kBlock, 0, p>>>(buf.a, lab.n);
  CS_CHECK(cudaEventRecord(produced, p));
  if (wait) CS_CHECK(cudaStreamWaitEvent(c, produced, 0));  // the fix: c.wait_stream(p)
  if (legacy_kernel) {  // cudaStreamLegacy written out: the same in a per-thread build
    span = timeline.span("legacy stream 0", "legacy", cudaStreamLegacy, "step counter");
    fill_kernel<<<1, 1, 0, cudaStreamLegacy>>>(buf.counter, 1, 0u);  // bystander
  }
  span = timeline.span("stream c", "consume", c, "sum()");
  sum_and_count_kernel<<<lab.grid(), kBlock, 0, c>>>(buf.a, lab.n, buf.sum, buf.matches);
  CS_CHECK_LAUNCH();
  span.end();
  CS_CHECK(cudaDeviceSynchronize());
  cs::publish_timeline(timeline.collect(), lab.common, title);
  CS_CHECK(cudaEventDestroy(produced));
  for (cudaStream_t stream : {p, c}) CS_CHECK(cudaStreamDestroy(stream));
  return buf.right(saw);
}

// Part 2: cross-stream: the seed's normal_() on stream p, sum() on stream c
void part_cross_stream(lab::Lab& lab, bool broken) {
  std::string saw;
  const bool right = seed_scene(lab, cudaStreamNonBlocking, !broken, false, &saw,
                                "cross-stream: normal_() on p, sum() on c");
  if (broken)
    lab.bug_verdict("cross_stream_bug_shown", !right, "the consumer " + saw, lab.hides());
  else
    cs::check_that("cross_stream_sum", right, "the consumer " + saw);
}

// Parts 3 and 4's scene: the writer fills a block; the reader waits for that, spins and copies it
// (to `read`); `between(writer, reader, block)` returns the block that the writer's next fill
// overwrites (copied to `overwritten`). Returns how many values of the first fill the reader saw.
template <typename Between>
std::size_t slow_reader_scene(lab::Lab& lab, Between&& between, std::uint32_t* read,
                              std::uint32_t* overwritten) {
  const std::size_t bytes = lab.n * sizeof(std::uint32_t);
  std::uint32_t *block = nullptr, *reader_copy = nullptr;
  CS_CHECK(cudaMalloc(&reader_copy, bytes));
  CS_CHECK(cudaMemset(reader_copy, 0, bytes));  // zeros: what a reader that is too early finds
  CS_CHECK(cudaDeviceSynchronize());
  cudaStream_t writer = nullptr, reader = nullptr;
  cudaEvent_t produced = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&writer, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking));
  CS_CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  probe_queues(lab, reader, writer);  // the reader spins; the writer's next fill is the quick side
  cs::Timeline timeline;
  timeline.start(writer);
  CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&block), bytes, writer));
  auto span = timeline.span("writer", "produce", writer);
  fill_kernel<<<lab.grid(), kBlock, 0, writer>>>(block, lab.n, kFirstValues);
  CS_CHECK(cudaEventRecord(produced, writer));
  CS_CHECK(cudaStreamWaitEvent(reader, produced, 0));  // the reader does wait for its data
  span = timeline.span("reader", "delay", reader, "slow reader");
  spin_kernel<<<1, 1, 0, reader>>>(lab.delay_ns());
  span = timeline.span("reader", "read", reader);
  copy_kernel<<<lab.grid(), kBlock, 0, reader>>>(block, reader_copy, lab.n);
  std::uint32_t* target = between(writer, reader, block);
  span = timeline.span("writer", "overwrite", writer);
  fill_kernel<<<lab.grid(), kBlock, 0, writer>>>(target, lab.n, kSecondValues);
  CS_CHECK_LAUNCH();
  span.end();
  CS_CHECK(cudaDeviceSynchronize());
  cs::publish_timeline(timeline.collect(), lab.common, "writer and reader");
  CS_CHECK(cudaMemcpy(read, reader_copy, bytes, cudaMemcpyDeviceToHost));
  CS_CHECK(cudaMemcpy(overwritten, target, bytes, cudaMemcpyDeviceToHost));
  CS_CHECK(cudaFreeAsync(target, writer));
  CS_CHECK(cudaStreamSynchronize(writer));
  CS_CHECK(cudaEventDestroy(produced));
  for (cudaStream_t stream : {writer, reader}) CS_CHECK(cudaStreamDestroy(stream));
  CS_CHECK(cudaFree(reader_copy));
  return lab.n - cs::compare(read, lab::values_from(kFirstValues, lab.n).data(), lab.n).wrong;
}

// Part 3: reuse: the next iteration overwrites a buffer that another stream still reads
void part_reuse(lab::Lab& lab, bool broken) {
  cudaEvent_t read_done = nullptr;  // core: reuse (7 lines)
  CS_CHECK(cudaEventCreateWithFlags(&read_done, cudaEventDisableTiming));
  auto between = [&](cudaStream_t writer, cudaStream_t reader, std::uint32_t* block) {
    CS_CHECK(cudaEventRecord(read_done, reader));
    if (!broken) CS_CHECK(cudaStreamWaitEvent(writer, read_done, 0));  // the fix
    return block;  // iteration 2 writes the same buffer
  };
  std::vector<std::uint32_t> read(lab.n), overwritten(lab.n);
  const std::size_t seen = slow_reader_scene(lab, between, read.data(), overwritten.data());
  if (broken) {
    lab.bug_verdict("reuse_bug_shown", seen < lab.n,
                    cs::format("the reader saw %zu of %zu values of iteration 1", seen, lab.n),
                    lab.hides());
  } else {
    cs::verify("reader_saw_iteration_1", read, lab::values_from(kFirstValues, lab.n));
    cs::verify("buffer_holds_iteration_2", overwritten, lab::values_from(kSecondValues, lab.n));
  }
  CS_CHECK(cudaEventDestroy(read_done));
}

// Part 4: use-after-free: cudaFreeAsync on the allocating stream while another stream reads
void part_use_after_free(lab::Lab& lab, bool broken) {
  // The pool keeps freed blocks mapped: a late reader finds someone else's data, not a fault.
  cudaMemPool_t pool = nullptr;  // core: use-after-free (14 lines)
  std::uint64_t keep_everything = UINT64_MAX, release_at_sync = 0;
  CS_CHECK(cudaDeviceGetDefaultMemPool(&pool, lab.common.device));
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
  bool same_block = false;
  std::vector<std::uint32_t> read(lab.n), next_data(lab.n);
  auto between = [&](cudaStream_t owner, cudaStream_t reader, std::uint32_t* block) {
    CS_CHECK(cudaFreeAsync(block, broken ? owner : reader));  // the fix: the last user's
    std::uint32_t* next = nullptr;
    CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&next), lab.n * sizeof(*next), owner));
    same_block = next == block;
    return next;  // the next allocation's data
  };
  const std::size_t seen = slow_reader_scene(lab, between, read.data(), next_data.data());
  std::printf("the next cudaMallocAsync on stream owner returned %s block\n",
              same_block ? "the same" : "a different");
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &release_at_sync));
  CS_CHECK(cudaMemPoolTrimTo(pool, 0));  // the pool's default again, and its memory back
  if (broken) {
    lab.bug_verdict("use_after_free_bug_shown", seen < lab.n,
                    cs::format("the reader saw %zu of %zu values of its own buffer", seen, lab.n),
                    lab.hides());
  } else {
    cs::verify("reader_saw_its_buffer", read, lab::values_from(kFirstValues, lab.n));
    cs::verify("next_allocation_holds_its_data", next_data, lab::values_from(kSecondValues, lab.n));
    if (lab.common.no_timing) return;
    // Plain cudaFree waits for the whole device: shown with a kernel unrelated to the buffer.
    void* unrelated = nullptr;
    CS_CHECK(cudaMalloc(&unrelated, 1 << 20));
    spin_kernel<<<1, 1>>>(lab.delay_ns());
    CS_CHECK_LAUNCH();
    const double begin = cs::host_now_ms();
    CS_CHECK(cudaFree(unrelated));
    std::printf("plain cudaFree of an unrelated buffer, during a %d ms kernel: %s\n", lab.delay_ms,
                cs::format_ms(cs::host_now_ms() - begin).c_str());
    CS_CHECK(cudaDeviceSynchronize());
  }
}

// Part 5: over-sync: cudaDeviceSynchronize after every launch: right, but slow
void part_over_sync(lab::Lab& lab, bool broken) {
  constexpr int kStreams = 4, kKernels = 64, kKernelNs = 20000;  // 256 small kernels of 20 us
  constexpr std::size_t kPerStream = 4096, n = kStreams * kPerStream, bytes = 4 * n;  // uint32
  std::vector<cudaStream_t> streams(kStreams);
  for (cudaStream_t& s : streams) CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::uint32_t* data = nullptr;
  CS_CHECK(cudaMalloc(&data, bytes));
  auto issue = [&](bool sync_after_each) {  // core: over-sync (11 lines)
    for (int k = 0; k < kKernels; ++k) {
      for (int s = 0; s < kStreams; ++s) {
        step_kernel<<<kPerStream / kBlock, kBlock, 0, streams[s]>>>(data + s * kPerStream,
                                                                    kPerStream, k, kKernelNs);
        CS_CHECK_LAUNCH();
        if (sync_after_each) CS_CHECK(cudaDeviceSynchronize());  // the bug: the host waits
      }
    }
    CS_CHECK(cudaDeviceSynchronize());  // the fix: once, before the host reads the results
  };
  // Element i starts at i and kernel k maps x to 3x + k + 1 (in stream order): the CPU's result.
  std::vector<std::uint32_t> want = lab::values_from(0u, n), got(n);
  for (std::uint32_t& v : want)
    for (int k = 0; k < kKernels; ++k) v = 3u * v + static_cast<std::uint32_t>(k) + 1u;
  auto run_and_verify = [&](bool sync_after_each) {
    CS_CHECK(cudaMemcpy(data, lab::values_from(0u, n).data(), bytes, cudaMemcpyHostToDevice));
    CS_CHECK(cudaDeviceSynchronize());  // non-blocking streams do not wait for the legacy stream
    issue(sync_after_each);
    CS_CHECK(cudaMemcpy(got.data(), data, bytes, cudaMemcpyDeviceToHost));
    cs::verify(sync_after_each ? "over_synced_result" : "synced_once_result", got, want);
  };
  run_and_verify(broken);
  // Broken, a setting or --no-timing hides the bug; fixed, the speedup needs timing and overlap.
  const char* check = broken || lab.common.no_timing ? "over_sync_slowdown" : "sync_once_speedup";
  std::string skip =
      broken ? lab.hides("every launch already waited for its kernel", nullptr)
             : cs::first_reason({lab.common.timing_skip_reason(), cs::no_overlap_reason(lab.env)});
  if (broken && skip.empty() && lab.common.no_timing)
    skip = "cannot be shown with --no-timing: over-sync's bug is its running time";
  if (!skip.empty()) lab.skip_hidden(check, skip);
  if (skip.empty()) {  // each variant checks and times both versions
    run_and_verify(!broken);
    const cs::Stats once = cs::time_device_ms(1, 7, [&] { issue(false); });
    const cs::Stats every = cs::time_device_ms(1, 7, [&] { issue(true); });
    std::printf(
        "one sync at the end: %s; a sync after each of the %d launches: %s (medians of 7)\n",
        cs::format_ms(once.median).c_str(), kKernels * kStreams,
        cs::format_ms(every.median).c_str());
    // A queue per stream and concurrent kernels: the 4 streams overlap (4x ideal), the host stops
    // waiting. Else (streams share queues: a held kernel holds up the rest) the host's waits.
    constexpr double kSlowdownOverlapping = 1.5, kSlowdownSerial = 1.1;
    const bool overlap = lab.prop.concurrentKernels != 0 && lab.env.max_connections >= kStreams;
    const double slowdown = cs::ratio(every.median, once.median);
    const bool slower = cs::check(check, slowdown, cs::Compare::at_least,
                                  overlap ? kSlowdownOverlapping : kSlowdownSerial, "x",
                                  overlap ? "streams overlap" : "the host's waits only");
    if (broken)
      lab.demonstrated(slower, cs::format("synchronizing after every launch made the same, "
                                          "correct work %.1fx slower",
                                          slowdown));
  }
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
  CS_CHECK(cudaFree(data));
}

// Part 6: legacy-default: a kernel in the legacy default stream hides a missing wait
void part_legacy_default(lab::Lab& lab, bool broken) {
  std::string saw;
  if (broken) {
    // cudaStreamDefault: blocking streams, which synchronize with the legacy default stream.
    const bool blocking_right = seed_scene(lab, cudaStreamDefault, false, true, &saw,
                                           "legacy-default: blocking streams (cudaStreamDefault)");
    cs::check_that("blocking_streams_look_right", blocking_right,
                   "with cudaStreamCreate streams the consumer " + saw);
    const bool right = seed_scene(lab, cudaStreamNonBlocking, false, true, &saw,
                                  "legacy-default: non-blocking streams");
    lab.bug_verdict("legacy_default_bug_shown", !right,
                    "with non-blocking streams the consumer " + saw, lab.legacy_race_hidden());
  } else {
    const bool right = seed_scene(lab, cudaStreamNonBlocking, true, true, &saw,
                                  "legacy-default fixed: non-blocking streams, event wait");
    cs::check_that("event_wait_sum", right, "the consumer " + saw);
  }
}

// Part 7: hidden-by-setting: CUDA_LAUNCH_BLOCKING=1 or one hardware queue hides the seed's race
void part_hidden_by_setting(lab::Lab& lab, bool broken) {
  // core: hidden-by-setting (11 lines)
  int mode = 0;  // other processes may share the device only in the default compute mode
  CS_CHECK(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, lab.common.device));
  if (mode != cudaComputeModeDefault)
    return cs::check_skipped("runs_under_each_setting", "one process at a time (compute mode)");
  // The runtime reads both variables once, at start: each setting needs a process of its own.
  const std::string args =
      cs::format("--case cross-stream %s --delay-ms %d --elements %zu --device %d",
                 broken ? "--broken" : "--fixed", lab.delay_ms, lab.n, lab.common.device);
  const int defaults = lab::run_again("", args);
  const int launch_blocking = lab::run_again("CUDA_LAUNCH_BLOCKING=1", args);
  const int one_queue = lab::run_again("CUDA_DEVICE_MAX_CONNECTIONS=1", args);
  if (!broken) {
    const int right = (defaults == 0) + (launch_blocking == 0) + (one_queue == 0);
    cs::check_that("fixed_right_under_every_setting", right == 3,
                   cs::format("the fixed code was right under %d of the 3 settings", right));
    return;
  }
  // cross-stream --broken exits 3 when its race was lost, 77 when a setting hid it.
  const bool shown = defaults == lab::kBugReproducedExitCode;
  const int hidden = (launch_blocking == cs::kSkipExitCode) + (one_queue == cs::kSkipExitCode);
  cs::check_that("hidden_race_by_default", shown,
                 shown ? "with the default settings the race was lost"
                       : cs::format("with the default settings it exited %d", defaults));
  lab.bug_verdict(
      "hidden_race_by_a_setting", shown && hidden > 0,
      cs::format("the same code gave the right sum under %d of the 2 settings", hidden));
}

int main(int argc, char** argv) {
  const std::vector<cs::Parts::Part> cases = {
      {"host-read", "the host reads a pinned buffer right after cudaMemcpyAsync"},
      {"cross-stream", "sum() on stream c reads A before normal_() on p wrote it (the seed)"},
      {"reuse", "the next iteration overwrites a buffer another stream still reads"},
      {"use-after-free", "cudaFreeAsync on the wrong stream: the block is reused while read"},
      {"over-sync", "cudaDeviceSynchronize after every launch: right, but slow (measured)"},
      {"legacy-default", "the legacy default stream hides a race non-blocking streams expose"},
      {"hidden-by-setting", "CUDA_LAUNCH_BLOCKING=1 or one hardware queue hides the seed's race"},
  };
  lab::Lab lab;  // the flags, and what the parts share
  cs::Options options("07_broken_vs_fixed_sync", "Synchronization bugs, each broken and fixed");
  cs::Parts parts(options, cases);
  const std::vector<bool> variants = lab::parse(&lab, options, parts, cases, argc, argv);
  lab.env = cs::launch_environment();               // before the first CUDA call
  lab.prop = cs::select_device(lab.common.device);  // prints the device
  cs::require_fits_on_device(3 * lab.n * 4, cs::format("--elements %zu", lab.n));  // 3 buffers
  cs::print_launch_environment(lab.env);
  load_every_kernel();
  // The parts, in the order of `cases`.
  void (*const part_of[])(lab::Lab&, bool) = {
      part_host_read,      part_cross_stream,     part_reuse, part_use_after_free, part_over_sync,
      part_legacy_default, part_hidden_by_setting};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!lab.chooses(cases[i].name) || !parts.begin(cases[i].name)) continue;
    for (bool broken : variants) {
      std::printf("\n-- %s\n", broken ? "broken" : "fixed");
      part_of[i](lab, broken);
    }
  }
  return lab::exit_status(lab, cs::finish());
}
