// Chapter 01: the launch configuration <<<Dg, Db, Ns, S>>>
//
// What it teaches
//   A kernel launch takes up to four parameters between the angle brackets:
//     Dg  the grid: how many blocks, as a dim3 (x, y, z);
//     Db  the block: how many threads per block, as a dim3;
//     Ns  the bytes of dynamic shared memory each block gets, seen through `extern __shared__`;
//     S   the stream the launch goes into; 0 (the default) is the default stream.
//   The program covers 1D, 2D and 3D index spaces whose sizes are not multiples of the block and
//   checks that every element is visited exactly once; reduces an array with dynamic shared
//   memory, above 48 KB only after cudaFuncSetAttribute; launches the same kernel into the default
//   stream and into a created one; prints the device's real limits beside the compute capability
//   1.x limits that older documents quote; launches deliberately invalid configurations and
//   shows the error each returns through cudaGetLastError; and lets the occupancy API pick a
//   block size.
//
// Build and run
//   cmake --preset default && cmake --build --preset default
//   build/bin/01_launch_config                  # the whole lesson
//   build/bin/01_launch_config --help           # the flags
//   build/bin/01_launch_config --no-invalid-launches   # without the deliberate errors
//
// What to expect
//   A table of limits, one CHECK line per property (coverage in 1D/2D/3D, reduction results,
//   the >48 KB launch before and after raising the limit, each invalid launch rejected), the
//   occupancy pick, and "All N checks passed." Exit status 0; 1 if a check fails; 2 for a bad
//   command line; 77 (with a SKIP: line) where there is no CUDA device.

#include <cuda_runtime.h>

#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

namespace {

// The limits of compute capability 1.x that the seed document gives as if they were universal.
namespace seed_limits {
constexpr int grid_x = 65535;
constexpr int grid_y = 65535;
constexpr int grid_z = 1;
constexpr int block_x = 512;
constexpr int block_y = 512;
constexpr int block_z = 62;  // sic: the real 1.x limit was 64
constexpr int threads_per_block = 512;
constexpr int threads_per_sm_cc10 = 768;
constexpr int threads_per_sm_cc12 = 1024;
}  // namespace seed_limits

// Until a kernel opts in, a block may have at most this much dynamic shared memory.
constexpr std::size_t kDefaultSharedLimit = 48 * 1024;

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

// Each thread that falls inside the n elements counts one visit. A launch that covers an element
// twice or not at all shows up as a count other than 1.
__global__ void visit_1d(unsigned* visits, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&visits[i], 1u);
}

__global__ void visit_2d(unsigned* visits, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) atomicAdd(&visits[static_cast<long long>(y) * width + x], 1u);
}

__global__ void visit_3d(unsigned* visits, int width, int height, int depth) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < width && y < height && z < depth) {
    atomicAdd(&visits[(static_cast<long long>(z) * height + y) * width + x], 1u);
  }
}

// A block-level sum through dynamic shared memory: the launch's third parameter (Ns) sizes
// `partial`, one float per thread. blockDim.x must be a power of two.
__global__ void block_sums(const float* input, float* sums, long long n) {
  extern __shared__ float partial[];
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? input[i] : 0.0f;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = partial[0];
}

// Each block stages a tile of `tile` floats in dynamic shared memory (more than 48 KB when
// tile > 12288), then writes the tile reversed: the result proves the whole tile was usable.
__global__ void reverse_tiles(const float* input, float* output, int tile) {
  extern __shared__ float staged[];
  const long long base = static_cast<long long>(blockIdx.x) * tile;
  for (int i = threadIdx.x; i < tile; i += blockDim.x) staged[i] = input[base + i];
  __syncthreads();
  for (int i = threadIdx.x; i < tile; i += blockDim.x) output[base + i] = staged[tile - 1 - i];
}

// ---------------------------------------------------------------------------------------------
// Helpers for the lesson
// ---------------------------------------------------------------------------------------------

