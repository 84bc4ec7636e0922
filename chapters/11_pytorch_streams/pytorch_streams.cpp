// Chapter 11: the seeds' PyTorch stream examples, written against the PyTorch C++ API.
//
// What it teaches: every torch.cuda stream idiom of the seed documents is a thin layer over the
// CUDA runtime calls of the earlier chapters. torch.cuda.Stream() is c10::cuda::getStreamFromPool
// (a pooled cudaStreamNonBlocking stream, chapter 02); `with torch.cuda.stream(s)` is
// c10::cuda::CUDAStreamGuard (it changes which stream ATen launches into); wait_stream,
// wait_event and record_event are at::cuda::CUDAEvent record/block, i.e. cudaEventRecord and
// cudaStreamWaitEvent (chapter 05); the priority argument is clamped into a few pools made with
// cudaStreamCreateWithPriority (chapter 03); Tensor::record_stream is how the caching allocator
// learns that another stream still reads a block (chapters 07 and 10); torch.cuda.device(1) is
// c10::cuda::CUDAGuard, i.e. cudaSetDevice (chapter 06).
//
// The program runs each seed example and prints the seed's result computed here
// (tensor([6, 6, 6, 6, 6], device='cuda:0'), tensor([5, 8, 9, 8, 5], device='cuda:0'), two
// torch.Size([1000, 1000])), checks each against a CPU reference, measures how the seed's
// synchronize() inside each `with` block serializes two streams, runs the broken normal_()/sum()
// example beside its fix (a slow producer makes the race lose every time), shows the
// record_stream hazard and its fix, and prints how PyTorch maps stream priorities onto the
// device's range as cudaStreamGetPriority reports them.
//
// Build and run (needs libtorch; chapter 11 is skipped where CMake cannot find it):
// clang-format off
//   cmake --preset default    (CMake asks python3 where torch is; see the README for other ways)
//   cmake --build --preset default && build/bin/11_pytorch_streams
//   build/bin/11_pytorch_streams --multi-device    (the seed's torch.cuda.device(1) example)
// clang-format on
//
// Expected output: the stream table, the seeds' tensors and sizes, CHECK lines for every
// result, `CHECK seed_sync_serializes: ~2x >= 1.50x ... PASS`, the broken examples reported as
// broken (in words) next to their fixes, the priority table, and `All N checks passed.`

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_streams.hpp"

namespace bars {
// Two equal spins on two streams take about one spin's time when the streams overlap and two
// when the seed's synchronize() inside each block serializes them (ratio ~2); 1.5x leaves room
// for launch and synchronization costs, which are microseconds against spins of milliseconds.
constexpr double kSerializationRatio = 1.5;
// Results are compared with a CPU reference computed in double precision. Float sums and
// matrix products differ from it by rounding only; these relative tolerances are 10x or more
// above that rounding and far below any stale or overwritten value.
constexpr double kSumTolerance = 1e-3;
constexpr double kMatmulTolerance = 1e-4;
}  // namespace bars

