// Chapter 07: broken and fixed synchronization, side by side
//
// What it teaches
//   The PyTorch notes warn about this program:
//       A = torch.empty((100, 100), device=cuda).normal_(0.0, 1.0)
//       with torch.cuda.stream(s):
//           B = torch.sum(A)   # sum() may start execution before normal_() finishes!
//   Work in one stream knows nothing about work in another, and the host knows nothing about
//   either until it asks. Each case below is a pair built from one source: `--broken` issues the
//   work without the wait it needs, `--fixed` adds exactly that wait. To make the broken variant
//   fail every time rather than now and then, the producer is made slow on purpose: it spins on
//   the GPU's global timer for --delay-ms (50 ms) before it writes, while the consumer needs only
//   microseconds, so the race is lost by a margin of thousands. The program then says in words
//   what went wrong. The cases:
//     host-read       the host reads a pinned buffer right after cudaMemcpyAsync;
//                     fixed with cudaEventSynchronize (or cudaStreamSynchronize).
//     cross-stream    the seed: sum() on stream s reads A before normal_() on stream p wrote it;
//                     fixed with cudaEventRecord on p and cudaStreamWaitEvent on s.
//     reuse           the next iteration's producer overwrites a buffer that another stream is
//                     still reading; fixed by making the producer wait for the reader's event.
//     use-after-free  cudaFreeAsync on the allocating stream while another stream still reads
//                     the block: the pool hands it out again and its new owner overwrites it (the
//                     hazard behind PyTorch's record_stream); fixed by freeing on the reader's
//                     stream. Also shows that plain cudaFree waits for the whole device.
//     over-sync       cudaDeviceSynchronize after every launch: correct, but the streams never
//                     overlap; the slowdown is measured against one synchronization at the end.
//     legacy-default  a kernel in the legacy default stream orders two blocking streams and so
//                     hides a missing wait; with cudaStreamNonBlocking streams the race appears;
//                     fixed with an explicit event wait.
//
// Build and run
//   cmake --preset default && cmake --build --preset default
//   build/bin/07_broken_vs_fixed_sync --list
//   build/bin/07_broken_vs_fixed_sync --case cross-stream --broken
//   build/bin/07_broken_vs_fixed_sync --case cross-stream --fixed
//   build/bin/07_broken_vs_fixed_sync --case all --fixed
//
// What to expect, and the exit status
//   Each case prints what it issues, an ASCII timeline of its streams, CHECK lines, and either
//   "BUG REPRODUCED: <what went wrong>" (broken) or why the result is right (fixed).
//     0   --fixed: every check passed, the results are right.
//     1   a check failed: a fixed variant gave a wrong result, or a broken variant did NOT show
//         its bug (a failed demonstration).
//     2   bad command line (both --broken and --fixed, a value out of range).
//   With neither flag every chosen case runs broken, then fixed: exit 0 when each broken variant
//   showed its bug and each fixed one was right, else 1.
//     3   --broken: the bug was reproduced, as intended.
//     77  no CUDA device here (SKIP:).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

namespace {

// Exit status of a broken variant that showed its bug.
constexpr int kBugReproducedExitCode = 3;

// Every threshold of the chapter, in one place.
namespace bars {
// over-sync: the same kernels with one cudaDeviceSynchronize at the end against one after every
// launch. With concurrent kernels the streams overlap (up to 4x for 4 streams) and the host stops
// waiting between launches; without them only the per-launch wait is saved.
constexpr double over_sync_slowdown_concurrent = 1.5;
constexpr double over_sync_slowdown_serial = 1.1;
}  // namespace bars

// Sizes and repeats (not thresholds).
namespace config {
constexpr int block = 256;
constexpr int over_sync_streams = 4;
constexpr int over_sync_kernels_per_stream = 64;
constexpr int over_sync_kernel_us = 20;  // each small kernel's duration
constexpr int over_sync_elements_per_stream = 4096;
constexpr int warmup = 1;
constexpr int repeats = 7;
}  // namespace config

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

// The slow part of every producer: holds its stream for a fixed time, whatever the clocks.
__global__ void spin_kernel(unsigned long long duration_ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < duration_ns) {
  }
}

__device__ std::size_t global_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::size_t global_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

// out[i] = base + i: every element has a value of its own, so a reader can tell whose data it saw.
__global__ void fill_kernel(std::uint32_t* out, std::size_t n, std::uint32_t base) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) {
    out[i] = base + static_cast<std::uint32_t>(i);
  }
}

// The stand-in for normal_(): small whole numbers 1..5, so every sum is exact in any order.
__host__ __device__ float producer_value(std::size_t i) {
  return static_cast<float>(i % 5 + 1);
}

__global__ void produce_kernel(float* a, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) a[i] = producer_value(i);
}

// B = sum(A). It also counts how many A[i] held the producer's value, so that the program can say
// what the consumer saw. No shared memory: warp shuffles, then one atomic per warp.
__global__ void sum_and_count_kernel(const float* a, std::size_t n, double* sum,
                                     unsigned long long* matches) {
  double partial = 0;
  unsigned long long seen = 0;
  for (std::size_t i = global_index(); i < n; i += global_stride()) {
    partial += a[i];
    seen += a[i] == producer_value(i) ? 1 : 0;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    partial += __shfl_down_sync(0xffffffffu, partial, offset);
    seen += __shfl_down_sync(0xffffffffu, seen, offset);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(sum, partial);
    atomicAdd(matches, seen);
  }
}

