// Chapter 11: the seeds' PyTorch stream examples, written against the PyTorch C++ API.
//
// Every torch.cuda stream idiom of the seeds is a thin layer over the CUDA runtime calls of the
// earlier chapters: torch.cuda.Stream() is c10::cuda::getStreamFromPool (a pooled
// cudaStreamNonBlocking stream); `with torch.cuda.stream(s)` is c10::cuda::CUDAStreamGuard;
// wait_stream is at::cuda::CUDAEvent record + block (cudaEventRecord + cudaStreamWaitEvent);
// Tensor::record_stream tells the caching allocator that another stream still reads a block;
// torch.cuda.graph is at::cuda::CUDAGraph (stream capture, chapter 09).
//
// Build and run (needs libtorch; chapter 11 is skipped where CMake cannot find it):
//   cmake --preset default && cmake --build --preset default && build/bin/11_pytorch_streams
//   (there is no plain nvcc line: the program is host C++ linked against libtorch)
//   build/bin/11_pytorch_streams --part capture     # one part: streams, seeds, serialize, ...
//   build/bin/11_pytorch_streams --multi-device     # the seed's torch.cuda.device(1) example
//   build/bin/11_pytorch_streams --help             # every flag
//   python3 chapters/11_pytorch_streams/pytorch_streams.py   # the same lesson in Python
//
// What to expect (pytorch_streams_lab.h holds printing and calibration; a reader may skip it):
// the seeds' tensor([6, 6, 6, 6, 6]) and tensor([5, 8, 9, 8, 5]) and torch.Size([1000, 1000])
// checked against the CPU; the seed's synchronize() inside each block measured at ~2x; the
// broken normal_()/sum() and free-while-read examples losing their races next to their fixes;
// the priority table; a fork/join captured into a CUDA graph whose replays match eager results
// at a fraction of eager issue's cost. Every property ends in a CHECK line; exit status 0 when
// all pass.

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cuda_streams.hpp"
#include "pytorch_streams_lab.h"

using c10::cuda::CUDAStream;

// Results are compared with a CPU reference in double precision: float sums differ from it by
// rounding only; this relative tolerance is far above that and far below any stale value.
constexpr double kSumTolerance = 1e-3;

// stream.wait_stream(producer) in Python: an event recorded on the producer, waited for by the
// stream. The host does not block (cudaEventRecord + cudaStreamWaitEvent, chapter 05).
void wait_stream(const CUDAStream& stream, const CUDAStream& producer) {
  at::cuda::CUDAEvent ready;  // cudaEventDisableTiming, like torch.cuda.Event()
  ready.record(producer);     // producer.record_event(): cudaEventRecord
  ready.block(stream);        // stream.wait_event(event): cudaStreamWaitEvent
}

// Part 1: torch.cuda.current_stream(), torch.cuda.Stream(), `with torch.cuda.stream(s)`

void part_streams() {
  const CUDAStream default_stream = c10::cuda::getDefaultCUDAStream();
  const CUDAStream current = c10::cuda::getCurrentCUDAStream();
  const CUDAStream custom = c10::cuda::getStreamFromPool();
  unsigned int flags = 0;
  CS_CHECK(cudaStreamGetFlags(custom.stream(), &flags));
  const bool non_blocking = (flags & cudaStreamNonBlocking) != 0;
  std::printf("  torch.cuda.current_stream() = getCurrentCUDAStream(): cudaStream_t %s\n",
              lab::handle_text(current.stream()).c_str());
  std::printf("  torch.cuda.Stream()         = getStreamFromPool():    cudaStream_t %s, flags %s\n",
              lab::handle_text(custom.stream()).c_str(),
              non_blocking ? "cudaStreamNonBlocking" : "cudaStreamDefault");
  cs::check_that("current_is_default", current == default_stream,
                 "before any guard the current stream is the default stream (cudaStream_t 0)");
  cs::check_that("pool_stream_non_blocking", non_blocking,
                 "cudaStreamGetFlags says cudaStreamNonBlocking: work on it never waits for the "
                 "default stream by itself");
  CUDAStream inside = current;
  {
    c10::cuda::CUDAStreamGuard guard(custom);  // with torch.cuda.stream(custom):
    inside = c10::cuda::getCurrentCUDAStream();
  }
  const CUDAStream after = c10::cuda::getCurrentCUDAStream();
  cs::check_that("stream_guard", inside == custom && after == default_stream,
                 "CUDAStreamGuard made the pool stream current inside its scope and restored the "
                 "default stream at its end");
  // Stream requests used to see the pool's size: more than the pool holds per priority.
  constexpr int kPoolProbeRequests = 64;
  std::set<cudaStream_t> distinct;
  for (int i = 0; i < kPoolProbeRequests; ++i) {
    distinct.insert(c10::cuda::getStreamFromPool().stream());
  }
  std::printf("  %d calls of getStreamFromPool() returned %zu distinct CUDA streams\n",
              kPoolProbeRequests, distinct.size());
  cs::check_that("pool_is_reused", distinct.size() < static_cast<std::size_t>(kPoolProbeRequests),
                 cs::format("streams come round-robin from a fixed pool of %zu per priority: two "
                            "torch.cuda.Stream() objects can be one CUDA stream",
                            distinct.size()));
}

