// 10_stream_ordered_memory: cudaMallocAsync, cudaFreeAsync and memory pools.
//
// What it teaches
//   cudaMallocAsync(&p, bytes, stream) and cudaFreeAsync(p, stream) allocate and free in stream
//   order: the allocation exists from the point where it was issued in the stream until the
//   point where its free was issued, and neither call waits for the GPU. The memory comes from a
//   pool: the device's default pool (cudaDeviceGetDefaultMemPool) or one you create
//   (cudaMemPoolCreate, cudaMallocFromPoolAsync).
//   1. The pool's counters (reserved and used, current and high watermark) while an allocation
//      lives and after its free; with the default release threshold of 0 the pool gives its
//      memory back at the next synchronization.
//   2. A created pool with the release threshold at UINT64_MAX keeps its memory after a free
//      and a synchronization, ready for the next allocation.
//   3. Cost: allocate, use, free and synchronize, many times; with cudaMalloc/cudaFree, with
//      cudaMallocAsync at threshold 0 (memory returned at every sync) and at UINT64_MAX (kept).
//   4. Another stream: an allocation made in stream A and used in stream B needs an event, A
//      records it and B waits for it; then B frees it (or A frees it after waiting for B).
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/10_stream_ordered_memory
//   build/bin/10_stream_ordered_memory --bytes 256M --cycles 100
//
// What to expect
//   The pool counters at each step, the cost per allocate/free cycle of the three ways side by
//   side, an ASCII timeline of the two-stream use, and CHECK lines that all end in PASS. A
//   device without memory pools prints SKIP (exit 77).

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

namespace bars {
// An allocate/free cycle served from a pool that keeps its memory must cost at most half of the
// same cycle with cudaMalloc/cudaFree, which map and unmap memory (and cudaFree synchronizes).
constexpr double kKeptPoolCostRatio = 0.5;
}  // namespace bars

namespace settings {
constexpr int kWarmupCycles = 5;
// The producer in stream A waits this long before writing, so that a consumer in stream B that
// did not wait for A's event would read the memory before it was written.
constexpr unsigned long long kProducerDelayNs = 2000000;  // 2 ms
}  // namespace settings

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

__global__ void spin(unsigned long long duration_ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < duration_ns) {
  }
}

// Writes the first and the last int of an allocation: the smallest real use of it.
__global__ void touch(int* data, std::size_t count) {
  data[0] = 1;
  data[count - 1] = 2;
}

__global__ void fill(unsigned* data, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    data[i] = 3u * static_cast<unsigned>(i) + 1u;
  }
}

__global__ void consume(const unsigned* in, unsigned* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = 2u * in[i] + 1u;
  }
}

// ---------------------------------------------------------------------------------------------
// Pool counters
// ---------------------------------------------------------------------------------------------

struct PoolCounters {
  std::uint64_t reserved = 0;
  std::uint64_t used = 0;
  std::uint64_t reserved_high = 0;
  std::uint64_t used_high = 0;
};

std::uint64_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute) {
  std::uint64_t value = 0;
  CS_CHECK(cudaMemPoolGetAttribute(pool, attribute, &value));
  return value;
}

PoolCounters read_counters(cudaMemPool_t pool) {
  PoolCounters c;
  c.reserved = pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent);
  c.used = pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent);
  c.reserved_high = pool_attribute(pool, cudaMemPoolAttrReservedMemHigh);
  c.used_high = pool_attribute(pool, cudaMemPoolAttrUsedMemHigh);
  return c;
}

void reset_high_watermarks(cudaMemPool_t pool) {
  std::uint64_t zero = 0;  // the only value these two accept
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero));
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
}

void set_release_threshold(cudaMemPool_t pool, std::uint64_t bytes) {
  CS_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &bytes));
}

std::string threshold_text(std::uint64_t bytes) {
  return bytes == UINT64_MAX ? std::string("UINT64_MAX")
                             : cs::format_bytes(static_cast<double>(bytes));
}