__global__ void copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += global_stride()) out[i] = in[i];
}

// One of over-sync's many small kernels: a short wait, then one step that depends on the order of
// the kernels within the stream (x -> 3x + k + 1), so a misordered run gives a different result.
__global__ void step_kernel(std::uint32_t* data, std::size_t n, std::uint32_t k,
                            unsigned long long duration_ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < duration_ns) {
  }
  for (std::size_t i = global_index(); i < n; i += global_stride()) data[i] = 3u * data[i] + k + 1u;
}

// legacy-default's bystander: unrelated bookkeeping (a step counter) in the legacy default stream.
__global__ void tick_kernel(unsigned* counter) {
  *counter += 1;
}

// ---------------------------------------------------------------------------------------------
// Host helpers
// ---------------------------------------------------------------------------------------------

struct Context {
  bool broken = false;
  std::size_t n = 0;  // elements of each case's buffers
  int delay_ms = 0;   // how long every producer spins before it writes
  cudaDeviceProp prop{};
  const cs::CommonOptions* common = nullptr;
  int grid = 1;  // blocks for the element-wise kernels
  unsigned long long delay_ns() const {
    return static_cast<unsigned long long>(delay_ms) * 1000000ull;
  }
  const char* variant() const { return broken ? "broken" : "fixed"; }
};

// With lazy module loading (the default since CUDA 12.2) a kernel's first launch loads it, and
// loading may wait for the work already running, which would make a racing consumer wait for
// the slow producer by accident. Launching every kernel once up front keeps the races honest.
void load_every_kernel() {
  float* a = nullptr;
  std::uint32_t* u = nullptr;
  double* sum = nullptr;
  unsigned long long* matches = nullptr;
  unsigned* counter = nullptr;
  CS_CHECK(cudaMalloc(&a, sizeof(float)));
  CS_CHECK(cudaMalloc(&u, 2 * sizeof(std::uint32_t)));
  CS_CHECK(cudaMalloc(&sum, sizeof(double)));
  CS_CHECK(cudaMalloc(&matches, sizeof(unsigned long long)));
  CS_CHECK(cudaMalloc(&counter, sizeof(unsigned)));
  CS_CHECK(cudaMemset(sum, 0, sizeof(double)));
  CS_CHECK(cudaMemset(matches, 0, sizeof(unsigned long long)));
  CS_CHECK(cudaMemset(counter, 0, sizeof(unsigned)));
  spin_kernel<<<1, 1>>>(0);
  fill_kernel<<<1, config::block>>>(u, 2, 1u);
  produce_kernel<<<1, config::block>>>(a, 1);
  sum_and_count_kernel<<<1, config::block>>>(a, 1, sum, matches);
  copy_kernel<<<1, config::block>>>(u, u + 1, 1);
  step_kernel<<<1, config::block>>>(u, 1, 0u, 0);
  tick_kernel<<<1, 1>>>(counter);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaDeviceSynchronize());
  for (void* p : {static_cast<void*>(a), static_cast<void*>(u), static_cast<void*>(sum),
                  static_cast<void*>(matches), static_cast<void*>(counter)}) {
    CS_CHECK(cudaFree(p));
  }
}

std::vector<std::uint32_t> values_from(std::uint32_t base, std::size_t n) {
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = base + static_cast<std::uint32_t>(i);
  return values;
}

std::size_t count_equal(const std::uint32_t* got, const std::vector<std::uint32_t>& want) {
  std::size_t same = 0;
  for (std::size_t i = 0; i < want.size(); ++i) same += got[i] == want[i] ? 1 : 0;
  return same;
}

