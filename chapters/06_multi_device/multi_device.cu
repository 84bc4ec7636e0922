// Chapter 06: one program, several GPUs
//
// What it teaches
//   PyTorch names a GPU with torch.device('cuda:1'), switches the "current device" with
//   `with torch.cuda.device(1):`, and moves a tensor there with .cuda() or .to(device). The CUDA
//   runtime underneath has one current device per host thread, set by cudaSetDevice(i): every
//   stream, event and allocation belongs to the device that was current when it was created, and
//   a kernel can only be launched into a stream of the current device. This program shows each of
//   those facts, then uses them:
//     enumerate      every device (name, compute capability, SMs, memory); asking for a device
//                    that does not exist (the seed's 'cuda:2' on a smaller machine) is an error;
//     ownership      streams and memory report the device they were created on; the seed's
//                    `with torch.cuda.device(1): c = a + b` written as a scoped cudaSetDevice;
//     foreign-stream a launch into another device's stream fails, and is caught (2 devices);
//     split          one job cut into slices, one slice and one stream per device, issued from
//                    one host thread so that all devices work at once; checked against the CPU;
//     peer           cudaDeviceCanAccessPeer, cudaDeviceEnablePeerAccess and cudaMemcpyPeerAsync
//                    between every pair of devices, with the bandwidth of each direction;
//     cross-event    a stream on one device waits (cudaStreamWaitEvent) for an event recorded on
//                    another device, proven by the data it copies;
//     scaling        the split job on N devices against the whole job on one: speedup >= 0.7 N.
//   It is written for any number of devices. On a machine with one GPU, `--part all` runs what
//   one GPU can and marks the parts that need two as skipped; each of those parts run alone
//   (`--part peer`) prints a SKIP: line and exits 77.
//
// Build and run
//   cmake --preset default && cmake --build --preset default
//   build/bin/06_multi_device                        # every part this machine can run
//   build/bin/06_multi_device --part split --devices 0,1
//   build/bin/06_multi_device --help
//
// What to expect
//   A table of devices, CHECK lines for ownership, the split job's result and its per-device
//   times with a timeline (one row per device), then peer bandwidths, the cross-device wait and
//   the scaling speedup where there are two devices or more, and "All N checks passed."
//   Exit status 0 all checks passed, 1 a check failed, 2 bad command line (including a --devices
//   entry this machine does not have), 77 a part that needs more devices than there are.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

#if CUDART_VERSION < 12080
#error "chapter 06 needs CUDA 12.8 or newer: it asks streams for their device (cudaStreamGetDevice)"
#endif

namespace {

// Every threshold of the chapter, in one place.
namespace bars {
// N devices should finish the split job at least this fraction of N times faster than one: the
// slices are independent and the kernel dominates, so only launch and copy overheads are lost.
constexpr double scaling_efficiency = 0.7;
}  // namespace bars

// Sizes and repeats (not thresholds).
namespace config {
constexpr int warmup = 1;
constexpr int repeats = 5;
constexpr int block = 256;
constexpr int max_device_index = 1023;           // what --devices accepts before asking CUDA
constexpr std::size_t peer_bytes = 64ull << 20;  // per direction, per pair of devices
constexpr double cross_event_delay_ms = 20.0;    // how long the producing device works first
// The job's arithmetic: x <- a * x + c (mod 2^32), the classic linear congruential step.
constexpr std::uint32_t lcg_a = 1664525u;
constexpr std::uint32_t lcg_c = 1013904223u;
}  // namespace config

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

// Holds its stream for a fixed time, whatever the clocks: stands for "a producer that is busy".
__global__ void spin_kernel(unsigned long long duration_ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < duration_ns) {
  }
}

// The job: every element takes `steps` LCG steps. Arithmetic heavy, so the kernel, not the
// copies, sets the job's time, and slices on different devices are fully independent.
__global__ void lcg_steps_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n,
                                 std::uint32_t a, std::uint32_t c, int steps) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    std::uint32_t x = in[i];
    for (int s = 0; s < steps; ++s) x = a * x + c;
    out[i] = x;
  }
}

__global__ void fill_kernel(std::uint32_t* out, std::size_t n, std::uint32_t base) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = base + static_cast<std::uint32_t>(i);
  }
}

__global__ void add_kernel(const float* a, const float* b, float* sum, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) sum[i] = a[i] + b[i];
}

// Copies with plain loads and stores; given a pointer to a peer's memory it reads across the link.
__global__ void copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = in[i];
  }
}

// ---------------------------------------------------------------------------------------------
// Host helpers
// ---------------------------------------------------------------------------------------------

// The C++ counterpart of `with torch.cuda.device(i):`: device i is current inside the scope, and
// the previously current device is current again when the scope ends.
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

int current_device() {
  int device = -1;
  CS_CHECK(cudaGetDevice(&device));
  return device;
}

int grid_for(int device, std::size_t n) {
  int sms = 0;
  CS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t wanted = (n + config::block - 1) / config::block;
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(wanted, sms * 8ull)));
}

std::string join_ints(const std::vector<int>& values) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i)
    text += (i ? "," : "") + std::to_string(values[i]);
  return text;
}

std::string error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

