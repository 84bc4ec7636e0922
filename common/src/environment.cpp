#include "cuda_streams/environment.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda_streams/device.hpp"

namespace cs {

bool parse_launch_environment(const char* launch_blocking, const char* max_connections,
                              LaunchEnvironment* environment, std::string* problem) {
  LaunchEnvironment parsed;
  parsed.launch_blocking = launch_blocking != nullptr && std::string(launch_blocking) == "1";
  if (max_connections != nullptr && *max_connections != '\0') {
    char* end = nullptr;
    const long value = std::strtol(max_connections, &end, 10);
    if (*end != '\0' || value < 1 || value > 32) {
      *problem = std::string("CUDA_DEVICE_MAX_CONNECTIONS must be an integer from 1 to 32, got '") +
                 max_connections + "'";
      return false;
    }
    parsed.max_connections = static_cast<int>(value);
    parsed.connections_from_env = true;
  }
  *environment = parsed;
  return true;
}

LaunchEnvironment launch_environment() {
  LaunchEnvironment environment;
  std::string problem;
  if (!parse_launch_environment(std::getenv("CUDA_LAUNCH_BLOCKING"),
                                std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), &environment,
                                &problem)) {
    usage_error(problem);
  }
  const char* control = std::getenv("CUDA_STREAMS_CONTROL");
  if (control != nullptr && std::string(control) == "1") {
    if (!environment.launch_blocking) {
      usage_error(
          "CUDA_STREAMS_CONTROL=1 makes a control run under CUDA_LAUNCH_BLOCKING=1, "
          "which is not set");
    }
    environment.control = true;
    environment.launch_blocking = false;  // the setting stays; the bars no longer see it
  }
  return environment;
}

std::string no_overlap_reason(const LaunchEnvironment& environment) {
  if (environment.launch_blocking) {
    return "CUDA_LAUNCH_BLOCKING=1: each kernel launch returns only when its kernel is done, so "
           "kernels issued from one thread cannot overlap";
  }
  return "";
}

void print_launch_environment(const LaunchEnvironment& environment) {
  if (environment.control) {
    std::printf(
        "Control run: CUDA_LAUNCH_BLOCKING=1 with CUDA_STREAMS_CONTROL=1: the bars ignore the "
        "setting,\n             so checks of overlap and of a host running ahead must FAIL.\n");
  }
  if (environment.launch_blocking) {
    std::printf(
        "Environment: CUDA_LAUNCH_BLOCKING=1: every kernel launch waits for its kernel to finish, "
        "so one\n             host thread cannot keep kernels of two streams running at once.\n");
  }
  if (environment.connections_from_env) {
    // With one queue, work starts in the order it was issued; independent neighbours in the
    // queue still overlap (chapters 04 and 09 show it), so "run order" would say too much.
    std::printf(
        "Environment: CUDA_DEVICE_MAX_CONNECTIONS=%d: the streams share %d hardware "
        "work queue%s.\n",
        environment.max_connections, environment.max_connections,
        environment.max_connections == 1 ? " (work starts in issue order)" : "s");
  }
}

}  // namespace cs