std::vector<std::uint32_t> download(const std::uint32_t* device, std::size_t n) {
  std::vector<std::uint32_t> host(n);
  CS_CHECK(cudaMemcpy(host.data(), device, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  return host;
}

cudaStream_t non_blocking_stream() {
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

cudaEvent_t sync_event() {
  cudaEvent_t event = nullptr;
  CS_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void print_header(const Context& ctx, const char* name, const char* what) {
  std::printf("\n== case %s (%s): %s ==\n", name, ctx.variant(), what);
}

// The verdict of a broken variant: did its bug show? Counted as a check, so that a broken
// variant whose bug did not show ends with exit status 1.
void report_bug(const std::string& check_name, bool shown, const std::string& what_went_wrong) {
  if (shown) {
    std::printf("BUG REPRODUCED: %s\n", what_went_wrong.c_str());
  } else {
    std::printf(
        "bug NOT reproduced: the result was right this time, so this run demonstrates "
        "nothing\n");
  }
  cs::check_that(check_name, shown, shown ? "the bug showed" : "the bug did not show");
}

void explain(const std::string& why) {
  std::printf("Why it is right: %s\n", why.c_str());
}

void show_timeline(cs::Timeline& timeline, const Context& ctx, const std::string& title) {
  cs::publish_timeline(timeline.collect(), *ctx.common, title);
}

// The result of B = sum(A) as the consumer saw it.
struct SumResult {
  double sum = 0;
  unsigned long long matches = 0;
};

double expected_sum(std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += producer_value(i);
  return sum;
}

std::string describe_sum(const SumResult& got, std::size_t n) {
  const double want = expected_sum(n);
  char text[160];
  if (got.sum == want) {
    std::snprintf(text, sizeof text, "read %llu of %zu expected values (sum %.0f, as on the CPU)",
                  got.matches, n, got.sum);
  } else {
    std::snprintf(text, sizeof text, "read %llu of %zu expected values (sum %.0f instead of %.0f)",
                  got.matches, n, got.sum, want);
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// host-read: the host must wait for an asynchronous copy before it reads the buffer
// ---------------------------------------------------------------------------------------------

void case_host_read(const Context& ctx) {
  print_header(ctx, "host-read", "the host reads a pinned buffer after cudaMemcpyAsync D2H");
  const std::size_t n = ctx.n;
  const std::size_t bytes = n * sizeof(std::uint32_t);
  std::uint32_t* device = nullptr;
  std::uint32_t* host = nullptr;
  CS_CHECK(cudaMalloc(&device, bytes));
  CS_CHECK(cudaMallocHost(&host, bytes));  // pinned: the copy below really is asynchronous
  std::fill(host, host + n, 0u);
  cudaStream_t stream = non_blocking_stream();
  cudaEvent_t copied = sync_event();
  const std::vector<std::uint32_t> want = values_from(1u, n);
  CS_CHECK(cudaDeviceSynchronize());

  cs::Timeline timeline;
  timeline.start(stream);
  int span = timeline.begin("stream", "delay", stream, "slow producer");
  spin_kernel<<<1, 1, 0, stream>>>(ctx.delay_ns());
  CS_CHECK_LAUNCH();
  timeline.end(span, stream);
  span = timeline.begin("stream", "produce", stream);
  fill_kernel<<<ctx.grid, config::block, 0, stream>>>(device, n, 1u);
  CS_CHECK_LAUNCH();
  timeline.end(span, stream);
  span = timeline.begin("stream", "transfer D2H", stream);
  CS_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
  timeline.end(span, stream);
  CS_CHECK(cudaEventRecord(copied, stream));

  if (ctx.broken) {
    // cudaMemcpyAsync only queued the copy; reading now sees whatever the buffer held before.
    const std::size_t seen = count_equal(host, want);
    std::printf("the host read the buffer right after cudaMemcpyAsync returned\n");
    report_bug("host_read_bug_shown", seen < n,
               "the host read " + std::to_string(seen) + " of " + std::to_string(n) +
                   " expected values: it did not wait for cudaMemcpyAsync to finish");
    CS_CHECK(cudaStreamSynchronize(stream));
    std::printf("after cudaStreamSynchronize the same buffer holds the data: it was only late\n");
    cs::verify("host_read_after_sync", host, want.data(), n);
  } else {
    CS_CHECK(cudaEventSynchronize(copied));
    cs::verify("host_read_after_event_sync", host, want.data(), n);
    explain(
        "cudaEventSynchronize(copied) returned only after the copy, and the slow producer "
        "queued before it, had finished (cudaStreamSynchronize(stream) would do the same)");
  }
  show_timeline(timeline, ctx, "host-read: one stream (the host's read is not on it)");
  CS_CHECK(cudaEventDestroy(copied));
  CS_CHECK(cudaStreamDestroy(stream));
  CS_CHECK(cudaFreeHost(host));
  CS_CHECK(cudaFree(device));
}

// ---------------------------------------------------------------------------------------------
// cross-stream: the seed's normal_() on stream p, sum() on stream s
// ---------------------------------------------------------------------------------------------

// Buffers for a producer that fills A and a consumer that sums it.
struct SumBuffers {
  float* a = nullptr;
  double* sum = nullptr;
  unsigned long long* matches = nullptr;
  explicit SumBuffers(std::size_t n) {
    CS_CHECK(cudaMalloc(&a, n * sizeof(float)));
    CS_CHECK(cudaMalloc(&sum, sizeof(double)));
    CS_CHECK(cudaMalloc(&matches, sizeof(unsigned long long)));
    CS_CHECK(cudaMemset(a, 0, n * sizeof(float)));  // what an early reader finds: zeros
    CS_CHECK(cudaMemset(sum, 0, sizeof(double)));
    CS_CHECK(cudaMemset(matches, 0, sizeof(unsigned long long)));
    CS_CHECK(cudaDeviceSynchronize());
  }
  ~SumBuffers() {
    CS_CHECK(cudaFree(a));
    CS_CHECK(cudaFree(sum));
    CS_CHECK(cudaFree(matches));
  }
  SumBuffers(const SumBuffers&) = delete;
  SumBuffers& operator=(const SumBuffers&) = delete;
  SumResult read() const {
    SumResult result;
    CS_CHECK(cudaMemcpy(&result.sum, sum, sizeof(double), cudaMemcpyDeviceToHost));
    CS_CHECK(
        cudaMemcpy(&result.matches, matches, sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    return result;
  }
};

bool sum_is_right(const SumResult& got, std::size_t n) {
  return got.matches == n && got.sum == expected_sum(n);
}

void case_cross_stream(const Context& ctx) {
  print_header(ctx, "cross-stream",
               "A = empty().normal_() on stream p, then B = sum(A) on stream s");
  const std::size_t n = ctx.n;
  SumBuffers buffers(n);
  cudaStream_t p = non_blocking_stream();
  cudaStream_t s = non_blocking_stream();
  cudaEvent_t produced = sync_event();

  cs::Timeline timeline;
  timeline.start(p);
  int span = timeline.begin("stream p", "delay", p, "slow producer");
  spin_kernel<<<1, 1, 0, p>>>(ctx.delay_ns());
  CS_CHECK_LAUNCH();
  timeline.end(span, p);
  span = timeline.begin("stream p", "produce", p, "normal_()");
  produce_kernel<<<ctx.grid, config::block, 0, p>>>(buffers.a, n);
  CS_CHECK_LAUNCH();
  timeline.end(span, p);
  CS_CHECK(cudaEventRecord(produced, p));
  if (!ctx.broken) CS_CHECK(cudaStreamWaitEvent(s, produced, 0));  // s.wait_event / wait_stream
  span = timeline.begin("stream s", "consume", s, "sum()");
  sum_and_count_kernel<<<ctx.grid, config::block, 0, s>>>(buffers.a, n, buffers.sum,
                                                          buffers.matches);
  CS_CHECK_LAUNCH();
  timeline.end(span, s);
  CS_CHECK(cudaStreamSynchronize(s));
  const SumResult got = buffers.read();
  CS_CHECK(cudaStreamSynchronize(p));

  if (ctx.broken) {
    report_bug("cross_stream_bug_shown", !sum_is_right(got, n),
               "the consumer " + describe_sum(got, n) + ": it did not wait for the producer");
  } else {
    cs::check_that("cross_stream_sum", sum_is_right(got, n),
                   "the consumer " + describe_sum(got, n));
    explain(
        "stream s waited (cudaStreamWaitEvent) for the event recorded on stream p after "
        "normal_(), so sum() started only once A was written");
  }
  show_timeline(timeline, ctx, "cross-stream: producer on p, consumer on s");
  CS_CHECK(cudaEventDestroy(produced));
  CS_CHECK(cudaStreamDestroy(p));
  CS_CHECK(cudaStreamDestroy(s));
}

// ---------------------------------------------------------------------------------------------
// reuse: a buffer overwritten while another stream still reads it
// ---------------------------------------------------------------------------------------------

void case_reuse(const Context& ctx) {
  print_header(ctx, "reuse",
               "iteration 2 writes the buffer that iteration 1's reader is still reading");
  const std::size_t n = ctx.n;
  const std::size_t bytes = n * sizeof(std::uint32_t);
  const std::uint32_t first_base = 1u;
  const std::uint32_t second_base = 1u << 30;
  std::uint32_t* shared = nullptr;
  std::uint32_t* reader_copy = nullptr;
  CS_CHECK(cudaMalloc(&shared, bytes));
  CS_CHECK(cudaMalloc(&reader_copy, bytes));
  CS_CHECK(cudaMemset(reader_copy, 0, bytes));
  CS_CHECK(cudaDeviceSynchronize());
  cudaStream_t writer = non_blocking_stream();
  cudaStream_t reader = non_blocking_stream();
  cudaEvent_t produced = sync_event();
  cudaEvent_t read_done = sync_event();

  cs::Timeline timeline;
  timeline.start(writer);
  int span = timeline.begin("writer", "produce", writer, "iteration 1");
  fill_kernel<<<ctx.grid, config::block, 0, writer>>>(shared, n, first_base);
  CS_CHECK_LAUNCH();
  timeline.end(span, writer);
  CS_CHECK(cudaEventRecord(produced, writer));
  CS_CHECK(cudaStreamWaitEvent(reader, produced, 0));  // the reader does wait for its data
  span = timeline.begin("reader", "delay", reader, "slow reader");
  spin_kernel<<<1, 1, 0, reader>>>(ctx.delay_ns());
  CS_CHECK_LAUNCH();
  timeline.end(span, reader);
  span = timeline.begin("reader", "read", reader, "iteration 1");
  copy_kernel<<<ctx.grid, config::block, 0, reader>>>(shared, reader_copy, n);
  CS_CHECK_LAUNCH();
  timeline.end(span, reader);
  CS_CHECK(cudaEventRecord(read_done, reader));
  // The writer may only reuse the buffer once the reader is done with it.
  if (!ctx.broken) CS_CHECK(cudaStreamWaitEvent(writer, read_done, 0));
  span = timeline.begin("writer", "overwrite", writer, "iteration 2");
  fill_kernel<<<ctx.grid, config::block, 0, writer>>>(shared, n, second_base);
  CS_CHECK_LAUNCH();
  timeline.end(span, writer);
  CS_CHECK(cudaStreamSynchronize(writer));
  CS_CHECK(cudaStreamSynchronize(reader));

  const std::vector<std::uint32_t> first = values_from(first_base, n);
  const std::vector<std::uint32_t> seen_by_reader = download(reader_copy, n);
  const std::size_t seen = count_equal(seen_by_reader.data(), first);
  if (ctx.broken) {
    report_bug("reuse_bug_shown", seen < n,
               "the reader saw " + std::to_string(seen) + " of " + std::to_string(n) +
                   " values of iteration 1: the writer overwrote the buffer with iteration 2 "
                   "before the reader was done with it");
  } else {
    cs::verify("reader_saw_iteration_1", seen_by_reader, first);
    cs::verify("buffer_holds_iteration_2", download(shared, n), values_from(second_base, n));
    explain(
        "the writer's stream waited for the event recorded after the read, so iteration 2 "
        "overwrote the buffer only when iteration 1's reader no longer needed it");
  }
  show_timeline(timeline, ctx, "reuse: writer and reader share one buffer");
  CS_CHECK(cudaEventDestroy(produced));
  CS_CHECK(cudaEventDestroy(read_done));
  CS_CHECK(cudaStreamDestroy(writer));
  CS_CHECK(cudaStreamDestroy(reader));
  CS_CHECK(cudaFree(shared));
  CS_CHECK(cudaFree(reader_copy));
}

// ---------------------------------------------------------------------------------------------
// use-after-free: cudaFreeAsync on the wrong stream
// ---------------------------------------------------------------------------------------------

// Plain cudaFree waits until the device has finished all of its work: a freed buffer cannot be in
// use any more, at the price of a full stop. Shown with a kernel that has nothing to do with it.
void show_plain_cudafree_waits(const Context& ctx, cudaStream_t stream) {
  void* unrelated = nullptr;
  CS_CHECK(cudaMalloc(&unrelated, 1 << 20));
  CS_CHECK(cudaDeviceSynchronize());
  spin_kernel<<<1, 1, 0, stream>>>(ctx.delay_ns());
  CS_CHECK_LAUNCH();
  const double begin = cs::host_now_ms();
  CS_CHECK(cudaFree(unrelated));
  const double inside_ms = cs::host_now_ms() - begin;
  CS_CHECK(cudaStreamSynchronize(stream));
  const bool waited = inside_ms >= 0.5 * ctx.delay_ms;
  std::printf(
      "plain cudaFree of an unrelated buffer, issued while a %d ms kernel ran: returned "
      "after %.1f ms, so it %s\n",
      ctx.delay_ms, inside_ms,
      waited ? "waited for the device to finish its work"
             : "did not wait for the device on this system");
}

void case_use_after_free(const Context& ctx) {
  print_header(ctx, "use-after-free",
               "cudaFreeAsync on the allocating stream while another stream still reads");
  const std::size_t n = ctx.n;
  const std::size_t bytes = n * sizeof(std::uint32_t);
  const std::uint32_t own_base = 1u;
  const std::uint32_t next_owner_base = 1u << 30;
  // Keep freed blocks mapped in the pool (no release at synchronization points): the broken
  // variant then reads a block that belongs to someone else, rather than an unmapped address.
  cudaMemPool_t pool = nullptr;
  CS_CHECK(cudaDeviceGetDefaultMemPool(&pool, ctx.common->device));
  std::uint64_t keep_everything = UINT64_MAX;
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
  std::uint32_t* reader_copy = nullptr;
  CS_CHECK(cudaMalloc(&reader_copy, bytes));
  CS_CHECK(cudaMemset(reader_copy, 0, bytes));
  cudaStream_t owner = non_blocking_stream();  // allocates, fills and (in the broken variant) frees
  cudaStream_t reader = non_blocking_stream();
  cudaEvent_t produced = sync_event();
  CS_CHECK(cudaDeviceSynchronize());

  cs::Timeline timeline;
  timeline.start(owner);
  std::uint32_t* block = nullptr;
  CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&block), bytes, owner));
  int span = timeline.begin("owner", "produce", owner);
  fill_kernel<<<ctx.grid, config::block, 0, owner>>>(block, n, own_base);
  CS_CHECK_LAUNCH();
  timeline.end(span, owner);
  CS_CHECK(cudaEventRecord(produced, owner));
  CS_CHECK(cudaStreamWaitEvent(reader, produced, 0));
  span = timeline.begin("reader", "delay", reader, "slow reader");
  spin_kernel<<<1, 1, 0, reader>>>(ctx.delay_ns());
  CS_CHECK_LAUNCH();
  timeline.end(span, reader);
  span = timeline.begin("reader", "read", reader);
  copy_kernel<<<ctx.grid, config::block, 0, reader>>>(block, reader_copy, n);
  CS_CHECK_LAUNCH();
  timeline.end(span, reader);
  if (ctx.broken) {
    // Stream-ordered free, ordered in the wrong stream: `owner` reaches it at once.
    CS_CHECK(cudaFreeAsync(block, owner));
  } else {
    // Freed in the stream of its last user (what record_stream arranges in PyTorch): the block
    // returns to the pool only after the read.
    CS_CHECK(cudaFreeAsync(block, reader));
  }
  std::uint32_t* next = nullptr;
  CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&next), bytes, owner));
  span = timeline.begin("owner", "overwrite", owner, "next allocation's data");
  fill_kernel<<<ctx.grid, config::block, 0, owner>>>(next, n, next_owner_base);
  CS_CHECK_LAUNCH();
  timeline.end(span, owner);
  CS_CHECK(cudaStreamSynchronize(owner));
  CS_CHECK(cudaStreamSynchronize(reader));
  const bool same_block = next == block;
  std::printf("the next cudaMallocAsync on stream owner returned %s block\n",
              same_block ? "the same" : "a different");

  const std::vector<std::uint32_t> own = values_from(own_base, n);
  const std::vector<std::uint32_t> seen_by_reader = download(reader_copy, n);
  const std::size_t seen = count_equal(seen_by_reader.data(), own);
  if (ctx.broken) {
    report_bug("use_after_free_bug_shown", seen < n,
               "the reader saw " + std::to_string(seen) + " of " + std::to_string(n) +
                   " values of its own buffer: cudaFreeAsync on stream owner released the block "
                   "while stream reader still used it, the pool handed it out again and its new "
                   "owner overwrote it");
  } else {
    cs::verify("reader_saw_its_buffer", seen_by_reader, own);
    cs::verify("next_allocation_holds_its_data", download(next, n),
               values_from(next_owner_base, n));
    explain(std::string("cudaFreeAsync in the reader's stream released the block only after the "
                        "read; ") +
            (same_block ? "the pool reused it for the next allocation by making stream owner "
                          "wait for that free"
                        : "the next allocation got a block of its own"));
  }
  show_timeline(timeline, ctx, "use-after-free: a block freed on the allocating stream");
  CS_CHECK(cudaFreeAsync(next, owner));
  CS_CHECK(cudaStreamSynchronize(owner));
  std::uint64_t release_at_sync = 0;  // the pool's default again, and its memory back to the device
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &release_at_sync));
  CS_CHECK(cudaMemPoolTrimTo(pool, 0));
  if (!ctx.common->no_timing) show_plain_cudafree_waits(ctx, reader);
  CS_CHECK(cudaEventDestroy(produced));
  CS_CHECK(cudaStreamDestroy(owner));
  CS_CHECK(cudaStreamDestroy(reader));
  CS_CHECK(cudaFree(reader_copy));
}