// k LCG steps compose into one step x -> A x + C. The CPU checks every element with that single
// step, computed by repeated squaring of (a, c), instead of repeating the GPU's k steps.
struct Affine {
  std::uint32_t a;
  std::uint32_t c;
};
Affine compose(Affine first, Affine second) {  // second after first
  return {second.a * first.a, second.a * first.c + second.c};
}
Affine lcg_power(int steps) {
  Affine result{1u, 0u};
  Affine square{config::lcg_a, config::lcg_c};
  for (int k = steps; k > 0; k >>= 1) {
    if (k & 1) result = compose(result, square);
    square = compose(square, square);
  }
  return result;
}

std::uint32_t job_input(std::size_t i) {
  return static_cast<std::uint32_t>(i) * 2654435761u;
}

// What every part needs to know.
struct Context {
  int machine_devices = 0;   // what cudaGetDeviceCount reports
  std::vector<int> devices;  // --devices, or every device
  std::size_t elements = 0;  // the split job's size
  int steps = 0;             // LCG steps per element
  const cs::CommonOptions* common = nullptr;
  bool running_alone = false;     // --part names this one part (not "all")
  bool no_invalid_calls = false;  // --no-invalid-calls: leave out the deliberate errors
};

// Decides whether a part that needs `needed` devices can run. Run alone, a part with too few
// devices on the machine skips (77) and one with too few in --devices is a bad command line (2);
// inside --part all it only prints why it is skipped.
bool have_devices(const Context& ctx, int needed, const std::string& part) {
  if (ctx.running_alone) {
    cs::require_devices(needed, "--part " + part);
    if (static_cast<int>(ctx.devices.size()) < needed) {
      cs::usage_error("--part " + part + " needs " + std::to_string(needed) +
                      " devices, but --devices selects " + std::to_string(ctx.devices.size()));
    }
    return true;
  }
  if (ctx.machine_devices < needed) {
    cs::check_skipped(part, "needs " + std::to_string(needed) + " devices, this machine has " +
                                std::to_string(ctx.machine_devices));
    return false;
  }
  if (static_cast<int>(ctx.devices.size()) < needed) {
    cs::check_skipped(part, "needs " + std::to_string(needed) + " devices, --devices selects " +
                                std::to_string(ctx.devices.size()));
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// enumerate: which devices exist, and what asking for one that does not exist does
// ---------------------------------------------------------------------------------------------

void part_enumerate(const Context& ctx) {
  std::printf("\n== enumerate: the devices of this machine (cudaGetDeviceCount: %d) ==\n",
              ctx.machine_devices);
  std::printf("  %-7s %-28s %-5s %5s %11s %8s  %s\n", "device", "name", "CC", "SMs", "memory",
              "engines", "PCI bus");
  for (int d = 0; d < ctx.machine_devices; ++d) {
    cudaDeviceProp prop{};
    CS_CHECK(cudaGetDeviceProperties(&prop, d));
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x", prop.pciDomainID, prop.pciBusID,
                  prop.pciDeviceID);
    std::printf("  %-7d %-28s %d.%-3d %5d %11s %8d  %s\n", d, prop.name, prop.major, prop.minor,
                prop.multiProcessorCount,
                cs::format_bytes(static_cast<double>(prop.totalGlobalMem)).c_str(),
                prop.asyncEngineCount, bus);
  }
  std::printf("  current device: %d (torch.device('cuda') means this one; --device chose it)\n",
              current_device());

  // torch.device('cuda:N') with N >= the device count fails when used; so does cudaSetDevice(N).
  if (ctx.no_invalid_calls) {
    cs::check_skipped("nonexistent_device_rejected", "--no-invalid-calls");
    return;
  }
  const int missing = ctx.machine_devices;
  const int before = current_device();
  const cudaError_t status = cudaSetDevice(missing);
  (void)cudaGetLastError();  // the expected error must not linger for later error checks
  const int after = current_device();
  std::printf("  cudaSetDevice(%d) on a machine with %d device%s: %s\n", missing,
              ctx.machine_devices, ctx.machine_devices == 1 ? "" : "s", error_text(status).c_str());
  cs::check_that("nonexistent_device_rejected", status == cudaErrorInvalidDevice && after == before,
                 "cudaSetDevice(" + std::to_string(missing) + ") returned " +
                     cudaGetErrorName(status) + ", device " + std::to_string(after) +
                     " is still current");
}

// ---------------------------------------------------------------------------------------------
// ownership: streams and memory belong to the device current at their creation
// ---------------------------------------------------------------------------------------------

// A tiny stand-in for a tensor: some floats and the device that holds them.
struct DeviceFloats {
  int device = -1;
  float* data = nullptr;
  std::size_t n = 0;
};

// `torch.tensor(values).to(device)`: allocate on `device`, copy the values there.
DeviceFloats to_device(const std::vector<float>& values, int device) {
  CurrentDevice scope(device);
  DeviceFloats t{device, nullptr, values.size()};
  CS_CHECK(cudaMalloc(&t.data, t.n * sizeof(float)));
  CS_CHECK(cudaMemcpy(t.data, values.data(), t.n * sizeof(float), cudaMemcpyHostToDevice));
  return t;
}

// `a + b`: runs on the device that holds both operands, like PyTorch, which refuses operands on
// different devices (CUDA itself would not stop a kernel from touching a peer's pointer).
DeviceFloats add_on_owner(const DeviceFloats& a, const DeviceFloats& b) {
  if (a.device != b.device || a.n != b.n) {
    std::fprintf(stderr, "add_on_owner: operands on devices %d and %d\n", a.device, b.device);
    std::exit(cs::kFailExitCode);
  }
  CurrentDevice scope(a.device);
  DeviceFloats sum{a.device, nullptr, a.n};
  CS_CHECK(cudaMalloc(&sum.data, sum.n * sizeof(float)));
  add_kernel<<<1, config::block>>>(a.data, b.data, sum.data, sum.n);
  CS_CHECK_LAUNCH();
  return sum;
}

std::vector<float> to_host(const DeviceFloats& t) {
  CurrentDevice scope(t.device);
  std::vector<float> values(t.n);
  CS_CHECK(cudaMemcpy(values.data(), t.data, t.n * sizeof(float), cudaMemcpyDeviceToHost));
  return values;
}

void release(DeviceFloats& t) {
  CurrentDevice scope(t.device);
  CS_CHECK(cudaFree(t.data));
  t.data = nullptr;
}

int owner_of_pointer(const void* pointer, cudaMemoryType* type) {
  cudaPointerAttributes attributes{};
  CS_CHECK(cudaPointerGetAttributes(&attributes, pointer));
  *type = attributes.type;
  return attributes.device;
}

void part_ownership(const Context& ctx) {
  std::printf("\n== ownership: a stream and memory belong to the device current at creation ==\n");
  std::vector<int> stream_owners;
  std::vector<int> memory_owners;
  bool memory_is_device_memory = true;
  for (int d : ctx.devices) {
    cudaStream_t stream = nullptr;
    void* buffer = nullptr;
    {
      CurrentDevice scope(d);  // with torch.cuda.device(d):
      CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      CS_CHECK(cudaMalloc(&buffer, 1 << 20));
    }
    // Asked from the home device, the stream and the memory still name the device they were
    // created on: ownership is fixed at creation, not by whatever is current later.
    int stream_owner = -1;
    CS_CHECK(cudaStreamGetDevice(stream, &stream_owner));
    cudaMemoryType type = cudaMemoryTypeUnregistered;
    const int memory_owner = owner_of_pointer(buffer, &type);
    memory_is_device_memory = memory_is_device_memory && type == cudaMemoryTypeDevice;
    std::printf(
        "  created with device %d current: cudaStreamGetDevice -> %d, "
        "cudaPointerGetAttributes -> device %d (%s memory)\n",
        d, stream_owner, memory_owner, type == cudaMemoryTypeDevice ? "device" : "other");
    stream_owners.push_back(stream_owner);
    memory_owners.push_back(memory_owner);
    {
      CurrentDevice scope(d);
      CS_CHECK(cudaStreamDestroy(stream));
      CS_CHECK(cudaFree(buffer));
    }
  }
  cs::check_that("stream_owner", stream_owners == ctx.devices,
                 "streams created on devices " + join_ints(ctx.devices) + " report devices " +
                     join_ints(stream_owners));
  cs::check_that("memory_owner", memory_owners == ctx.devices && memory_is_device_memory,
                 "cudaMalloc on devices " + join_ints(ctx.devices) +
                     " gives device memory of devices " + join_ints(memory_owners));

  // The seed, line by line. 'cuda:1' is the last selected device (device 0 on a one-GPU machine).
  const int first = ctx.devices.front();
  const int other = ctx.devices.back();
  std::printf("  the seed's example with cuda0 = device %d and cuda1 = device %d%s:\n", first,
              other, first == other ? " (one device here: both names mean the same GPU)" : "");
  DeviceFloats x = to_device({1.f, 2.f}, first);  // x = torch.tensor([1., 2.], device=cuda0)
  DeviceFloats c;
  const int before = current_device();
  {
    CurrentDevice scope(other);  // with torch.cuda.device(1):
    DeviceFloats a =
        to_device({1.f, 2.f}, current_device());  //   a = torch.tensor(..., device=cuda)
    DeviceFloats b = to_device({1.f, 2.f}, current_device());  //   b = torch.tensor(...).cuda()
    c = add_on_owner(a, b);                                    //   c = a + b
    release(a);
    release(b);
  }
  const int after = current_device();
  DeviceFloats y = to_device({1.f, 2.f}, current_device());  // y = torch.tensor([1., 2.]).cuda()
  DeviceFloats z = add_on_owner(x, y);                       // z = x + y
  cudaMemoryType type = cudaMemoryTypeUnregistered;
  const int c_owner = owner_of_pointer(c.data, &type);
  const int z_owner = owner_of_pointer(z.data, &type);
  std::printf(
      "    c = a + b lives on device %d, z = x + y on device %d; current device before the "
      "scope %d, after it %d\n",
      c_owner, z_owner, before, after);
  const std::vector<float> want = {2.f, 4.f};
  cs::verify("seed_c_equals_a_plus_b", to_host(c), want);
  cs::verify("seed_z_equals_x_plus_y", to_host(z), want);
  cs::check_that("seed_c_on_cuda1", c_owner == other,
                 "c was computed on device " + std::to_string(c_owner) + ", the scope's device");
  if (before != other) {
    cs::check_that("scope_restores_device", after == before,
                   "device " + std::to_string(after) + " is current again after the scope");
  } else {
    std::printf(
        "    (the scope's device is already current here, so there is nothing to restore)\n");
  }
  for (DeviceFloats* t : {&x, &y, &z, &c}) release(*t);
}

// ---------------------------------------------------------------------------------------------
// foreign-stream: a launch must go into a stream of the current device
// ---------------------------------------------------------------------------------------------

void part_foreign_stream(const Context& ctx) {
  if (!have_devices(ctx, 2, "foreign-stream")) return;
  if (ctx.no_invalid_calls) {
    cs::check_skipped("foreign-stream", "--no-invalid-calls");
    return;
  }
  const int home = ctx.devices[0];
  const int away = ctx.devices[1];
  std::printf(
      "\n== foreign-stream: launching into device %d's stream while device %d is current ==\n",
      away, home);
  const std::size_t n = 1 << 20;
  cudaStream_t away_stream = nullptr;
  std::uint32_t* away_buffer = nullptr;
  {
    CurrentDevice scope(away);
    CS_CHECK(cudaStreamCreateWithFlags(&away_stream, cudaStreamNonBlocking));
    CS_CHECK(cudaMalloc(&away_buffer, n * sizeof(std::uint32_t)));
    CS_CHECK(cudaMemset(away_buffer, 0, n * sizeof(std::uint32_t)));
    CS_CHECK(cudaDeviceSynchronize());
  }
  cudaError_t launch_status = cudaSuccess;
  cudaError_t record_status = cudaSuccess;
  cudaEvent_t home_event = nullptr;
  {
    CurrentDevice scope(home);
    fill_kernel<<<grid_for(away, n), config::block, 0, away_stream>>>(away_buffer, n, 7u);
    launch_status = cudaGetLastError();  // reading the error also clears it
    CS_CHECK(cudaEventCreateWithFlags(&home_event, cudaEventDisableTiming));
    record_status = cudaEventRecord(home_event, away_stream);  // event and stream: two devices
    (void)cudaGetLastError();
  }
  std::printf("  kernel launch into the foreign stream: %s\n", error_text(launch_status).c_str());
  std::printf("  cudaEventRecord(event of device %d, stream of device %d): %s\n", home, away,
              error_text(record_status).c_str());
  cs::check_that("foreign_stream_launch_rejected", launch_status != cudaSuccess,
                 std::string("the launch returned ") + cudaGetErrorName(launch_status));
  cs::check_that("foreign_event_record_rejected", record_status != cudaSuccess,
                 std::string("cudaEventRecord returned ") + cudaGetErrorName(record_status));

  // The same launch with the stream's own device current works; the refused one left no trace.
  std::vector<std::uint32_t> seen(n);
  {
    CurrentDevice scope(away);
    CS_CHECK(
        cudaMemcpy(seen.data(), away_buffer, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
    cs::verify("refused_launch_did_not_run", seen, std::vector<std::uint32_t>(n, 0u));
    fill_kernel<<<grid_for(away, n), config::block, 0, away_stream>>>(away_buffer, n, 7u);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(seen.data(), away_buffer, n * sizeof(std::uint32_t),
                             cudaMemcpyDeviceToHost, away_stream));
    CS_CHECK(cudaStreamSynchronize(away_stream));
    CS_CHECK(cudaStreamDestroy(away_stream));
    CS_CHECK(cudaFree(away_buffer));
  }
  std::vector<std::uint32_t> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = 7u + static_cast<std::uint32_t>(i);
  cs::verify("launch_with_owner_current", seen, want);
  {
    CurrentDevice scope(home);
    CS_CHECK(cudaEventDestroy(home_event));
  }
}

// ---------------------------------------------------------------------------------------------
// split: one job, one slice and one stream per device
// ---------------------------------------------------------------------------------------------

// One device's share of the job: its slice of the host arrays, its own buffers and stream.
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

struct SplitTimes {
  double total_ms = 0;                // host clock: first issue to the last device done
  std::vector<double> per_device_ms;  // each device's H2D + kernel + D2H, by its own events
};

class SplitJob {
 public:
  // Cuts [0, elements) into one contiguous slice per device (the first slices get the remainder).
  SplitJob(const std::vector<int>& devices, std::size_t elements, int steps,
           const std::uint32_t* host_in, std::uint32_t* host_out)
      : steps_(steps), host_in_(host_in), host_out_(host_out) {
    const std::size_t share = elements / devices.size();
    const std::size_t extra = elements % devices.size();
    std::size_t offset = 0;
    for (std::size_t k = 0; k < devices.size(); ++k) {
      Slice slice;
      slice.device = devices[k];
      slice.offset = offset;
      slice.count = share + (k < extra ? 1 : 0);
      offset += slice.count;
      CurrentDevice scope(slice.device);  // everything below belongs to slice.device
      CS_CHECK(cudaStreamCreateWithFlags(&slice.stream, cudaStreamNonBlocking));
      CS_CHECK(cudaMalloc(&slice.in, slice.count * sizeof(std::uint32_t)));
      CS_CHECK(cudaMalloc(&slice.out, slice.count * sizeof(std::uint32_t)));
      for (cudaEvent_t& mark : slice.marks) CS_CHECK(cudaEventCreate(&mark));
      slices_.push_back(slice);
    }
  }
  ~SplitJob() {
    for (Slice& slice : slices_) {
      CurrentDevice scope(slice.device);
      for (cudaEvent_t mark : slice.marks) CS_CHECK(cudaEventDestroy(mark));
      CS_CHECK(cudaFree(slice.in));
      CS_CHECK(cudaFree(slice.out));
      CS_CHECK(cudaStreamDestroy(slice.stream));
    }
  }
  SplitJob(const SplitJob&) = delete;
  SplitJob& operator=(const SplitJob&) = delete;

  // Issues every device's work without waiting, then waits for all: the devices run at once.
  SplitTimes run() {
    const double begin = cs::host_now_ms();
    for (Slice& slice : slices_) {
      CurrentDevice scope(slice.device);  // launches must go to the current device's streams
      const std::size_t bytes = slice.count * sizeof(std::uint32_t);
      slice.host_start_ms = cs::host_now_ms();
      CS_CHECK(cudaEventRecord(slice.marks[0], slice.stream));
      CS_CHECK(cudaMemcpyAsync(slice.in, host_in_ + slice.offset, bytes, cudaMemcpyHostToDevice,
                               slice.stream));
      CS_CHECK(cudaEventRecord(slice.marks[1], slice.stream));
      lcg_steps_kernel<<<grid_for(slice.device, slice.count), config::block, 0, slice.stream>>>(
          slice.in, slice.out, slice.count, config::lcg_a, config::lcg_c, steps_);
      CS_CHECK_LAUNCH();
      CS_CHECK(cudaEventRecord(slice.marks[2], slice.stream));
      CS_CHECK(cudaMemcpyAsync(host_out_ + slice.offset, slice.out, bytes, cudaMemcpyDeviceToHost,
                               slice.stream));
      CS_CHECK(cudaEventRecord(slice.marks[3], slice.stream));
    }
    for (Slice& slice : slices_) CS_CHECK(cudaStreamSynchronize(slice.stream));
    SplitTimes times;
    times.total_ms = cs::host_now_ms() - begin;
    for (Slice& slice : slices_) {
      float ms = 0;
      CS_CHECK(cudaEventElapsedTime(&ms, slice.marks[0], slice.marks[3]));  // same device: allowed
      times.per_device_ms.push_back(ms);
    }
    return times;
  }

  // The last run as a timeline, one row per device. Events of different devices cannot be
  // subtracted (cudaEventElapsedTime refuses), so each row is placed by the host time at which
  // its first event was recorded on an idle stream.
  cs::TimelineData timeline() const {
    cs::TimelineData data;
    const char* kinds[3] = {"H2D", "kernel", "D2H"};
    for (const Slice& slice : slices_) {
      const int row = static_cast<int>(data.rows.size());
      data.rows.push_back("device " + std::to_string(slice.device));
      const double shift = slice.host_start_ms - slices_.front().host_start_ms;
      for (int stage = 0; stage < 3; ++stage) {
        float start = 0;
        float end = 0;
        CS_CHECK(cudaEventElapsedTime(&start, slice.marks[0], slice.marks[stage]));
        CS_CHECK(cudaEventElapsedTime(&end, slice.marks[0], slice.marks[stage + 1]));
        data.spans.push_back({row, kinds[stage], std::to_string(slice.count) + " elements",
                              shift + start, shift + end});
      }
    }
    return data;
  }

  const std::vector<Slice>& slices() const { return slices_; }

 private:
  int steps_;
  const std::uint32_t* host_in_;
  std::uint32_t* host_out_;
  std::vector<Slice> slices_;
};

// Pinned host arrays for the job and its CPU reference. cudaHostAllocPortable makes the pinning
// count for every device (with unified addressing it always does; the flag says so in the code).
struct JobData {
  std::uint32_t* in = nullptr;
  std::uint32_t* out = nullptr;
  std::vector<std::uint32_t> reference;
  explicit JobData(const Context& ctx) : reference(ctx.elements) {
    CS_CHECK(cudaHostAlloc(&in, ctx.elements * sizeof(std::uint32_t), cudaHostAllocPortable));
    CS_CHECK(cudaHostAlloc(&out, ctx.elements * sizeof(std::uint32_t), cudaHostAllocPortable));
    const Affine all_steps = lcg_power(ctx.steps);
    for (std::size_t i = 0; i < ctx.elements; ++i) {
      in[i] = job_input(i);
      reference[i] = all_steps.a * in[i] + all_steps.c;
    }
  }
  ~JobData() {
    CS_CHECK(cudaFreeHost(in));
    CS_CHECK(cudaFreeHost(out));
  }
  JobData(const JobData&) = delete;
  JobData& operator=(const JobData&) = delete;
  void clear_output(std::size_t n) { std::fill(out, out + n, 0u); }
};

double median_of(std::vector<double> values) {
  return cs::median(std::move(values));
}

// Runs the job warm-up + repeats times; returns the median total and per-device medians.
SplitTimes measure(SplitJob& job) {
  for (int i = 0; i < config::warmup; ++i) job.run();
  std::vector<double> totals;
  std::vector<std::vector<double>> per_device(job.slices().size());
  for (int r = 0; r < config::repeats; ++r) {
    const SplitTimes t = job.run();
    totals.push_back(t.total_ms);
    for (std::size_t k = 0; k < per_device.size(); ++k) per_device[k].push_back(t.per_device_ms[k]);
  }
  SplitTimes result;
  result.total_ms = median_of(totals);
  for (auto& samples : per_device) result.per_device_ms.push_back(median_of(samples));
  return result;
}

void part_split(const Context& ctx, JobData& job_data) {
  std::printf(
      "\n== split: %zu elements (x -> %u x + %u, %d steps each) over %zu device%s, one "
      "stream each ==\n",
      ctx.elements, config::lcg_a, config::lcg_c, ctx.steps, ctx.devices.size(),
      ctx.devices.size() == 1 ? "" : "s");
  job_data.clear_output(ctx.elements);
  SplitJob job(ctx.devices, ctx.elements, ctx.steps, job_data.in, job_data.out);
  const SplitTimes times = measure(job);
  std::printf("  %-8s %12s %18s\n", "device", "elements", "H2D+kernel+D2H");
  for (std::size_t k = 0; k < job.slices().size(); ++k) {
    std::printf("  %-8d %12zu %15.2f ms\n", job.slices()[k].device, job.slices()[k].count,
                times.per_device_ms[k]);
  }
  double device_sum = 0;
  for (double ms : times.per_device_ms) device_sum += ms;
  std::printf("  total on the host clock: %.2f ms (the devices' times add up to %.2f ms)\n",
              times.total_ms, device_sum);
  cs::verify("split_result", job_data.out, job_data.reference.data(), ctx.elements);
  cs::publish_timeline(job.timeline(), *ctx.common,
                       "Split job, one row per device (H = H2D, K = kernel, D = D2H):");
}

// ---------------------------------------------------------------------------------------------
// peer: direct access and copies between devices
// ---------------------------------------------------------------------------------------------

// Lets `device` use `peer`'s memory directly. Enabling twice is harmless but reported as an error.
void enable_peer_access(int device, int peer) {
  CurrentDevice scope(device);
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
    return;
  }
  CS_CHECK(status);
}

std::vector<std::uint32_t> pattern(std::size_t n, std::uint32_t base) {
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = base + static_cast<std::uint32_t>(i);
  return values;
}

std::vector<std::uint32_t> download(int device, const std::uint32_t* buffer, std::size_t n) {
  CurrentDevice scope(device);
  std::vector<std::uint32_t> values(n);
  CS_CHECK(cudaMemcpy(values.data(), buffer, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  return values;
}

// Buffers and a stream on one device of a pair.
struct PeerEnd {
  int device = 0;
  cudaStream_t stream = nullptr;
  std::uint32_t* source = nullptr;       // what this device sends
  std::uint32_t* destination = nullptr;  // what it receives
  PeerEnd(int d, std::size_t n, std::uint32_t base) : device(d) {
    CurrentDevice scope(d);
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CS_CHECK(cudaMalloc(&source, n * sizeof(std::uint32_t)));
    CS_CHECK(cudaMalloc(&destination, n * sizeof(std::uint32_t)));
    fill_kernel<<<grid_for(d, n), config::block, 0, stream>>>(source, n, base);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemsetAsync(destination, 0, n * sizeof(std::uint32_t), stream));
    CS_CHECK(cudaStreamSynchronize(stream));
  }
  ~PeerEnd() {
    CurrentDevice scope(device);
    CS_CHECK(cudaFree(source));
    CS_CHECK(cudaFree(destination));
    CS_CHECK(cudaStreamDestroy(stream));
  }
  PeerEnd(const PeerEnd&) = delete;
  PeerEnd& operator=(const PeerEnd&) = delete;
};

// Copies `from`'s source into `to`'s destination on `from`'s stream; returns GB/s (median).
double peer_copy_bandwidth(PeerEnd& from, PeerEnd& to, std::size_t n, bool timed) {
  CurrentDevice scope(from.device);  // the timing events are created on, and recorded in, `from`
  auto copy = [&] {
    CS_CHECK(cudaMemcpyPeerAsync(to.destination, to.device, from.source, from.device,
                                 n * sizeof(std::uint32_t), from.stream));
  };
  if (!timed) {
    copy();
    CS_CHECK(cudaStreamSynchronize(from.stream));
    return 0;
  }
  const cs::Stats stats = cs::time_on_stream_ms(from.stream, config::warmup, config::repeats, copy);
  return static_cast<double>(n * sizeof(std::uint32_t)) / (stats.median * 1e6);
}

void part_peer(const Context& ctx) {
  if (!have_devices(ctx, 2, "peer")) return;
  const std::size_t n = config::peer_bytes / sizeof(std::uint32_t);
  const bool timed = !ctx.common->no_timing;
  std::printf("\n== peer: every pair of devices, %s each way ==\n",
              cs::format_bytes(static_cast<double>(config::peer_bytes)).c_str());
  for (std::size_t i = 0; i < ctx.devices.size(); ++i) {
    for (std::size_t j = i + 1; j < ctx.devices.size(); ++j) {
      const int a = ctx.devices[i];
      const int b = ctx.devices[j];
      int a_reads_b = 0;
      int b_reads_a = 0;
      CS_CHECK(cudaDeviceCanAccessPeer(&a_reads_b, a, b));
      CS_CHECK(cudaDeviceCanAccessPeer(&b_reads_a, b, a));
      if (a_reads_b) enable_peer_access(a, b);
      if (b_reads_a) enable_peer_access(b, a);
      PeerEnd end_a(a, n, 1000u);
      PeerEnd end_b(b, n, 5000000u);
      // cudaMemcpyPeerAsync works with or without peer access; without it the data is staged
      // through host memory and the bandwidth shows it.
      const double a_to_b = peer_copy_bandwidth(end_a, end_b, n, timed);
      const double b_to_a = peer_copy_bandwidth(end_b, end_a, n, timed);
      std::printf("  devices %d and %d: %d can access %d's memory: %s; %d can access %d's: %s\n", a,
                  b, a, b, a_reads_b ? "yes" : "no", b, a, b_reads_a ? "yes" : "no");
      auto show = [&](int from, int to, double gbps) {
        if (timed) {
          std::printf("    cudaMemcpyPeerAsync %d -> %d: %.1f GB/s\n", from, to, gbps);
        } else {
          std::printf("    cudaMemcpyPeerAsync %d -> %d: (not timed)\n", from, to);
        }
      };
      show(a, b, a_to_b);
      show(b, a, b_to_a);
      cs::verify("peer_copy_" + std::to_string(a) + "_to_" + std::to_string(b),
                 download(b, end_b.destination, n), pattern(n, 1000u));
      cs::verify("peer_copy_" + std::to_string(b) + "_to_" + std::to_string(a),
                 download(a, end_a.destination, n), pattern(n, 5000000u));
      // With peer access enabled, a kernel on b dereferences a's memory like its own.
      if (b_reads_a) {
        CurrentDevice scope(b);
        copy_kernel<<<grid_for(b, n), config::block, 0, end_b.stream>>>(end_a.source,
                                                                        end_b.destination, n);
        CS_CHECK_LAUNCH();
        CS_CHECK(cudaStreamSynchronize(end_b.stream));
        cs::verify("kernel_on_" + std::to_string(b) + "_reads_" + std::to_string(a),
                   download(b, end_b.destination, n), pattern(n, 1000u));
      } else {
        std::printf("    device %d cannot map device %d's memory: no direct-access kernel\n", b, a);
      }
    }
  }
  if (!timed) cs::check_skipped("peer_bandwidth", "--no-timing");
}

// ---------------------------------------------------------------------------------------------
// cross-event: a stream on one device waits for an event of another
// ---------------------------------------------------------------------------------------------

void part_cross_event(const Context& ctx) {
  if (!have_devices(ctx, 2, "cross-event")) return;
  const int producer = ctx.devices[0];
  const int consumer = ctx.devices[1];
  const std::size_t n = 1 << 22;
  const std::size_t bytes = n * sizeof(std::uint32_t);
  std::printf("\n== cross-event: device %d's stream waits for an event recorded on device %d ==\n",
              consumer, producer);
  cudaStream_t producer_stream = nullptr;
  cudaStream_t consumer_stream = nullptr;
  cudaEvent_t produced = nullptr;
  std::uint32_t* produced_data = nullptr;
  std::uint32_t* received = nullptr;
  std::uint32_t* host = nullptr;
  CS_CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocPortable));
  {
    CurrentDevice scope(producer);
    CS_CHECK(cudaStreamCreateWithFlags(&producer_stream, cudaStreamNonBlocking));
    CS_CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));  // producer's event
    CS_CHECK(cudaMalloc(&produced_data, bytes));
    CS_CHECK(cudaMemset(produced_data, 0, bytes));
    CS_CHECK(cudaDeviceSynchronize());
  }
  {
    CurrentDevice scope(consumer);
    CS_CHECK(cudaStreamCreateWithFlags(&consumer_stream, cudaStreamNonBlocking));
    CS_CHECK(cudaMalloc(&received, bytes));
    CS_CHECK(cudaMemset(received, 0, bytes));
    CS_CHECK(cudaDeviceSynchronize());
  }

  const double begin = cs::host_now_ms();
  {
    CurrentDevice scope(producer);
    // A busy producer: the data appears only after the delay, so a consumer that did not wait
    // would copy the zeros that were there before.
    spin_kernel<<<1, 1, 0, producer_stream>>>(
        static_cast<unsigned long long>(config::cross_event_delay_ms * 1e6));
    CS_CHECK_LAUNCH();
    fill_kernel<<<grid_for(producer, n), config::block, 0, producer_stream>>>(produced_data, n,
                                                                              42u);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(produced, producer_stream));
  }
  {
    CurrentDevice scope(consumer);
    CS_CHECK(cudaStreamWaitEvent(consumer_stream, produced, 0));  // the event is device producer's
    CS_CHECK(
        cudaMemcpyPeerAsync(received, consumer, produced_data, producer, bytes, consumer_stream));
    CS_CHECK(cudaMemcpyAsync(host, received, bytes, cudaMemcpyDeviceToHost, consumer_stream));
    CS_CHECK(cudaStreamSynchronize(consumer_stream));
  }
  const double waited_ms = cs::host_now_ms() - begin;
  std::printf(
      "  device %d's stream finished %.1f ms after the issue; device %d worked %.0f ms "
      "before producing\n",
      consumer, waited_ms, producer, config::cross_event_delay_ms);
  cs::verify("cross_device_wait", host, pattern(n, 42u).data(), n);
  {
    CurrentDevice scope(producer);
    CS_CHECK(cudaStreamSynchronize(producer_stream));
    CS_CHECK(cudaEventDestroy(produced));
    CS_CHECK(cudaStreamDestroy(producer_stream));
    CS_CHECK(cudaFree(produced_data));
  }
  {
    CurrentDevice scope(consumer);
    CS_CHECK(cudaStreamDestroy(consumer_stream));
    CS_CHECK(cudaFree(received));
  }
  CS_CHECK(cudaFreeHost(host));
}