// Part 2: the Stream-class seed (t1 + t2) and the context-manager seed (t1 * t2)

void part_seeds(const torch::Device& device) {
  const auto options = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const torch::Tensor t1 = torch::tensor({1, 2, 3, 4, 5}, options);  // made on the default stream
  const torch::Tensor t2 = torch::tensor({5, 4, 3, 2, 1}, options);
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();
  const CUDAStream stream = c10::cuda::getStreamFromPool();
  torch::Tensor sum;
  {
    c10::cuda::CUDAStreamGuard guard(stream);
    wait_stream(stream, default_stream);  // the wait the seed leaves out: t1, t2 came from there
    sum = t1 + t2;
    stream.synchronize();  // the seed's stream.synchronize(): cudaStreamSynchronize
  }
  std::printf("  print(res)  # res = t1 + t2 -> %s\n", lab::python_repr(sum).c_str());
  torch::Tensor product;
  {
    c10::cuda::CUDAStreamGuard guard(stream);
    wait_stream(stream, default_stream);
    product = t1 * t2;
  }
  stream.synchronize();  // after the block, as the seed does: the host waits before printing
  std::printf("  print(res)  # res = t1 * t2 -> %s\n", lab::python_repr(product).c_str());
  cs::verify("seed_t1_plus_t2", lab::host_values(sum), lab::host_values(t1.cpu() + t2.cpu()));
  cs::verify("seed_t1_times_t2", lab::host_values(product), lab::host_values(t1.cpu() * t2.cpu()));
}

// Part 3: res1 = t1 * 2 and res2 = t2 * 3 on two streams, with the seed's synchronize() inside
// each block (which serializes them) against one synchronize after both

// One `with torch.cuda.stream(s):` block: wait for the inputs, slow work, t * factor.
torch::Tensor scaled_in_stream(const CUDAStream& stream, const torch::Tensor& input, double factor,
                               const lab::Spinner& spinner, double spin_ms, cs::Timeline* timeline,
                               const std::string& row) {
  const CUDAStream producer = c10::cuda::getCurrentCUDAStream();
  c10::cuda::CUDAStreamGuard guard(stream);
  wait_stream(stream, producer);
  cs::TimelineSpan span;
  if (timeline) span = timeline->span(row, "kernel", stream.stream());
  spinner.spin(spin_ms);
  return input * factor;
}