// ---------------------------------------------------------------------------------------------
// over-sync: cudaDeviceSynchronize after every launch
// ---------------------------------------------------------------------------------------------

void case_over_sync(const Context& ctx) {
  print_header(ctx, "over-sync", "many small kernels in several streams, synchronized how often?");
  const int streams_count = config::over_sync_streams;
  const int kernels = config::over_sync_kernels_per_stream;
  const std::size_t m = config::over_sync_elements_per_stream;
  const unsigned long long kernel_ns = config::over_sync_kernel_us * 1000ull;
  const int grid = static_cast<int>((m + config::block - 1) / config::block);
  std::vector<cudaStream_t> streams(streams_count);
  for (cudaStream_t& s : streams) s = non_blocking_stream();
  std::uint32_t* data = nullptr;
  CS_CHECK(cudaMalloc(&data, streams_count * m * sizeof(std::uint32_t)));

  // The CPU replays every stream's kernels in order.
  std::vector<std::uint32_t> initial(streams_count * m);
  for (std::size_t i = 0; i < initial.size(); ++i) initial[i] = static_cast<std::uint32_t>(i);
  std::vector<std::uint32_t> reference = initial;
  for (std::uint32_t& x : reference) {
    for (int k = 0; k < kernels; ++k) x = 3u * x + static_cast<std::uint32_t>(k) + 1u;
  }

  cs::Timeline timeline;
  auto issue = [&](bool sync_after_each, cs::Timeline* record) {
    for (int k = 0; k < kernels; ++k) {
      for (int s = 0; s < streams_count; ++s) {
        int span = -1;
        if (record) span = record->begin("stream " + std::to_string(s), "kernel", streams[s]);
        step_kernel<<<grid, config::block, 0, streams[s]>>>(
            data + s * m, m, static_cast<std::uint32_t>(k), kernel_ns);
        CS_CHECK_LAUNCH();
        if (record) record->end(span, streams[s]);
        if (sync_after_each) CS_CHECK(cudaDeviceSynchronize());
      }
    }
  };
  // One verified run of a version, from the same initial data.
  auto run_verified = [&](bool sync_after_each, const std::string& name, cs::Timeline* record) {
    CS_CHECK(cudaMemcpy(data, initial.data(), initial.size() * sizeof(std::uint32_t),
                        cudaMemcpyHostToDevice));
    CS_CHECK(cudaDeviceSynchronize());  // the copy ran in the legacy stream; these streams do not
                                        // wait for it
    if (record) record->start(streams[0]);
    issue(sync_after_each, record);
    CS_CHECK(cudaDeviceSynchronize());
    cs::verify(name, download(data, initial.size()), reference);
  };

  const bool over_synced = ctx.broken;
  const int launches = streams_count * kernels;
  std::printf("%d streams x %d kernels of %d us each; %s\n", streams_count, kernels,
              config::over_sync_kernel_us,
              over_synced ? "cudaDeviceSynchronize after every launch"
                          : "one cudaDeviceSynchronize after all launches");
  run_verified(over_synced, over_synced ? "over_synced_result" : "synced_once_result", &timeline);
  show_timeline(timeline, ctx,
                over_synced ? "over-sync: a cudaDeviceSynchronize after every launch"
                            : "over-sync fixed: one cudaDeviceSynchronize at the end");

  if (ctx.common->no_timing) {
    cs::check_skipped("over_sync_slowdown", "--no-timing");
    if (!over_synced) {
      explain(
          "stream order alone keeps each stream's kernels in order; one synchronization at "
          "the end is all the host needs before it reads the results");
    }
  } else {
    // The other version too, so that both are known to be right and the ratio means something.
    run_verified(!over_synced, over_synced ? "synced_once_result" : "over_synced_result", nullptr);
    const cs::Stats once =
        cs::time_device_ms(config::warmup, config::repeats, [&] { issue(false, nullptr); });
    const cs::Stats every =
        cs::time_device_ms(config::warmup, config::repeats, [&] { issue(true, nullptr); });
    std::printf(
        "one sync at the end: %.2f ms; a sync after each of the %d launches: %.2f ms "
        "(medians of %d)\n",
        once.median, launches, every.median, config::repeats);
    const bool concurrent = ctx.prop.concurrentKernels != 0;
    const double bar =
        concurrent ? bars::over_sync_slowdown_concurrent : bars::over_sync_slowdown_serial;
    const std::string why = concurrent ? "the device runs kernels concurrently: streams overlap"
                                       : "no concurrent kernels: only the host's waits are saved";
    const double slowdown = every.median / once.median;
    const bool shown = cs::check(over_synced ? "over_sync_slowdown" : "sync_once_speedup", slowdown,
                                 cs::Compare::at_least, bar, "x", why);
    if (over_synced) {
      char words[256];
      std::snprintf(words, sizeof words,
                    "synchronizing after every launch made the same, correct work %.1fx slower: "
                    "the host waited for each kernel, so the %d streams never overlapped",
                    slowdown, streams_count);
      if (shown) {
        std::printf("BUG REPRODUCED: %s\n", words);
      } else {
        std::printf(
            "bug NOT reproduced: the slowdown stayed below the bar, so this run "
            "demonstrates nothing\n");
      }
    } else {
      explain(
          "stream order alone keeps each stream's kernels in order; with one "
          "synchronization at the end the host keeps launching and the streams overlap");
    }
  }
  for (cudaStream_t s : streams) CS_CHECK(cudaStreamDestroy(s));
  CS_CHECK(cudaFree(data));
}

