// Chapter 06: one program, several GPUs (the lesson: README.md beside this file)
// Each host thread has one current device, cudaSetDevice(i) (`with torch.cuda.device(i):`): every
// stream, event and allocation belongs to the device current at its creation, and a kernel goes
// only into a stream of the current device. Then one job over every device, copies between
// devices, a wait for another device's event. multi_device_lab.cuh holds the machinery (skip it).
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/06_multi_device/multi_device.cu common/src/*.cpp -o 06_multi_device
// clang-format on
//   build/bin/06_multi_device --part split --devices 0   # one part, on the devices listed; --help

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <vector>
#include "cuda_streams/device_clock.cuh"
#include "multi_device_lab.cuh"  // cuda_streams.hpp, the flags and the machinery

using lab::Context, lab::CurrentDevice, lab::kBlock, lab::between, lab::kRepeats, lab::kWarmup;

// Holds its stream for a fixed time, whatever the clocks: stands for "a producer that is busy".
__global__ void spin_kernel(unsigned long long duration_ns) {
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < duration_ns) continue;
}

// The job: `steps` LCG steps per element; the kernel, not the copies, sets the job's time.
// Grids come from grid_for (at most 8 blocks per SM): 32-bit index arithmetic does not overflow.
__global__ void lcg_steps_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n,
                                 std::uint32_t a, std::uint32_t c, int steps) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    std::uint32_t x = in[i];
    for (int s = 0; s < steps; ++s) x = a * x + c;
    out[i] = x;
  }
}

__global__ void fill_kernel(std::uint32_t* out, std::size_t n, std::uint32_t base) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = base + static_cast<std::uint32_t>(i);
}

__global__ void add_kernel(const float* a, const float* b, float* sum, std::size_t n) {
  const std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) sum[i] = a[i] + b[i];
}

// Plain loads and stores; given a pointer to a peer's memory it reads across the link.
__global__ void copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = in[i];
}

// Part 1: which devices exist, and what asking for one that does not exist does
void part_enumerate(const Context& ctx) {
  int count = 0, before = -1, after = -1;
  CS_CHECK(cudaGetDeviceCount(&count));  // torch.cuda.device_count()
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    CS_CHECK(cudaGetDeviceProperties(&prop, d));  // torch.cuda.get_device_properties(d)
    std::printf("device %d: %s, CC %d.%d, %d SMs, %d copy engines\n", d, prop.name, prop.major,
                prop.minor, prop.multiProcessorCount, prop.asyncEngineCount);
  }
  CS_CHECK(cudaGetDevice(&before));  // torch.cuda.current_device()
  std::printf("cudaGetDeviceCount: %d, current device: %d (torch.device('cuda'))\n", count, before);
  if (ctx.no_invalid_calls)
    return cs::check_skipped("nonexistent_device_rejected", "--no-invalid-calls");
  // core: enumerate (6 lines): cudaSetDevice(count) fails, as torch.device('cuda:N') does
  const cudaError_t status = cudaSetDevice(count);
  (void)cudaGetLastError();  // the expected error must not linger for later error checks
  CS_CHECK(cudaGetDevice(&after));
  cs::check_that("nonexistent_device_rejected", status == cudaErrorInvalidDevice && after == before,
                 cs::format("cudaSetDevice(%d) returned %s, device %d is still current", count,
                            cudaGetErrorName(status), after));
}

// Part 2: streams and memory belong to the device current at their creation
// `torch.tensor([1., 2.]).cuda()`: two floats in memory of the current device.
float* tensor_1_2() {
  const float values[2] = {1.f, 2.f};
  float* t = nullptr;
  CS_CHECK(cudaMalloc(&t, sizeof values));
  CS_CHECK(cudaMemcpy(t, values, sizeof values, cudaMemcpyHostToDevice));
  return t;
}

// `a + b` for two such tensors, computed on (and living on) the current device.
float* add(const float* a, const float* b) {
  float* sum = nullptr;
  CS_CHECK(cudaMalloc(&sum, 2 * sizeof(float)));
  add_kernel<<<1, kBlock>>>(a, b, sum, 2);
  CS_CHECK_LAUNCH();
  return sum;
}

void part_ownership(const Context& ctx) {
  std::vector<int> stream_owners, memory_owners;  // memory: -1 where it is not device memory
  for (int d : ctx.devices) {
    cudaStream_t stream = nullptr;  // core: ownership (12 lines)
    void* buffer = nullptr;
    int home = -1, stream_owner = -1;
    CS_CHECK(cudaGetDevice(&home));
    CS_CHECK(cudaSetDevice(d));  // with torch.cuda.device(d):
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CS_CHECK(cudaMalloc(&buffer, 1 << 20));
    CS_CHECK(cudaSetDevice(home));  // the with block ends (lab::CurrentDevice does these three)
    // Asked with the home device current, both still name the device current at their creation.
    CS_CHECK(cudaStreamGetDevice(stream, &stream_owner));  // stream.device
    cudaPointerAttributes place{};
    CS_CHECK(cudaPointerGetAttributes(&place, buffer));  // tensor.device
    stream_owners.push_back(stream_owner);
    memory_owners.push_back(place.type == cudaMemoryTypeDevice ? place.device : -1);
    lab::release(d, {buffer}, stream);
  }
  const std::string on = " on devices " + lab::join(ctx.devices);
  cs::check_that("stream_owner", stream_owners == ctx.devices,
                 "streams created" + on + " report devices " + lab::join(stream_owners));
  cs::check_that("memory_owner", memory_owners == ctx.devices,
                 "cudaMalloc" + on + " gives device memory of devices " + lab::join(memory_owners));
  // The seed line by line; cuda1 is another selected device (cuda0 itself on a one-GPU machine).
  int cuda0 = -1, after = -1;
  CS_CHECK(cudaGetDevice(&cuda0));
  int cuda1 = cuda0;
  for (int d : ctx.devices) cuda1 = cuda1 == cuda0 ? d : cuda1;
  float* x = tensor_1_2();  // x = torch.tensor([1., 2.], device=cuda0): cuda0 is current
  float* y = tensor_1_2();  // y = torch.tensor([1., 2.]).cuda()
  float *a = nullptr, *b = nullptr, *c = nullptr;
  {
    CurrentDevice scope(cuda1);  // with torch.cuda.device(1):
    a = tensor_1_2();            //   a = torch.tensor([1., 2.], device=cuda)
    b = tensor_1_2();            //   b = torch.tensor([1., 2.]).cuda()
    c = add(a, b);               //   c = a + b
  }
  CS_CHECK(cudaGetDevice(&after));
  float* z = add(x, y);  // z = x + y
  cudaPointerAttributes c_place{}, z_place{};
  CS_CHECK(cudaPointerGetAttributes(&c_place, c));  // c.device
  CS_CHECK(cudaPointerGetAttributes(&z_place, z));
  cs::verify("seed_c_equals_a_plus_b", lab::download(cuda1, c, 2), {2.f, 4.f});
  cs::verify("seed_z_equals_x_plus_y", lab::download(cuda0, z, 2), {2.f, 4.f});
  cs::check_that("seed_c_on_cuda1", c_place.device == cuda1,
                 cs::format("c was computed on device %d, the scope's device", c_place.device));
  if (cuda1 != cuda0)  // with one device there is nothing to restore
    cs::check_that("scope_restores_device", after == cuda0 && z_place.device == cuda0,
                   cs::format("device %d is current again after the scope, z is on it", after));
  lab::release(cuda0, {x, y, z});
  lab::release(cuda1, {a, b, c});
}

// Part 3: a launch must go into a stream of the current device
void part_foreign_stream(const Context& ctx) {
  if (!ctx.skip_two.empty()) return cs::check_skipped("foreign-stream", ctx.skip_two);
  if (ctx.no_invalid_calls) return cs::check_skipped("foreign-stream", "--no-invalid-calls");
  const int home = ctx.devices[0], away = ctx.devices[1];
  const std::size_t n = 1 << 20, bytes = n * sizeof(std::uint32_t);
  cudaStream_t away_stream = nullptr;
  std::uint32_t* away_buffer = nullptr;
  {
    CurrentDevice scope(away);
    CS_CHECK(cudaStreamCreateWithFlags(&away_stream, cudaStreamNonBlocking));
    CS_CHECK(cudaMalloc(&away_buffer, bytes));
    CS_CHECK(cudaMemset(away_buffer, 0, bytes));
  }
  cudaEvent_t home_event = nullptr;  // core: foreign-stream (11 lines)
  cudaError_t launch_status = cudaSuccess, record_status = cudaSuccess;
  {
    CurrentDevice scope(home);
    fill_kernel<<<lab::grid_for(away, n), kBlock, 0, away_stream>>>(away_buffer, n, 7u);
    launch_status = cudaGetLastError();  // reading the error also clears it
    CS_CHECK(cudaEventCreateWithFlags(&home_event, cudaEventDisableTiming));
    record_status = cudaEventRecord(home_event, away_stream);  // event and stream: two devices
    (void)cudaGetLastError();
    CS_CHECK(cudaEventDestroy(home_event));
  }
  cs::check_that("foreign_stream_launch_rejected", launch_status != cudaSuccess,
                 "the launch returned " + std::string(cudaGetErrorName(launch_status)));
  cs::check_that("foreign_event_record_rejected", record_status != cudaSuccess,
                 "cudaEventRecord returned " + std::string(cudaGetErrorName(record_status)));
  // The refused launch left no trace; the same launch with the stream's own device current works.
  cs::verify("refused_launch_did_not_run", lab::download(away, away_buffer, n),
             std::vector<std::uint32_t>(n, 0u));
  {
    CurrentDevice scope(away);
    fill_kernel<<<lab::grid_for(away, n), kBlock, 0, away_stream>>>(away_buffer, n, 7u);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaStreamSynchronize(away_stream));
  }
  cs::verify("launch_with_owner_current", lab::download(away, away_buffer, n), lab::pattern(n, 7u));
  lab::release(away, {away_buffer}, away_stream);
}

// Part 4: one job, one slice and one stream per device, all issued from one host thread
// A slice per device, each with its stream, buffers and events made there; then the runs, each
// issued to every device before it waits for any: kWarmup warm-up runs (r < 0), then the timed.
lab::Split time_split(const std::vector<int>& devices, lab::JobData& job, int steps) {
  std::vector<lab::Slice> slices;  // core: scaling (11 lines)
  for (std::size_t k = 0, offset = 0; k < devices.size(); ++k) {
    lab::Slice s{devices[k], offset, job.n / devices.size() + (k < job.n % devices.size() ? 1 : 0)};
    offset += s.count;
    CurrentDevice scope(s.device);
    CS_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    CS_CHECK(cudaMalloc(&s.in, s.count * sizeof(std::uint32_t)));
    CS_CHECK(cudaMalloc(&s.out, s.count * sizeof(std::uint32_t)));
    for (cudaEvent_t& mark : s.marks) CS_CHECK(cudaEventCreate(&mark));
    slices.push_back(s);
  }
  std::fill(job.out, job.out + job.n, 0u);
  std::vector<double> totals, shares;  // host clock; the kernels' share of the devices' times
  for (int r = -kWarmup; r < kRepeats; ++r) {
    const double begin = cs::host_now_ms();
    for (lab::Slice& s : slices) {    // core: split (15 lines)
      CurrentDevice scope(s.device);  // a launch must go to a stream of the current device
      const std::size_t bytes = s.count * sizeof(std::uint32_t);
      s.host_start_ms = cs::host_now_ms();
      CS_CHECK(cudaEventRecord(s.marks[0], s.stream));
      CS_CHECK(cudaMemcpyAsync(s.in, job.in + s.offset, bytes, cudaMemcpyHostToDevice, s.stream));
      CS_CHECK(cudaEventRecord(s.marks[1], s.stream));
      lcg_steps_kernel<<<lab::grid_for(s.device, s.count), kBlock, 0, s.stream>>>(
          s.in, s.out, s.count, lab::kLcgA, lab::kLcgC, steps);
      CS_CHECK_LAUNCH();
      CS_CHECK(cudaEventRecord(s.marks[2], s.stream));
      CS_CHECK(cudaMemcpyAsync(job.out + s.offset, s.out, bytes, cudaMemcpyDeviceToHost, s.stream));
      CS_CHECK(cudaEventRecord(s.marks[3], s.stream));
    }
    for (lab::Slice& s : slices) CS_CHECK(cudaStreamSynchronize(s.stream));
    if (r < 0) continue;  // a warm-up run
    totals.push_back(cs::host_now_ms() - begin);
    double kernels = 0, all = 0;
    for (lab::Slice& s : slices)  // the whole slice, then its kernel
      s.ms.push_back(between(s, 0, 3)), kernels += between(s, 1, 2), all += s.ms.back();
    shares.push_back(cs::ratio(kernels, all));
  }
  return {slices, cs::median(totals), cs::median(shares)};
}

void destroy_slices(std::vector<lab::Slice>& slices) {
  for (lab::Slice& s : slices) {
    CurrentDevice scope(s.device);
    for (cudaEvent_t mark : s.marks) CS_CHECK(cudaEventDestroy(mark));
    CS_CHECK(cudaFree(s.in));
    CS_CHECK(cudaFree(s.out));
    CS_CHECK(cudaStreamDestroy(s.stream));
  }
}

void part_split(const Context& ctx, lab::JobData& job) {
  lab::Split split = time_split(ctx.devices, job, ctx.steps);
  std::printf("%zu elements (%d steps each), one stream per device: %.2f ms on the host clock\n",
              ctx.elements, ctx.steps, split.total_ms);
  // Each device's median time by its own events, and its row of the last run's timeline. Events
  // of two devices cannot be subtracted: a row is placed by the host time of its first event.
  cs::TimelineData timeline;
  const char* kinds[3] = {"H2D", "kernel", "D2H"};
  for (const lab::Slice& s : split.slices) {
    std::printf("  device %d: %zu elements, %.2f ms\n", s.device, s.count, cs::median(s.ms));
    timeline.rows.push_back("device " + std::to_string(s.device));
    const double shift = s.host_start_ms - split.slices.front().host_start_ms;
    for (int stage = 0; stage < 3; ++stage)
      timeline.spans.push_back({static_cast<int>(timeline.rows.size()) - 1, kinds[stage], "",
                                shift + between(s, 0, stage), shift + between(s, 0, stage + 1)});
  }
  cs::verify("split_result", job.out, job.reference.data(), ctx.elements);
  cs::publish_timeline(timeline, ctx.common, "Split job, by device:");
  destroy_slices(split.slices);
}

// Part 5: direct access and copies between devices
// Both directions between devices dev[0] and dev[1], 64 MiB each, checked; returns the slower
// direction's GB/s.
double peer_pair(std::array<int, 2> dev, bool timed) {
  const std::uint32_t base[2] = {1000u, 5000000u};  // what each device sends: base, base + 1, ...
  const std::size_t n = (64ull << 20) / sizeof(std::uint32_t), bytes = n * sizeof(std::uint32_t);
  int can[2] = {0, 0};  // can[k]: dev[k] can map the other device's memory
  cudaStream_t stream[2] = {};
  std::uint32_t *src[2] = {}, *dst[2] = {};
  double gbps[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {  // core: peer (22 lines)
    CS_CHECK(cudaDeviceCanAccessPeer(&can[k], dev[k], dev[1 - k]));
    CurrentDevice scope(dev[k]);
    if (can[k]) {  // map the other device's memory; enabling twice is harmless but an error
      const cudaError_t status = cudaDeviceEnablePeerAccess(dev[1 - k], 0);
      if (status != cudaErrorPeerAccessAlreadyEnabled) CS_CHECK(status);
      (void)cudaGetLastError();
    }
    CS_CHECK(cudaStreamCreateWithFlags(&stream[k], cudaStreamNonBlocking));
    CS_CHECK(cudaMalloc(&src[k], bytes));
    CS_CHECK(cudaMalloc(&dst[k], bytes));
    fill_kernel<<<lab::grid_for(dev[k], n), kBlock, 0, stream[k]>>>(src[k], n, base[k]);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemsetAsync(dst[k], 0, bytes, stream[k]));
    CS_CHECK(cudaStreamSynchronize(stream[k]));
  }
  // cudaMemcpyPeerAsync works without peer access too: staged through host memory, slower.
  for (int k = 0; k < 2; ++k) {   // dev[k] sends its source into the other's destination
    CurrentDevice scope(dev[k]);  // the timing events are created on, and recorded in, dev[k]
    auto copy = [&] {
      CS_CHECK(cudaMemcpyPeerAsync(dst[1 - k], dev[1 - k], src[k], dev[k], bytes, stream[k]));
    };
    if (!timed) copy();
    const double ms = timed ? cs::time_on_stream_ms(stream[k], kWarmup, kRepeats, copy).median : 0;
    gbps[k] = cs::ratio(bytes, ms * 1e6);
    CS_CHECK(cudaStreamSynchronize(stream[k]));
  }
  for (int k = 0; k < 2; ++k) {
    std::printf("  cudaMemcpyPeerAsync %d -> %d: %s (peer access: %s)\n", dev[k], dev[1 - k],
                timed ? cs::format("%.1f GB/s", gbps[k]).c_str() : "(not timed)",
                can[k] ? "yes" : "no");
    cs::verify(cs::format("peer_copy_%d_to_%d", dev[k], dev[1 - k]),
               lab::download(dev[1 - k], dst[1 - k], n), lab::pattern(n, base[k]));
  }
  if (can[1]) {  // with peer access, a kernel on dev[1] dereferences dev[0]'s memory like its own
    CurrentDevice scope(dev[1]);
    CS_CHECK(cudaMemsetAsync(dst[1], 0, bytes, stream[1]));
    copy_kernel<<<lab::grid_for(dev[1], n), kBlock, 0, stream[1]>>>(src[0], dst[1], n);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaStreamSynchronize(stream[1]));
    cs::verify(cs::format("kernel_on_%d_reads_%d", dev[1], dev[0]),
               lab::download(dev[1], dst[1], n), lab::pattern(n, base[0]));
  }
  for (int k = 0; k < 2; ++k) lab::release(dev[k], {src[k], dst[k]}, stream[k]);
  return std::min(gbps[0], gbps[1]);
}

void part_peer(const Context& ctx) {
  if (!ctx.skip_two.empty()) return cs::check_skipped("peer", ctx.skip_two);
  double slowest = 1e30;
  for (auto a = ctx.devices.begin(); a != ctx.devices.end(); ++a)  // every pair, in the given order
    for (auto b = a + 1; b != ctx.devices.end(); ++b)
      slowest = std::min(slowest, peer_pair({*a, *b}, !ctx.common.no_timing));
  // Even staged through host memory, a 64 MiB copy runs at several GB/s over PCIe.
  constexpr double kPeerGbpsMin = 1.0;
  cs::check_or_skip(ctx.common.timing_skip_reason(), "peer_bandwidth", slowest,
                    cs::Compare::at_least, kPeerGbpsMin, " GB/s", "the slowest direction");
}

// Part 6: a stream on one device waits for an event recorded on another
void part_cross_event(const Context& ctx) {
  if (!ctx.skip_two.empty()) return cs::check_skipped("cross-event", ctx.skip_two);
  const int producer = ctx.devices[0], consumer = ctx.devices[1];
  const std::size_t n = 1 << 22, bytes = n * sizeof(std::uint32_t);
  constexpr double kDelayMs = 20.0;  // how long the producing device works first
  cudaStream_t producer_stream = nullptr, consumer_stream = nullptr;
  cudaEvent_t produced = nullptr;
  std::uint32_t *sent = nullptr, *received = nullptr;
  for (int d : {producer, consumer}) {
    CurrentDevice scope(d);
    cudaStream_t& stream = d == producer ? producer_stream : consumer_stream;
    std::uint32_t*& data = d == producer ? sent : received;
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CS_CHECK(cudaMalloc(&data, bytes));
    CS_CHECK(cudaMemset(data, 0, bytes));
    CS_CHECK(cudaDeviceSynchronize());
  }
  {  // core: cross-event (15 lines)
    CurrentDevice scope(producer);
    CS_CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));  // producer's event
    // A busy producer: a consumer that did not wait would copy the zeros that were there before.
    spin_kernel<<<1, 1, 0, producer_stream>>>(static_cast<unsigned long long>(kDelayMs * 1e6));
    fill_kernel<<<lab::grid_for(producer, n), kBlock, 0, producer_stream>>>(sent, n, 42u);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(produced, producer_stream));
  }
  {
    CurrentDevice scope(consumer);
    CS_CHECK(cudaStreamWaitEvent(consumer_stream, produced, 0));  // the event is the producer's
    CS_CHECK(cudaMemcpyPeerAsync(received, consumer, sent, producer, bytes, consumer_stream));
    CS_CHECK(cudaStreamSynchronize(consumer_stream));
  }
  cs::verify("cross_device_wait", lab::download(consumer, received, n), lab::pattern(n, 42u));
  CS_CHECK(cudaStreamSynchronize(producer_stream));
  lab::release(producer, {sent}, producer_stream);
  lab::release(consumer, {received}, consumer_stream);
  CurrentDevice scope(producer);
  CS_CHECK(cudaEventDestroy(produced));
}

// Part 7: the split job on N devices against the whole job on one
void part_scaling(const Context& ctx, lab::JobData& job) {
  if (!ctx.skip_two.empty()) return cs::check_skipped("scaling", ctx.skip_two);
  const std::size_t n_devices = ctx.devices.size();
  lab::Split one = time_split({ctx.devices.front()}, job, ctx.steps);
  destroy_slices(one.slices);
  cs::verify("scaling_one_device_result", job.out, job.reference.data(), ctx.elements);
  lab::Split all = time_split(ctx.devices, job, ctx.steps);
  destroy_slices(all.slices);
  cs::verify("scaling_split_result", job.out, job.reference.data(), ctx.elements);
  const double speedup = cs::ratio(one.total_ms, all.total_ms);
  std::printf(
      "The job on device %d alone: %.2f ms, on %zu devices: %.2f ms (%.2fx); kernels: %.0f%%\n",
      ctx.devices.front(), one.total_ms, n_devices, all.total_ms, speedup, 100 * one.kernel_share);
  // N devices are at least 0.7 N times faster than one (only launch and copy overheads are lost)
  // while the kernel, which splits perfectly, is >= 75% of the job and the job takes >= 1 ms.
  constexpr double kScalingEfficiency = 0.7, kKernelShareMin = 0.75, kJobMsMin = 1.0;
  const std::string reason = cs::first_reason(
      {ctx.common.timing_skip_reason(), ctx.env.launch_blocking ? "CUDA_LAUNCH_BLOCKING=1" : "",
       one.kernel_share < kKernelShareMin ? "the copies, not the kernel, set the time" : "",
       one.total_ms < kJobMsMin ? "the job is too short to split" : ""});
  cs::check_or_skip(reason, "scaling_speedup", speedup, cs::Compare::at_least,
                    kScalingEfficiency * static_cast<double>(n_devices), "x",
                    cs::format("%.1f x %zu devices", kScalingEfficiency, n_devices));
}

int main(int argc, char** argv) {
  Context ctx;  // --devices, --elements, --steps, --no-invalid-calls, and what the machine has
  cs::Options options("06_multi_device",
                      "Several GPUs: ownership, split, peer copies, events (CUDA 12.8 or newer).");
  cs::Parts parts(options,
                  {{"enumerate", "the devices of this machine, and one that does not exist"},
                   {"ownership", "streams and memory belong to the device current at creation"},
                   {"foreign-stream", "a launch into another device's stream fails, 2 devices"},
                   {"split", "one job, one slice and one stream per device, one host thread"},
                   {"peer", "peer access and cudaMemcpyPeerAsync between devices, 2 devices"},
                   {"cross-event", "a stream waits for another device's event, 2 devices"},
                   {"scaling", "the split job on N devices against one, 2 devices"}});
  lab::setup(ctx, options, parts, argc, argv);  // prints the devices used
  const bool job_runs = parts.selected("split") || parts.selected("scaling");
  std::unique_ptr<lab::JobData> job(job_runs ? new lab::JobData(ctx) : nullptr);  // host arrays
  if (parts.begin("enumerate")) part_enumerate(ctx);
  if (parts.begin("ownership")) part_ownership(ctx);
  if (parts.begin("foreign-stream")) part_foreign_stream(ctx);
  if (parts.begin("split")) part_split(ctx, *job);
  if (parts.begin("peer")) part_peer(ctx);
  if (parts.begin("cross-event")) part_cross_event(ctx);
  if (parts.begin("scaling")) part_scaling(ctx, *job);
  return cs::finish();
}