void print_counters(const char* moment, const PoolCounters& c) {
  std::printf("   %-34s %12s %12s %12s %12s\n", moment,
              cs::format_bytes(static_cast<double>(c.reserved)).c_str(),
              cs::format_bytes(static_cast<double>(c.used)).c_str(),
              cs::format_bytes(static_cast<double>(c.reserved_high)).c_str(),
              cs::format_bytes(static_cast<double>(c.used_high)).c_str());
}

void print_counter_header() {
  std::printf("   %-34s %12s %12s %12s %12s\n", "", "reserved", "used", "reserved high",
              "used high");
}

int grid_for(int n) {
  return (n + 255) / 256 < 1024 ? (n + 255) / 256 : 1024;
}

// Host time of each call of `cycle`, after a few untimed ones; every cycle ends synchronized.
template <class Cycle>
cs::Stats time_cycles_us(int cycles, Cycle&& cycle) {
  for (int i = 0; i < settings::kWarmupCycles; ++i) cycle();
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(cycles));
  for (int i = 0; i < cycles; ++i) {
    const double begin = cs::host_now_ms();
    cycle();
    samples.push_back(1000.0 * (cs::host_now_ms() - begin));
  }
  return cs::summarize(samples);
}

// ---------------------------------------------------------------------------------------------