// ---------------------------------------------------------------------------------------------
// legacy-default: the legacy default stream hides a missing wait
// ---------------------------------------------------------------------------------------------

// Producer on p, the bystander kernel on the legacy default stream, consumer on c.
SumResult run_legacy_scene(const Context& ctx, bool non_blocking, bool wait_event,
                           const std::string& title) {
  const std::size_t n = ctx.n;
  SumBuffers buffers(n);
  unsigned* counter = nullptr;
  CS_CHECK(cudaMalloc(&counter, sizeof(unsigned)));
  CS_CHECK(cudaMemset(counter, 0, sizeof(unsigned)));
  cudaStream_t p = nullptr;
  cudaStream_t c = nullptr;
  if (non_blocking) {
    p = non_blocking_stream();
    c = non_blocking_stream();
  } else {
    CS_CHECK(cudaStreamCreate(&p));  // blocking: synchronizes with the legacy default stream
    CS_CHECK(cudaStreamCreate(&c));
  }
  cudaEvent_t produced = sync_event();
  CS_CHECK(cudaDeviceSynchronize());

  cs::Timeline timeline;
  timeline.start(p);
  int span = timeline.begin("stream p", "delay", p, "slow producer");
  spin_kernel<<<1, 1, 0, p>>>(ctx.delay_ns());
  CS_CHECK_LAUNCH();
  timeline.end(span, p);
  span = timeline.begin("stream p", "produce", p);
  produce_kernel<<<ctx.grid, config::block, 0, p>>>(buffers.a, n);
  CS_CHECK_LAUNCH();
  timeline.end(span, p);
  if (wait_event) {
    CS_CHECK(cudaEventRecord(produced, p));
    CS_CHECK(cudaStreamWaitEvent(c, produced, 0));
  }
  // Unrelated work in the legacy default stream (written as cudaStreamLegacy so that the lesson
  // holds even in a build with --default-stream per-thread).
  span = timeline.begin("legacy stream 0", "legacy", cudaStreamLegacy, "step counter");
  tick_kernel<<<1, 1, 0, cudaStreamLegacy>>>(counter);
  CS_CHECK_LAUNCH();
  timeline.end(span, cudaStreamLegacy);
  span = timeline.begin("stream c", "consume", c, "sum()");
  sum_and_count_kernel<<<ctx.grid, config::block, 0, c>>>(buffers.a, n, buffers.sum,
                                                          buffers.matches);
  CS_CHECK_LAUNCH();
  timeline.end(span, c);
  CS_CHECK(cudaDeviceSynchronize());
  const SumResult got = buffers.read();
  show_timeline(timeline, ctx, title);
  CS_CHECK(cudaEventDestroy(produced));
  CS_CHECK(cudaStreamDestroy(p));
  CS_CHECK(cudaStreamDestroy(c));
  CS_CHECK(cudaFree(counter));
  return got;
}