void part_serialize(const torch::Device& device, const lab::Flags& f, const lab::Spinner& spinner,
                    bool concurrent_kernels, const cs::LaunchEnvironment& env,
                    const cs::CommonOptions& common) {
  torch::manual_seed(0);
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const torch::Tensor t1 = torch::randn({f.matrix, f.matrix}, options);
  const torch::Tensor t2 = torch::randn({f.matrix, f.matrix}, options);
  const CUDAStream stream1 = c10::cuda::getStreamFromPool();
  const CUDAStream stream2 = c10::cuda::getStreamFromPool();
  torch::Tensor res1, res2;
  auto seed = [&](cs::Timeline* timeline) {  // the host waits inside each block
    res1 = scaled_in_stream(stream1, t1, 2.0, spinner, f.spin_ms, timeline, "seed: stream1");
    stream1.synchronize();
    res2 = scaled_in_stream(stream2, t2, 3.0, spinner, f.spin_ms, timeline, "seed: stream2");
    stream2.synchronize();
  };
  auto fixed = [&](cs::Timeline* timeline) {  // issue both blocks, then wait once for both
    res1 = scaled_in_stream(stream1, t1, 2.0, spinner, f.spin_ms, timeline, "fixed: stream1");
    res2 = scaled_in_stream(stream2, t2, 3.0, spinner, f.spin_ms, timeline, "fixed: stream2");
    stream1.synchronize();
    stream2.synchronize();
  };
  fixed(nullptr);
  std::printf("  print(res1.shape, res2.shape) -> %s %s\n", lab::python_size(res1).c_str(),
              lab::python_size(res2).c_str());
  // The CPU multiplies in float too: one rounded multiply gives the same bits on both.
  cs::verify("seed_res1_equals_t1_times_2", lab::host_values(res1),
             lab::host_values(t1.cpu() * 2.0));
  cs::verify("seed_res2_equals_t2_times_3", lab::host_values(res2),
             lab::host_values(t2.cpu() * 3.0));

  torch::cuda::synchronize();
  cs::Timeline timeline;  // one run of each, drawn
  timeline.start(stream1.stream());
  seed(&timeline);
  fixed(&timeline);
  cs::publish_timeline(timeline.collect(), common,
                       "synchronize() inside each block (seed) vs once after both (fixed)");
  const cs::Stats seed_ms = cs::time_device_ms(1, f.repeats, [&] { seed(nullptr); });
  const cs::Stats fixed_ms = cs::time_device_ms(1, f.repeats, [&] { fixed(nullptr); });
  std::printf("  each block spins %d ms before its multiply (median of %d runs):\n", f.spin_ms,
              f.repeats);
  std::printf("    synchronize() inside each block (the seed) %8.2f ms\n", seed_ms.median);
  std::printf("    synchronize() once after both blocks       %8.2f ms\n", fixed_ms.median);
  // Two equal spins take one spin's time when the streams overlap and two when the seed
  // serializes them (~2x); 1.5x leaves room for launch and synchronization costs.
  constexpr double kSerializationRatio = 1.5;
  const std::string one_queue =
      env.max_connections == 1
          ? "CUDA_DEVICE_MAX_CONNECTIONS=1: stream1's multiply waits for its spin at the head of "
            "the one hardware queue and holds stream2's spin behind it, so the fix serializes too"
          : "";
  const std::string no_concurrency =
      concurrent_kernels ? "" : "this device reports concurrentKernels = 0: no two streams overlap";
  cs::check_or_skip(cs::first_reason({common.timing_skip_reason(), no_concurrency,
                                      cs::no_overlap_reason(env), one_queue}),
                    "seed_sync_serializes", seed_ms.median / std::max(fixed_ms.median, 1e-6),
                    cs::Compare::at_least, kSerializationRatio, "x",
                    "seed time / fixed time; ~2x for two equal spins that could overlap");
  lab::print_serialize_setting(env);  // what CUDA_LAUNCH_BLOCKING=1 or one queue changed here
}

// Part 4: the StackOverflow seed: C = torch.mm(A, A) and D = torch.mm(B, B) on two streams

void part_matmul(const torch::Device& device, int64_t side) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const torch::Tensor A = torch::rand({side, side}, options);
  const torch::Tensor B = torch::rand({side, side}, options);
  torch::cuda::synchronize();  // "wait for the above tensors to initialise": cudaDeviceSynchronize
  const CUDAStream s1 = c10::cuda::getStreamFromPool();
  const CUDAStream s2 = c10::cuda::getStreamFromPool();
  torch::Tensor C, D;
  {
    c10::cuda::CUDAStreamGuard guard(s1);
    C = torch::mm(A, A);
  }
  {
    c10::cuda::CUDAStreamGuard guard(s2);
    D = torch::mm(B, B);
  }
  torch::cuda::synchronize();  // "wait for C and D to be computed"
  std::printf("  C: %s, D: %s, C[0][0] = %.4f\n", lab::python_size(C).c_str(),
              lab::python_size(D).c_str(), C[0][0].item<double>());
  // Float products against a double CPU reference: rounding only, 10x or more below this.
  constexpr double kMatmulTolerance = 1e-4;
  const torch::Tensor A_host = A.cpu().to(torch::kFloat64);
  const torch::Tensor B_host = B.cpu().to(torch::kFloat64);
  cs::verify("seed_C_equals_A_mm_A", lab::host_values(C), lab::host_values(A_host.mm(A_host)),
             kMatmulTolerance);
  cs::verify("seed_D_equals_B_mm_B", lab::host_values(D), lab::host_values(B_host.mm(B_host)),
             kMatmulTolerance);
}

