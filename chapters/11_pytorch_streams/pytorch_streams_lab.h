// Chapter 11's machinery: Python-style printing of tensors, the skip reasons of the broken
// examples, part 9's CPU reference and the seed's multi-device example. None of it is
// the lesson; a reader may skip this file. The PyTorch calls the chapter teaches (streams, guards,
// events, record_stream, CUDAGraph) are in pytorch_streams.cpp.
#pragma once

#include <c10/cuda/CUDAFunctions.h>
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
  return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
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

// Why a broken example's "race shown" check is skipped, or "" when it is made: --no-timing, or
// a race not lost under launch blocking or in one hardware queue (the lesson says why).
inline std::string race_skip_reason(bool shown, const cs::LaunchEnvironment& env, bool no_timing) {
  if (no_timing) return "--no-timing: whether the race is lost depends on timing";
  if (shown) return "";
  if (env.launch_blocking) return "CUDA_LAUNCH_BLOCKING=1: launch blocking hides this race";
  return env.max_connections == 1 ? "CUDA_DEVICE_MAX_CONNECTIONS=1: the race is up to timing" : "";
}

// The capture part's checks, skipped where the capture itself failed under CUDA_LAUNCH_BLOCKING=1.
inline void skip_capture_checks(const c10::Error& error) {
  const std::string message = error.what_without_backtrace();
  for (const char* name :
       {"graph_replay_matches_eager", "graph_replay_reads_new_input", "graph_replay_speedup"})
    cs::check_skipped(name, "CUDA_LAUNCH_BLOCKING=1: the capture failed: " +
                                message.substr(0, message.find('\n')));
}

// Part 9's CPU reference: the same fork/join op by op on the CPU, in double.
inline std::vector<double> fork_join_on_cpu(const torch::Tensor& x, int steps) {
  torch::Tensor right = x.cpu().to(torch::kFloat64), left = right;
  for (int i = 0; i < steps; ++i) right = right * 0.5 + 1.0;
  for (int i = 0; i < steps; ++i) left = torch::sin(left) + 0.25;
  return host_values(left + right);
}

// The seed's multi-device example (torch.cuda.device(1), cuda2 = torch.device('cuda:2')); 77 on 1.
inline void multi_device_seed() {
  cs::require_devices(2, "--multi-device (the seed's torch.cuda.device(1) example)");
  const int far = c10::cuda::device_count() > 2 ? 2 : 1;  // the seed's GPU 2, or GPU 1 of two
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
  bool on_gpu1 = true;
  for (const torch::Tensor* t : {&a, &b, &b2, &c}) on_gpu1 &= t->get_device() == 1;
  cs::check_that("seed_tensors_on_gpu1", on_gpu1, "a, b, b2 and c = a + b are on GPU 1");
  cs::check_that("seed_z_stays_on_gpu0", x.get_device() == 0 && z.get_device() == 0,
                 "z = x + y is on GPU 0 even inside the guard");
  cs::check_that("seed_explicit_device", d.get_device() == far && e.get_device() == far,
                 cs::format("d and e are on GPU %d as their device says", far));
  cs::check_that("pool_stream_of_current_device", stream_device == 1,
                 cs::format("getStreamFromPool() in the guard: a stream of GPU %d", stream_device));
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