// ---------------------------------------------------------------------------------------------
// scaling: the split job on N devices against the whole job on one
// ---------------------------------------------------------------------------------------------

void part_scaling(const Context& ctx, JobData& job_data) {
  if (!have_devices(ctx, 2, "scaling")) return;
  const std::size_t n_devices = ctx.devices.size();
  std::printf("\n== scaling: the job on device %d alone, then split over %zu devices ==\n",
              ctx.devices.front(), n_devices);
  job_data.clear_output(ctx.elements);
  double one_ms = 0;
  {
    SplitJob alone({ctx.devices.front()}, ctx.elements, ctx.steps, job_data.in, job_data.out);
    one_ms = measure(alone).total_ms;
  }
  cs::verify("scaling_one_device_result", job_data.out, job_data.reference.data(), ctx.elements);
  job_data.clear_output(ctx.elements);
  double all_ms = 0;
  {
    SplitJob split(ctx.devices, ctx.elements, ctx.steps, job_data.in, job_data.out);
    all_ms = measure(split).total_ms;
  }
  cs::verify("scaling_split_result", job_data.out, job_data.reference.data(), ctx.elements);
  std::printf("  one device: %.2f ms, %zu devices: %.2f ms\n", one_ms, n_devices, all_ms);
  if (ctx.common->no_timing) {
    cs::check_skipped("scaling_speedup", "--no-timing");
    return;
  }
  const double bar = bars::scaling_efficiency * static_cast<double>(n_devices);
  char why[64];
  std::snprintf(why, sizeof why, "%.1f x %zu devices", bars::scaling_efficiency, n_devices);
  cs::check("scaling_speedup", one_ms / all_ms, cs::Compare::at_least, bar, "x", why);
}

}  // namespace

