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

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <string>
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

// The seed's multi-device example (torch.cuda.device(1), cuda2 = torch.device('cuda:2')); 77 on 1.
inline void multi_device_seed() {
  cs::require_devices(2, "--multi-device (the seed's torch.cuda.device(1) example)");
  torch::Tensor x, y, a, b, b2, c, z, d, e;
  int current_inside = -1;  // cudaGetDevice inside CUDAGuard(1)
  int stream_device = -1;   // the device of getStreamFromPool() inside the guard
  // The seed's GPU 2, or GPU 1 on a two-GPU machine.
  const int far = torch::cuda::device_count() > 2 ? 2 : 1;
  const auto doubles = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Device cuda(torch::kCUDA);
  const torch::Device cuda2(torch::kCUDA, static_cast<c10::DeviceIndex>(far));
  CS_CHECK(cudaSetDevice(0));
  x = torch::tensor({1.0, 2.0}, doubles.device(torch::Device("cuda:0")));
  y = torch::tensor({1.0, 2.0}, doubles).cuda();
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
  cs::check_that("device_guard_sets_device", current_inside == 1,
                 cs::format("inside CUDAGuard(1) cudaGetDevice returned %d", current_inside));
  cs::check_that(
      "seed_tensors_on_gpu1",
      a.get_device() == 1 && b.get_device() == 1 && b2.get_device() == 1 && c.get_device() == 1,
      "a, b, b2 and c = a + b are on GPU 1");
  cs::check_that("seed_z_stays_on_gpu0", x.get_device() == 0 && z.get_device() == 0,
                 "z = x + y is on GPU 0 even inside the guard");
  cs::check_that("seed_explicit_device", d.get_device() == far && e.get_device() == far,
                 cs::format("d and e are on GPU %d as their device says", far));
  cs::check_that(
      "pool_stream_of_current_device", stream_device == 1,
      cs::format("getStreamFromPool() inside the guard gave a stream of GPU %d", stream_device));
  cs::verify("seed_c_equals_a_plus_b", host_values(c), host_values(a.cpu() + b.cpu()));
  cs::verify("seed_z_equals_x_plus_y", host_values(z), host_values(x.cpu() + y.cpu()));
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