namespace {

using c10::cuda::CUDAStream;

// The seeds' tensor shapes.
constexpr int64_t kSeedNormalSide = 100;             // torch.empty((100, 100)).normal_()
constexpr int64_t kReuseElements = 4 * 1024 * 1024;  // 16 MiB of floats: a cache segment of its own
constexpr int kPoolProbeRequests = 64;               // stream requests used to see the pool's size

std::string handle_text(cudaStream_t stream) {
  if (stream == nullptr) return "0 (the legacy default stream)";
  char text[32];
  std::snprintf(text, sizeof text, "%p", static_cast<void*>(stream));
  return text;
}

// Python's repr of a one-dimensional integer tensor: "tensor([6, 6], device='cuda:0')".
std::string python_repr(const torch::Tensor& tensor) {
  const torch::Tensor host = tensor.cpu().to(torch::kInt64).contiguous();
  const int64_t* values = host.data_ptr<int64_t>();
  std::string text = "tensor([";
  for (int64_t i = 0; i < host.numel(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  text += "]";
  if (tensor.is_cuda()) text += ", device='cuda:" + std::to_string(tensor.get_device()) + "'";
  return text + ")";
}

// Python's repr of a tensor's shape, e.g. "torch.Size([1000, 1000])".
std::string python_size(const torch::Tensor& tensor) {
  std::string text = "torch.Size([";
  bool first = true;
  for (const int64_t extent : tensor.sizes()) {
    text += (first ? "" : ", ") + std::to_string(extent);
    first = false;
  }
  return text + "])";
}

// Python's repr of a device, e.g. "device(type='cuda', index=1)".
std::string python_device(const torch::Device& device) {
  return "device(type='cuda', index=" + std::to_string(device.index()) + ")";
}

std::vector<double> host_values(const torch::Tensor& tensor) {
  const torch::Tensor host = tensor.cpu().to(torch::kFloat64).contiguous();
  const double* values = host.data_ptr<double>();
  return std::vector<double>(values, values + host.numel());
}

// stream.wait_stream(producer) in Python: an event recorded on the producer, waited for by the
// stream. The host does not block (cudaEventRecord + cudaStreamWaitEvent, chapter 05).
void wait_stream(const CUDAStream& stream, const CUDAStream& producer) {
  at::cuda::CUDAEvent ready;  // cudaEventDisableTiming, like torch.cuda.Event()
  ready.record(producer);     // producer.record_event()
  ready.block(stream);        // stream.wait_event(event)
}

// Stands in for slow work: at::cuda::sleep (torch.cuda._sleep in Python) spins one GPU thread for
// a number of clock cycles on the current stream. The cycles per millisecond are measured here.
class Spinner {
 public:
  explicit Spinner(const CUDAStream& stream) {
    c10::cuda::CUDAStreamGuard guard(stream);
    constexpr int64_t probe_cycles = 10'000'000;  // about 5 ms at 2 GHz
    at::cuda::sleep(probe_cycles);                // loads the kernel and wakes the clocks up
    std::vector<double> samples;
    for (int i = 0; i < 3; ++i) {
      at::cuda::CUDAEvent start(cudaEventDefault);
      at::cuda::CUDAEvent stop(cudaEventDefault);
      start.record(stream);
      at::cuda::sleep(probe_cycles);
      stop.record(stream);
      stop.synchronize();
      samples.push_back(start.elapsed_time(stop));
    }
    cycles_per_ms_ = static_cast<double>(probe_cycles) / cs::median(samples);
  }
  // Enqueues a spin of about @p ms milliseconds on the current stream.
  void spin(double ms) const { at::cuda::sleep(static_cast<int64_t>(ms * cycles_per_ms_)); }
  double cycles_per_ms() const { return cycles_per_ms_; }

 private:
  double cycles_per_ms_ = 0;
};

bool close_to(double got, double want, double tolerance) {
  return std::fabs(got - want) <= tolerance * std::max(1.0, std::fabs(want));
}

std::string number(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// ---------------------------------------------------------------------------------------------
// 1. torch.cuda.current_stream(), torch.cuda.Stream(), `with torch.cuda.stream(s)`.
void current_and_pool_streams() {
  std::printf("\n== 1. Current stream, default stream, streams from the pool (chapter 02) ==\n");
  const CUDAStream default_stream = c10::cuda::getDefaultCUDAStream();
  const CUDAStream current = c10::cuda::getCurrentCUDAStream();
  const CUDAStream custom = c10::cuda::getStreamFromPool();
  unsigned int flags = 0;
  CS_CHECK(cudaStreamGetFlags(custom.stream(), &flags));
  std::printf("  torch.cuda.current_stream() = getCurrentCUDAStream(): cudaStream_t %s\n",
              handle_text(current.stream()).c_str());
  std::printf("  torch.cuda.Stream()         = getStreamFromPool():    cudaStream_t %s, flags %s\n",
              handle_text(custom.stream()).c_str(),
              (flags & cudaStreamNonBlocking) ? "cudaStreamNonBlocking" : "cudaStreamDefault");
  cs::check_that("current_is_default", current == default_stream,
                 "before any guard the current stream is the default stream (cudaStream_t 0)");
  cs::check_that("pool_stream_non_blocking", (flags & cudaStreamNonBlocking) != 0,
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

  std::set<cudaStream_t> distinct;
  for (int i = 0; i < kPoolProbeRequests; ++i)
    distinct.insert(c10::cuda::getStreamFromPool().stream());
  std::printf("  %d calls of getStreamFromPool() returned %zu distinct CUDA streams\n",
              kPoolProbeRequests, distinct.size());
  cs::check_that("pool_is_reused", distinct.size() < static_cast<std::size_t>(kPoolProbeRequests),
                 "streams come round-robin from a fixed pool of " +
                     std::to_string(distinct.size()) +
                     " per priority: two torch.cuda.Stream() objects can be one CUDA stream");
}

// ---------------------------------------------------------------------------------------------
// 2. The Stream-class seed (t1 + t2 -> tensor([6, 6, 6, 6, 6])) and the context-manager seed
//    (t1 * t2 -> tensor([5, 8, 9, 8, 5])).
void small_tensor_seeds(const torch::Device& device) {
  std::printf("\n== 2. t1 + t2 and t1 * t2 in a stream (chapters 02 and 05) ==\n");
  const auto options = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const std::vector<int64_t> a = {1, 2, 3, 4, 5};
  const std::vector<int64_t> b = {5, 4, 3, 2, 1};
  const torch::Tensor t1 = torch::tensor({1, 2, 3, 4, 5}, options);  // copied on the default stream
  const torch::Tensor t2 = torch::tensor({5, 4, 3, 2, 1}, options);
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();
  const CUDAStream stream = c10::cuda::getStreamFromPool();

  torch::Tensor sum;
  {
    c10::cuda::CUDAStreamGuard guard(stream);
    wait_stream(stream, default_stream);  // t1 and t2 were made on the default stream
    sum = t1 + t2;
    stream.synchronize();  // the seed's stream.synchronize(): cudaStreamSynchronize
  }
  std::printf("  print(res)  # res = t1 + t2 -> %s\n", python_repr(sum).c_str());

  torch::Tensor product;
  {
    c10::cuda::CUDAStreamGuard guard(stream);
    wait_stream(stream, default_stream);
    product = t1 * t2;
  }
  stream.synchronize();  // after the block, as the seed does: the host waits before printing
  std::printf("  print(res)  # res = t1 * t2 -> %s\n", python_repr(product).c_str());

  std::vector<double> want_sum;
  std::vector<double> want_product;
  for (std::size_t i = 0; i < a.size(); ++i) {
    want_sum.push_back(static_cast<double>(a[i] + b[i]));
    want_product.push_back(static_cast<double>(a[i] * b[i]));
  }
  cs::verify("seed_t1_plus_t2", host_values(sum), want_sum);
  cs::verify("seed_t1_times_t2", host_values(product), want_product);
}

// ---------------------------------------------------------------------------------------------
// 3. The "non-blocking execution in different streams" seed: t1 * 2 and t2 * 3 on two streams,
//    with stream.synchronize() inside each block, which serializes them.
struct TwoStreams {
  CUDAStream first;
  CUDAStream second;
};

// One `with torch.cuda.stream(s):` block of the seed: wait for the inputs, slow work, t * factor.
torch::Tensor scaled_in_stream(const CUDAStream& stream, const CUDAStream& producer,
                               const torch::Tensor& input, double factor, const Spinner& spinner,
                               double spin_ms, cs::Timeline* timeline, const std::string& row) {
  c10::cuda::CUDAStreamGuard guard(stream);
  wait_stream(stream, producer);
  const int span = timeline ? timeline->begin(row, "kernel", stream) : -1;
  spinner.spin(spin_ms);
  torch::Tensor result = input * factor;
  if (timeline) timeline->end(span, stream);
  return result;
}

void two_stream_seed(const torch::Device& device, int64_t side, const Spinner& spinner,
                     double spin_ms, int repeats, const cs::CommonOptions& common,
                     const cudaDeviceProp& prop) {
  std::printf("\n== 3. res1 = t1 * 2 and res2 = t2 * 3 on two streams (chapter 02) ==\n");
  torch::manual_seed(0);
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const torch::Tensor t1 = torch::randn({side, side}, options);
  const torch::Tensor t2 = torch::randn({side, side}, options);
  const CUDAStream producer = c10::cuda::getCurrentCUDAStream();
  const TwoStreams streams{c10::cuda::getStreamFromPool(), c10::cuda::getStreamFromPool()};
  torch::Tensor res1;
  torch::Tensor res2;

  // The seed: each block ends in its stream's synchronize(), so the host cannot issue the second
  // block before the first has finished.
  auto seed_version = [&](cs::Timeline* timeline) {
    res1 = scaled_in_stream(streams.first, producer, t1, 2.0, spinner, spin_ms, timeline,
                            "seed: stream1");
    streams.first.synchronize();
    res2 = scaled_in_stream(streams.second, producer, t2, 3.0, spinner, spin_ms, timeline,
                            "seed: stream2");
    streams.second.synchronize();
  };
  // The fix: issue both blocks, then wait once for both streams.
  auto fixed_version = [&](cs::Timeline* timeline) {
    res1 = scaled_in_stream(streams.first, producer, t1, 2.0, spinner, spin_ms, timeline,
                            "fixed: stream1");
    res2 = scaled_in_stream(streams.second, producer, t2, 3.0, spinner, spin_ms, timeline,
                            "fixed: stream2");
    streams.first.synchronize();
    streams.second.synchronize();
  };

  fixed_version(nullptr);
  std::printf("  print(res1.shape, res2.shape) -> %s %s\n", python_size(res1).c_str(),
              python_size(res2).c_str());
  // The CPU multiplies in float too: one rounded multiply gives the same bits on both.
  cs::verify("seed_res1_equals_t1_times_2", host_values(res1), host_values(t1.cpu() * 2.0));
  cs::verify("seed_res2_equals_t2_times_3", host_values(res2), host_values(t2.cpu() * 3.0));

  // One run of each, drawn: the seed's two spins one after the other, the fix's side by side.
  CS_CHECK(cudaDeviceSynchronize());
  cs::Timeline timeline;
  timeline.start(streams.first);
  seed_version(&timeline);
  fixed_version(&timeline);
  cs::publish_timeline(timeline.collect(), common,
                       "synchronize() inside each block (seed) vs once after both (fixed)");

  if (common.no_timing) {
    cs::check_skipped("seed_sync_serializes", "--no-timing");
    return;
  }
  const cs::Stats seed = cs::time_device_ms(1, repeats, [&] { seed_version(nullptr); });
  const cs::Stats fixed = cs::time_device_ms(1, repeats, [&] { fixed_version(nullptr); });
  std::printf("  each block spins %.1f ms before its multiply (median of %d runs):\n", spin_ms,
              repeats);
  std::printf("    synchronize() inside each block (the seed) %8.2f ms\n", seed.median);
  std::printf("    synchronize() once after both blocks       %8.2f ms\n", fixed.median);
  if (!prop.concurrentKernels) {
    cs::check_skipped("seed_sync_serializes",
                      "this device reports concurrentKernels = 0: no two streams overlap here");
  } else {
    cs::check("seed_sync_serializes", seed.median / fixed.median, cs::Compare::at_least,
              bars::kSerializationRatio, "x",
              "seed time / fixed time; ~2x for two equal spins that could overlap");
  }
}

// ---------------------------------------------------------------------------------------------
// 4. The StackOverflow seed: C = torch.mm(A, A) and D = torch.mm(B, B) on two streams.
void matmul_seed(const torch::Device& device, int64_t side) {
  std::printf("\n== 4. torch.mm on two streams (chapter 02) ==\n");
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const torch::Tensor A = torch::rand({side, side}, options);
  const torch::Tensor B = torch::rand({side, side}, options);
  torch::cuda::synchronize();  // "wait for the above tensors to initialise": cudaDeviceSynchronize
  const CUDAStream s1 = c10::cuda::getStreamFromPool();
  const CUDAStream s2 = c10::cuda::getStreamFromPool();
  torch::Tensor C;
  torch::Tensor D;
  {
    c10::cuda::CUDAStreamGuard guard(s1);
    C = torch::mm(A, A);
  }
  {
    c10::cuda::CUDAStreamGuard guard(s2);
    D = torch::mm(B, B);
  }
  torch::cuda::synchronize();  // "wait for C and D to be computed"
  std::printf("  C: %s, D: %s, C[0][0] = %.4f\n", python_size(C).c_str(), python_size(D).c_str(),
              C[0][0].item<double>());
  const torch::Tensor A_host = A.cpu().to(torch::kFloat64);
  const torch::Tensor B_host = B.cpu().to(torch::kFloat64);
  cs::verify("seed_C_equals_A_mm_A", host_values(C), host_values(A_host.mm(A_host)),
             bars::kMatmulTolerance);
  cs::verify("seed_D_equals_B_mm_B", host_values(D), host_values(B_host.mm(B_host)),
             bars::kMatmulTolerance);
}

// ---------------------------------------------------------------------------------------------
// 5. The broken example of the PyTorch notes: "sum() may start execution before normal_()
//    finishes!", next to its fix.
struct RaceOutcome {
  double got = 0;    // what sum() returned
  double want = 0;   // the sum of A's final values, on the CPU
  double stale = 0;  // the sum of what A held before normal_()
};

RaceOutcome normal_then_sum(const torch::Device& device, const CUDAStream& s, bool wait,
                            const Spinner& spinner, double spin_ms) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();
  // torch.empty leaves whatever memory held; ones make the stale contents recognizable.
  torch::Tensor A = torch::empty({kSeedNormalSide, kSeedNormalSide}, options).fill_(1.0f);
  torch::cuda::synchronize();
  spinner.spin(spin_ms);  // the default stream is busy with earlier work ...
  A.normal_(0.0, 1.0);    // ... so normal_() runs late
  torch::Tensor B;
  {
    c10::cuda::CUDAStreamGuard guard(s);       // with torch.cuda.stream(s):
    if (wait) wait_stream(s, default_stream);  // s.wait_stream(torch.cuda.current_stream())
    B = torch::sum(A);
  }
  torch::cuda::synchronize();
  RaceOutcome outcome;
  outcome.got = B.item<double>();
  outcome.want = A.cpu().to(torch::kFloat64).sum().item<double>();
  outcome.stale = static_cast<double>(A.numel());
  return outcome;
}

void broken_normal_sum(const torch::Device& device, const Spinner& spinner, double spin_ms,
                       bool no_timing) {
  std::printf("\n== 5. normal_() on the default stream, sum() on another (chapter 07) ==\n");
  const CUDAStream s = c10::cuda::getStreamFromPool();  // s = torch.cuda.Stream()
  // A first run loads the kernels and leaves blocks cached for s: the runs below then neither load
  // a module nor call cudaMalloc between the two streams' work, either of which may wait for
  // the device and hide the race.
  normal_then_sum(device, s, true, spinner, spin_ms);
  const RaceOutcome broken = normal_then_sum(device, s, false, spinner, spin_ms);
  const RaceOutcome fixed = normal_then_sum(device, s, true, spinner, spin_ms);
  std::printf("  seed (no wait):         sum() = %12.4f, sum of A = %12.4f\n", broken.got,
              broken.want);
  std::printf("  fixed (s.wait_stream):  sum() = %12.4f, sum of A = %12.4f\n", fixed.got,
              fixed.want);

  const bool broken_is_wrong = !close_to(broken.got, broken.want, bars::kSumTolerance);
  std::string what = "sum() matched A: the race was not lost this time";
  if (broken_is_wrong) {
    what = close_to(broken.got, broken.stale, bars::kSumTolerance)
               ? "sum() read A before normal_() wrote it: it returned " + number(broken.got, 1) +
                     ", the sum of the ones A held before"
               : "sum() returned " + number(broken.got, 4) + " instead of " +
                     number(broken.want, 4) + ": it read A while normal_() was writing it";
  }
  if (no_timing) {
    std::printf("  seed: %s\n", what.c_str());
    cs::check_skipped("seed_normal_sum_race_shown",
                      "--no-timing: whether the race is lost depends on timing");
  } else {
    cs::check_that("seed_normal_sum_race_shown", broken_is_wrong, what);
  }
  cs::check_that("fixed_normal_sum", close_to(fixed.got, fixed.want, bars::kSumTolerance),
                 "with s.wait_stream(default) sum() = " + number(fixed.got, 4) +
                     " matches the CPU's sum of A");
}

// ---------------------------------------------------------------------------------------------
// 6. A tensor made on one stream, read on another and freed on the host while the read is
//    still queued: Tensor::record_stream tells the caching allocator to wait (chapter 10).
struct ReuseOutcome {
  double got = 0;       // what the slow sum() on the side stream returned
  double want = 0;      // the sum of A: one per element
  bool reused = false;  // whether the next tensor received A's memory at once
};

ReuseOutcome free_while_in_use(const torch::Device& device, const CUDAStream& side, bool record,
                               const Spinner& spinner, double spin_ms) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();
  // No cached free block on the default stream may compete with A's for the next allocation of
  // the same size. The side stream's sum() then gets blocks cached for it again, so that no
  // cudaMalloc (which may wait for the device) falls between the two streams' work.
  torch::cuda::synchronize();
  c10::cuda::CUDACachingAllocator::emptyCache();
  {
    c10::cuda::CUDAStreamGuard guard(side);
    (void)torch::ones({kReuseElements}, options).sum().item<double>();
  }

  torch::Tensor A = torch::ones({kReuseElements}, options);  // made on the default stream
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
  const torch::Tensor next = torch::empty({kReuseElements}, options).fill_(7.0f);
  ReuseOutcome outcome;
  outcome.reused = next.data_ptr() == address;
  torch::cuda::synchronize();
  outcome.got = B.item<double>();
  outcome.want = static_cast<double>(kReuseElements);
  return outcome;
}

void record_stream_hazard(const torch::Device& device, const Spinner& spinner, double spin_ms,
                          bool no_timing) {
  std::printf(
      "\n== 6. Freeing a tensor another stream still reads: record_stream (chapter 10) ==\n");
  const CUDAStream side = c10::cuda::getStreamFromPool();
  free_while_in_use(device, side, true, spinner, spin_ms);  // loads the kernels
  const ReuseOutcome broken = free_while_in_use(device, side, false, spinner, spin_ms);
  const ReuseOutcome fixed = free_while_in_use(device, side, true, spinner, spin_ms);
  std::printf(
      "  without record_stream: next tensor got A's memory: %-3s  sum() = %.0f (want %.0f)\n",
      broken.reused ? "yes" : "no", broken.got, broken.want);
  std::printf(
      "  with record_stream:    next tensor got A's memory: %-3s  sum() = %.0f (want %.0f)\n",
      fixed.reused ? "yes" : "no", fixed.got, fixed.want);

  const bool broken_is_wrong = !close_to(broken.got, broken.want, bars::kSumTolerance);
  std::string what;
  if (broken_is_wrong) {
    what =
        "the allocator gave A's block to the next tensor at once; its fill_(7) ran before the "
        "slow sum(), which returned " +
        number(broken.got, 0) + " instead of " + number(broken.want, 0);
  } else {
    what = broken.reused
               ? "A's block was reused, but sum() had read it first this time"
               : "the allocator did not hand A's block out again, so nothing overwrote it";
  }
  if (no_timing) {
    std::printf("  without record_stream: %s\n", what.c_str());
    cs::check_skipped("seed_free_without_record_stream_shown",
                      "--no-timing: whether the overwrite wins depends on timing");
  } else {
    cs::check_that("seed_free_without_record_stream_shown", broken_is_wrong, what);
  }
  cs::check_that("fixed_record_stream",
                 !fixed.reused && close_to(fixed.got, fixed.want, bars::kSumTolerance),
                 "after A.record_stream(side) the allocator kept A's block until the side stream "
                 "was done; sum() = " +
                     number(fixed.got, 0));
}

// ---------------------------------------------------------------------------------------------
// 7. torch.cuda.Stream(priority=p): how PyTorch's argument maps onto the device's range.
void priority_table() {
  std::printf("\n== 7. Stream priorities: torch.cuda.Stream(priority=p) (chapter 03) ==\n");
  int least = 0;
  int greatest = 0;
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
  auto row = [&](const std::string& python, const std::string& cpp, const CUDAStream& stream,
                 int expected) {
    int reported = 0;
    CS_CHECK(cudaStreamGetPriority(stream.stream(), &reported));
    all_match = all_match && reported == expected;
    std::printf("  %-38s %-38s %d%s\n", python.c_str(), cpp.c_str(), reported,
                reported == expected ? "" : "   (expected max(p, greatest))");
  };
  for (int p = least; p >= greatest - 1; --p) {
    row("torch.cuda.Stream(priority=" + std::to_string(p) + ")",
        "getStreamFromPool(" + std::to_string(p) + ")", c10::cuda::getStreamFromPool(p),
        std::max(p, torch_greatest));
  }
  row("", "getStreamFromPool(true)  (high)", c10::cuda::getStreamFromPool(true), torch_greatest);
  row("", "getStreamFromPool(false) (low)", c10::cuda::getStreamFromPool(false), torch_least);
  int default_priority = 0;
  const cudaError_t default_status =
      cudaStreamGetPriority(c10::cuda::getDefaultCUDAStream().stream(), &default_priority);
  if (default_status == cudaSuccess) {
    std::printf("  %-38s %-38s %d\n", "torch.cuda.default_stream()", "getDefaultCUDAStream()",
                default_priority);
  } else {
    (void)cudaGetLastError();  // the query is informative only; clear its error
    std::printf("  %-38s %-38s (%s)\n", "torch.cuda.default_stream()", "getDefaultCUDAStream()",
                cudaGetErrorName(default_status));
  }
  try {
    const CUDAStream positive = c10::cuda::getStreamFromPool(least + 1);
    std::printf("  getStreamFromPool(%d) was accepted (cudaStreamGetPriority %d)\n", least + 1,
                positive.priority());
  } catch (const c10::Error& error) {
    std::string message = error.what_without_backtrace();
    message = message.substr(0, message.find('\n'));
    std::printf("  getStreamFromPool(%d) is refused: %s\n", least + 1, message.c_str());
  }
  cs::check_that("priority_mapping", all_match,
                 "each pool stream's priority is max(p, " + std::to_string(torch_greatest) +
                     "): PyTorch keeps pools for " +
                     std::to_string(torch_least - torch_greatest + 1) + " of the device's " +
                     std::to_string(least - greatest + 1) + " levels");
}

// ---------------------------------------------------------------------------------------------
// 8. torch.device('cuda:0'), .cuda(), .to(device) and torch.cuda.device(k) on the chosen device.
void one_device_seed(int ordinal) {
  std::printf("\n== 8. torch.device and torch.cuda.device on device %d (chapter 06) ==\n", ordinal);
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
              python_device(x.device()).c_str(), python_device(y.device()).c_str(),
              python_device(y2.device()).c_str(), python_device(z.device()).c_str());
  const bool all_here = x.get_device() == ordinal && y.get_device() == ordinal &&
                        y2.get_device() == ordinal && z.get_device() == ordinal;
  cs::check_that("tensors_on_current_device", all_here && current == ordinal,
                 "'cuda', .cuda() and .to('cuda') mean the current device, " +
                     std::to_string(ordinal) +
                     "; inside CUDAGuard cudaGetDevice = " + std::to_string(current));
  cs::verify("seed_z_equals_x_plus_y", host_values(z), host_values(x.cpu() + y.cpu()));
}

// The seed's multi-device example (torch.cuda.device(1), cuda2 = torch.device('cuda:2')).
void multi_device_seed(int device_count) {
  std::printf("\n== The seed's multi-device example (chapter 06) ==\n");
  const int far = device_count > 2 ? 2 : 1;  // the seed's GPU 2, or GPU 1 on a two-GPU machine
  const auto doubles = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Device cuda(torch::kCUDA);
  const torch::Device cuda0("cuda:0");
  const torch::Device cuda2(torch::kCUDA, static_cast<c10::DeviceIndex>(far));
  CS_CHECK(cudaSetDevice(0));
  const torch::Tensor x = torch::tensor({1.0, 2.0}, doubles.device(cuda0));
  const torch::Tensor y = torch::tensor({1.0, 2.0}, doubles).cuda();
  torch::Tensor a, b, b2, c, z, d, e;
  int current_inside = -1;
  c10::DeviceIndex stream_device = -1;
  {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(1));  // with torch.cuda.device(1):
    CS_CHECK(cudaGetDevice(&current_inside));
    a = torch::tensor({1.0, 2.0}, doubles.device(cuda));  // allocates a tensor on GPU 1
    b = torch::tensor({1.0, 2.0}, doubles).cuda();        // transfers a tensor from CPU to GPU 1
    b2 = torch::tensor({1.0, 2.0}, doubles).to(cuda);
    c = a + b;  // on GPU 1
    z = x + y;  // on GPU 0: an operation runs where its tensors are
    d = torch::randn({2}, doubles.device(cuda2));
    e = torch::randn({2}, doubles).to(cuda2);
    stream_device = c10::cuda::getStreamFromPool().device_index();  // a stream of GPU 1
  }
  const std::vector<std::pair<const char*, const torch::Tensor*>> shown = {
      {"x", &x}, {"y", &y}, {"a", &a}, {"b", &b}, {"b2", &b2},
      {"c", &c}, {"z", &z}, {"d", &d}, {"e", &e}};
  for (const auto& [name, tensor] : shown) {
    std::printf("  %-3s.device = %s\n", name, python_device(tensor->device()).c_str());
  }
  cs::check_that("device_guard_sets_device", current_inside == 1,
                 "inside CUDAGuard(1) cudaGetDevice returned " + std::to_string(current_inside));
  cs::check_that(
      "seed_tensors_on_gpu1",
      a.get_device() == 1 && b.get_device() == 1 && b2.get_device() == 1 && c.get_device() == 1,
      "a, b, b2 and c = a + b are on GPU 1");
  cs::check_that("seed_z_stays_on_gpu0", x.get_device() == 0 && z.get_device() == 0,
                 "z = x + y is on GPU 0 even inside the guard");
  cs::check_that("seed_explicit_device", d.get_device() == far && e.get_device() == far,
                 "d and e are on GPU " + std::to_string(far) + " as their device says");
  cs::check_that(
      "pool_stream_of_current_device", stream_device == 1,
      "getStreamFromPool() inside the guard gave a stream of GPU " + std::to_string(stream_device));
  cs::verify("seed_c_equals_a_plus_b", host_values(c), host_values(a.cpu() + b.cpu()));
  cs::verify("seed_z_equals_x_plus_y", host_values(z), host_values(x.cpu() + y.cpu()));
}

}  // namespace