// Part 5: the PyTorch notes' broken example, "sum() may start execution before normal_()
// finishes!", next to its fix

struct RaceOutcome {
  double got = 0, want = 0, stale = 0;  // sum() returned; sum of A on the CPU; of A's old ones
};

RaceOutcome normal_then_sum(const torch::Device& device, const CUDAStream& s, bool wait,
                            const lab::Spinner& spinner, double spin_ms) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();
  // torch.empty leaves whatever memory held; ones make the stale contents recognizable.
  torch::Tensor A = torch::empty({100, 100}, options).fill_(1.0f);  // the seed's (100, 100)
  torch::cuda::synchronize();
  spinner.spin(spin_ms);  // the default stream is busy with earlier work ...
  A.normal_(0.0, 1.0);    // ... so normal_() runs late
  torch::Tensor B;
  {
    c10::cuda::CUDAStreamGuard guard(s);       // with torch.cuda.stream(s):
    if (wait) wait_stream(s, default_stream);  // s.wait_stream(torch.cuda.default_stream())
    B = torch::sum(A);
  }
  torch::cuda::synchronize();
  return {B.item<double>(), A.cpu().to(torch::kFloat64).sum().item<double>(),
          static_cast<double>(A.numel())};
}

void part_race(const torch::Device& device, const lab::Spinner& spinner, int spin_ms,
               const cs::LaunchEnvironment& env, const cs::CommonOptions& common) {
  const CUDAStream s = c10::cuda::getStreamFromPool();  // s = torch.cuda.Stream()
  // A first run loads the kernels and caches blocks for s: no module load or cudaMalloc (either
  // may wait for the device and hide the race) falls between the two streams' work below.
  normal_then_sum(device, s, true, spinner, spin_ms);
  const RaceOutcome broken = normal_then_sum(device, s, false, spinner, spin_ms);
  const RaceOutcome fixed = normal_then_sum(device, s, true, spinner, spin_ms);
  std::printf("  seed (no wait):         sum() = %12.4f, sum of A = %12.4f\n", broken.got,
              broken.want);
  std::printf("  fixed (s.wait_stream):  sum() = %12.4f, sum of A = %12.4f\n", fixed.got,
              fixed.want);
  const bool lost = !lab::close_to(broken.got, broken.want, kSumTolerance);
  const std::string what = lab::race_words(broken.got, broken.want, broken.stale, kSumTolerance);
  // Under CUDA_LAUNCH_BLOCKING=1 the spin and normal_() finish before the host issues sum().
  const std::string skip = lab::race_skip_reason(lost, env, common, "the race is lost",
                                                 "normal_() had finished before sum() was issued");
  if (skip.empty()) {
    cs::check_that("seed_normal_sum_race_shown", lost, what);
  } else {
    std::printf("  seed: %s\n", what.c_str());
    cs::check_skipped("seed_normal_sum_race_shown", skip);
  }
  cs::check_that(
      "fixed_normal_sum", lab::close_to(fixed.got, fixed.want, kSumTolerance),
      cs::format("with s.wait_stream(default) sum() = %.4f matches the CPU's sum of A", fixed.got));
}

// Part 6: a tensor made on one stream, read on another and freed on the host while the read is
// still queued: Tensor::record_stream tells the caching allocator to wait (chapter 10)

struct ReuseOutcome {
  double got = 0, want = 0;  // what the slow sum() on the side stream returned; the right sum
  bool reused = false;       // whether the next tensor received A's memory at once
};

ReuseOutcome free_while_in_use(const torch::Device& device, const CUDAStream& side, bool record,
                               const lab::Spinner& spinner, double spin_ms) {
  constexpr int64_t kElements = 4 * 1024 * 1024;  // 16 MiB of floats: a cache segment of its own
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();
  // No cached block on the default stream may compete with A's; the side stream gets blocks
  // cached for it again, so that no cudaMalloc falls between the two streams' work.
  torch::cuda::synchronize();
  c10::cuda::CUDACachingAllocator::emptyCache();
  {
    c10::cuda::CUDAStreamGuard guard(side);
    (void)torch::ones({kElements}, options).sum().item<double>();
  }
  torch::Tensor A = torch::ones({kElements}, options);  // made on the default stream
  torch::Tensor B;
  {
    c10::cuda::CUDAStreamGuard guard(side);
    wait_stream(side, default_stream);
    spinner.spin(spin_ms);  // a slow reader
    B = A.sum();
  }
  if (record) A.record_stream(side);  // A.record_stream(side) in Python
  const void* address = A.data_ptr();
  A = torch::Tensor();  // `del A`: the block goes back to the allocator now, on the host's time
  const torch::Tensor next = torch::empty({kElements}, options).fill_(7.0f);
  const bool reused = next.data_ptr() == address;
  torch::cuda::synchronize();
  return {B.item<double>(), static_cast<double>(kElements), reused};
}

