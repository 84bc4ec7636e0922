/**
 * @file check.hpp
 * @brief Error checking for CUDA runtime calls and kernel launches.
 *
 * Every CUDA runtime call in the chapters is wrapped in CS_CHECK(...). On
 * failure the program prints the file, the line, the expression and the
 * error's name and text, then exits with status 1. When the error says that
 * this machine has no usable CUDA device or driver, it prints one `SKIP:`
 * line and exits 77 instead (see device.hpp), so that CTest reports the test
 * as skipped rather than failed.
 *
 * Kernel launches return nothing, so a bad configuration is only visible
 * through cudaGetLastError(): CS_CHECK_LAUNCH() right after a launch turns
 * it into the same report.
 */
#pragma once

#include <cuda_runtime.h>

namespace cs {

/// True for the errors that mean "no GPU here": no device, or no (or too old) driver.
bool is_no_device_error(cudaError_t error);

namespace detail {
/// Reports @p error (if any) for @p expression at @p file:@p line; exits 1, or 77 for no device.
void check_cuda(cudaError_t error, const char* expression, const char* file, int line);
}  // namespace detail

}  // namespace cs

/// Checks a CUDA runtime call: prints file, line, expression and error, then exits on failure.
#define CS_CHECK(expression) ::cs::detail::check_cuda((expression), #expression, __FILE__, __LINE__)

/// Checks the launch that was just issued (bad configuration, missing kernel image, ...).
#define CS_CHECK_LAUNCH()                                                                    \
  ::cs::detail::check_cuda(cudaGetLastError(), "kernel launch (cudaGetLastError)", __FILE__, \
                           __LINE__)