int main(int argc, char** argv) {
  int matrix = 1000;
  int spin_ms = 10;
  int repeats = 10;
  bool multi_device = false;
  cs::CommonOptions common;
  cs::Options options("11_pytorch_streams",
                      "The seeds' PyTorch stream examples through the PyTorch C++ API, with the "
                      "CUDA runtime calls underneath.");
  options.add_int("matrix", &matrix, 16, 4096,
                  "side of the seeds' square tensors (torch.randn / torch.rand / torch.mm)");
  options.add_int("spin-ms", &spin_ms, 1, 1000,
                  "milliseconds of at::cuda::sleep that stand for slow work (the late producer, "
                  "the slow reader, each stream's work)");
  options.add_int("repeats", &repeats, 1, 100, "timed repeats of the two-stream example");
  options.add_flag("multi-device", &multi_device,
                   "run only the seed's multi-device example (needs 2 CUDA devices)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  const cudaDeviceProp prop = cs::select_device(common.device);
  try {
    if (multi_device) {
      cs::require_devices(2, "--multi-device (the seed's torch.cuda.device(1) example)");
      int count = 0;
      CS_CHECK(cudaGetDeviceCount(&count));
      multi_device_seed(count);
      return cs::finish();
    }
    const std::size_t float_bytes = sizeof(float) * static_cast<std::size_t>(matrix) * matrix;
    cs::require_fits_on_device(8 * float_bytes + 2 * sizeof(float) * kReuseElements,
                               "--matrix " + std::to_string(matrix));
    const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(common.device));
    std::printf("PyTorch %s (C++ API), %d device%s visible to torch\n", TORCH_VERSION,
                static_cast<int>(torch::cuda::device_count()),
                torch::cuda::device_count() == 1 ? "" : "s");

    const Spinner spinner(c10::cuda::getStreamFromPool());
    std::printf("at::cuda::sleep spins %.0f cycles per ms on this device\n",
                spinner.cycles_per_ms());

    current_and_pool_streams();
    small_tensor_seeds(device);
    two_stream_seed(device, matrix, spinner, spin_ms, repeats, common, prop);
    matmul_seed(device, matrix);
    broken_normal_sum(device, spinner, spin_ms, common.no_timing);
    record_stream_hazard(device, spinner, spin_ms, common.no_timing);
    priority_table();
    one_device_seed(common.device);
    std::printf(
        "\n(The seed's torch.cuda.device(1) example: run with --multi-device; it needs 2 "
        "devices.)\n");
  } catch (const c10::Error& error) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: PyTorch: %s\n", error.what_without_backtrace());
    return cs::kFailExitCode;
  } catch (const std::exception& error) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", error.what());
    return cs::kFailExitCode;
  }
  std::printf(
      "\nEvery torch.cuda stream call above is a CUDA runtime call of an earlier chapter: a pool "
      "of\ncudaStreamNonBlocking streams, cudaEventRecord + cudaStreamWaitEvent for the waits, "
      "cudaSetDevice\nfor the device guard. Work on a PyTorch stream waits for nothing unless "
      "you say so.\n");
  return cs::finish();
}
