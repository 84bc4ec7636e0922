// Chapter 10: stream-ordered memory
//
// cudaMallocAsync(&p, bytes, stream) and cudaFreeAsync(p, stream) allocate and free in stream
// order: the allocation exists from the point where it was issued in the stream until the point
// where its free was issued, and neither call waits for the GPU. The memory comes from a pool:
// the device's default pool (cudaDeviceGetDefaultMemPool) or one you create (cudaMemPoolCreate).
// The pool's release threshold decides whether it keeps freed memory across a synchronization,
// and that decides what an allocate/free cycle costs against cudaMalloc/cudaFree. An allocation
// used by another stream needs an event, like any other data, and so does its free.
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/10_stream_ordered_memory
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/10_stream_ordered_memory/stream_ordered_memory.cu common/src/*.cpp -o 10_stream_ordered_memory
// clang-format on
//   build/bin/10_stream_ordered_memory --part cost    # one part: counters, keep, cost or streams
//   build/bin/10_stream_ordered_memory --help         # every flag
//
// What to expect (stream_ordered_memory_lab.cuh holds machinery; a reader may skip it)
//   1. counters: the default pool's reserved and used bytes while a 64 MiB allocation lives,
//      after its free is issued and after a synchronization (threshold 0: all given back).
//   2. keep: a created pool with the release threshold at UINT64_MAX keeps its memory after the
//      free and the synchronization; cudaMemPoolTrimTo gives it back by hand.
//   3. cost: allocate, touch, free, synchronize, many times: cudaMalloc/cudaFree, then
//      cudaMallocAsync at threshold 0 (maps again every cycle) and at UINT64_MAX (about 10x
//      cheaper than cudaMalloc on an H200).
//   4. streams: stream A allocates and fills, stream B waits for A's event, reads, and frees;
//      the other way round, A frees after waiting for B's event. Results checked, pool empty.
// Every property ends in a CHECK line; the exit status is 0 when all pass. A device without
// memory pools prints SKIP (exit 77).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"
#include "stream_ordered_memory_lab.cuh"

namespace lab = stream_ordered_memory_lab;

constexpr int kThreads = 256;

// Kernels

// Holds one thread for `ns` nanoseconds of wall time (cs::globaltimer_ns() is the GPU's
// nanosecond clock, from cuda_streams/device_clock.cuh): a slow producer.
__global__ void spin(unsigned long long ns) {
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < ns) {
  }
}

// Writes the first and the last int of an allocation: the smallest real use of it.
__global__ void touch(int* data, std::size_t count) {
  data[0] = 1;
  data[count - 1] = 2;
}

// What the producer writes at index i, and what the consumer makes of it.
__host__ __device__ unsigned produced_value(unsigned i) {
  return 3u * i + 1u;
}
__host__ __device__ unsigned consumed_value(unsigned produced) {
  return 2u * produced + 1u;
}

__global__ void fill(unsigned* data, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    data[i] = produced_value(static_cast<unsigned>(i));
  }
}

__global__ void consume(const unsigned* in, unsigned* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = consumed_value(in[i]);
  }
}

// A pool's four counters: what it holds (reserved) and hands out (used), now and at the high
// watermark since it was last reset.
lab::PoolCounters read_counters(cudaMemPool_t pool) {
  lab::PoolCounters c;
  CS_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &c.reserved));
  CS_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &c.used));
  CS_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &c.reserved_high));
  CS_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &c.used_high));
  return c;
}

// Part 1: the default pool's counters follow an allocation and its free

void part_counters(int device, std::size_t bytes) {
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaMemPool_t pool = nullptr;
  CS_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));  // what cudaMallocAsync draws from
  std::uint64_t threshold = 0;
  CS_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  std::uint64_t zero = 0;  // the only value the high watermarks accept: it resets them
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero));
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  std::printf("The default pool (cudaDeviceGetDefaultMemPool), release threshold %s:\n",
              lab::bytes_text(threshold).c_str());
  lab::print_counter_header();
  lab::print_counters("before", read_counters(pool));

  // core: counters
  int* block = nullptr;
  CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&block), bytes, stream));
  touch<<<1, 1, 0, stream>>>(block, bytes / sizeof(int));
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(stream));
  const lab::PoolCounters allocated = read_counters(pool);
  lab::print_counters("allocated (cudaMallocAsync)", allocated);
  CS_CHECK(cudaFreeAsync(block, stream));  // returns at once; the free happens in stream order
  lab::print_counters("cudaFreeAsync issued, no sync yet", read_counters(pool));
  CS_CHECK(cudaStreamSynchronize(stream));
  // end core
  const lab::PoolCounters after = read_counters(pool);
  lab::print_counters("after cudaStreamSynchronize", after);

  // While the allocation lives the pool hands out at least the bytes asked for (it may round
  // up), out of memory it holds: used >= bytes and reserved >= used.
  cs::check_that(
      "pool_counters_while_allocated",
      allocated.used >= bytes && allocated.reserved >= allocated.used,
      cs::format("used %s >= the %s asked for, reserved >= used",
                 lab::bytes_text(allocated.used).c_str(), lab::bytes_text(bytes).c_str()));
  // After the free and a synchronization nothing is used, the pool kept at most its release
  // threshold, and the high watermark still remembers the allocation.
  cs::check_that(
      "pool_counters_after_free",
      after.used == 0 && after.reserved <= threshold && after.used_high >= bytes,
      cs::format("after free + sync: used %s, reserved %s <= threshold %s; the high "
                 "watermark remembers %s",
                 lab::bytes_text(after.used).c_str(), lab::bytes_text(after.reserved).c_str(),
                 lab::bytes_text(threshold).c_str(), lab::bytes_text(after.used_high).c_str()));
  CS_CHECK(cudaStreamDestroy(stream));
}

// Part 2: a created pool with the release threshold at UINT64_MAX keeps its memory

void part_keep(int device, std::size_t bytes) {
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // core: keep
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;  // device memory that is never paged out
  props.handleTypes = cudaMemHandleTypeNone;      // not shared with other processes
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  CS_CHECK(cudaMemPoolCreate(&pool, &props));
  std::uint64_t keep_all = UINT64_MAX;  // keep every freed byte across synchronizations
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  std::printf("A created pool (cudaMemPoolCreate) with the release threshold at UINT64_MAX:\n");
  lab::print_counter_header();

  int* block = nullptr;
  CS_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&block), bytes, pool, stream));
  touch<<<1, 1, 0, stream>>>(block, bytes / sizeof(int));
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaFreeAsync(block, stream));
  CS_CHECK(cudaStreamSynchronize(stream));
  // end core
  const lab::PoolCounters kept = read_counters(pool);
  lab::print_counters("after malloc, free and sync", kept);
  CS_CHECK(cudaMemPoolTrimTo(pool, 0));  // give back all but 0 bytes of what is not in use
  const lab::PoolCounters trimmed = read_counters(pool);
  lab::print_counters("after cudaMemPoolTrimTo(pool, 0)", trimmed);

  // After the free and the synchronization nothing is used, but the pool still holds at least
  // the allocation's bytes: the threshold let it keep them for the next allocation.
  cs::check_that(
      "created_pool_keeps_memory", kept.used == 0 && kept.reserved >= bytes,
      cs::format("after free + sync: used %s, reserved %s kept for the next "
                 "allocation (trimmed by hand to %s)",
                 lab::bytes_text(kept.used).c_str(), lab::bytes_text(kept.reserved).c_str(),
                 lab::bytes_text(trimmed.reserved).c_str()));
  // With nothing in use, trimming to 0 bytes leaves the pool holding nothing at all.
  cs::check_that("trim_gives_memory_back", trimmed.reserved == 0,
                 cs::format("cudaMemPoolTrimTo(pool, 0) left %s reserved",
                            lab::bytes_text(trimmed.reserved).c_str()));
  CS_CHECK(cudaMemPoolDestroy(pool));
  CS_CHECK(cudaStreamDestroy(stream));
}

// Part 3: what an allocate/free cycle costs: cudaMalloc against the pool, released and kept

void part_cost(int device, std::size_t bytes, int cycles, std::uint64_t threshold,
               const cs::LaunchEnvironment& env, const cs::CommonOptions& common) {
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaMemPool_t pool = nullptr;
  CS_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t original = 0;
  CS_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &original));
  const std::size_t count = bytes / sizeof(int);
  // core: cost
  auto with_malloc = [&] {  // may map memory; cudaFree waits for the whole device
    int* p = nullptr;
    CS_CHECK(cudaMalloc(&p, bytes));
    touch<<<1, 1, 0, stream>>>(p, count);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaFree(p));
    CS_CHECK(cudaStreamSynchronize(stream));
  };
  auto with_pool = [&] {  // served from the default pool, in stream order
    int* p = nullptr;
    CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&p), bytes, stream));
    touch<<<1, 1, 0, stream>>>(p, count);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaFreeAsync(p, stream));
    CS_CHECK(cudaStreamSynchronize(stream));
  };
  // end core
  const cs::Stats malloc_us = lab::time_cycles_us(cycles, with_malloc);
  // Does cudaMalloc map new memory at this size? The device's free memory drops if it does.
  std::size_t free_before = 0, free_during = 0, total = 0;
  int* probe = nullptr;
  CS_CHECK(cudaMemGetInfo(&free_before, &total));
  CS_CHECK(cudaMalloc(&probe, bytes));
  CS_CHECK(cudaMemGetInfo(&free_during, &total));
  CS_CHECK(cudaFree(probe));
  const std::size_t mapped = free_before > free_during ? free_before - free_during : 0;
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  const cs::Stats released_us = lab::time_cycles_us(cycles, with_pool);
  std::uint64_t released_holds = 0, kept_holds = 0;
  CS_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &released_holds));
  std::uint64_t keep_all = UINT64_MAX;
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  const cs::Stats kept_us = lab::time_cycles_us(cycles, with_pool);
  CS_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &kept_holds));
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &original));
  CS_CHECK(cudaMemPoolTrimTo(pool, 0));  // leave the default pool as this part found it

  std::printf(
      "One cycle: allocate %s, touch it in a kernel, free, synchronize; %d cycles each\n"
      "(cudaMalloc took %s of the device's free memory):\n",
      lab::bytes_text(bytes).c_str(), cycles, lab::bytes_text(mapped).c_str());
  std::printf("   %-46s %10s %10s %10s\n", "", "median", "min", "max");
  lab::print_cost_row("cudaMalloc + cudaFree", malloc_us, "");
  lab::print_cost_row("cudaMallocAsync + cudaFreeAsync, threshold " + lab::bytes_text(threshold),
                      released_us,
                      "pool reserved after the last sync: " + lab::bytes_text(released_holds));
  lab::print_cost_row("cudaMallocAsync + cudaFreeAsync, UINT64_MAX", kept_us,
                      "pool reserved after the last sync: " + lab::bytes_text(kept_holds));
  lab::print_threshold_verdict(threshold, released_us.median, kept_us.median,
                               released_holds >= bytes, env);
  // A cycle served from a pool that keeps its memory costs at most half of the cudaMalloc +
  // cudaFree cycle, which maps memory (2 MiB even for 4 KiB on an H200) and waits for the whole
  // device in cudaFree. Only --no-timing skips it: whatever this run measured decides.
  constexpr double kKeptPoolCostMax = 0.5;
  cs::check_or_skip(common.timing_skip_reason(), "kept_pool_cycle_cost",
                    kept_us.median / std::max(malloc_us.median, 1e-9), cs::Compare::at_most,
                    kKeptPoolCostMax, "x",
                    "cycle with a pool that keeps its memory / cycle with cudaMalloc + cudaFree");
  CS_CHECK(cudaStreamDestroy(stream));
}

// Part 4: allocated in stream A, used and freed in stream B: events order them

void part_streams(int device, int sms, int n, const cs::LaunchEnvironment& env,
                  const cs::CommonOptions& common) {
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(unsigned);
  cudaStream_t a = nullptr, b = nullptr;
  cudaEvent_t produced = nullptr, consumed = nullptr;
  unsigned *out_b_frees = nullptr, *out_a_frees = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CS_CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));  // only for ordering
  CS_CHECK(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
  CS_CHECK(cudaMalloc(&out_b_frees, bytes));  // the results outlive the part: plain cudaMalloc
  CS_CHECK(cudaMalloc(&out_a_frees, bytes));
  cudaMemPool_t pool = nullptr;
  CS_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t zero = 0;
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  const int grid = std::min((n + kThreads - 1) / kThreads, 4 * sms);  // n is at most 64 Mi
  // The producer waits this long before it writes, so that a consumer in B that did not wait
  // for A's event would read the memory before it was written.
  constexpr int kProducerMs = 2;

  cs::Timeline timeline;
  timeline.start(a);
  unsigned *first = nullptr, *second = nullptr;  // both allocated in stream A's order
  cs::TimelineSpan span = timeline.span("stream A", "malloc", a, "cudaMallocAsync x2");
  CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&first), bytes, a));
  CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&second), bytes, a));
  span = timeline.span("stream A", "wait", a, "slow producer");
  const double issue_from = cs::host_now_ms();  // the producer's launch is timed too
  spin<<<1, 1, 0, a>>>(kProducerMs * 1000000ull);
  CS_CHECK_LAUNCH();
  // core: streams
  // (1) A fills `first`; B waits for A's event, reads it, and frees it in B's own order.
  span = timeline.span("stream A", "kernel", a, "fill first");
  fill<<<grid, kThreads, 0, a>>>(first, n);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(produced, a));
  CS_CHECK(cudaStreamWaitEvent(b, produced, 0));
  span = timeline.span("stream B", "kernel", b, "consume first");
  consume<<<grid, kThreads, 0, b>>>(first, out_b_frees, n);
  CS_CHECK_LAUNCH();
  span = timeline.span("stream B", "free", b, "cudaFreeAsync(first) in B");
  CS_CHECK(cudaFreeAsync(first, b));
  // (2) A fills `second`, B reads it; A frees it only after waiting for B's event.
  span = timeline.span("stream A", "kernel", a, "fill second");
  fill<<<grid, kThreads, 0, a>>>(second, n);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(produced, a));  // re-recorded: B's first wait already took its state
  CS_CHECK(cudaStreamWaitEvent(b, produced, 0));
  span = timeline.span("stream B", "kernel", b, "consume second");
  consume<<<grid, kThreads, 0, b>>>(second, out_a_frees, n);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(consumed, b));
  CS_CHECK(cudaStreamWaitEvent(a, consumed, 0));
  span = timeline.span("stream A", "free", a, "cudaFreeAsync(second) in A after B");
  CS_CHECK(cudaFreeAsync(second, a));
  // end core
  span.end();
  const double issue_ms = cs::host_now_ms() - issue_from;
  const lab::PoolCounters in_flight = read_counters(pool);
  CS_CHECK(cudaStreamSynchronize(a));
  CS_CHECK(cudaStreamSynchronize(b));
  const lab::PoolCounters done = read_counters(pool);
  cs::publish_timeline(timeline.collect(), common,
                       "Two streams share stream-ordered allocations (W: the slow producer):");
  lab::print_two_streams(in_flight, done, issue_ms);

  std::vector<unsigned> want(static_cast<std::size_t>(n)), got(want.size());
  for (int i = 0; i < n; ++i) want[i] = consumed_value(produced_value(static_cast<unsigned>(i)));
  CS_CHECK(cudaMemcpy(got.data(), out_b_frees, bytes, cudaMemcpyDeviceToHost));
  cs::verify("other_stream_frees", got, want);
  CS_CHECK(cudaMemcpy(got.data(), out_a_frees, bytes, cudaMemcpyDeviceToHost));
  cs::verify("owner_frees_after_event", got, want);
  cs::check_that("pool_empty_after_two_streams", done.used == 0,
                 "both allocations were freed in stream order: used " + lab::bytes_text(done.used));
  // Issuing the producer's launch, the fills, reads, events and frees takes the host at most this
  // fraction of the producer's delay: cudaFreeAsync and cudaStreamWaitEvent don't wait for the GPU.
  constexpr double kIssueOverProducerMax = 0.5;
  cs::check_or_skip(
      cs::first_reason(
          {common.timing_skip_reason(), lab::launch_waits(env, "the host waited for each kernel")}),
      "issued_while_producer_ran", issue_ms / kProducerMs, cs::Compare::at_most,
      kIssueOverProducerMax, "x",
      "time to issue the producer and the rest / its delay: no call waited for the GPU");
  lab::print_streams_settings(env);  // what CUDA_LAUNCH_BLOCKING=1 or one queue changed here
  for (cudaEvent_t event : {produced, consumed}) CS_CHECK(cudaEventDestroy(event));
  CS_CHECK(cudaFree(out_b_frees));
  CS_CHECK(cudaFree(out_a_frees));
  for (cudaStream_t stream : {a, b}) CS_CHECK(cudaStreamDestroy(stream));
}

int main(int argc, char** argv) {
  lab::Flags f;  // --bytes, --cycles, --threshold, --elements: see stream_ordered_memory_lab.cuh
  cs::CommonOptions common;
  cs::Options options("10_stream_ordered_memory",
                      "cudaMallocAsync/cudaFreeAsync, memory pools and the release threshold, "
                      "cost against cudaMalloc/cudaFree, and use from another stream.");
  cs::Parts parts(options,
                  {{"counters", "the default pool's counters follow an allocation and its free"},
                   {"keep", "a pool with the release threshold at UINT64_MAX keeps its memory"},
                   {"cost", "an allocate/free cycle: cudaMalloc against the pool"},
                   {"streams", "allocated in stream A, used and freed in stream B"}});
  lab::add_flags(options, &f);
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  const int device = common.device;
  const cudaDeviceProp prop = cs::select_device(device);
  cs::print_launch_environment(env);
  int pools_supported = 0;
  CS_CHECK(cudaDeviceGetAttribute(&pools_supported, cudaDevAttrMemoryPoolsSupported, device));
  if (!pools_supported) {
    cs::skip(
        cs::format("device %d has no stream-ordered memory pools "
                   "(cudaDevAttrMemoryPoolsSupported = 0)",
                   device));
  }
  // Part cost holds a cudaMalloc'ed block while the pool may still hold its own; part streams
  // holds two pool allocations and two result buffers at once.
  cs::require_fits_on_device(2 * f.bytes, cs::format("--bytes %zu", f.bytes));
  const std::size_t shared_bytes = static_cast<std::size_t>(f.elements) * sizeof(unsigned);
  cs::require_fits_on_device(4 * shared_bytes, cs::format("--elements %d", f.elements));

  if (parts.begin("counters")) part_counters(device, f.bytes);
  if (parts.begin("keep")) part_keep(device, f.bytes);
  if (parts.begin("cost")) part_cost(device, f.bytes, f.cycles, f.threshold, env, common);
  if (parts.begin("streams")) {
    part_streams(device, prop.multiProcessorCount, f.elements, env, common);
  }
  return cs::finish();
}