void part_record(const torch::Device& device, const lab::Spinner& spinner, int spin_ms,
                 const cs::LaunchEnvironment& env, const cs::CommonOptions& common) {
  const CUDAStream side = c10::cuda::getStreamFromPool();
  free_while_in_use(device, side, true, spinner, spin_ms);  // loads the kernels
  const ReuseOutcome broken = free_while_in_use(device, side, false, spinner, spin_ms);
  const ReuseOutcome fixed = free_while_in_use(device, side, true, spinner, spin_ms);
  for (const auto& [name, r] : {std::pair{"without", broken}, std::pair{"with   ", fixed}}) {
    std::printf("  %s record_stream: next tensor got A's memory: %-3s  sum() = %.0f (want %.0f)\n",
                name, r.reused ? "yes" : "no", r.got, r.want);
  }
  const bool shown = !lab::close_to(broken.got, broken.want, kSumTolerance);
  const std::string what = lab::reuse_words(broken.got, broken.want, broken.reused, kSumTolerance);
  // Under CUDA_LAUNCH_BLOCKING=1 the slow sum() finishes before the host frees A.
  const std::string skip = lab::race_skip_reason(shown, env, common, "the overwrite wins",
                                                 "sum() had finished before A was freed");
  if (skip.empty()) {
    cs::check_that("seed_free_without_record_stream_shown", shown, what);
  } else {
    std::printf("  without record_stream: %s\n", what.c_str());
    cs::check_skipped("seed_free_without_record_stream_shown", skip);
  }
  cs::check_that("fixed_record_stream",
                 !fixed.reused && lab::close_to(fixed.got, fixed.want, kSumTolerance),
                 cs::format("after A.record_stream(side) the allocator kept A's block until the "
                            "side stream was done; sum() = %.0f",
                            fixed.got));
}

// Part 7: torch.cuda.Stream(priority=p): how PyTorch's argument maps onto the device's range

void part_priorities() {
  int least = 0, greatest = 0;
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  std::printf("  cudaDeviceGetStreamPriorityRange: least %d, greatest %d\n", least, greatest);
  if (greatest == least) {
    cs::check_skipped("priority_mapping", "this device has a single stream priority");
    return;
  }
  const auto [torch_least, torch_greatest] = CUDAStream::priority_range();
  std::printf("  CUDAStream::priority_range() (torch.cuda.Stream.priority_range()): %d .. %d\n",
              torch_least, torch_greatest);
  std::printf("\n  %-38s %-38s %s\n", "Python", "C++", "cudaStreamGetPriority");
  bool all_match = true;
  for (int p = least; p >= greatest - 1; --p) {  // one past the device's greatest
    all_match &= lab::priority_row(cs::format("torch.cuda.Stream(priority=%d)", p),
                                   cs::format("getStreamFromPool(%d)", p),
                                   c10::cuda::getStreamFromPool(p), std::max(p, torch_greatest));
  }
  all_match &= lab::priority_row("", "getStreamFromPool(true)  (high)",
                                 c10::cuda::getStreamFromPool(true), torch_greatest);
  all_match &= lab::priority_row("", "getStreamFromPool(false) (low)",
                                 c10::cuda::getStreamFromPool(false), torch_least);
  lab::print_positive_priority(least + 1);  // getStreamFromPool(1): refused or accepted
  cs::check_that(
      "priority_mapping", all_match,
      cs::format("each pool stream's priority is max(p, %d): PyTorch keeps pools for "
                 "%d of the device's %d levels",
                 torch_greatest, torch_least - torch_greatest + 1, least - greatest + 1));
}

// Part 8: torch.device('cuda:0'), .cuda(), .to(device) and torch.cuda.device(k)