int main(int argc, char** argv) {
  std::string part = "all";
  std::vector<int> devices;  // empty: every device
  std::size_t elements = 8u << 20;
  int steps = 16384;
  bool no_invalid_calls = false;
  cs::CommonOptions common;
  cs::Options options("06_multi_device",
                      "Devices, the current device, per-device streams, a job split across "
                      "devices, peer copies and cross-device events.");
  options.add_choice("part", &part,
                     {"all", "enumerate", "ownership", "foreign-stream", "split", "peer",
                      "cross-event", "scaling"},
                     "which part of the lesson to run");
  options.add_int_list("devices", &devices, 0, config::max_device_index,
                       "the devices to split the job over, e.g. 0,1 (each must exist)");
  options.add_size("elements", &elements, 1024, 1ull << 28, "elements of the split job");
  options.add_int("steps", &steps, 1, 1 << 20, "LCG steps per element (the job's arithmetic)");
  options.add_flag("no-invalid-calls", &no_invalid_calls,
                   "skip the deliberately invalid calls (they are errors to compute-sanitizer)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  Context ctx;
  ctx.elements = elements;
  ctx.steps = steps;
  ctx.common = &common;
  ctx.running_alone = part != "all";
  ctx.no_invalid_calls = no_invalid_calls;
  cs::select_device(common.device);
  ctx.machine_devices = cs::device_count_or_skip();
  // A part that needs two devices, run alone, skips on a machine with fewer, whatever --devices
  // says; on a machine with enough devices, --devices is then checked like everywhere else.
  const std::vector<std::string> two_device_parts = {"foreign-stream", "peer", "cross-event",
                                                     "scaling"};
  const bool needs_two =
      std::find(two_device_parts.begin(), two_device_parts.end(), part) != two_device_parts.end();
  if (needs_two && ctx.machine_devices < 2) have_devices(ctx, 2, part);
  // A device index can only be checked against the machine: that needs CUDA, so it comes here.
  for (int d : devices) {
    if (d >= ctx.machine_devices) {
      cs::usage_error("--devices " + join_ints(devices) + ": device " + std::to_string(d) +
                      " does not exist; this machine has " + std::to_string(ctx.machine_devices) +
                      " CUDA device" + (ctx.machine_devices == 1 ? "" : "s") + " (0.." +
                      std::to_string(ctx.machine_devices - 1) + ")");
    }
  }
  if (devices.empty()) {
    for (int d = 0; d < ctx.machine_devices; ++d) devices.push_back(d);
  }
  ctx.devices = devices;
  if (needs_two) have_devices(ctx, 2, part);  // --devices may name fewer than two
  const bool needs_job = part == "all" || part == "split" || part == "scaling";
  if (needs_job) {
    // Scaling runs the whole job on the first device, so the whole job must fit there.
    CurrentDevice scope(ctx.devices.front());
    cs::require_fits_on_device(2 * elements * sizeof(std::uint32_t),
                               "--elements " + std::to_string(elements));
  }
  std::printf("Devices used: %s of %d\n", join_ints(ctx.devices).c_str(), ctx.machine_devices);

  std::unique_ptr<JobData> job_data;
  if (needs_job) job_data = std::make_unique<JobData>(ctx);
  auto wants = [&](const char* name) { return part == "all" || part == name; };
  if (wants("enumerate")) part_enumerate(ctx);
  if (wants("ownership")) part_ownership(ctx);
  if (wants("foreign-stream")) part_foreign_stream(ctx);
  if (wants("split")) part_split(ctx, *job_data);
  if (wants("peer")) part_peer(ctx);
  if (wants("cross-event")) part_cross_event(ctx);
  if (wants("scaling")) part_scaling(ctx, *job_data);
  job_data.reset();

  std::printf(
      "\nWhat it shows: cudaSetDevice picks the device that new streams, events, memory and "
      "launches belong to, like torch.cuda.device; work issued to several devices from one "
      "thread runs on all of them at once, and events order work across devices.\n");
  return cs::finish();
}
