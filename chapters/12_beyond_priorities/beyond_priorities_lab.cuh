// Chapter 12's machinery: a reader may skip this file.
//
// What is here: the flags, a check for driver API calls (CU_CHECK), the reason a part cannot run
// on this device (SKIP), a host watchdog that releases a stream wait nobody else would release,
// waiting on a flag in mapped host memory with a timeout, and the lines the parts print.
// Every call the chapter teaches (green contexts, PDL launches, stream memory operations,
// conditional graph nodes) stays in beyond_priorities.cu.

#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "cuda_streams.hpp"

// The driver API functions the chapter calls, from the driver the runtime loaded
// (cudaGetDriverEntryPointByVersion): the program needs no -lcuda, and on a machine without a
// driver it still starts and says SKIP. A function this driver lacks stays nullptr.
namespace drv {
inline decltype(&::cuGetErrorName) cuGetErrorName = nullptr;
inline decltype(&::cuInit) cuInit = nullptr;
inline decltype(&::cuDeviceGet) cuDeviceGet = nullptr;
inline decltype(&::cuDeviceGetDevResource) cuDeviceGetDevResource = nullptr;
inline decltype(&::cuDevSmResourceSplitByCount) cuDevSmResourceSplitByCount = nullptr;
inline decltype(&::cuDevResourceGenerateDesc) cuDevResourceGenerateDesc = nullptr;
inline decltype(&::cuGreenCtxCreate) cuGreenCtxCreate = nullptr;
inline decltype(&::cuGreenCtxStreamCreate) cuGreenCtxStreamCreate = nullptr;
inline decltype(&::cuGreenCtxGetDevResource) cuGreenCtxGetDevResource = nullptr;
inline decltype(&::cuStreamDestroy) cuStreamDestroy = nullptr;
inline decltype(&::cuGreenCtxDestroy) cuGreenCtxDestroy = nullptr;
inline decltype(&::cuStreamWaitValue32) cuStreamWaitValue32 = nullptr;
inline decltype(&::cuStreamWriteValue32) cuStreamWriteValue32 = nullptr;

template <class F>
void get(const char* name, F* fn) {
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  void* address = nullptr;
  CS_CHECK(cudaGetDriverEntryPointByVersion(name, &address, 12040, cudaEnableDefault, &found));
  *fn = found == cudaDriverEntryPointSuccess ? reinterpret_cast<F>(address) : nullptr;
}

inline void load() {
  get("cuGetErrorName", &cuGetErrorName);
  get("cuInit", &cuInit);
  get("cuDeviceGet", &cuDeviceGet);
  get("cuDeviceGetDevResource", &cuDeviceGetDevResource);
  get("cuDevSmResourceSplitByCount", &cuDevSmResourceSplitByCount);
  get("cuDevResourceGenerateDesc", &cuDevResourceGenerateDesc);
  get("cuGreenCtxCreate", &cuGreenCtxCreate);
  get("cuGreenCtxStreamCreate", &cuGreenCtxStreamCreate);
  get("cuGreenCtxGetDevResource", &cuGreenCtxGetDevResource);
  get("cuStreamDestroy", &cuStreamDestroy);
  get("cuGreenCtxDestroy", &cuGreenCtxDestroy);
  get("cuStreamWaitValue32", &cuStreamWaitValue32);
  get("cuStreamWriteValue32", &cuStreamWriteValue32);
}
}  // namespace drv