int main(int argc, char** argv) {
  std::size_t bytes = 64ull << 20;
  int cycles = 50;
  int elements = 1 << 20;
  cs::CommonOptions common;
  cs::Options options("10_stream_ordered_memory",
                      "cudaMallocAsync/cudaFreeAsync, memory pools and the release threshold, "
                      "cost against cudaMalloc/cudaFree, and use from another stream.");
  options.add_size("bytes", &bytes, 4096, 16ull << 30, "bytes per allocation in parts 1 to 3");
  options.add_int("cycles", &cycles, 1, 100000, "timed allocate/free cycles per way of allocating");
  options.add_int("elements", &elements, 1, 1 << 26,
                  "unsigned ints shared between the two streams");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  const int device = common.device;
  cs::select_device(device);
  int pools_supported = 0;
  CS_CHECK(cudaDeviceGetAttribute(&pools_supported, cudaDevAttrMemoryPoolsSupported, device));
  if (!pools_supported) {
    cs::skip("device " + std::to_string(device) +
             " has no stream-ordered memory pools (cudaDevAttrMemoryPoolsSupported = 0)");
  }
  // Part 3 holds a cudaMalloc'ed block while the pools may still hold theirs.
  cs::require_fits_on_device(2 * bytes, "--bytes " + std::to_string(bytes));
  const std::size_t shared_bytes = static_cast<std::size_t>(elements) * sizeof(unsigned);
  cs::require_fits_on_device(3 * shared_bytes, "--elements " + std::to_string(elements));
  const std::size_t touch_count = bytes / sizeof(int);

  cudaStream_t stream_a = nullptr;
  cudaStream_t stream_b = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream_a, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&stream_b, cudaStreamNonBlocking));

  // ===== 1. The default pool and its counters ===============================================
  cudaMemPool_t default_pool = nullptr;
  CS_CHECK(cudaDeviceGetDefaultMemPool(&default_pool, device));
  const std::uint64_t default_threshold =
      pool_attribute(default_pool, cudaMemPoolAttrReleaseThreshold);
  std::printf("\n1. The default pool (cudaDeviceGetDefaultMemPool), release threshold %s\n",
              threshold_text(default_threshold).c_str());
  reset_high_watermarks(default_pool);
  print_counter_header();
  print_counters("before", read_counters(default_pool));
  int* block = nullptr;
  CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&block), bytes, stream_a));
  touch<<<1, 1, 0, stream_a>>>(block, touch_count);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(stream_a));
  const PoolCounters while_allocated = read_counters(default_pool);
  print_counters("allocated (cudaMallocAsync)", while_allocated);
  CS_CHECK(cudaFreeAsync(block, stream_a));
  print_counters("cudaFreeAsync issued, no sync yet", read_counters(default_pool));
  CS_CHECK(cudaStreamSynchronize(stream_a));
  const PoolCounters after_sync = read_counters(default_pool);
  print_counters("after cudaStreamSynchronize", after_sync);
  cs::check_that("pool_counters_while_allocated",
                 while_allocated.used >= bytes && while_allocated.reserved >= while_allocated.used,
                 "used " + cs::format_bytes(static_cast<double>(while_allocated.used)) +
                     " >= the " + cs::format_bytes(static_cast<double>(bytes)) +
                     " asked for, reserved >= used");
  cs::check_that("pool_counters_after_free",
                 after_sync.used == 0 && after_sync.reserved <= default_threshold &&
                     after_sync.used_high >= bytes,
                 "after free + sync: used " +
                     cs::format_bytes(static_cast<double>(after_sync.used)) + ", reserved " +
                     cs::format_bytes(static_cast<double>(after_sync.reserved)) + " <= threshold " +
                     threshold_text(default_threshold) + "; the high watermark remembers " +
                     cs::format_bytes(static_cast<double>(after_sync.used_high)));

  // ===== 2. A pool of your own that keeps its memory ========================================
  std::printf("\n2. A created pool (cudaMemPoolCreate) with the release threshold at UINT64_MAX\n");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t own_pool = nullptr;
  CS_CHECK(cudaMemPoolCreate(&own_pool, &props));
  set_release_threshold(own_pool, UINT64_MAX);
  print_counter_header();
  CS_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&block), bytes, own_pool, stream_a));
  touch<<<1, 1, 0, stream_a>>>(block, touch_count);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaFreeAsync(block, stream_a));
  CS_CHECK(cudaStreamSynchronize(stream_a));
  const PoolCounters kept = read_counters(own_pool);
  print_counters("after malloc, free and sync", kept);
  CS_CHECK(cudaMemPoolTrimTo(own_pool, 0));
  const PoolCounters trimmed = read_counters(own_pool);
  print_counters("after cudaMemPoolTrimTo(pool, 0)", trimmed);
  cs::check_that("created_pool_keeps_memory", kept.used == 0 && kept.reserved >= bytes,
                 "after free + sync: used " + cs::format_bytes(static_cast<double>(kept.used)) +
                     ", reserved " + cs::format_bytes(static_cast<double>(kept.reserved)) +
                     " kept for the next allocation (trimmed by hand to " +
                     cs::format_bytes(static_cast<double>(trimmed.reserved)) + ")");

  // ===== 3. What an allocate/free cycle costs ===============================================
  std::printf("\n3. Cost of one cycle: allocate %s, touch it in a kernel, free, synchronize\n",
              cs::format_bytes(static_cast<double>(bytes)).c_str());
  if (common.no_timing) {
    cs::check_skipped("kept_pool_cycle_cost", "--no-timing");
  } else {
    auto with_malloc = [&] {
      int* p = nullptr;
      CS_CHECK(cudaMalloc(&p, bytes));
      touch<<<1, 1, 0, stream_a>>>(p, touch_count);
      CS_CHECK_LAUNCH();
      CS_CHECK(cudaFree(p));
      CS_CHECK(cudaStreamSynchronize(stream_a));
    };
    auto with_malloc_async = [&] {
      int* p = nullptr;
      CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&p), bytes, stream_a));
      touch<<<1, 1, 0, stream_a>>>(p, touch_count);
      CS_CHECK_LAUNCH();
      CS_CHECK(cudaFreeAsync(p, stream_a));
      CS_CHECK(cudaStreamSynchronize(stream_a));
    };
    const cs::Stats malloc_us = time_cycles_us(cycles, with_malloc);
    set_release_threshold(default_pool, 0);
    const cs::Stats released_us = time_cycles_us(cycles, with_malloc_async);
    const std::uint64_t reserved_released =
        pool_attribute(default_pool, cudaMemPoolAttrReservedMemCurrent);
    set_release_threshold(default_pool, UINT64_MAX);
    const cs::Stats kept_us = time_cycles_us(cycles, with_malloc_async);
    const std::uint64_t reserved_kept =
        pool_attribute(default_pool, cudaMemPoolAttrReservedMemCurrent);
    set_release_threshold(default_pool, default_threshold);
    CS_CHECK(cudaMemPoolTrimTo(default_pool, 0));
    const std::string heading = "per cycle, " + std::to_string(cycles) + " cycles each";
    std::printf("   %-44s %10s %10s %10s\n", heading.c_str(), "median", "min", "max");
    auto row = [](const char* name, const cs::Stats& s, const std::string& note) {
      std::printf("   %-44s %7.1f us %7.1f us %7.1f us  %s\n", name, s.median, s.min, s.max,
                  note.c_str());
    };
    row("cudaMalloc + cudaFree", malloc_us, "");
    row("cudaMallocAsync + cudaFreeAsync, threshold 0", released_us,
        "pool reserved after the last sync: " +
            cs::format_bytes(static_cast<double>(reserved_released)));
    row("cudaMallocAsync + cudaFreeAsync, UINT64_MAX", kept_us,
        "pool reserved after the last sync: " +
            cs::format_bytes(static_cast<double>(reserved_kept)));
    const double released_vs_kept = released_us.median / kept_us.median;
    std::printf("   Threshold 0 cost %.1fx the kept pool's cycle: %s\n", released_vs_kept,
                reserved_released < bytes
                    ? "at threshold 0 the pool handed the memory back at every sync and had to "
                      "map it again."
                    : "this pool kept its memory even at threshold 0.");
    cs::check("kept_pool_cycle_cost", kept_us.median / malloc_us.median, cs::Compare::at_most,
              bars::kKeptPoolCostRatio, "x",
              "cycle with a pool that keeps its memory / cycle with cudaMalloc + cudaFree");
  }

  // ===== 4. Using an allocation in another stream ===========================================
  std::printf("\n4. Allocated in stream A, used in stream B: an event orders them\n");
  unsigned* out_b_frees = nullptr;
  unsigned* out_a_frees = nullptr;
  CS_CHECK(cudaMalloc(&out_b_frees, shared_bytes));
  CS_CHECK(cudaMalloc(&out_a_frees, shared_bytes));
  cudaEvent_t produced = nullptr;
  cudaEvent_t consumed = nullptr;
  CS_CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CS_CHECK(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
  reset_high_watermarks(default_pool);
  const int grid = grid_for(elements);

  cs::Timeline timeline;
  timeline.start(stream_a);
  // (a) A allocates and fills; B waits for A's event, reads, and frees in its own stream order.
  unsigned* shared = nullptr;
  int span = timeline.begin("stream A", "malloc", stream_a, "cudaMallocAsync");
  CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&shared), shared_bytes, stream_a));
  timeline.end(span, stream_a);
  span = timeline.begin("stream A", "wait", stream_a, "slow producer");
  spin<<<1, 1, 0, stream_a>>>(settings::kProducerDelayNs);
  CS_CHECK_LAUNCH();
  timeline.end(span, stream_a);
  span = timeline.begin("stream A", "kernel", stream_a, "fill");
  fill<<<grid, 256, 0, stream_a>>>(shared, elements);
  CS_CHECK_LAUNCH();
  timeline.end(span, stream_a);
  CS_CHECK(cudaEventRecord(produced, stream_a));
  CS_CHECK(cudaStreamWaitEvent(stream_b, produced, 0));
  span = timeline.begin("stream B", "kernel", stream_b, "consume");
  consume<<<grid, 256, 0, stream_b>>>(shared, out_b_frees, elements);
  CS_CHECK_LAUNCH();
  timeline.end(span, stream_b);
  span = timeline.begin("stream B", "free", stream_b, "cudaFreeAsync in B");
  CS_CHECK(cudaFreeAsync(shared, stream_b));
  timeline.end(span, stream_b);

  // (b) A allocates and fills, B reads; A frees only after waiting for B's event.
  unsigned* shared_again = nullptr;
  CS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&shared_again), shared_bytes, stream_a));
  span = timeline.begin("stream A", "kernel", stream_a, "fill");
  fill<<<grid, 256, 0, stream_a>>>(shared_again, elements);
  CS_CHECK_LAUNCH();
  timeline.end(span, stream_a);
  CS_CHECK(cudaEventRecord(produced, stream_a));
  CS_CHECK(cudaStreamWaitEvent(stream_b, produced, 0));
  span = timeline.begin("stream B", "kernel", stream_b, "consume");
  consume<<<grid, 256, 0, stream_b>>>(shared_again, out_a_frees, elements);
  CS_CHECK_LAUNCH();
  timeline.end(span, stream_b);
  CS_CHECK(cudaEventRecord(consumed, stream_b));
  CS_CHECK(cudaStreamWaitEvent(stream_a, consumed, 0));
  span = timeline.begin("stream A", "free", stream_a, "cudaFreeAsync in A after B");
  CS_CHECK(cudaFreeAsync(shared_again, stream_a));
  timeline.end(span, stream_a);

  const PoolCounters in_flight = read_counters(default_pool);
  CS_CHECK(cudaStreamSynchronize(stream_a));
  CS_CHECK(cudaStreamSynchronize(stream_b));
  const PoolCounters two_streams_done = read_counters(default_pool);
  cs::publish_timeline(timeline.collect(), common,
                       "Two streams share stream-ordered allocations (M malloc, W slow producer, "
                       "K kernel, F free):");
  std::printf(
      "   pool while the work was issued: used %s (high %s); after both streams "
      "finished: used %s, reserved %s\n",
      cs::format_bytes(static_cast<double>(in_flight.used)).c_str(),
      cs::format_bytes(static_cast<double>(in_flight.used_high)).c_str(),
      cs::format_bytes(static_cast<double>(two_streams_done.used)).c_str(),
      cs::format_bytes(static_cast<double>(two_streams_done.reserved)).c_str());

  std::vector<unsigned> reference(static_cast<std::size_t>(elements));
  for (int i = 0; i < elements; ++i) reference[i] = 2u * (3u * static_cast<unsigned>(i) + 1u) + 1u;
  std::vector<unsigned> got(static_cast<std::size_t>(elements));
  CS_CHECK(cudaMemcpy(got.data(), out_b_frees, shared_bytes, cudaMemcpyDeviceToHost));
  cs::verify("other_stream_frees", got, reference);
  CS_CHECK(cudaMemcpy(got.data(), out_a_frees, shared_bytes, cudaMemcpyDeviceToHost));
  cs::verify("owner_frees_after_event", got, reference);
  cs::check_that("pool_empty_after_two_streams", two_streams_done.used == 0,
                 "both allocations were freed in stream order: used " +
                     cs::format_bytes(static_cast<double>(two_streams_done.used)));

  std::printf(
      "\nStream-ordered allocation costs little when the pool keeps its memory (raise "
      "the release threshold);\nan allocation used by another stream needs the same "
      "event as any other data, and so does its free.\n");

  CS_CHECK(cudaEventDestroy(produced));
  CS_CHECK(cudaEventDestroy(consumed));
  CS_CHECK(cudaFree(out_b_frees));
  CS_CHECK(cudaFree(out_a_frees));
  CS_CHECK(cudaMemPoolDestroy(own_pool));
  CS_CHECK(cudaStreamDestroy(stream_a));
  CS_CHECK(cudaStreamDestroy(stream_b));
  return cs::finish();
}
