// Chapter 06's machinery, which a reader may skip: the flags, which devices the parts use, the
// scoped current device, the job's pinned arrays and CPU reference, the split job's slices.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

namespace lab {
constexpr int kBlock = 256, kWarmup = 1, kRepeats = 5;  // warm-up runs, then timed runs (median)
constexpr std::uint32_t kLcgA = 1664525u, kLcgC = 1013904223u;  // the job: x <- a x + c

// The flags (with their defaults), then what setup() learns from the machine.
struct Context {
  std::vector<int> devices;  // --devices; resolved: every device when empty
  std::size_t elements = 8u << 20;
  int steps = 16384;
  bool no_invalid_calls = false;  // --no-invalid-calls: leave out the deliberate errors
  std::string skip_two;  // why the two-device parts are skipped here ("" with 2 devices or more)
  cs::LaunchEnvironment env;
  cs::CommonOptions common;
};

inline std::string join(const std::vector<int>& values) {
  std::string text;
  for (int value : values) text += (text.empty() ? "" : ",") + std::to_string(value);
  return text;
}

// The flags, the device, then --devices checked against the machine (none given: every device).
inline void setup(Context& ctx, cs::Options& flags, const cs::Parts& parts, int argc, char** argv) {
  // --devices: 1023 bounds it before CUDA is asked; below, each must be a device of the machine.
  flags.add_int_list("devices", &ctx.devices, 0, 1023, "the devices to use, e.g. 0,1");
  flags.add_size("elements", &ctx.elements, 1024, 1ull << 28, "elements of the split job");
  flags.add_int("steps", &ctx.steps, 1, 1 << 20, "LCG steps per element (the job's arithmetic)");
  flags.add_flag("no-invalid-calls", &ctx.no_invalid_calls, "leave out the deliberate errors");
  cs::add_common_options(flags, &ctx.common);
  cs::parse_or_exit(flags, argc, argv);
  ctx.env = cs::launch_environment();  // before the first CUDA call
  cs::select_device(ctx.common.device);
  cs::print_launch_environment(ctx.env);
  const std::string& part = parts.chosen();
  const int count = cs::device_count_or_skip();
  const bool needs_two =
      part == "foreign-stream" || part == "peer" || part == "cross-event" || part == "scaling";
  if (needs_two && count < 2) cs::skip(cs::format("needs 2 devices (this machine has %d)", count));
  for (int d : ctx.devices)
    if (d >= count)
      cs::usage_error(cs::format(
          "--devices %s: device %d does not exist; this machine has %d CUDA device%s (0..%d)",
          join(ctx.devices).c_str(), d, count, count == 1 ? "" : "s", count - 1));
  if (ctx.devices.empty())
    for (int d = 0; d < count; ++d) ctx.devices.push_back(d);
  // Distinct devices of this machine: fewer than 2 selected is 1; a one-GPU machine is the reason.
  if (ctx.devices.size() < 2) ctx.skip_two = "needs 2 devices, --devices selects 1";
  if (count < 2) ctx.skip_two = cs::format("needs 2 devices, this machine has %d", count);
  if (needs_two && !ctx.skip_two.empty()) cs::usage_error("--part " + part + " " + ctx.skip_two);
  std::printf("Devices used: %s of %d\n", join(ctx.devices).c_str(), count);
}

// `with torch.cuda.device(device):` as a C++ scope; part_ownership() writes out its three calls.
struct CurrentDevice {
  int previous = 0;
  explicit CurrentDevice(int device) {
    CS_CHECK(cudaGetDevice(&previous));
    CS_CHECK(cudaSetDevice(device));
  }
  ~CurrentDevice() { CS_CHECK(cudaSetDevice(previous)); }
};

// n values of `device`'s memory at `data`, copied to the host with that device current.
template <class T>
std::vector<T> download(int device, const T* data, std::size_t n) {
  CurrentDevice scope(device);
  std::vector<T> values(n);
  CS_CHECK(cudaMemcpy(values.data(), data, n * sizeof(T), cudaMemcpyDeviceToHost));
  return values;
}

// Frees `device`'s buffers (and destroys its stream, if given) with that device current.
inline void release(int device, std::initializer_list<void*> buffers, cudaStream_t stream = 0) {
  CurrentDevice scope(device);
  for (void* buffer : buffers) CS_CHECK(cudaFree(buffer));
  if (stream != nullptr) CS_CHECK(cudaStreamDestroy(stream));
}

// A grid-stride grid for n elements on `device`: at most 8 blocks per SM.
inline int grid_for(int device, std::size_t n) {
  int sms = 0;
  CS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<int>(std::min<std::size_t>((n + kBlock - 1) / kBlock, sms * 8ull));  // n > 0
}

// base, base + 1, ...: what fill_kernel writes, for the peer and cross-event checks.
inline std::vector<std::uint32_t> pattern(std::size_t n, std::uint32_t base) {
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = base + static_cast<std::uint32_t>(i);
  return values;
}

// The job's pinned host arrays (cudaHostAllocPortable: for every device) and CPU reference (k LCG
// steps compose into one, x -> A x + C); exit 2 if the job does not fit on the first device.
struct JobData {
  std::size_t n = 0;
  std::uint32_t *in = nullptr, *out = nullptr;
  std::vector<std::uint32_t> reference;
  explicit JobData(const Context& ctx) : n(ctx.elements), reference(n) {
    CurrentDevice scope(ctx.devices.front());
    cs::require_fits_on_device(2 * n * sizeof(std::uint32_t), cs::format("--elements %zu", n));
    CS_CHECK(cudaHostAlloc(&in, n * sizeof(std::uint32_t), cudaHostAllocPortable));
    CS_CHECK(cudaHostAlloc(&out, n * sizeof(std::uint32_t), cudaHostAllocPortable));
    std::uint32_t a = 1u, c = 0u;  // A and C; one more step: A <- kLcgA A, C <- kLcgA C + kLcgC
    for (int k = 0; k < ctx.steps; ++k) a = kLcgA * a, c = kLcgA * c + kLcgC;
    for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::uint32_t>(i) * 2654435761u;
    for (std::size_t i = 0; i < n; ++i) reference[i] = a * in[i] + c;
  }
  ~JobData() {
    CS_CHECK(cudaFreeHost(in));
    CS_CHECK(cudaFreeHost(out));
  }
};

// One device's share of the split job: its slice of the host arrays, its buffers, stream, events.
struct Slice {
  int device = 0;
  std::size_t offset = 0, count = 0;
  cudaStream_t stream = nullptr;
  std::uint32_t *in = nullptr, *out = nullptr;
  cudaEvent_t marks[4] = {};    // before H2D, after H2D, after the kernel, after D2H
  double host_start_ms = 0;     // when the first mark was recorded, on the host clock
  std::vector<double> ms = {};  // each timed run's H2D + kernel + D2H, by the device's own events
};

// Milliseconds between two marks of one slice (events of one device: allowed).
inline double between(const Slice& slice, int from, int to) {
  float ms = 0;
  CS_CHECK(cudaEventElapsedTime(&ms, slice.marks[from], slice.marks[to]));
  return ms;
}

// The split job's slices and medians: host clock to the last device done, the kernels' share.
struct Split {
  std::vector<Slice> slices;
  double total_ms = 0, kernel_share = 0;
};

}  // namespace lab