unsigned ceil_div(long long total, long long part) {
  return static_cast<unsigned>((total + part - 1) / part);
}

// Runs @p launch on a zeroed visit counter of @p count elements and checks every count is 1.
template <class Launch>
void check_coverage(const std::string& name, long long count, Launch&& launch) {
  unsigned* visits = nullptr;
  CS_CHECK(cudaMalloc(&visits, count * sizeof(unsigned)));
  CS_CHECK(cudaMemset(visits, 0, count * sizeof(unsigned)));
  launch(visits);
  CS_CHECK_LAUNCH();
  std::vector<unsigned> got(static_cast<std::size_t>(count));
  CS_CHECK(cudaMemcpy(got.data(), visits, count * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CS_CHECK(cudaFree(visits));
  const std::vector<unsigned> once(got.size(), 1u);  // the reference: every element exactly once
  cs::verify(name, got, once);
}

// Reports what a deliberately invalid launch returned, and that the error did not stick.
void check_rejected(const std::string& name, const std::string& what, cudaError_t launch_error) {
  const cudaError_t after = cudaGetLastError();  // launch errors are not sticky: this is clear
  std::printf("  %-34s -> %s (\"%s\")\n", what.c_str(), cudaGetErrorName(launch_error),
              cudaGetErrorString(launch_error));
  cs::check_that(name, launch_error != cudaSuccess && after == cudaSuccess,
                 launch_error != cudaSuccess ? "rejected, and the next cudaGetLastError is clear"
                                             : "the launch was accepted");
}

}  // namespace

int main(int argc, char** argv) {
  long long elements = 1000003;  // a prime: no block size divides it
  int block = 256;
  bool no_invalid_launches = false;
  cs::CommonOptions common;
  cs::Options options("01_launch_config", "The four launch parameters <<<Dg, Db, Ns, S>>>.");
  int elements_in = static_cast<int>(elements);
  options.add_int("elements", &elements_in, 1, 1 << 28, "elements of the 1D examples");
  options.add_int("block", &block, 32, 1024,
                  "threads per block of the 1D examples (a power of two)");
  options.add_flag("no-invalid-launches", &no_invalid_launches,
                   "skip the deliberately invalid launches (they are errors to compute-sanitizer)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  if ((block & (block - 1)) != 0) {
    cs::usage_error("--block expects a power of two from 32 to 1024, got '" +
                    std::to_string(block) + "'");
  }
  elements = elements_in;

  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::require_fits_on_device(static_cast<std::size_t>(elements) * 2 * sizeof(float),
                             "--elements " + std::to_string(elements));

  // --- The limits: the seed's compute capability 1.x numbers beside this device's -----------
  std::printf("\nLaunch limits            seed (cc 1.x)     this device (cc %d.%d)\n", prop.major,
              prop.minor);
  std::printf("  grid  (Dg) x, y, z     %5d %5d %3d   %10d %5d %5d\n", seed_limits::grid_x,
              seed_limits::grid_y, seed_limits::grid_z, prop.maxGridSize[0], prop.maxGridSize[1],
              prop.maxGridSize[2]);
  std::printf("  block (Db) x, y, z     %5d %5d %3d   %10d %5d %5d\n", seed_limits::block_x,
              seed_limits::block_y, seed_limits::block_z, prop.maxThreadsDim[0],
              prop.maxThreadsDim[1], prop.maxThreadsDim[2]);
  std::printf("  threads per block      %15d   %22d\n", seed_limits::threads_per_block,
              prop.maxThreadsPerBlock);
  std::printf("  threads per SM         %9d/%5d   %22d\n", seed_limits::threads_per_sm_cc10,
              seed_limits::threads_per_sm_cc12, prop.maxThreadsPerMultiProcessor);
  std::printf("  shared memory (Ns)     %15s   %13s default, %s opt-in\n", "16 KiB",
              cs::format_bytes(static_cast<double>(prop.sharedMemPerBlock)).c_str(),
              cs::format_bytes(static_cast<double>(prop.sharedMemPerBlockOptin)).c_str());

  // --- Dg and Db: 1D, 2D and 3D, sizes that are not multiples of the block --------------------
  std::printf("\nDg and Db: every element visited exactly once\n");
  {
    const dim3 threads(block);
    const dim3 blocks(ceil_div(elements, block));
    std::printf("  1D: %lld elements, <<<%u, %u>>>\n", elements, blocks.x, threads.x);
    check_coverage("coverage_1d", elements,
                   [&](unsigned* visits) { visit_1d<<<blocks, threads>>>(visits, elements); });
  }
  {
    const int width = 1000, height = 777;
    const dim3 threads(16, 16);
    const dim3 blocks(ceil_div(width, threads.x), ceil_div(height, threads.y));
    std::printf("  2D: %d x %d, <<<(%u, %u), (%u, %u)>>>\n", width, height, blocks.x, blocks.y,
                threads.x, threads.y);
    check_coverage("coverage_2d", static_cast<long long>(width) * height,
                   [&](unsigned* visits) { visit_2d<<<blocks, threads>>>(visits, width, height); });
  }
  {
    const int width = 100, height = 70, depth = 33;
    const dim3 threads(8, 8, 4);
    const dim3 blocks(ceil_div(width, threads.x), ceil_div(height, threads.y),
                      ceil_div(depth, threads.z));
    std::printf("  3D: %d x %d x %d, <<<(%u, %u, %u), (%u, %u, %u)>>>\n", width, height, depth,
                blocks.x, blocks.y, blocks.z, threads.x, threads.y, threads.z);
    check_coverage(
        "coverage_3d", static_cast<long long>(width) * height * depth,
        [&](unsigned* visits) { visit_3d<<<blocks, threads>>>(visits, width, height, depth); });
  }

  // --- Ns: dynamic shared memory, and S: the stream -------------------------------------------
  std::printf("\nNs: a block-level sum in dynamic shared memory; S: the stream\n");
  std::vector<float> host_input(static_cast<std::size_t>(elements));
  for (std::size_t i = 0; i < host_input.size(); ++i) host_input[i] = static_cast<float>(i % 7);
  const unsigned sum_blocks = ceil_div(elements, block);
  std::vector<float> want_sums(sum_blocks, 0.0f);
  for (std::size_t i = 0; i < host_input.size(); ++i) want_sums[i / block] += host_input[i];

  float* input = nullptr;
  float* sums = nullptr;
  CS_CHECK(cudaMalloc(&input, host_input.size() * sizeof(float)));
  CS_CHECK(cudaMalloc(&sums, sum_blocks * sizeof(float)));
  CS_CHECK(cudaMemcpy(input, host_input.data(), host_input.size() * sizeof(float),
                      cudaMemcpyHostToDevice));
  const std::size_t shared_bytes = block * sizeof(float);
  std::vector<float> got_sums(sum_blocks);

  // The two launches are recorded on a timeline (printed below; --trace and --svg save it).
  cs::Timeline timeline;
  timeline.start(0);

  // S = 0: the default stream.
  CS_CHECK(cudaMemset(sums, 0xff, sum_blocks * sizeof(float)));
  int span = timeline.begin("default stream", "kernel", 0, "block_sums");
  block_sums<<<sum_blocks, block, shared_bytes, 0>>>(input, sums, elements);
  CS_CHECK_LAUNCH();
  timeline.end(span, 0);
  CS_CHECK(cudaMemcpy(got_sums.data(), sums, sum_blocks * sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("  <<<%u, %d, %zu bytes, 0>>> (default stream)\n", sum_blocks, block, shared_bytes);
  cs::verify("block_sums_default_stream", got_sums, want_sums);

  // S = a created stream: the same work, ordered in that stream instead.
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreate(&stream));
  CS_CHECK(cudaMemsetAsync(sums, 0xff, sum_blocks * sizeof(float), stream));
  span = timeline.begin("created stream", "kernel", stream, "block_sums");
  block_sums<<<sum_blocks, block, shared_bytes, stream>>>(input, sums, elements);
  CS_CHECK_LAUNCH();
  timeline.end(span, stream);
  CS_CHECK(cudaMemcpyAsync(got_sums.data(), sums, sum_blocks * sizeof(float),
                           cudaMemcpyDeviceToHost, stream));
  CS_CHECK(cudaStreamSynchronize(stream));  // the pageable copy is done only after this
  std::printf("  <<<%u, %d, %zu bytes, stream>>> (a created stream)\n", sum_blocks, block,
              shared_bytes);
  cs::verify("block_sums_created_stream", got_sums, want_sums);
  cs::publish_timeline(timeline.collect(), common,
                       "Timeline: the sum in the default stream, then in a created stream");

  // --- Ns above 48 KB: only after the kernel opts in ------------------------------------------
  std::printf("\nNs above 48 KB\n");
  const std::size_t optin = prop.sharedMemPerBlockOptin;
  if (optin <= kDefaultSharedLimit) {
    cs::check_skipped("large_shared_memory",
                      "this device allows no more than 48 KB of shared memory per block");
  } else {
    const int tile = 16384;  // floats: 64 KiB of shared memory per block
    const std::size_t tile_bytes = tile * sizeof(float);
    const int tiles = 64;
    std::vector<float> tile_input(static_cast<std::size_t>(tile) * tiles);
    std::iota(tile_input.begin(), tile_input.end(), 0.0f);
    std::vector<float> want_reversed(tile_input.size());
    for (int t = 0; t < tiles; ++t) {
      for (int i = 0; i < tile; ++i) {
        want_reversed[static_cast<std::size_t>(t) * tile + i] =
            tile_input[static_cast<std::size_t>(t) * tile + (tile - 1 - i)];
      }
    }
    float* tile_in = nullptr;
    float* tile_out = nullptr;
    CS_CHECK(cudaMalloc(&tile_in, tile_input.size() * sizeof(float)));
    CS_CHECK(cudaMalloc(&tile_out, tile_input.size() * sizeof(float)));
    CS_CHECK(cudaMemcpy(tile_in, tile_input.data(), tile_input.size() * sizeof(float),
                        cudaMemcpyHostToDevice));

    // Without opting in, a launch asking for 64 KiB is refused.
    if (no_invalid_launches) {
      cs::check_skipped("large_shared_refused_by_default", "--no-invalid-launches");
    } else {
      reverse_tiles<<<tiles, 256, tile_bytes>>>(tile_in, tile_out, tile);
      const cudaError_t before = cudaGetLastError();
      std::printf("  %zu KiB before cudaFuncSetAttribute -> %s\n", tile_bytes / 1024,
                  cudaGetErrorName(before));
      cs::check_that("large_shared_refused_by_default", before != cudaSuccess,
                     before != cudaSuccess ? "the launch was rejected" : "the launch was accepted");
    }

    // Raise this kernel's limit, then the same launch runs.
    CS_CHECK(cudaFuncSetAttribute(reverse_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(tile_bytes)));
    reverse_tiles<<<tiles, 256, tile_bytes>>>(tile_in, tile_out, tile);
    CS_CHECK_LAUNCH();
    std::vector<float> got_reversed(tile_input.size());
    CS_CHECK(cudaMemcpy(got_reversed.data(), tile_out, got_reversed.size() * sizeof(float),
                        cudaMemcpyDeviceToHost));
    std::printf(
        "  %zu KiB after cudaFuncSetAttribute(reverse_tiles, "
        "cudaFuncAttributeMaxDynamicSharedMemorySize, %zu)\n",
        tile_bytes / 1024, tile_bytes);
    cs::verify("large_shared_after_opt_in", got_reversed, want_reversed);
    CS_CHECK(cudaFree(tile_in));
    CS_CHECK(cudaFree(tile_out));
  }

  // --- Invalid configurations, and the error each returns -------------------------------------
  if (no_invalid_launches) {
    std::printf("\nInvalid launches: not run (--no-invalid-launches)\n");
  } else {
    std::printf("\nInvalid launches (each caught by cudaGetLastError right after the launch)\n");
    const int too_many_threads = prop.maxThreadsPerBlock + 1;
    block_sums<<<1, too_many_threads, too_many_threads * sizeof(float)>>>(input, sums, elements);
    check_rejected("invalid_block_size_rejected",
                   std::to_string(too_many_threads) + " threads per block", cudaGetLastError());

    const dim3 tall_grid(1, static_cast<unsigned>(prop.maxGridSize[1]) + 1);
    visit_2d<<<tall_grid, 1>>>(nullptr, 0, 0);
    check_rejected("invalid_grid_y_rejected", "grid.y = " + std::to_string(tall_grid.y),
                   cudaGetLastError());

    const std::size_t too_much_shared = prop.sharedMemPerBlockOptin + 1024;
    block_sums<<<1, block, too_much_shared>>>(input, sums, elements);
    check_rejected("invalid_shared_memory_rejected",
                   cs::format_bytes(static_cast<double>(too_much_shared)) + " of shared memory",
                   cudaGetLastError());
  }

  // --- Occupancy: let the runtime pick a block size -------------------------------------------
  std::printf("\nOccupancy\n");
  int min_grid = 0;
  int best_block = 0;
  // block_sums needs one float of shared memory per thread, so the shared size depends on the
  // block size: the VariableSMem form takes that rule.
  CS_CHECK(cudaOccupancyMaxPotentialBlockSizeVariableSMem(
      &min_grid, &best_block, block_sums, [](int threads) { return threads * sizeof(float); }));
  int per_sm = 0;
  CS_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, block_sums, best_block,
                                                         best_block * sizeof(float)));
  std::printf(
      "  cudaOccupancyMaxPotentialBlockSize: block %d, at least %d blocks to fill the GPU "
      "(%d per SM x %d SMs)\n",
      best_block, min_grid, per_sm, prop.multiProcessorCount);
  const bool power_of_two = best_block > 0 && (best_block & (best_block - 1)) == 0;
  if (power_of_two) {
    // Launch the reduction with the picked size and check it still sums correctly.
    const unsigned picked_blocks = ceil_div(elements, best_block);
    std::vector<float> want_picked(picked_blocks, 0.0f);
    for (std::size_t i = 0; i < host_input.size(); ++i)
      want_picked[i / best_block] += host_input[i];
    float* picked_sums = nullptr;
    CS_CHECK(cudaMalloc(&picked_sums, picked_blocks * sizeof(float)));
    block_sums<<<picked_blocks, best_block, best_block * sizeof(float)>>>(input, picked_sums,
                                                                          elements);
    CS_CHECK_LAUNCH();
    std::vector<float> got_picked(picked_blocks);
    CS_CHECK(cudaMemcpy(got_picked.data(), picked_sums, picked_blocks * sizeof(float),
                        cudaMemcpyDeviceToHost));
    cs::verify("block_sums_occupancy_pick", got_picked, want_picked);
    CS_CHECK(cudaFree(picked_sums));
  } else {
    cs::check_skipped("block_sums_occupancy_pick",
                      "the picked block size is not a power of two, which this reduction needs");
  }

  CS_CHECK(cudaStreamDestroy(stream));
  CS_CHECK(cudaFree(input));
  CS_CHECK(cudaFree(sums));

  std::printf(
      "\nThe grid and block shape only how threads are numbered; the guard `if (i < n)` is what\n"
      "makes sizes that are not a multiple of the block safe. A bad configuration does not crash:\n"
      "the launch silently does nothing, and only cudaGetLastError tells you.\n");
  return cs::finish();
}