namespace lab {

constexpr int kThreads = 128;             // per block, for every kernel of the chapter
constexpr double kFlagTimeoutMs = 20000;  // a flag that never comes means a bug: stop, not hang

struct Flags {
  int flood_ms = 20;      // green: how long each flood block runs
  int short_us = 20;      // green: how long the latency-critical kernel runs
  int sms = 16;           // green: SMs asked for the latency-critical partition
  int chain = 1000;       // pdl: dependent kernels in the chain
  int prologue_us = 10;   // pdl: work before cudaGridDependencySynchronize
  int releases = 50;      // memops: host releases timed
  int watchdog_ms = 100;  // memops: how long a wait may last before the watchdog releases it
  int iterations = 1000;  // graph: loop iterations
  int repeats = 3;        // timed runs of each case (the median is reported)
};

inline void add_flags(cs::Options& options, Flags* f) {
  options.add_int("flood-ms", &f->flood_ms, 1, 200, "green: how long each flood block runs, in ms");
  options.add_int("short-us", &f->short_us, 1, 1000,
                  "green: how long the latency-critical kernel runs, in us");
  options.add_int("sms", &f->sms, 1, 256,
                  "green: SMs asked for the latency-critical partition (the driver rounds up)");
  options.add_int("chain", &f->chain, 10, 100000, "pdl: dependent kernels in one chain");
  options.add_int("prologue-us", &f->prologue_us, 1, 1000,
                  "pdl: work each kernel does before it needs its predecessor's output, in us");
  options.add_int("releases", &f->releases, 1, 10000,
                  "memops: host releases of a waiting stream timed");
  options.add_int("watchdog-ms", &f->watchdog_ms, 10, 10000,
                  "memops: how long a stream may wait before the host watchdog releases it, in ms");
  options.add_int("iterations", &f->iterations, 1, 1000000, "graph: iterations of the loop");
  options.add_int("repeats", &f->repeats, 1, 100,
                  "timed runs of each case (the median is reported)");
}

// The name of a driver API result ("CUDA_ERROR_NOT_SUPPORTED").
inline std::string driver_error(CUresult result) {
  const char* name = nullptr;
  if (drv::cuGetErrorName == nullptr || drv::cuGetErrorName(result, &name) != CUDA_SUCCESS ||
      name == nullptr)
    return "CUresult " + std::to_string(result);
  return name;
}

inline void check_driver(CUresult result, const char* expression, const char* file, int line) {
  if (result == CUDA_SUCCESS) return;
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, expression,
               driver_error(result).c_str());
  std::exit(cs::kFailExitCode);
}

// A part that this device or driver cannot run: alone (--part NAME) the program skips (77);
// among all parts it says why and the others go on.
inline void skip_part(const cs::Parts& parts, const std::string& reason) {
  if (parts.chosen() != "all") cs::skip(reason);
  std::printf("SKIP: %s; this part's checks do not run\n", reason.c_str());
}

// Waits until the GPU writes `value` into a flag in mapped host memory; false after the timeout.
inline bool wait_for_flag(const volatile unsigned int* flag, unsigned int value,
                          double timeout_ms = kFlagTimeoutMs) {
  const double from = cs::host_now_ms();
  while (*flag != value) {
    if (cs::host_now_ms() - from > timeout_ms) return false;
  }
  return true;
}

// A host thread that writes `value` into `flag` (mapped host memory a stream waits on) when
// cancel() has not come within `timeout_ms`: a wait that nobody satisfies ends instead of hanging
// the program. fired() says whether it had to.
class Watchdog {
 public:
  Watchdog(volatile unsigned int* flag, unsigned int value, int timeout_ms)
      : thread_([this, flag, value, timeout_ms] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                            [this] { return done_; })) {
            fired_ = true;
            *flag = value;  // release the stream: what its waiter was waiting for
          }
        }) {}
  ~Watchdog() { cancel(); }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void cancel() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  bool fired() const { return fired_; }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

inline void print_row(const std::string& what, double value_us) {
  std::printf("  %-58s %10s\n", what.c_str(), cs::format_ms(value_us / 1000.0).c_str());
}

// The four per-kernel times of part 2, in us: [in a graph][with PDL].
inline void print_pdl(int chain, int prologue_us, const double us[2][2]) {
  std::printf("%d dependent kernels, time per kernel (medians):\n", chain);
  std::printf("  %-44s %10s %10s\n", "", "without PDL", "with PDL");
  std::printf("  %-44s %8.2f us %8.2f us\n",
              cs::format("in a stream, %d us prologue each", prologue_us).c_str(), us[0][0],
              us[0][1]);
  std::printf("  %-44s %8.2f us %8.2f us\n", "captured in a graph, no prologue", us[1][0],
              us[1][1]);
}

}  // namespace lab

/// Checks a driver API call: prints file, line, expression and the error's name, then exits 1.
#define CU_CHECK(expression) ::lab::check_driver((expression), #expression, __FILE__, __LINE__)
