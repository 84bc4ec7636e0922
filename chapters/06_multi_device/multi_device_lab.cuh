// Chapter 06's machinery: its flags, which devices the parts use (and when a part must skip), the
// job's input and CPU reference, the per-device times and the timeline of the split job. None of
// it is the lesson; a reader may skip this file.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

#if CUDART_VERSION < 12080
#error "chapter 06 needs CUDA 12.8 or newer: it asks streams for their device (cudaStreamGetDevice)"
#endif

namespace multi_device_lab {

constexpr int kBlock = 256;
constexpr int kWarmup = 1;   // untimed runs before every measurement
constexpr int kRepeats = 5;  // timed runs; the median is reported
// The job's arithmetic: x <- a * x + c (mod 2^32), the classic linear congruential step.
constexpr std::uint32_t kLcgA = 1664525u;
constexpr std::uint32_t kLcgC = 1013904223u;

// The flags (with their defaults), then what resolve_devices() learns from the machine.
struct Context {
  std::vector<int> devices;  // --devices; resolved: every device when empty
  std::size_t elements = 8u << 20;
  int steps = 16384;
  bool no_invalid_calls = false;  // --no-invalid-calls: leave out the deliberate errors
  int machine_devices = 0;        // what cudaGetDeviceCount reports
  bool running_alone = false;     // --part names one part (not "all")
  cs::LaunchEnvironment env;
  const cs::CommonOptions* common = nullptr;
};

inline void add_flags(cs::Options& options, Context* c) {
  options.add_int_list("devices", &c->devices, 0, 1023,  // 1023: before asking CUDA
                       "the devices to split the job over, e.g. 0,1 (each must exist)");
  options.add_size("elements", &c->elements, 1024, 1ull << 28, "elements of the split job");
  options.add_int("steps", &c->steps, 1, 1 << 20, "LCG steps per element (the job's arithmetic)");
  options.add_flag("no-invalid-calls", &c->no_invalid_calls,
                   "skip the deliberately invalid calls (they are errors to compute-sanitizer)");
}

inline std::string join_ints(const std::vector<int>& values) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i)
    text += (i ? "," : "") + std::to_string(values[i]);
  return text;
}

inline std::string error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

// Makes `device` current for as long as it lives, then the device that was current before: the
// C++ form of `with torch.cuda.device(device):`. part_ownership() writes out the three calls.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    CS_CHECK(cudaGetDevice(&previous_));
    CS_CHECK(cudaSetDevice(device));
  }
  ~CurrentDevice() { CS_CHECK(cudaSetDevice(previous_)); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
};

inline int current_device() {
  int device = -1;
  CS_CHECK(cudaGetDevice(&device));
  return device;
}

// n values of `device`'s memory at `data`, copied to the host with that device current.
template <class T>
std::vector<T> download(int device, const T* data, std::size_t n) {
  CurrentDevice scope(device);
  std::vector<T> values(n);
  CS_CHECK(cudaMemcpy(values.data(), data, n * sizeof(T), cudaMemcpyDeviceToHost));
  return values;
}

// Frees `device`'s buffers (and destroys its stream, if given) with that device current.
inline void release(int device, std::initializer_list<void*> buffers,
                    cudaStream_t stream = nullptr) {
  CurrentDevice scope(device);
  for (void* buffer : buffers) CS_CHECK(cudaFree(buffer));
  if (stream != nullptr) CS_CHECK(cudaStreamDestroy(stream));
}

// A grid-stride grid for n elements on `device`: at most 8 blocks per SM.
inline int grid_for(int device, std::size_t n) {
  int sms = 0;
  CS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t wanted = (n + kBlock - 1) / kBlock;
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(wanted, sms * 8ull)));
}

