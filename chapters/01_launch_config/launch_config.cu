// Chapter 01: the launch configuration <<<Dg, Db, Ns, S>>>
//
// What it teaches
//   A kernel launch takes up to four parameters between the angle brackets:
//     Dg  the grid: how many blocks, as a dim3 (x, y, z);
//     Db  the block: how many threads per block, as a dim3;
//     Ns  the bytes of dynamic shared memory each block gets, seen through `extern __shared__`;
//     S   the stream the launch goes into; 0 (the default) is the default stream.
//   The parts, in order: limits (this device's beside the compute capability 1.x ones that old
//   documents quote), coverage (Dg, Db), shared (Ns), stream (S), invalid (bad configurations,
//   caught by cudaGetLastError) and occupancy (the runtime picks a block size).
//
// Build and run (from the repository's root)
//   cmake --preset default && cmake --build --preset default
//   build/bin/01_launch_config                  # the whole lesson
//   build/bin/01_launch_config --part shared    # one part (--part NAME)
//   build/bin/01_launch_config --help           # the flags and the parts
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/01_launch_config/launch_config.cu common/src/*.cpp -o 01_launch_config
// clang-format on
//
// What to expect
//   A table of limits, then one CHECK line per property, each part under its `== Part` heading,
//   and "All N checks passed." Exit status 0; 1 if a check fails; 2 for a bad command line;
//   77 (with a SKIP: line) where there is no CUDA device.

#include <cuda_runtime.h>

#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

// Kernels.

// One kernel for 1D, 2D and 3D: each thread inside the width x height x depth elements counts one
// visit, so a launch that covers an element twice or not at all shows up as a count other than 1.
// The grid is rounded up, so the last blocks stick out; the guard makes their extra threads idle.
__global__ void visit(unsigned* visits, int width, int height, int depth) {
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

// Helpers: memory in and out, and the CPU's reference sums.

namespace {

unsigned ceil_div(long long total, long long part) {
  return static_cast<unsigned>((total + part - 1) / part);
}

float* to_device(const std::vector<float>& host) {
  float* device = nullptr;
  CS_CHECK(cudaMalloc(&device, host.size() * sizeof(float)));
  CS_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return device;
}

template <class T>
std::vector<T> to_host(const T* device, std::size_t count) {
  std::vector<T> host(count);
  CS_CHECK(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

// The sums' input: small integers (i % 7), so every float sum is exact in any order.
std::vector<float> sums_input(long long n) {
  std::vector<float> input(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i % 7);
  return input;
}

// What block_sums must produce with blocks of `block` threads: the sum of each run of `block`.
std::vector<float> cpu_block_sums(const std::vector<float>& input, int block) {
  std::vector<float> sums(ceil_div(static_cast<long long>(input.size()), block), 0.0f);
  for (std::size_t i = 0; i < input.size(); ++i) sums[i / block] += input[i];
  return sums;
}

// The parts, in the lesson's order.

// Part 1: the limits the seed quotes (compute capability 1.x) beside this device's.
void part_limits(const cudaDeviceProp& prop) {
  std::printf("                         seed (cc 1.x)     this device (cc %d.%d)\n", prop.major,
              prop.minor);
  std::printf("  grid  (Dg) x, y, z     65535 65535   1   %10d %5d %5d\n", prop.maxGridSize[0],
              prop.maxGridSize[1], prop.maxGridSize[2]);
  // The seed's "62" is its own: the real 1.x limit in z was 64.
  std::printf("  block (Db) x, y, z       512   512  62   %10d %5d %5d\n", prop.maxThreadsDim[0],
              prop.maxThreadsDim[1], prop.maxThreadsDim[2]);
  std::printf("  threads per block                  512   %22d\n", prop.maxThreadsPerBlock);
  std::printf("  threads per SM               768/ 1024   %22d\n",
              prop.maxThreadsPerMultiProcessor);
  std::printf("  shared memory (Ns)              16 KiB   %13s default, %s opt-in\n",
              cs::format_bytes(static_cast<double>(prop.sharedMemPerBlock)).c_str(),
              cs::format_bytes(static_cast<double>(prop.sharedMemPerBlockOptin)).c_str());
  // core: limits
  // The printed limit is the one launches obey: a block of exactly that many threads runs whole.
  const int most = prop.maxThreadsPerBlock;
  unsigned* visits = nullptr;
  CS_CHECK(cudaMalloc(&visits, most * sizeof(unsigned)));
  CS_CHECK(cudaMemset(visits, 0, most * sizeof(unsigned)));
  visit<<<1, most>>>(visits, most, 1, 1);
  CS_CHECK_LAUNCH();
  cs::verify("block_at_max_threads", to_host(visits, most), std::vector<unsigned>(most, 1u));
  CS_CHECK(cudaFree(visits));
  // end core
}

// Part 2: Dg and Db in 1D, 2D and 3D, sizes that are not multiples of the block.
void part_coverage(int elements, int block) {
  struct Shape {
    const char* name;
    int width, height, depth;
    dim3 threads;  // a dim3's unnamed dimensions are 1
  };
  const Shape shapes[] = {{"coverage_1d", elements, 1, 1, dim3(block)},
                          {"coverage_2d", 1000, 777, 1, dim3(16, 16)},
                          {"coverage_3d", 100, 70, 33, dim3(8, 8, 4)}};
  for (const Shape& s : shapes) {
    // core: coverage
    const dim3 blocks(ceil_div(s.width, s.threads.x), ceil_div(s.height, s.threads.y),
                      ceil_div(s.depth, s.threads.z));  // rounded up: the last blocks stick out
    std::printf("  %d x %d x %d elements: visit<<<dim3(%u, %u, %u), dim3(%u, %u, %u)>>>\n", s.width,
                s.height, s.depth, blocks.x, blocks.y, blocks.z, s.threads.x, s.threads.y,
                s.threads.z);
    const std::size_t count = static_cast<std::size_t>(s.width) * s.height * s.depth;
    unsigned* visits = nullptr;
    CS_CHECK(cudaMalloc(&visits, count * sizeof(unsigned)));
    CS_CHECK(cudaMemset(visits, 0, count * sizeof(unsigned)));
    visit<<<blocks, s.threads>>>(visits, s.width, s.height, s.depth);
    CS_CHECK_LAUNCH();
    // end core
    const std::vector<unsigned> once(count, 1u);  // the reference: every element exactly once
    cs::verify(s.name, to_host(visits, count), once);
    CS_CHECK(cudaFree(visits));
  }
  std::printf(
      "The grid and block shape only how threads are numbered; the guard `if (x < width\n"
      "&& ...)` is what makes sizes that are not a multiple of the block safe.\n");
}

// Part 3: Ns, the dynamic shared memory of each block; above 48 KB only after opting in.
void part_shared(long long elements, int block, const cudaDeviceProp& prop, bool invalid_ok) {
  const std::vector<float> host = sums_input(elements);
  float* input = to_device(host);
  const unsigned blocks = ceil_div(elements, block);
  float* sums = nullptr;
  CS_CHECK(cudaMalloc(&sums, blocks * sizeof(float)));
  const std::size_t ns = block * sizeof(float);  // `partial` holds one float per thread
  block_sums<<<blocks, block, ns>>>(input, sums, elements);
  CS_CHECK_LAUNCH();
  std::printf("  block_sums<<<%u, %d, %zu bytes>>>\n", blocks, block, ns);
  cs::verify("block_sums_dynamic_shared", to_host(sums, blocks), cpu_block_sums(host, block));
  CS_CHECK(cudaFree(input));
  CS_CHECK(cudaFree(sums));

  // Without opting in, a kernel may have 48 KB of dynamic shared memory per block.
  constexpr std::size_t default_limit = 48 * 1024;
  if (prop.sharedMemPerBlockOptin <= default_limit) {
    cs::check_skipped("large_shared_memory", "this device allows no more than 48 KB per block");
    return;
  }
  constexpr int tile = 16384;  // floats: 64 KiB per block, above the 48 KB default
  constexpr int tiles = 64;
  constexpr std::size_t tile_bytes = tile * sizeof(float);
  std::vector<float> tile_host(static_cast<std::size_t>(tile) * tiles);
  std::iota(tile_host.begin(), tile_host.end(), 0.0f);
  std::vector<float> want(tile_host.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    want[i] = tile_host[i - i % tile + tile - 1 - i % tile];
  float* tile_in = to_device(tile_host);
  float* tile_out = nullptr;
  CS_CHECK(cudaMalloc(&tile_out, tile_host.size() * sizeof(float)));

  if (!invalid_ok) {
    cs::check_skipped("large_shared_refused_by_default", "--no-invalid-launches");
  } else {
    reverse_tiles<<<tiles, 256, tile_bytes>>>(tile_in, tile_out, tile);
    const cudaError_t before = cudaGetLastError();
    std::printf("  %zu KiB before cudaFuncSetAttribute -> %s\n", tile_bytes / 1024,
                cudaGetErrorName(before));
    cs::check_that("large_shared_refused_by_default", before != cudaSuccess,
                   before != cudaSuccess ? "the launch was rejected" : "the launch was accepted");
  }
  // core: shared
  // Raise this kernel's limit (up to prop.sharedMemPerBlockOptin); then the same launch runs.
  CS_CHECK(cudaFuncSetAttribute(reverse_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(tile_bytes)));
  reverse_tiles<<<tiles, 256, tile_bytes>>>(tile_in, tile_out, tile);
  CS_CHECK_LAUNCH();
  // end core
  std::printf(
      "  %zu KiB after cudaFuncSetAttribute(reverse_tiles, "
      "cudaFuncAttributeMaxDynamicSharedMemorySize, %zu)\n",
      tile_bytes / 1024, tile_bytes);
  cs::verify("large_shared_after_opt_in", to_host(tile_out, want.size()), want);
  CS_CHECK(cudaFree(tile_in));
  CS_CHECK(cudaFree(tile_out));
}

// Part 4: S, the stream: the same sum in the default stream (0) and in a created stream.
void part_stream(long long elements, int block, const cs::CommonOptions& common) {
  const std::vector<float> host = sums_input(elements);
  const std::vector<float> want = cpu_block_sums(host, block);
  float* input = to_device(host);
  const unsigned blocks = ceil_div(elements, block);
  const std::size_t ns = block * sizeof(float);
  const std::size_t sum_bytes = blocks * sizeof(float);
  float* sums = nullptr;
  CS_CHECK(cudaMalloc(&sums, sum_bytes));
  std::vector<float> got(blocks);
  cs::Timeline timeline;  // printed below; --trace and --svg save it
  timeline.start(0);

  // S = 0: the default stream. 0xff bytes are NaN floats: a launch that did not run fails.
  CS_CHECK(cudaMemset(sums, 0xff, sum_bytes));
  {
    auto span = timeline.span("default stream", "kernel", 0);
    block_sums<<<blocks, block, ns, 0>>>(input, sums, elements);
    CS_CHECK_LAUNCH();
  }
  CS_CHECK(cudaMemcpy(got.data(), sums, sum_bytes, cudaMemcpyDeviceToHost));
  std::printf("  <<<%u, %d, %zu bytes, 0>>> (default stream)\n", blocks, block, ns);
  cs::verify("block_sums_default_stream", got, want);

  // core: stream
  // S = a created stream: the same work, ordered in that stream instead.
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreate(&stream));
  CS_CHECK(cudaMemsetAsync(sums, 0xff, sum_bytes, stream));
  {
    auto span = timeline.span("created stream", "kernel", stream);
    block_sums<<<blocks, block, ns, stream>>>(input, sums, elements);
    CS_CHECK_LAUNCH();
  }
  CS_CHECK(cudaMemcpyAsync(got.data(), sums, sum_bytes, cudaMemcpyDeviceToHost, stream));
  CS_CHECK(cudaStreamSynchronize(stream));  // the copy into `got` is done only after this
  // end core
  std::printf("  <<<%u, %d, %zu bytes, stream>>> (a created stream)\n", blocks, block, ns);
  cs::verify("block_sums_created_stream", got, want);
  cs::publish_timeline(timeline.collect(), common,
                       "Timeline: the sum in the default stream, then in a created stream");
  CS_CHECK(cudaStreamDestroy(stream));
  CS_CHECK(cudaFree(input));
  CS_CHECK(cudaFree(sums));
}

// Prints what a deliberately invalid launch returned; checks it was refused and did not stick.
bool check_rejected(const std::string& name, const std::string& what, cudaError_t launch_error) {
  const cudaError_t after = cudaGetLastError();  // a launch error is not sticky: this is clear
  std::printf("  %-34s -> %s (\"%s\")\n", what.c_str(), cudaGetErrorName(launch_error),
              cudaGetErrorString(launch_error));
  const bool rejected = launch_error != cudaSuccess;
  cs::check_that(name, rejected && after == cudaSuccess,
                 rejected ? cs::format("rejected, and the next cudaGetLastError is %s",
                                       after == cudaSuccess ? "clear" : cudaGetErrorName(after))
                          : "the launch was accepted");
  return rejected;
}

// Part 5: deliberately invalid configurations, one past each limit of part 1.
void part_invalid(const cudaDeviceProp& prop, const cs::LaunchEnvironment& env) {
  int rejected = 0;
  // core: invalid
  // One thread more than a block may have (part 1's "threads per block").
  const int too_many_threads = prop.maxThreadsPerBlock + 1;
  visit<<<1, too_many_threads>>>(nullptr, 0, 0, 0);
  rejected +=
      check_rejected("invalid_block_size_rejected",
                     cs::format("%d threads per block", too_many_threads), cudaGetLastError());

  // One block more than the grid may have in y (65535 on the H200 as in cc 1.x; x and z grew).
  const dim3 tall_grid(1, static_cast<unsigned>(prop.maxGridSize[1]) + 1);
  visit<<<tall_grid, 1>>>(nullptr, 0, 0, 0);
  rejected += check_rejected("invalid_grid_y_rejected", cs::format("grid.y = %u", tall_grid.y),
                             cudaGetLastError());
  // end core

  // Even after the kernel opts in to all the shared memory a block may have, more is refused.
  CS_CHECK(cudaFuncSetAttribute(reverse_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(prop.sharedMemPerBlockOptin)));
  const std::size_t too_much_shared = prop.sharedMemPerBlockOptin + 1024;
  reverse_tiles<<<1, 32, too_much_shared>>>(nullptr, nullptr, 0);
  rejected +=
      check_rejected("invalid_shared_memory_rejected",
                     cs::format_bytes(static_cast<double>(too_much_shared)) + " of shared memory",
                     cudaGetLastError());

  // The context is still usable: a valid launch right after is accepted and runs.
  visit<<<1, 32>>>(nullptr, 0, 0, 0);
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t ran = cudaDeviceSynchronize();
  cs::check_that(
      "valid_launch_after_rejections", launched == cudaSuccess && ran == cudaSuccess,
      cs::format("launch %s, run %s", cudaGetErrorName(launched), cudaGetErrorName(ran)));
  std::printf(
      "%d of 3 invalid launches were reported by cudaGetLastError right after the launch%s.\n"
      "A bad configuration does not crash: the launch does nothing, and only\n"
      "cudaGetLastError tells you.\n",
      rejected, env.launch_blocking ? " (under CUDA_LAUNCH_BLOCKING=1)" : "");
}

// The dynamic shared memory block_sums needs with blocks of `threads` threads.
__host__ __device__ std::size_t block_sums_shared_bytes(int threads) {
  return threads * sizeof(float);
}

// Part 6: let the runtime pick a block size for block_sums.
void part_occupancy(long long elements, const cudaDeviceProp& prop) {
  int min_grid = 0;
  int best_block = 0;
  // core: occupancy
  // block_sums needs one float of shared memory per thread, so its shared size depends on the
  // block size: the VariableSMem form of cudaOccupancyMaxPotentialBlockSize takes that rule.
  CS_CHECK(cudaOccupancyMaxPotentialBlockSizeVariableSMem(&min_grid, &best_block, block_sums,
                                                          block_sums_shared_bytes));
  int per_sm = 0;
  CS_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, block_sums, best_block,
                                                         block_sums_shared_bytes(best_block)));
  // end core
  std::printf(
      "  cudaOccupancyMaxPotentialBlockSize: block %d, at least %d blocks to fill the "
      "GPU (%d per SM x %d SMs)\n",
      best_block, min_grid, per_sm, prop.multiProcessorCount);
  if (best_block <= 0 || (best_block & (best_block - 1)) != 0) {
    cs::check_skipped("block_sums_occupancy_pick",
                      "the picked block size is not a power of two, which this reduction needs");
    return;
  }
  // The picked size must still sum correctly.
  const std::vector<float> host = sums_input(elements);
  float* input = to_device(host);
  const unsigned blocks = ceil_div(elements, best_block);
  float* sums = nullptr;
  CS_CHECK(cudaMalloc(&sums, blocks * sizeof(float)));
  block_sums<<<blocks, best_block, block_sums_shared_bytes(best_block)>>>(input, sums, elements);
  CS_CHECK_LAUNCH();
  cs::verify("block_sums_occupancy_pick", to_host(sums, blocks), cpu_block_sums(host, best_block));
  CS_CHECK(cudaFree(input));
  CS_CHECK(cudaFree(sums));
}

}  // namespace

int main(int argc, char** argv) {
  int elements = 1000003;  // a prime: no block size divides it
  int block = 256;
  bool no_invalid_launches = false;
  cs::CommonOptions common;
  cs::Options options("01_launch_config", "The four launch parameters <<<Dg, Db, Ns, S>>>.");
  options.add_int("elements", &elements, 1, 1 << 28, "elements of the 1D examples");
  options.add_int("block", &block, 32, 1024,
                  "threads per block of the 1D examples (a power of two)");
  options.add_flag("no-invalid-launches", &no_invalid_launches,
                   "skip the deliberately invalid launches (they are errors to compute-sanitizer)");
  cs::add_common_options(options, &common);
  cs::Parts parts(options, {{"limits", "this device's limits beside the cc 1.x ones"},
                            {"coverage", "Dg and Db: every element visited exactly once"},
                            {"shared", "Ns: dynamic shared memory, above 48 KB after opting in"},
                            {"stream", "S: the default stream and a created stream"},
                            {"invalid", "invalid launches, caught by cudaGetLastError"},
                            {"occupancy", "the runtime picks a block size"}});
  cs::parse_or_exit(options, argc, argv);
  if ((block & (block - 1)) != 0) {
    cs::usage_error("--block expects a power of two from 32 to 1024, got '" +
                    std::to_string(block) + "'");
  }
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call
  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::print_launch_environment(env);
  if (env.launch_blocking || env.connections_from_env) {
    std::printf(
        "Neither setting changes what this chapter checks: each result is read after its "
        "work is done.\n");
  }
  cs::require_fits_on_device(static_cast<std::size_t>(elements) * 2 * sizeof(float),
                             "--elements " + std::to_string(elements));

  if (parts.begin("limits")) part_limits(prop);
  if (parts.begin("coverage")) part_coverage(elements, block);
  if (parts.begin("shared")) part_shared(elements, block, prop, !no_invalid_launches);
  if (parts.begin("stream")) part_stream(elements, block, common);
  if (parts.begin("invalid")) {
    if (no_invalid_launches) {
      cs::check_skipped("invalid_launches_rejected", "not run (--no-invalid-launches)");
    } else {
      part_invalid(prop, env);
    }
  }
  if (parts.begin("occupancy")) part_occupancy(elements, prop);
  return cs::finish();
}
