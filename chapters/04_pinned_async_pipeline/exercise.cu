// Exercise for chapter 04: a copy/compute pipeline that does not overlap.
//
// The task
//   The data is cut into chunks; each chunk is copied to the device, processed by a kernel and
//   copied back, all with cudaMemcpyAsync and kernel launches into one of several streams, so that
//   one chunk's copies can run while another chunk's kernel does. The program times the same work
//   in one stream (serial) and spread over the streams (overlapped). The overlapped run is meant to
//   take well under the serial time, but as given it takes about as long, and the CHECK line
//   fails. Find out why, using what chapter 04 measures, and fix it. The lines marked
//   TODO(exercise) are where to look. Do not change the streams, the kernel, the issue loops or
//   the bar.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/04_pinned_async_pipeline_exercise
//   ctest --preset exercises -R '^04_pinned_async_pipeline_exercise\.'
//
// What it prints
//   The serial and overlapped times (medians), how long the host spent inside the issue loop, an
//   ASCII timeline of one overlapped run (one row per stream: H = H2D, K = kernel, D = D2H), and
//   the CHECK lines: both runs' results against the CPU, and overlapped <= 0.7 x serial (0.85 on a
//   device with one copy engine).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

namespace bars {
// Overlapped time / serial time. With two or more copy engines the three stages of different
// chunks run at once: about 0.45 on an H200. With one engine H2D and D2H take turns.
constexpr double kOverlapMaxTwoEngines = 0.7;
constexpr double kOverlapMaxOneEngine = 0.85;
}  // namespace bars

constexpr int kBlock = 256;

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

__host__ __device__ std::uint32_t transform(std::uint32_t x) {
  return x * 2654435761u + 12345u;
}

// One chunk's work: every element transformed, and the kernel lasts at least work_ns (block 0
// waits on the global timer), about as long as copying the chunk one way.
__global__ void process_chunk(const std::uint32_t* in, std::uint32_t* out, std::size_t count,
                              unsigned long long work_ns) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = transform(in[i]);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const unsigned long long start = globaltimer_ns();
    while (globaltimer_ns() - start < work_ns) {
    }
  }
}

// The host buffers the chunks are copied from and to.
// TODO(exercise): the copies below are all cudaMemcpyAsync, yet nothing overlaps. Chapter 04
// measures what a copy engine needs from host memory before an asynchronous copy is asynchronous.
std::uint32_t* allocate_host(std::size_t bytes) {
  void* p = nullptr;
  p = std::malloc(bytes);
  if (p == nullptr) {
    std::fprintf(stderr, "error: cannot allocate %zu bytes of host memory\n", bytes);
    std::exit(cs::kFailExitCode);
  }
  return static_cast<std::uint32_t*>(p);
}

void free_host(void* p) {
  std::free(p);
}

struct Chunk {
  std::size_t offset;
  std::size_t count;
};