// Whether a two-device part can run. Run alone: too few on the machine skips (77), too few in
// --devices is a bad command line (2). Inside --part all it only prints why it is skipped.
inline bool have_two_devices(const Context& ctx, const std::string& part) {
  const int have = ctx.machine_devices, selected = static_cast<int>(ctx.devices.size());
  if (ctx.running_alone && have < 2) {
    cs::skip(cs::format("needs 2 devices (this machine has %d)", have));
  }
  if (ctx.running_alone && selected < 2) {
    cs::usage_error(
        cs::format("--part %s needs 2 devices, but --devices selects %d", part.c_str(), selected));
  }
  const std::string why = have < 2 ? cs::format("needs 2 devices, this machine has %d", have)
                          : selected < 2
                              ? cs::format("needs 2 devices, --devices selects %d", selected)
                              : "";
  if (!why.empty()) cs::check_skipped(part, why);
  return why.empty();
}

// --devices checked against the machine (that needs CUDA, so it comes after the flags), or every
// device. A two-device part run alone skips (77) on a machine with fewer, whatever --devices says.
inline void resolve_devices(Context& ctx, const std::string& part) {
  ctx.running_alone = part != "all";
  const int count = ctx.machine_devices = cs::device_count_or_skip();
  const bool needs_two =
      part == "foreign-stream" || part == "peer" || part == "cross-event" || part == "scaling";
  if (needs_two && count < 2) have_two_devices(ctx, part);
  for (int d : ctx.devices) {
    if (d >= count) {
      cs::usage_error(
          cs::format("--devices %s: device %d does not exist; this machine has %d "
                     "CUDA device%s (0..%d)",
                     join_ints(ctx.devices).c_str(), d, count, count == 1 ? "" : "s", count - 1));
    }
  }
  if (ctx.devices.empty()) {
    for (int d = 0; d < count; ++d) ctx.devices.push_back(d);
  }
  if (needs_two) have_two_devices(ctx, part);  // --devices may name fewer than two
}

