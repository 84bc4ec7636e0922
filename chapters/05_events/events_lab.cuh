// Chapter 05's machinery: its flags, the PyTorch-to-CUDA table it prints, the host's own unit of
// work, the process's CPU clock, the cost loop of record + query, and the name of the device's
// schedule flag. None of it is the lesson; a reader may skip this file. The calls the chapter
// teaches are written out in events.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

namespace events_lab {

// The chapter's flags, with their defaults.
struct Flags {
  int kernel_ms = 10;   // part timing
  int producer_ms = 2;  // part dependency
  int rounds = 20;
  std::size_t elements = 1 << 20;
  int overlap_ms = 20;  // part query
  int records = 5000;   // part flags
  int wait_ms = 50;
  int repeats = 5;  // parts timing and flags
};

inline void add_flags(cs::Options& options, Flags* f) {
  options.add_int("kernel-ms", &f->kernel_ms, 1, 100,
                  "length of the kernel timed right and wrong, in ms");
  options.add_int("producer-ms", &f->producer_ms, 1, 100,
                  "how long the producer waits before it writes, in ms");
  options.add_int("rounds", &f->rounds, 1, 100, "producer/consumer rounds, each checked");
  options.add_size("elements", &f->elements, 1, std::size_t{1} << 26,
                   "values the producer writes and the consumer reads in each round");
  options.add_int("overlap-ms", &f->overlap_ms, 1, 100,
                  "length of the kernel the host works beside, polling cudaEventQuery, in ms");
  options.add_int("records", &f->records, 1, 100000, "events recorded and queried per cost sample");
  options.add_int("wait-ms", &f->wait_ms, 1, 200,
                  "length of the kernel waited for with and without blocking sync, in ms");
  options.add_int("repeats", &f->repeats, 1, 100,
                  "timed samples of each measurement (median reported)");
}

// The reason a check cannot hold under CUDA_LAUNCH_BLOCKING=1, or "" without it: the launch
// returns only after its kernel has run, so `consequence`.
inline std::string launch_waits(const cs::LaunchEnvironment& env, const std::string& consequence) {
  return env.launch_blocking
             ? "CUDA_LAUNCH_BLOCKING=1: the launch returned only after the kernel, so " +
                   consequence
             : "";
}

// One row of part timing's table: what was timed, and the median it measured.
inline void print_row(const char* what, double ms) {
  std::printf("  %-62s %s\n", what, cs::format_ms(ms).c_str());
}

// PyTorch's stream and event methods (the seed's and their relatives), and the runtime calls
// under them.
inline void print_pytorch_table() {
  const char* rows[][2] = {
      {"PyTorch (the seed's methods)", "CUDA runtime"},
      {"e = s.record_event()", "cudaEventRecord(e, s)"},
      {"s.wait_event(e)", "cudaStreamWaitEvent(s, e, 0)"},
      {"s.wait_stream(other)", "cudaEventRecord(e, other); cudaStreamWaitEvent(s, e, 0)"},
      {"s.synchronize()", "cudaStreamSynchronize(s)"},
      {"e.synchronize()", "cudaEventSynchronize(e)"},
      {"e.query(), s.query()", "cudaEventQuery(e), cudaStreamQuery(s)"},
      {"start.elapsed_time(end)", "cudaEventElapsedTime(&ms, start, end)"},
      {"torch.cuda.Event()", "cudaEventCreateWithFlags(&e, cudaEventDisableTiming)"},
      {"torch.cuda.Event(enable_timing=True)", "cudaEventCreate(&e)"},
      {"torch.cuda.Event(blocking=True)", "... | cudaEventBlockingSync"},
      {"torch.cuda.synchronize()", "cudaDeviceSynchronize()"},
  };
  for (const auto& row : rows) std::printf("  %-38s %s\n", row[0], row[1]);
}

constexpr int kHostWorkSteps = 2000;  // xorshift steps in one unit of the host's own work

// One unit of the host's own work (a stand-in for preparing the next batch): kHostWorkSteps
// xorshift steps on a state kept in a volatile, so that the compiler cannot drop the work.
inline void host_work_unit() {
  static volatile std::uint64_t sink = 88172645463325252ull;
  std::uint64_t state = sink;
  for (int i = 0; i < kHostWorkSteps; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
  }
  sink = state;
}

// One row of part flags' wait table: the CPU time and the median wall time of a kind of wait.
inline void print_wait(const char* what, double cpu_ms, const std::vector<double>& wall_ms) {
  std::printf("  %-40s CPU %-10s wall %s\n", what, cs::format_ms(cpu_ms).c_str(),
              cs::format_ms(cs::median(wall_ms)).c_str());
}

// CPU time of the whole process (every thread, the CUDA driver's included), in ms.
inline double process_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// Host cost per event of cudaEventRecord followed by cudaEventQuery, in microseconds, over
// `records` events on an idle stream.
inline double record_query_us(cudaStream_t stream, cudaEvent_t event, int records) {
  CS_CHECK(cudaStreamSynchronize(stream));
  const double begin = cs::host_now_ms();
  for (int i = 0; i < records; ++i) {
    CS_CHECK(cudaEventRecord(event, stream));
    const cudaError_t state = cudaEventQuery(event);
    if (state != cudaErrorNotReady) CS_CHECK(state);  // not ready is a state, not a failure
  }
  const double total_ms = cs::host_now_ms() - begin;
  (void)cudaGetLastError();  // leave no cudaErrorNotReady behind for the next CS_CHECK_LAUNCH()
  CS_CHECK(cudaStreamSynchronize(stream));
  return total_ms * 1000.0 / records;
}

// The device's schedule flag (cudaGetDeviceFlags), in words.
inline const char* schedule_name(unsigned int flags) {
  switch (flags & cudaDeviceScheduleMask) {
    case cudaDeviceScheduleSpin:
      return "spin";
    case cudaDeviceScheduleYield:
      return "yield";
    case cudaDeviceScheduleBlockingSync:
      return "blocking sync";
    default:
      return "auto (spins while the process has no more CUDA contexts than logical processors)";
  }
}

}  // namespace events_lab