void part_devices(int ordinal) {
  const torch::Device cuda(torch::kCUDA);  // torch.device('cuda'): the current device
  const torch::Device chosen("cuda:" + std::to_string(ordinal));
  const auto doubles = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Tensor x = torch::tensor({1.0, 2.0}, doubles.device(chosen));
  const torch::Tensor y = torch::tensor({1.0, 2.0}, doubles).cuda();
  const torch::Tensor y2 = torch::tensor({1.0, 2.0}, doubles).to(cuda);
  const torch::Tensor z = x + y;
  int current = -1;
  {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(ordinal));  // torch.cuda.device(k)
    CS_CHECK(cudaGetDevice(&current));
  }
  std::printf("  x.device = %s, y.device = %s, y2.device = %s, z.device = %s\n",
              lab::python_device(x.device()).c_str(), lab::python_device(y.device()).c_str(),
              lab::python_device(y2.device()).c_str(), lab::python_device(z.device()).c_str());
  bool all_here = current == ordinal;
  for (const torch::Tensor* t : {&x, &y, &y2, &z}) all_here &= t->get_device() == ordinal;
  cs::check_that("tensors_on_current_device", all_here,
                 cs::format("'cuda', .cuda() and .to('cuda') mean the current device, %d; inside "
                            "CUDAGuard cudaGetDevice = %d",
                            ordinal, current));
  cs::verify("seed_z_equals_x_plus_y", lab::host_values(z), lab::host_values(x.cpu() + y.cpu()));
  std::printf("  (the seed's torch.cuda.device(1) example: --multi-device, with 2 devices)\n");
}

// Part 9: PyTorch's multistream capture: a fork onto a side stream and a join, captured with
// at::cuda::CUDAGraph (torch.cuda.graph), replayed, against the same work issued eagerly

constexpr int kStepsPerBranch = 8;  // elementwise steps on each stream: 2 kernels each

// The work: fork onto `side` (it waits for the current stream), a chain of small kernels on each
// stream, join (the current stream waits for `side`), one kernel that reads both branches.
torch::Tensor fork_join(const torch::Tensor& x, const CUDAStream& side) {
  const CUDAStream current = c10::cuda::getCurrentCUDAStream();
  wait_stream(side, current);  // fork: side.wait_stream(torch.cuda.current_stream())
  torch::Tensor right = x;
  {
    c10::cuda::CUDAStreamGuard guard(side);  // with torch.cuda.stream(side):
    for (int i = 0; i < kStepsPerBranch; ++i) right = right * 0.5 + 1.0;
  }
  torch::Tensor left = x;
  for (int i = 0; i < kStepsPerBranch; ++i) left = torch::sin(left) + 0.25;
  wait_stream(current, side);  // join: torch.cuda.current_stream().wait_stream(side)
  return left + right;         // right's blocks are reused on side only after the next fork's wait
}

