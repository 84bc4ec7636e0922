// Chapter 11's machinery: Python-style printing of tensors, the words and skip reasons of
// the broken examples, part 9's CPU reference and the seed's multi-device example. None of it is
// the lesson; a reader may skip this file. The PyTorch calls the chapter teaches (streams, guards,
// events, record_stream, CUDAGraph) are in pytorch_streams.cpp.
#pragma once

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

inline std::vector<double> host_values(const torch::Tensor& tensor) {
  const torch::Tensor host = tensor.cpu().to(torch::kFloat64).contiguous();
  const double* values = host.data_ptr<double>();
  return std::vector<double>(values, values + host.numel());
}

// Python's repr of a CUDA integer tensor: "tensor([6, 6], device='cuda:0')".
inline std::string python_repr(const torch::Tensor& tensor) {
  std::string text;
  for (double v : host_values(tensor))
    text += (text.empty() ? "" : ", ") + std::to_string(static_cast<int64_t>(v));
  return "tensor([" + text + "], device='cuda:" + std::to_string(tensor.get_device()) + "')";
}

inline bool close_to(double got, double want, double tolerance) {
  return std::fabs(got - want) <= tolerance * std::max(1.0, std::fabs(want));
}

// Why a "race shown" check of a broken example is skipped, or "" when it is made: --no-timing;
// where the race was not lost, CUDA_LAUNCH_BLOCKING=1 (every launch waited for its work) or one
// hardware queue (the first kernel starts first and the other runs beside it: up to timing).
inline std::string race_skip_reason(bool shown, const cs::LaunchEnvironment& env,
                                    const cs::CommonOptions& common, const std::string& outcome,
                                    const std::string& what_blocking_did) {
  if (common.no_timing) return "--no-timing: whether " + outcome + " depends on timing";
  if (shown || !(env.launch_blocking || env.max_connections == 1)) return "";
  if (env.launch_blocking)
    return "CUDA_LAUNCH_BLOCKING=1: " + what_blocking_did +
           ", so the missing wait did no harm: launch blocking hides this race";
  return "CUDA_DEVICE_MAX_CONNECTIONS=1: in the one hardware queue the kernels start in issue "
         "order and then run side by side, so whether " +
         outcome + " is up to timing";
}

// What the broken normal_()/sum() run of part 5 returned, in words (A held 100 x 100 ones).
inline std::string race_words(double got, double want, double tolerance) {
  if (close_to(got, want, tolerance)) return "sum() matched A: the race was not lost this time";
  if (close_to(got, 100.0 * 100.0, tolerance))
    return cs::format(
        "sum() read A before normal_() wrote it: it returned %.1f, the sum of the ones A held "
        "before",
        got);
  return cs::format("sum() returned %.4f instead of %.4f: it read A while normal_() was writing it",
                    got, want);
}

// What happened to the block of a tensor freed while another stream still read it (part 6).
inline std::string reuse_words(double got, double want, bool reused, double tolerance) {
  if (!close_to(got, want, tolerance))
    return cs::format(
        "the allocator gave A's block to the next tensor at once; its fill_(7) ran before the "
        "slow sum(), which returned %.0f instead of %.0f",
        got, want);
  return reused ? "A's block was reused, but sum() had read it first this time"
                : "the allocator did not hand A's block out again, so nothing overwrote it";
}

// What CUDA_LAUNCH_BLOCKING=1 or one hardware queue did to part 3's fix.
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
  for (const char* name :
       {"graph_replay_matches_eager", "graph_replay_reads_new_input", "graph_replay_speedup"})
    cs::check_skipped(name, "CUDA_LAUNCH_BLOCKING=1: the capture failed: " +
                                message.substr(0, message.find('\n')));
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
  const int far = torch::cuda::device_count() > 2 ? 2 : 1;  // the seed's GPU 2, or GPU 1 of two
  const auto doubles = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Device cuda(torch::kCUDA);
  const torch::Device cuda2(torch::kCUDA, static_cast<c10::DeviceIndex>(far));
  CS_CHECK(cudaSetDevice(0));
  const torch::Tensor x = torch::tensor({1.0, 2.0}, doubles.device(torch::Device("cuda:0")));
  const torch::Tensor y = torch::tensor({1.0, 2.0}, doubles).cuda();
  torch::Tensor a, b, b2, c, z, d, e;
  int current_inside = -1, stream_device = -1;  // inside the guard: cudaGetDevice, a stream's
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
  } catch (const std::exception& error) {
    const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s%s\n", torch_error ? "PyTorch: " : "",
                 torch_error ? torch_error->what_without_backtrace() : error.what());
    return cs::kFailExitCode;
  }
  return cs::finish();
}

}  // namespace lab
