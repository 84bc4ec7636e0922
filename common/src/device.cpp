#include "cuda_streams/device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda_streams/check.hpp"

namespace cs {

void skip(const std::string& reason) {
  std::printf("SKIP: %s\n", reason.c_str());
  std::fflush(stdout);
  std::exit(kSkipExitCode);
}

namespace {
std::string& program_name() {
  static std::string name;
  return name;
}
}  // namespace

void set_program_name(const std::string& name) {
  program_name() = name;
}

void usage_error(const std::string& message) {
  std::fflush(stdout);
  const std::string& name = program_name();
  std::fprintf(stderr, "%s%serror: %s\n", name.c_str(), name.empty() ? "" : ": ", message.c_str());
  std::exit(kUsageExitCode);
}

int device_count_or_skip() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (is_no_device_error(status)) {
    skip(std::string("no usable CUDA device (") + cudaGetErrorName(status) + ": " +
         cudaGetErrorString(status) + ")");
  }
  CS_CHECK(status);
  if (count == 0) skip("no CUDA device found");
  return count;
}

void require_devices(int needed, const std::string& part) {
  const int count = device_count_or_skip();
  if (count < needed) {
    skip(part + " needs " + std::to_string(needed) + " CUDA devices, this machine has " +
         std::to_string(count));
  }
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return text;
}

cudaDeviceProp select_device(int ordinal) {
  const int count = device_count_or_skip();
  if (ordinal < 0 || ordinal >= count) {
    usage_error("--device " + std::to_string(ordinal) + ": this machine has " +
                std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") + " (0.." +
                std::to_string(count - 1) + ")");
  }
  CS_CHECK(cudaSetDevice(ordinal));
  cudaDeviceProp prop{};
  CS_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  std::printf("Device %d: %s (compute capability %d.%d, %d SMs, %d copy engine%s, %s)\n", ordinal,
              prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.asyncEngineCount,
              prop.asyncEngineCount == 1 ? "" : "s",
              format_bytes(static_cast<double>(prop.totalGlobalMem)).c_str());
  return prop;
}

void require_fits_on_device(std::size_t bytes, const std::string& what) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  CS_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Leave room for the runtime's own allocations.
  const double usable = static_cast<double>(free_bytes) * 0.9;
  if (static_cast<double>(bytes) > usable) {
    usage_error(what + ": needs " + format_bytes(static_cast<double>(bytes)) +
                " of device memory, but only " + format_bytes(usable) +
                " is free for it on this device");
  }
}

void require_fits_in_host_memory(double bytes, const std::string& what) {
  const double physical = 1.0 * std::max(0L, sysconf(_SC_PHYS_PAGES)) *
                          std::max(0L, sysconf(_SC_PAGE_SIZE));  // 0: unknown
  if (physical > 0 && bytes > 0.5 * physical)
    usage_error(what + ": needs " + format_bytes(bytes) +
                " of host memory, more than half of this machine's " + format_bytes(physical));
}

}  // namespace cs