void part_capture(const torch::Device& device, int replays, const cs::LaunchEnvironment& env,
                  const cs::CommonOptions& common) {
  constexpr int64_t kElements = 1 << 14;  // small: each kernel takes microseconds
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const torch::Tensor x = torch::rand({kElements}, options);  // the graph's static input
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();
  const CUDAStream capture = c10::cuda::getStreamFromPool();  // never capture on stream 0
  const CUDAStream side = c10::cuda::getStreamFromPool();
  wait_stream(capture, default_stream);  // x was made on the default stream
  {
    c10::cuda::CUDAStreamGuard guard(capture);  // warm-up on a side stream, as PyTorch asks
    for (int i = 0; i < 3; ++i) (void)fork_join(x, side);
  }
  wait_stream(default_stream, capture);
  torch::cuda::synchronize();

  at::cuda::CUDAGraph graph;  // torch.cuda.CUDAGraph()
  torch::Tensor y;            // the graph's static output, in its private memory pool
  try {
    c10::cuda::CUDAStreamGuard guard(capture);  // with torch.cuda.graph(g): (its own stream)
    graph.capture_begin();   // cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal)
    y = fork_join(x, side);  // side joins the capture at the fork; nothing runs yet
    graph.capture_end();     // cudaStreamEndCapture + cudaGraphInstantiate
  } catch (const c10::Error& error) {
    if (!env.launch_blocking) throw;
    lab::skip_capture_checks(error);  // says why, for each check below
    return;
  }
  const auto replay_and_compare = [&](const char* name) {
    {
      c10::cuda::CUDAStreamGuard guard(capture);
      wait_stream(capture, default_stream);  // x's new values were written on the default stream
      graph.replay();                        // cudaGraphLaunch(exec, capture)
    }
    capture.synchronize();
    const torch::Tensor eager = fork_join(x, side);  // the same work, issued op by op
    // The same kernels on the same input: the replay must give the same bits.
    cs::verify(name, lab::host_values(y), lab::host_values(eager));
  };
  replay_and_compare("graph_replay_matches_eager");
  x.copy_(torch::rand({kElements}, options));  // new values, same memory: the graph reads them
  replay_and_compare("graph_replay_reads_new_input");

  c10::cuda::CUDAStreamGuard guard(capture);
  const double eager_ms = lab::per_iteration_ms(replays, 5, [&] { (void)fork_join(x, side); });
  const double replay_ms = lab::per_iteration_ms(replays, 5, [&] { graph.replay(); });
  lab::print_capture_costs(4 * kStepsPerBranch + 1, replays, eager_ms, replay_ms);
  // A replay is one cudaGraphLaunch for all the kernels, against one dispatch and launch per op:
  // at least 1.5x cheaper for kernels this small. Under CUDA_LAUNCH_BLOCKING=1 both wait for the
  // GPU at every launch; the program then claims only that the replay is no slower.
  const double bar = env.launch_blocking ? 1.0 : 1.5;
  cs::check_or_skip(common.timing_skip_reason(), "graph_replay_speedup",
                    eager_ms / std::max(replay_ms, 1e-6), cs::Compare::at_least, bar, "x",
                    "eager time / replay time per iteration of the same fork/join");
}

int main(int argc, char** argv) {
  lab::Flags f;  // --matrix, --spin-ms, --repeats, --replays, --multi-device: see the lab header
  cs::CommonOptions common;
  cs::Options options("11_pytorch_streams",
                      "The seeds' PyTorch stream examples through the PyTorch C++ API, with the "
                      "CUDA runtime calls underneath.");
  cs::Parts parts(options,
                  {{"streams", "current, default and pool streams; the stream guard"},
                   {"seeds", "t1 + t2 and t1 * t2 in a stream"},
                   {"serialize", "synchronize() inside each block serializes two streams"},
                   {"matmul", "torch.mm on two streams"},
                   {"race", "normal_() on the default stream, sum() on another"},
                   {"record", "freeing a tensor another stream still reads: record_stream"},
                   {"priorities", "torch.cuda.Stream(priority=p) on the device's range"},
                   {"devices", "torch.device and torch.cuda.device"},
                   {"capture", "a fork/join captured with CUDAGraph, replayed"}});
  lab::add_flags(options, &f);
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::print_launch_environment(env);
  return lab::run_or_fail([&] {
    if (f.multi_device) {
      cs::require_devices(2, "--multi-device (the seed's torch.cuda.device(1) example)");
      lab::multi_device_seed(static_cast<int>(torch::cuda::device_count()));
      return;
    }
    const std::size_t floats = static_cast<std::size_t>(f.matrix) * f.matrix;
    cs::require_fits_on_device(8 * sizeof(float) * floats + (64u << 20),
                               cs::format("--matrix %d", f.matrix));
    const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(common.device));
    std::printf("PyTorch %s (C++ API), %d device(s) visible to torch\n", TORCH_VERSION,
                static_cast<int>(torch::cuda::device_count()));
    const lab::Spinner spinner(c10::cuda::getStreamFromPool());
    std::printf("at::cuda::sleep spins %.0f cycles per ms on this device\n",
                spinner.cycles_per_ms());
    if (parts.begin("streams")) part_streams();
    if (parts.begin("seeds")) part_seeds(device);
    if (parts.begin("serialize")) {
      part_serialize(device, f, spinner, prop.concurrentKernels != 0, env, common);
    }
    if (parts.begin("matmul")) part_matmul(device, f.matrix);
    if (parts.begin("race")) part_race(device, spinner, f.spin_ms, env, common);
    if (parts.begin("record")) part_record(device, spinner, f.spin_ms, env, common);
    if (parts.begin("priorities")) part_priorities();
    if (parts.begin("devices")) part_devices(common.device);
    if (parts.begin("capture")) part_capture(device, f.replays, env, common);
  });
}