void case_legacy_default(const Context& ctx) {
  print_header(ctx, "legacy-default",
               "producer on p, a kernel in stream 0, consumer on c, and no wait between p and c");
  const std::size_t n = ctx.n;
  if (ctx.broken) {
    const SumResult blocking =
        run_legacy_scene(ctx, false, false, "legacy-default, streams from cudaStreamCreate");
    cs::check_that("blocking_streams_look_right", sum_is_right(blocking, n),
                   "with cudaStreamCreate streams the consumer " + describe_sum(blocking, n) +
                       ": the stream-0 kernel waited for p, and c waited for it");
    const SumResult non_blocking =
        run_legacy_scene(ctx, true, false, "legacy-default, streams with cudaStreamNonBlocking");
    report_bug("legacy_default_bug_shown", !sum_is_right(non_blocking, n),
               "with non-blocking streams the consumer " + describe_sum(non_blocking, n) +
                   ": only the legacy default stream had been ordering it after the producer");
  } else {
    const SumResult got =
        run_legacy_scene(ctx, true, true, "legacy-default fixed: non-blocking streams, event wait");
    cs::check_that("event_wait_sum", sum_is_right(got, n), "the consumer " + describe_sum(got, n));
    explain(
        "stream c waits for an event recorded on p after the producer: the order is stated "
        "in the code, and no longer depends on a kernel that happens to sit in stream 0");
  }
}