// Part enumerate's table.
inline void print_device_header(int count) {
  std::printf("cudaGetDeviceCount: %d\n", count);
  std::printf("  %-7s %-28s %-5s %5s %11s %8s  %s\n", "device", "name", "CC", "SMs", "memory",
              "engines", "PCI bus");
}
inline void print_device_row(int d, const cudaDeviceProp& prop) {
  std::printf("  %-7d %-28s %d.%-3d %5d %11s %8d  %04x:%02x:%02x\n", d, prop.name, prop.major,
              prop.minor, prop.multiProcessorCount,
              cs::format_bytes(static_cast<double>(prop.totalGlobalMem)).c_str(),
              prop.asyncEngineCount, prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
}

// Pinned host arrays for the job and its CPU reference (cudaHostAllocPortable: pinned for every
// device). k LCG steps compose into one step x -> A x + C, found by repeated squaring of (a, c):
// the CPU checks every element with that single step instead of repeating the GPU's k steps.
struct JobData {
  std::size_t n = 0;
  std::uint32_t* in = nullptr;
  std::uint32_t* out = nullptr;
  std::vector<std::uint32_t> reference;
  JobData(std::size_t elements, int steps) : n(elements), reference(elements) {
    CS_CHECK(cudaHostAlloc(&in, n * sizeof(std::uint32_t), cudaHostAllocPortable));
    CS_CHECK(cudaHostAlloc(&out, n * sizeof(std::uint32_t), cudaHostAllocPortable));
    std::uint32_t a = 1u, c = 0u, square_a = kLcgA, square_c = kLcgC;
    for (int k = steps; k > 0; k >>= 1) {
      if (k & 1) {
        a = square_a * a;
        c = square_a * c + square_c;
      }
      square_c = square_a * square_c + square_c;
      square_a = square_a * square_a;
    }
    for (std::size_t i = 0; i < n; ++i) {
      in[i] = static_cast<std::uint32_t>(i) * 2654435761u;
      reference[i] = a * in[i] + c;
    }
  }
  ~JobData() {
    CS_CHECK(cudaFreeHost(in));
    CS_CHECK(cudaFreeHost(out));
  }
  JobData(const JobData&) = delete;
  JobData& operator=(const JobData&) = delete;
};

// The job's host arrays when a part that runs it is selected (`needed`), else null. Scaling runs
// the whole job on the first device, so the whole job must fit there (exit 2 if not).
inline std::unique_ptr<JobData> make_job(const Context& ctx, bool needed) {
  std::unique_ptr<JobData> job;
  if (needed) {
    CurrentDevice scope(ctx.devices.front());
    cs::require_fits_on_device(2 * ctx.elements * sizeof(std::uint32_t),
                               cs::format("--elements %zu", ctx.elements));
    job = std::make_unique<JobData>(ctx.elements, ctx.steps);
  }
  std::printf("Devices used: %s of %d\n", join_ints(ctx.devices).c_str(), ctx.machine_devices);
  return job;
}

// base, base + 1, ...: what fill_kernel writes, for the peer and cross-event checks.
inline std::vector<std::uint32_t> pattern(std::size_t n, std::uint32_t base) {
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = base + static_cast<std::uint32_t>(i);
  return values;
}

// One device's share of the split job: its slice of the host arrays, its buffers, stream and
// events (created in multi_device.cu, with the slice's device current).
struct Slice {
  int device = 0;
  std::size_t offset = 0;
  std::size_t count = 0;
  cudaStream_t stream = nullptr;
  std::uint32_t* in = nullptr;
  std::uint32_t* out = nullptr;
  cudaEvent_t marks[4] = {};  // before H2D, after H2D, after the kernel, after D2H
  double host_start_ms = 0;   // when the first mark was recorded, on the host clock
};

// Cuts [0, elements) into one contiguous slice per device (the first slices get the remainder).
inline std::vector<Slice> cut_job(const std::vector<int>& devices, std::size_t elements) {
  std::vector<Slice> slices(devices.size());
  std::size_t offset = 0;
  for (std::size_t k = 0; k < devices.size(); ++k) {
    slices[k].device = devices[k];
    slices[k].offset = offset;
    slices[k].count = elements / devices.size() + (k < elements % devices.size() ? 1 : 0);
    offset += slices[k].count;
  }
  return slices;
}

inline void destroy_slices(std::vector<Slice>& slices) {
  for (Slice& s : slices) {
    CurrentDevice scope(s.device);
    for (cudaEvent_t mark : s.marks) CS_CHECK(cudaEventDestroy(mark));
    CS_CHECK(cudaFree(s.in));
    CS_CHECK(cudaFree(s.out));
    CS_CHECK(cudaStreamDestroy(s.stream));
  }
}

// Milliseconds between two marks of one slice (events of one device: allowed).
inline double between(const Slice& slice, int from, int to) {
  float ms = 0;
  CS_CHECK(cudaEventElapsedTime(&ms, slice.marks[from], slice.marks[to]));
  return ms;
}

struct SplitTimes {
  double total_ms = 0;                // host clock: first issue to the last device done
  std::vector<double> per_device_ms;  // each device's H2D + kernel + D2H, by its own events
  double kernel_share = 0;            // the kernels' share of the devices' times
};

// Runs the job (`run` returns its host-clock time) warm-up + repeats times; medians.
template <class Run>
SplitTimes measure(const std::vector<Slice>& slices, Run&& run) {
  for (int i = 0; i < kWarmup; ++i) run();
  std::vector<double> totals, shares;
  std::vector<std::vector<double>> per_device(slices.size());
  for (int r = 0; r < kRepeats; ++r) {
    totals.push_back(run());
    double kernels = 0, all = 0;
    for (std::size_t k = 0; k < slices.size(); ++k) {
      per_device[k].push_back(between(slices[k], 0, 3));
      kernels += between(slices[k], 1, 2);
      all += per_device[k].back();
    }
    shares.push_back(all > 0 ? kernels / all : 0);
  }
  SplitTimes times{cs::median(totals), {}, cs::median(shares)};
  for (auto& samples : per_device) times.per_device_ms.push_back(cs::median(samples));
  return times;
}

inline void print_split_table(const std::vector<Slice>& slices, const SplitTimes& times) {
  std::printf("  %-8s %12s %18s\n", "device", "elements", "H2D+kernel+D2H");
  double device_sum = 0;
  for (std::size_t k = 0; k < slices.size(); ++k) {
    std::printf("  %-8d %12zu %15.2f ms\n", slices[k].device, slices[k].count,
                times.per_device_ms[k]);
    device_sum += times.per_device_ms[k];
  }
  std::printf("  total on the host clock: %.2f ms (the devices' times add up to %.2f ms)\n",
              times.total_ms, device_sum);
}

// The last run, one row per device. Events of different devices cannot be subtracted, so each
// row is placed by the host time at which its first event was recorded on an idle stream.
inline cs::TimelineData split_timeline(const std::vector<Slice>& slices) {
  cs::TimelineData data;
  const char* kinds[3] = {"H2D", "kernel", "D2H"};
  for (const Slice& slice : slices) {
    const int row = static_cast<int>(data.rows.size());
    data.rows.push_back("device " + std::to_string(slice.device));
    const double shift = slice.host_start_ms - slices.front().host_start_ms;
    for (int stage = 0; stage < 3; ++stage) {
      data.spans.push_back({row, kinds[stage], std::to_string(slice.count) + " elements",
                            shift + between(slice, 0, stage),
                            shift + between(slice, 0, stage + 1)});
    }
  }
  return data;
}

// Runs `copy` (of `bytes`, into `stream`) once, or times it when `timed`: GB/s, 0 untimed.
template <class Copy>
double run_or_time_gbps(cudaStream_t stream, std::size_t bytes, bool timed, Copy&& copy) {
  if (!timed) copy();
  const double ms = timed ? cs::time_on_stream_ms(stream, kWarmup, kRepeats, copy).median : 0;
  return ms > 0 ? static_cast<double>(bytes) / (ms * 1e6) : 0;
}

// Part peer's lines for one pair: who can map whose memory, and each direction's bandwidth.
inline void print_peer_pair(const int dev[2], const int can[2], const double gbps[2], bool timed) {
  std::printf("  devices %d and %d: %d can access %d's memory: %s; %d can access %d's: %s\n",
              dev[0], dev[1], dev[0], dev[1], can[0] ? "yes" : "no", dev[1], dev[0],
              can[1] ? "yes" : "no");
  for (int k = 0; k < 2; ++k) {
    std::printf("    cudaMemcpyPeerAsync %d -> %d: %s\n", dev[k], dev[1 - k],
                timed ? cs::format("%.1f GB/s", gbps[k]).c_str() : "(not timed)");
  }
  if (!can[1]) {
    std::printf("    device %d cannot map device %d's memory: no direct-access kernel\n", dev[1],
                dev[0]);
  }
}

// Why the scaling bar cannot hold in this run, or "": --no-timing, launch blocking (one host
// thread then runs the devices one after another), a job whose copies (which may share one host
// link) outweigh the kernel, or a job too short to split.
inline std::string scaling_skip_reason(const Context& ctx, const SplitTimes& one,
                                       double kernel_share_min, double job_ms_min) {
  return cs::first_reason(
      {ctx.common->timing_skip_reason(),
       ctx.env.launch_blocking ? "CUDA_LAUNCH_BLOCKING=1: every copy and launch returned only "
                                 "after its work, so one host thread ran the devices one after "
                                 "another"
                               : "",
       one.kernel_share < kernel_share_min
           ? cs::format("the kernel is only %.0f%% of the job: the copies set the speedup",
                        100 * one.kernel_share)
           : "",
       one.total_ms < job_ms_min ? cs::format("the job takes only %.2f ms", one.total_ms) : ""});
}

}  // namespace multi_device_lab
