/**
 * @file device.hpp
 * @brief Device selection and the `SKIP:` / exit 77 rule.
 *
 * A chapter that cannot run here (no CUDA device, no driver, or fewer
 * devices than a part needs) prints exactly one line that starts with
 * `SKIP:` and exits 77, which CTest reports as "skipped".
 */
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace cs {

/// Exit status of a program that cannot run on this machine.
inline constexpr int kSkipExitCode = 77;
/// Exit status of a bad command line.
inline constexpr int kUsageExitCode = 2;
/// Exit status of a failed check.
inline constexpr int kFailExitCode = 1;

/// Prints `SKIP: <reason>` on stdout and exits 77.
[[noreturn]] void skip(const std::string& reason);

/// Prints `<program>: error: <message>` on stderr and exits 2 (a bad command line), as
/// parse_or_exit() does for a flag it rejects; `error: <message>` before any program was named.
[[noreturn]] void usage_error(const std::string& message);

/// Names the program in usage_error()'s messages (parse_or_exit() calls it).
void set_program_name(const std::string& name);

/// The number of CUDA devices; skips (77) when there is no device or driver.
int device_count_or_skip();

/// Skips (77) with a message naming @p part when fewer than @p needed devices exist.
void require_devices(int needed, const std::string& part);

/**
 * @brief Makes @p ordinal the current device and prints a one-line description of it.
 *
 * Skips (77) without a device; exits 2 when @p ordinal is not a device of
 * this machine (the message names `--device` and the valid range).
 */
cudaDeviceProp select_device(int ordinal);

/// Exits 2 with a message naming @p what when @p bytes exceed 90% of the current device's free
/// memory (the rest is left for the runtime's own allocations).
void require_fits_on_device(std::size_t bytes, const std::string& what);

/// Exits 2 with a message naming @p what when @p bytes exceed half of this machine's physical
/// memory, before anything is allocated (where the size of memory is unknown, nothing is checked).
void require_fits_in_host_memory(double bytes, const std::string& what);

/// Formats a byte count with a binary unit ("64.0 MiB").
std::string format_bytes(double bytes);

}  // namespace cs
