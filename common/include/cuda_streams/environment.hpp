/**
 * @file environment.hpp
 * @brief The two environment variables that change what streams can show.
 *
 * - `CUDA_LAUNCH_BLOCKING=1` (a common debugging setting) makes every kernel
 *   launch return only after its kernel has finished. One host thread then
 *   cannot keep kernels of two streams running at once: overlap between their
 *   kernels, and the host running ahead of the GPU's kernels, disappear.
 *   Copies stay asynchronous: on the H200 a `cudaMemcpyAsync` from pinned
 *   memory still returned in microseconds under it (chapter 04 measures it),
 *   so do not assume that the setting hides a race with a copy.
 * - `CUDA_DEVICE_MAX_CONNECTIONS=N` (default 8, at most 32) is the number of
 *   hardware work queues the streams of a process share. Training setups set
 *   it to 1 so that kernels start on the GPU in issue order; streams then
 *   share one queue, and work in one stream can wait behind work in another.
 *   Start order is not run order: independent neighbours in the one queue
 *   still run at the same time (chapters 04 and 09 show it).
 *
 * Both are read by the CUDA runtime when it starts, so a chapter reads them
 * once, before its first CUDA call, and adapts its bars or skips a check,
 * saying why.
 *
 * A control run: `CUDA_STREAMS_CONTROL=1` with `CUDA_LAUNCH_BLOCKING=1` keeps
 * the setting but hides it from the bars, so that every check which measures
 * overlap or a host that runs ahead is evaluated where that effect is gone,
 * and must FAIL. The control tests (label `control`) use it to prove that
 * those checks can fail.
 */
#pragma once

#include <string>

namespace cs {

/// The launch settings this process runs under.
struct LaunchEnvironment {
  bool launch_blocking = false;       ///< CUDA_LAUNCH_BLOCKING=1
  int max_connections = 8;            ///< CUDA_DEVICE_MAX_CONNECTIONS, or the driver's default 8
  bool connections_from_env = false;  ///< whether CUDA_DEVICE_MAX_CONNECTIONS was set
  bool control = false;  ///< CUDA_STREAMS_CONTROL=1: launch_blocking is set but reads false
};

/// Reads the environment; exits 2 when CUDA_DEVICE_MAX_CONNECTIONS is not an integer in 1..32,
/// or when CUDA_STREAMS_CONTROL=1 comes without CUDA_LAUNCH_BLOCKING=1 (a control run needs it).
LaunchEnvironment launch_environment();

/// Parses @p launch_blocking and @p max_connections (either may be null, as from getenv);
/// returns false and sets @p problem for a CUDA_DEVICE_MAX_CONNECTIONS outside 1..32.
bool parse_launch_environment(const char* launch_blocking, const char* max_connections,
                              LaunchEnvironment* environment, std::string* problem);

/// The reason streams issued from one host thread cannot overlap here, or "" when they can
/// (CUDA_LAUNCH_BLOCKING=1 makes every kernel launch wait for its kernel).
std::string no_overlap_reason(const LaunchEnvironment& environment);

/// Prints one line per setting that differs from the default, saying what it changes.
void print_launch_environment(const LaunchEnvironment& environment);

}  // namespace cs
