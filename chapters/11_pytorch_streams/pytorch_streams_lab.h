// Chapter 11's machinery: flags, Python-style printing of tensors, a calibrated at::cuda::sleep for
// slow work, the words that explain a lost (or hidden) race, the host clock per iteration, part 9's
// CPU reference. None of it is the lesson; a reader may skip this file. The PyTorch calls the
// chapter teaches (streams, guards, events, record_stream, CUDAGraph) are in pytorch_streams.cpp.
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "cuda_streams.hpp"

namespace lab {

// The chapter's flags, with their defaults.
struct Flags {
  int matrix = 1000;  // parts serialize and matmul: the seeds' 1000 x 1000 tensors
  int spin_ms = 10;   // parts serialize, race, record: the slow work
  int repeats = 10;   // part serialize: timed runs
  int replays = 200;  // part capture: timed iterations, eager and replayed
  bool multi_device = false;
};

inline void add_flags(cs::Options& options, Flags* f) {
  options.add_int("matrix", &f->matrix, 16, 4096,
                  "side of the seeds' square tensors (torch.randn / torch.rand / torch.mm)");
  options.add_int("spin-ms", &f->spin_ms, 1, 1000,
                  "milliseconds of at::cuda::sleep that stand for slow work (the late producer, "
                  "the slow reader, each stream's work)");
  options.add_int("repeats", &f->repeats, 1, 100, "timed repeats of the two-stream example");
  options.add_int("replays", &f->replays, 1, 10000,
                  "iterations timed eagerly and as graph replays (part capture)");
  options.add_flag("multi-device", &f->multi_device,
                   "run only the seed's multi-device example (needs 2 CUDA devices)");
}

// Exits 2 when --matrix N's tensors (eight N x N floats, and PyTorch's own) cannot fit.
inline void require_matrix_fits(int matrix) {
  const std::size_t floats = static_cast<std::size_t>(matrix) * matrix;
  cs::require_fits_on_device(8 * sizeof(float) * floats + (64u << 20),
                             cs::format("--matrix %d", matrix));
}

inline std::string handle_text(cudaStream_t stream) {
  return stream ? cs::format("%p", static_cast<void*>(stream)) : "0 (the legacy default stream)";
}

// Part 1's two streams, as Python and C++ name them.
inline void print_streams(cudaStream_t current, cudaStream_t custom, bool non_blocking) {
  std::printf("  torch.cuda.current_stream() = getCurrentCUDAStream(): cudaStream_t %s\n",
              handle_text(current).c_str());
  std::printf("  torch.cuda.Stream()         = getStreamFromPool():    cudaStream_t %s, flags %s\n",
              handle_text(custom).c_str(),
              non_blocking ? "cudaStreamNonBlocking" : "cudaStreamDefault");
}

// Python's repr of a one-dimensional integer tensor: "tensor([6, 6], device='cuda:0')".
inline std::string python_repr(const torch::Tensor& tensor) {
  const torch::Tensor host = tensor.cpu().to(torch::kInt64).contiguous();
  const int64_t* values = host.data_ptr<int64_t>();
  std::string text = "tensor([";
  for (int64_t i = 0; i < host.numel(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  text += "]";
  if (tensor.is_cuda()) text += ", device='cuda:" + std::to_string(tensor.get_device()) + "'";
  return text + ")";
}

// Python's repr of a tensor's shape, e.g. "torch.Size([1000, 1000])".
inline std::string python_size(const torch::Tensor& tensor) {
  std::string text = "torch.Size([";
  for (std::size_t i = 0; i < tensor.sizes().size(); ++i) {
    text += (i ? ", " : "") + std::to_string(tensor.sizes()[i]);
  }
  return text + "])";
}

// Python's repr of a device, e.g. "device(type='cuda', index=1)".
inline std::string python_device(const torch::Device& device) {
  return "device(type='cuda', index=" + std::to_string(device.index()) + ")";
}

inline std::vector<double> host_values(const torch::Tensor& tensor) {
  const torch::Tensor host = tensor.cpu().to(torch::kFloat64).contiguous();
  const double* values = host.data_ptr<double>();
  return std::vector<double>(values, values + host.numel());
}

// The CPU's product m.mm(m) in double precision: the reference of part 4's torch.mm.
inline std::vector<double> host_square(const torch::Tensor& m) {
  const torch::Tensor host = m.cpu().to(torch::kFloat64);
  return host_values(host.mm(host));
}

inline bool close_to(double got, double want, double tolerance) {
  return std::fabs(got - want) <= tolerance * std::max(1.0, std::fabs(want));
}

// Slow work: at::cuda::sleep (torch.cuda._sleep) spins one GPU thread about --spin-ms ms on the
// current stream, in clock cycles per ms measured here with events (cudaEventElapsedTime).
class Spinner {
 public:
  Spinner(const c10::cuda::CUDAStream& stream, double spin_ms) : spin_ms_(spin_ms) {
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
    const double ms = cs::median(samples);
    cycles_per_ms_ = static_cast<double>(probe_cycles) / std::max(ms, 1e-3);
  }
  // Enqueues a spin of about --spin-ms milliseconds on the current stream.
  void spin() const { at::cuda::sleep(static_cast<int64_t>(spin_ms_ * cycles_per_ms_)); }
  double cycles_per_ms() const { return cycles_per_ms_; }

 private:
  double spin_ms_ = 0;
  double cycles_per_ms_ = 0;
};

// What one normal_()/sum() run of part 5 returned.
struct RaceOutcome {
  double got = 0, want = 0, stale = 0;  // sum() returned; sum of A on the CPU; of A's old ones
};

inline void print_race(const RaceOutcome& broken, const RaceOutcome& fixed) {
  constexpr const char* kRow = "  %-23s sum() = %12.4f, sum of A = %12.4f\n";
  std::printf(kRow, "seed (no wait):", broken.got, broken.want);
  std::printf(kRow, "fixed (s.wait_stream):", fixed.got, fixed.want);
}

// torch.cuda.empty_cache() (no cached block of the default stream competes with part 6's A),
// then blocks cached for @p side again (no cudaMalloc falls between the two streams' work).
inline void fresh_cache(const c10::cuda::CUDAStream& side, int64_t elements) {
  torch::cuda::synchronize();
  c10::cuda::CUDACachingAllocator::emptyCache();
  c10::cuda::CUDAStreamGuard guard(side);
  (void)torch::ones({elements}, torch::dtype(torch::kFloat32).device(torch::kCUDA)).sum().item();
}

// What one free-while-read run of part 6 saw.
struct ReuseOutcome {
  double got = 0, want = 0;  // what the slow sum() on the side stream returned; the right sum
  bool reused = false;       // whether the next tensor received A's memory at once
  bool reader_busy = false;  // whether sum() was still queued on the side stream when A was freed
};

inline void print_reuse(const ReuseOutcome& broken, const ReuseOutcome& fixed) {
  for (const auto& [name, r] : {std::pair{"without", broken}, std::pair{"with   ", fixed}}) {
    std::printf("  %s record_stream: next tensor got A's memory: %-3s  sum() = %.0f (want %.0f)\n",
                name, r.reused ? "yes" : "no", r.got, r.want);
  }
}

// Why fixed_record_stream cannot show record_stream at work: nothing was left to wait for.
inline std::string reader_done_reason(const cs::LaunchEnvironment& env) {
  const std::string done =
      "sum() on the side stream had finished before A was freed, so the allocator could hand A's "
      "block out again at once: record_stream had nothing to wait for";
  return env.launch_blocking ? "CUDA_LAUNCH_BLOCKING=1: " + done : done;
}

// What the broken normal_()/sum() run returned, in words.
inline std::string race_words(double got, double want, double stale, double tolerance) {
  if (close_to(got, want, tolerance)) return "sum() matched A: the race was not lost this time";
  if (close_to(got, stale, tolerance)) {
    return cs::format(
        "sum() read A before normal_() wrote it: it returned %.1f, the sum of the ones A held "
        "before",
        got);
  }
  return cs::format("sum() returned %.4f instead of %.4f: it read A while normal_() was writing it",
                    got, want);
}

// What happened to the block of a tensor freed while another stream still read it, in words.
inline std::string reuse_words(double got, double want, bool reused, double tolerance) {
  if (!close_to(got, want, tolerance)) {
    return cs::format(
        "the allocator gave A's block to the next tensor at once; its fill_(7) ran before the "
        "slow sum(), which returned %.0f instead of %.0f",
        got, want);
  }
  return reused ? "A's block was reused, but sum() had read it first this time"
                : "the allocator did not hand A's block out again, so nothing overwrote it";
}

// Host time per iteration: @p iterations back to back + one sync, median of @p rounds (+1 untimed).
template <class Work>
double per_iteration_ms(int iterations, int rounds, Work&& work) {
  const cs::Stats stats = cs::time_device_ms(1, rounds, [&] {
    for (int i = 0; i < iterations; ++i) work();
  });
  return stats.median / iterations;
}

// Prints one row of the priority table and returns whether the stream's priority is @p expected.
inline bool priority_row(const std::string& python, const std::string& cpp,
                         const c10::cuda::CUDAStream& stream, int expected) {
  int reported = 0;
  CS_CHECK(cudaStreamGetPriority(stream.stream(), &reported));
  std::printf("  %-38s %-38s %d%s\n", python.c_str(), cpp.c_str(), reported,
              reported == expected ? "" : "   (expected max(p, greatest))");
  return reported == expected;
}

// Why a "race shown" check of a broken example is skipped, or "" when it is made: --no-timing,
// or CUDA_LAUNCH_BLOCKING=1 where the race was not lost (every launch waited for its work).
inline std::string race_skip_reason(bool shown, const cs::LaunchEnvironment& env,
                                    const cs::CommonOptions& common, const std::string& outcome,
                                    const std::string& what_blocking_did) {
  if (common.no_timing) return "--no-timing: whether " + outcome + " depends on timing";
  if (!env.launch_blocking || shown) return "";
  return "CUDA_LAUNCH_BLOCKING=1: " + what_blocking_did +
         ", so the missing wait did no harm: launch blocking hides this race";
}

// cs::check_that(), or `CHECK <name>: skipped (<skip>)` when @p skip is not empty.
inline void check_that_or_skip(const std::string& skip, const std::string& name, bool passed,
                               const std::string& detail) {
  if (skip.empty()) return (void)cs::check_that(name, passed, detail);
  cs::check_skipped(name, skip);
}

// A broken example's "shown" check, or what it did (after @p label) and the check skipped.
inline void check_shown_or_skip(const std::string& name, bool shown, const std::string& skip,
                                const std::string& label, const std::string& what) {
  if (!skip.empty()) std::printf("  %s: %s\n", label.c_str(), what.c_str());
  check_that_or_skip(skip, name, shown, what);
}

// The two timings of part 3.
inline void print_serialize_times(const Flags& f, double seed_ms, double fixed_ms) {
  std::printf("  each block spins %d ms before its multiply (median of %d runs):\n", f.spin_ms,
              f.repeats);
  std::printf("    synchronize() inside each block (the seed) %8.2f ms\n", seed_ms);
  std::printf("    synchronize() once after both blocks       %8.2f ms\n", fixed_ms);
}

// Why seed_sync_serializes cannot hold in this run, or "": --no-timing, a device without
// concurrent kernels, CUDA_LAUNCH_BLOCKING=1 or one hardware queue (the fix serializes too).
inline std::string serialize_skip_reason(const cs::LaunchEnvironment& env, bool concurrent_kernels,
                                         const cs::CommonOptions& common) {
  const std::string one_queue =
      env.max_connections == 1
          ? "CUDA_DEVICE_MAX_CONNECTIONS=1: stream1's multiply waits for its spin at the head of "
            "the one hardware queue and holds stream2's spin behind it, so the fix serializes too"
          : "";
  const std::string no_concurrency =
      concurrent_kernels ? "" : "this device reports concurrentKernels = 0: no two streams overlap";
  return cs::first_reason(
      {common.timing_skip_reason(), no_concurrency, cs::no_overlap_reason(env), one_queue});
}

// What CUDA_LAUNCH_BLOCKING=1 or one hardware queue did to the two-stream example.
inline void print_serialize_setting(const cs::LaunchEnvironment& env) {
  if (env.launch_blocking) {
    std::printf(
        "  Under CUDA_LAUNCH_BLOCKING=1 each launch returned only after its spin, so the host\n"
        "  issued stream2's block only after stream1's had finished: the fix serialized too.\n");
  } else if (env.max_connections == 1) {
    std::printf(
        "  With one hardware queue stream1's multiply waits for its spin at the head of the\n"
        "  queue and holds stream2's spin behind it: the fix serialized too.\n");
  }
}

// PyTorch's own priority range, and the priority table's heading.
inline void print_priority_header(int torch_least, int torch_greatest) {
  std::printf("  CUDAStream::priority_range() (torch.cuda.Stream.priority_range()): %d .. %d\n",
              torch_least, torch_greatest);
  std::printf("\n  %-38s %-38s %s\n", "Python", "C++", "cudaStreamGetPriority");
}

// Prints whether PyTorch accepts a priority above the device's least (a positive one).
inline void print_positive_priority(int priority) {
  try {
    const c10::cuda::CUDAStream positive = c10::cuda::getStreamFromPool(priority);
    std::printf("  getStreamFromPool(%d) was accepted (cudaStreamGetPriority %d)\n", priority,
                positive.priority());
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    std::printf("  getStreamFromPool(%d) is refused: %s\n", priority,
                message.substr(0, message.find('\n')).c_str());
  }
}

// Each tensor's device, as Python prints it, on one line.
inline void print_devices(
    std::initializer_list<std::pair<const char*, const torch::Tensor*>> tensors) {
  std::string line;
  for (const auto& [name, t] : tensors) {
    line += cs::format("%s%s.device = %s", line.empty() ? "" : ", ", name,
                       python_device(t->device()).c_str());
  }
  std::printf("  %s\n", line.c_str());
}

// The tensors and facts of the seed's multi-device example.
struct MultiDeviceSeed {
  torch::Tensor x, y, a, b, b2, c, z, d, e;
  int far = 1;              // the seed's GPU 2, or GPU 1 on a two-GPU machine
  int current_inside = -1;  // cudaGetDevice inside CUDAGuard(1)
  int stream_device = -1;   // the device of getStreamFromPool() inside the guard
};

inline void report_multi_device(const MultiDeviceSeed& r) {
  const std::vector<std::pair<const char*, const torch::Tensor*>> shown = {
      {"x", &r.x}, {"y", &r.y}, {"a", &r.a}, {"b", &r.b}, {"b2", &r.b2},
      {"c", &r.c}, {"z", &r.z}, {"d", &r.d}, {"e", &r.e}};
  for (const auto& [name, t] : shown) {
    std::printf("  %-3s.device = %s\n", name, python_device(t->device()).c_str());
  }
  cs::check_that("device_guard_sets_device", r.current_inside == 1,
                 cs::format("inside CUDAGuard(1) cudaGetDevice returned %d", r.current_inside));
  cs::check_that("seed_tensors_on_gpu1",
                 r.a.get_device() == 1 && r.b.get_device() == 1 && r.b2.get_device() == 1 &&
                     r.c.get_device() == 1,
                 "a, b, b2 and c = a + b are on GPU 1");
  cs::check_that("seed_z_stays_on_gpu0", r.x.get_device() == 0 && r.z.get_device() == 0,
                 "z = x + y is on GPU 0 even inside the guard");
  cs::check_that("seed_explicit_device", r.d.get_device() == r.far && r.e.get_device() == r.far,
                 cs::format("d and e are on GPU %d as their device says", r.far));
  cs::check_that(
      "pool_stream_of_current_device", r.stream_device == 1,
      cs::format("getStreamFromPool() inside the guard gave a stream of GPU %d", r.stream_device));
  cs::verify("seed_c_equals_a_plus_b", host_values(r.c), host_values(r.a.cpu() + r.b.cpu()));
  cs::verify("seed_z_equals_x_plus_y", host_values(r.z), host_values(r.x.cpu() + r.y.cpu()));
}

// The capture part's checks, skipped where the capture itself failed under CUDA_LAUNCH_BLOCKING=1.
inline void skip_capture_checks(const c10::Error& error) {
  const std::string message = error.what_without_backtrace();
  const std::string why =
      "CUDA_LAUNCH_BLOCKING=1: the capture failed: " + message.substr(0, message.find('\n'));
  for (const char* name :
       {"graph_replay_matches_eager", "graph_replay_reads_new_input", "graph_replay_speedup"}) {
    cs::check_skipped(name, why);
  }
}

// Part 9's CPU reference, in double, and its tolerance (float rounding ~1e-6; stale input ~0.1).
constexpr double kReplayTolerance = 1e-5;
inline torch::Tensor fork_join_on_cpu(const torch::Tensor& x, int steps) {
  torch::Tensor right = x.cpu().to(torch::kFloat64), left = right;
  for (int i = 0; i < steps; ++i) right = right * 0.5 + 1.0;
  for (int i = 0; i < steps; ++i) left = torch::sin(left) + 0.25;
  return left + right;
}

// Why graph_replay_speedup is not claimed ("" if it is): --no-timing, or under 20 replays (one
// synchronize after each batch then weighs too much on the time per iteration).
inline std::string capture_skip_reason(const cs::CommonOptions& common, int replays) {
  return cs::first_reason(
      {common.timing_skip_reason(), replays < 20 ? "fewer than 20 replays" : ""});
}

inline void print_capture_costs(int kernels, int iterations, double eager_ms, double replay_ms) {
  std::printf("  %d kernels on two streams, %d iterations back to back (median of 5 runs):\n",
              kernels, iterations);
  std::printf("    eager issue, op by op      %s per iteration\n", cs::format_ms(eager_ms).c_str());
  std::printf("    CUDAGraph::replay()        %s per iteration\n",
              cs::format_ms(replay_ms).c_str());
}

// The seed's multi-device example (torch.cuda.device(1), cuda2 = torch.device('cuda:2')); 77 on 1.
inline void multi_device_seed() {
  cs::require_devices(2, "--multi-device (the seed's torch.cuda.device(1) example)");
  MultiDeviceSeed r;
  r.far = torch::cuda::device_count() > 2 ? 2 : 1;  // the seed's GPU 2, or GPU 1 on two GPUs
  const auto doubles = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Device cuda(torch::kCUDA);
  const torch::Device cuda2(torch::kCUDA, static_cast<c10::DeviceIndex>(r.far));
  CS_CHECK(cudaSetDevice(0));
  r.x = torch::tensor({1.0, 2.0}, doubles.device(torch::Device("cuda:0")));
  r.y = torch::tensor({1.0, 2.0}, doubles).cuda();
  {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(1));  // with torch.cuda.device(1):
    CS_CHECK(cudaGetDevice(&r.current_inside));
    r.a = torch::tensor({1.0, 2.0}, doubles.device(cuda));  // allocates a tensor on GPU 1
    r.b = torch::tensor({1.0, 2.0}, doubles).cuda();        // transfers a tensor from CPU to GPU 1
    r.b2 = torch::tensor({1.0, 2.0}, doubles).to(cuda);
    r.c = r.a + r.b;  // on GPU 1
    r.z = r.x + r.y;  // on GPU 0: an operation runs where its tensors are
    r.d = torch::randn({2}, doubles.device(cuda2));
    r.e = torch::randn({2}, doubles).to(cuda2);
    r.stream_device = c10::cuda::getStreamFromPool().device_index();  // a stream of GPU 1
  }
  report_multi_device(r);  // each tensor's device, and the CHECK lines
}

// The PyTorch version and the spinner's calibration, printed once before the parts.
inline void print_setup(const Spinner& spinner) {
  std::printf("PyTorch %s (C++ API), %d device(s) visible to torch\n", TORCH_VERSION,
              static_cast<int>(torch::cuda::device_count()));
  std::printf("at::cuda::sleep spins %.0f cycles per ms on this device\n", spinner.cycles_per_ms());
}

// Runs the parts; a PyTorch or C++ exception becomes "error: ..." and the failure exit status.
template <class Parts>
int run_or_fail(Parts&& parts) {
  try {
    parts();
  } catch (const c10::Error& error) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: PyTorch: %s\n", error.what_without_backtrace());
    return cs::kFailExitCode;
  } catch (const std::exception& error) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", error.what());
    return cs::kFailExitCode;
  }
  return cs::finish();
}

}  // namespace lab