// ---------------------------------------------------------------------------------------------
// The list of cases
// ---------------------------------------------------------------------------------------------

struct Case {
  const char* name;
  const char* description;
  void (*run)(const Context&);
};

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = {
      {"host-read", "the host reads a pinned buffer right after cudaMemcpyAsync, without waiting",
       case_host_read},
      {"cross-stream", "sum() on stream s reads A before normal_() on stream p wrote it (the seed)",
       case_cross_stream},
      {"reuse", "the next iteration overwrites a buffer that another stream is still reading",
       case_reuse},
      {"use-after-free", "cudaFreeAsync on the wrong stream: the block is reused while still read",
       case_use_after_free},
      {"over-sync", "cudaDeviceSynchronize after every launch: right, but slow (measured)",
       case_over_sync},
      {"legacy-default", "the legacy default stream hides a race that non-blocking streams expose",
       case_legacy_default},
  };
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> names;
  for (const Case& c : all_cases()) names.push_back(c.name);
  names.push_back("all");
  std::string case_name = "all";
  bool broken = false;
  bool fixed = false;
  bool list = false;
  int delay_ms = 50;
  std::size_t elements = 1u << 20;
  cs::CommonOptions common;
  cs::Options options(
      "07_broken_vs_fixed_sync",
      "Synchronization bugs and their fixes, each a pair: --case NAME --broken | --fixed\n"
      "(with neither, each case runs broken and then fixed).\n"
      "Exit status of this chapter: 0 --fixed and right; 3 --broken and the bug was reproduced;\n"
      "1 a check failed (a fixed variant was wrong, or a broken one did not show its bug).");
  options.add_choice("case", &case_name, names, "which case to run (--list describes them)");
  options.add_flag("broken", &broken, "run the variant with the bug (exit 3 when it shows)");
  options.add_flag("fixed", &fixed, "run the corrected variant (exit 0 when it is right)");
  options.add_flag("list", &list, "list the cases with one line each, then exit");
  options.add_int("delay-ms", &delay_ms, 1, 10000,
                  "how long each producer spins before it writes, in ms");
  options.add_size("elements", &elements, 1024, 64u << 20, "elements of each case's buffers");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  if (list) {
    std::printf("Cases (run each with --case NAME --broken or --case NAME --fixed):\n");
    for (const Case& c : all_cases()) std::printf("  %-15s %s\n", c.name, c.description);
    std::printf("  %-15s every case above, one after the other\n", "all");
    return 0;
  }
  if (broken && fixed) cs::usage_error("--broken and --fixed: give one of them, not both");
  // Neither flag: the whole lesson, each case broken and then fixed; every check must pass
  // (each broken variant shows its bug, each fixed one is right), so the exit status is 0 or 1.
  const bool both = !broken && !fixed;
  if ((broken || both) && common.no_timing && (case_name == "over-sync" || case_name == "all")) {
    cs::usage_error(
        "--no-timing with --broken: over-sync's bug is its running time, which "
        "--no-timing does not measure");
  }

  Context ctx;
  ctx.broken = broken;
  ctx.n = elements;
  ctx.delay_ms = delay_ms;
  ctx.common = &common;
  ctx.prop = cs::select_device(common.device);
  cs::require_fits_on_device(3 * elements * sizeof(std::uint32_t),
                             "--elements " + std::to_string(elements));
  ctx.grid = ctx.prop.multiProcessorCount * 4;
  load_every_kernel();
  std::printf("Each producer spins %d ms before it writes; consumers need microseconds.\n",
              delay_ms);

  for (const Case& c : all_cases()) {
    if (case_name != "all" && case_name != c.name) continue;
    if (both) {
      ctx.broken = true;
      c.run(ctx);
      ctx.broken = false;
    }
    c.run(ctx);
  }

  const int status = cs::finish();
  if (broken && status == 0) {
    std::printf("Exit status %d: the bug was reproduced, as intended (see --help).\n",
                kBugReproducedExitCode);
    return kBugReproducedExitCode;
  }
  if (broken) {
    std::printf("Exit status 1: a broken variant did not show its bug, or a check failed.\n");
  }
  return status;
}