int main(int argc, char** argv) {
  std::size_t mib = 64;
  int chunk_count = 16;
  int stream_count = 4;
  int kernel_us = 80;
  int repeats = 5;
  cs::CommonOptions common;
  cs::Options options("04_pinned_async_pipeline_exercise",
                      "Exercise: make a chunked copy/compute pipeline overlap.");
  options.add_size("mib", &mib, 16, 1024, "data size in MiB");
  options.add_int("chunks", &chunk_count, 2, 64, "chunks the data is cut into");
  options.add_int("streams", &stream_count, 2, 16, "streams the chunks are spread over");
  options.add_int("kernel-us", &kernel_us, 10, 10000, "how long each chunk's kernel lasts, in us");
  options.add_int("repeats", &repeats, 1, 20, "timed repeats of each run (median)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  const cudaDeviceProp prop = cs::select_device(common.device);
  const std::size_t elements = mib * 1024 * 1024 / sizeof(std::uint32_t);
  const std::size_t bytes = elements * sizeof(std::uint32_t);
  cs::require_fits_on_device(2 * bytes, "--mib " + std::to_string(mib));
  const int warmup = common.no_timing ? 0 : 1;
  if (common.no_timing) repeats = 1;
  const unsigned long long work_ns = kernel_us * 1000ull;
  const int grid = 4 * prop.multiProcessorCount;

  std::vector<Chunk> chunks;
  for (int c = 0; c < chunk_count; ++c) {
    const std::size_t begin = elements * c / chunk_count;
    const std::size_t end = elements * (c + 1) / chunk_count;
    chunks.push_back({begin, end - begin});
  }
  std::uint32_t* host_in = allocate_host(bytes);
  std::uint32_t* host_out = allocate_host(bytes);
  std::vector<std::uint32_t> want(elements);
  for (std::size_t i = 0; i < elements; ++i) {
    host_in[i] = static_cast<std::uint32_t>(i * 7 + 3);
    want[i] = transform(host_in[i]);
  }
  std::uint32_t* dev_in = nullptr;
  std::uint32_t* dev_out = nullptr;
  CS_CHECK(cudaMalloc(&dev_in, bytes));
  CS_CHECK(cudaMalloc(&dev_out, bytes));
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(stream_count));
  for (cudaStream_t& stream : streams) {
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  std::printf(
      "%s in %d chunks of about %s over %d streams; each chunk's kernel lasts %d us; "
      "asyncEngineCount %d\n",
      cs::format_bytes(static_cast<double>(bytes)).c_str(), chunk_count,
      cs::format_bytes(static_cast<double>(bytes) / chunk_count).c_str(), stream_count, kernel_us,
      prop.asyncEngineCount);

  // Issues every chunk, chunk by chunk (depth-first): chunk c goes to stream c % `used` streams.
  // With a timeline, every operation also becomes a span on it.
  auto issue = [&](int used, cs::Timeline* timeline) {
    for (int c = 0; c < chunk_count; ++c) {
      const Chunk& chunk = chunks[static_cast<std::size_t>(c)];
      cudaStream_t stream = streams[static_cast<std::size_t>(c % used)];
      const std::string row = "stream " + std::to_string(c % used);
      const std::size_t chunk_bytes = chunk.count * sizeof(std::uint32_t);
      int span = timeline ? timeline->begin(row, "H2D", stream) : -1;
      CS_CHECK(cudaMemcpyAsync(dev_in + chunk.offset, host_in + chunk.offset, chunk_bytes,
                               cudaMemcpyHostToDevice, stream));
      if (timeline) timeline->end(span, stream);
      span = timeline ? timeline->begin(row, "kernel", stream) : -1;
      process_chunk<<<grid, kBlock, 0, stream>>>(dev_in + chunk.offset, dev_out + chunk.offset,
                                                 chunk.count, work_ns);
      CS_CHECK_LAUNCH();
      if (timeline) timeline->end(span, stream);
      span = timeline ? timeline->begin(row, "D2H", stream) : -1;
      CS_CHECK(cudaMemcpyAsync(host_out + chunk.offset, dev_out + chunk.offset, chunk_bytes,
                               cudaMemcpyDeviceToHost, stream));
      if (timeline) timeline->end(span, stream);
    }
  };
  auto check_output = [&](const std::string& name) {
    cs::verify(name, host_out, want.data(), elements);
    std::fill(host_out, host_out + elements, 0u);
  };

  std::vector<double> issue_ms;
  const cs::Stats serial = cs::time_device_ms(warmup, repeats, [&] { issue(1, nullptr); });
  check_output("serial_results");
  const cs::Stats overlapped = cs::time_device_ms(warmup, repeats, [&] {
    const double begin = cs::host_now_ms();
    issue(stream_count, nullptr);
    issue_ms.push_back(cs::host_now_ms() - begin);
  });
  check_output("overlapped_results");

  const double ratio = overlapped.median / serial.median;
  std::printf("  serial, one stream        %8.3f ms\n", serial.median);
  std::printf("  overlapped, %2d streams    %8.3f ms   (%.2fx of serial)\n", stream_count,
              overlapped.median, ratio);
  std::printf("  the host spent %.3f ms inside the overlapped run's issue loop\n",
              cs::median(issue_ms));

  cs::Timeline timeline;
  CS_CHECK(cudaDeviceSynchronize());
  timeline.start(streams[0]);
  issue(stream_count, &timeline);
  CS_CHECK(cudaDeviceSynchronize());
  cs::publish_timeline(timeline.collect(), common, "One overlapped run:");
  check_output("timeline_run_results");

  if (common.no_timing) {
    cs::check_skipped("overlapped_vs_serial", "--no-timing");
  } else if (prop.asyncEngineCount == 0) {
    cs::check_skipped("overlapped_vs_serial",
                      "asyncEngineCount = 0: this device cannot copy while it computes");
  } else {
    const bool two = prop.asyncEngineCount >= 2;
    cs::check("overlapped_vs_serial", ratio, cs::Compare::at_most,
              two ? bars::kOverlapMaxTwoEngines : bars::kOverlapMaxOneEngine, "x",
              two ? "overlapped / serial time; H2D, kernel and D2H of different chunks at once"
                  : "overlapped / serial time; one copy engine: H2D and D2H take turns");
  }

  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
  CS_CHECK(cudaFree(dev_in));
  CS_CHECK(cudaFree(dev_out));
  free_host(host_in);
  free_host(host_out);
  return cs::finish();
}
