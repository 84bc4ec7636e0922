// Chapter 12's machinery: a reader may skip this file.
//
// What is here: the driver functions the chapter calls (from the driver the runtime loaded), a
// check for driver API calls (CU_CHECK), the flags, SKIP for a part, a host watchdog that releases
// a stream wait nobody else would, and waiting on a flag in mapped host memory with a timeout.
// Every call the chapter teaches is in beyond_priorities.cu.

#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuXxx_vNNNNN: the signature of each version of a driver function
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>

#include "cuda_streams.hpp"

// The driver API functions the chapter calls, from the driver the runtime loaded
// (cudaGetDriverEntryPointByVersion): the program needs no -lcuda, and on a machine without a
// driver it still starts and says SKIP. Each pointer has the type of one version of its function
// (cudaTypedefs.h) and is asked for with exactly that version: cuGreenCtxStreamCreate appeared
// in CUDA 12.5, so asking for it as of 12.4 gives nullptr (the first version of this chapter did
// that, then called the null pointer). A function newer than the driver (cudaDriverGetVersion)
// stays nullptr, its name goes into green_missing or memops_missing, and the part that needs it
// is skipped, never called; a lookup that fails on a driver new enough is a bug: exit 1.
namespace drv {
inline int driver_version = 0;  // cudaDriverGetVersion: 12040 is CUDA 12.4
inline PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
inline PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
inline PFN_cuDeviceGetDevResource_v12040 cuDeviceGetDevResource = nullptr;
inline PFN_cuDevSmResourceSplitByCount_v12040 cuDevSmResourceSplitByCount = nullptr;
inline PFN_cuDevResourceGenerateDesc_v12040 cuDevResourceGenerateDesc = nullptr;
inline PFN_cuGreenCtxCreate_v12040 cuGreenCtxCreate = nullptr;
inline PFN_cuGreenCtxStreamCreate_v12050 cuGreenCtxStreamCreate = nullptr;
inline PFN_cuGreenCtxGetDevResource_v12040 cuGreenCtxGetDevResource = nullptr;
inline PFN_cuGreenCtxDestroy_v12040 cuGreenCtxDestroy = nullptr;
inline PFN_cuStreamDestroy_v4000 cuStreamDestroy = nullptr;
inline PFN_cuStreamWaitValue32_v11070 cuStreamWaitValue32 = nullptr;
inline PFN_cuStreamWriteValue32_v11070 cuStreamWriteValue32 = nullptr;
inline std::string green_missing, memops_missing;  // "driver 12.4 older than cuGreen..."

template <class F>  // one function at one version (*fn stays nullptr when the driver is older)
void get(const char* name, F* fn, int version, std::string* missing) {
  if (driver_version < version) {  // "driver 12.4 older than cuGreenCtxStreamCreate (CUDA 12.5)"
    *missing += missing->empty() ? cs::format("driver %d.%d older than ", driver_version / 1000,
                                              driver_version % 1000 / 10)
                                 : ", ";
    *missing += cs::format("%s (CUDA %d.%d)", name, version / 1000, version % 1000 / 10);
    return;
  }
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  void* address = nullptr;
  CS_CHECK(cudaGetDriverEntryPointByVersion(name, &address, version, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || address == nullptr) {
    std::fprintf(stderr, "cudaGetDriverEntryPointByVersion(\"%s\", %d): result %d\n", name, version,
                 static_cast<int>(found));
    std::exit(cs::kFailExitCode);
  }
  *fn = reinterpret_cast<F>(address);
}

// #name: the function's own name (cuda.h's macros, cuStreamDestroy -> _v2, rename the pointer)
#define CS_DRV_GET(name, version, missing) ::drv::get(#name, &::drv::name, version, missing)
inline void load() {
  CS_CHECK(cudaDriverGetVersion(&driver_version));
  CS_DRV_GET(cuGetErrorName, 6000, &green_missing);  // CUDA 6.0: every driver that runs this
  CS_DRV_GET(cuDeviceGet, 2000, &green_missing);
  CS_DRV_GET(cuDeviceGetDevResource, 12040, &green_missing);
  CS_DRV_GET(cuDevSmResourceSplitByCount, 12040, &green_missing);
  CS_DRV_GET(cuDevResourceGenerateDesc, 12040, &green_missing);
  CS_DRV_GET(cuGreenCtxCreate, 12040, &green_missing);
  CS_DRV_GET(cuGreenCtxStreamCreate, 12050, &green_missing);
  CS_DRV_GET(cuGreenCtxGetDevResource, 12040, &green_missing);
  CS_DRV_GET(cuGreenCtxDestroy, 12040, &green_missing);
  CS_DRV_GET(cuStreamDestroy, 4000, &green_missing);
  CS_DRV_GET(cuStreamWaitValue32, 11070, &memops_missing);
  CS_DRV_GET(cuStreamWriteValue32, 11070, &memops_missing);
}
#undef CS_DRV_GET
}  // namespace drv

namespace lab {

constexpr int kThreads = 128;             // per block, for every kernel of the chapter
constexpr double kFlagTimeoutMs = 20000;  // a flag that never comes means a bug: stop, not hang

struct Flags {  // green: flood_ms, short_us, sms; memops: releases, watchdog_ms; both: repeats
  int flood_ms = 20, short_us = 20, sms = 16, releases = 50, watchdog_ms = 100, repeats = 3;
};

inline void add_flags(cs::Options& options, Flags* f) {
  options.add_int("flood-ms", &f->flood_ms, 1, 50, "green: how long each flood block runs, in ms");
  options.add_int("short-us", &f->short_us, 1, 1000,
                  "green: how long the latency-critical kernel runs, in us");
  options.add_int("sms", &f->sms, 1, 256,
                  "green: SMs asked for the latency-critical partition (the driver rounds up)");
  options.add_int("releases", &f->releases, 1, 1000, "memops: host releases of a stream timed");
  options.add_int("watchdog-ms", &f->watchdog_ms, 20, 500,
                  "memops: how long a stream may wait before the host watchdog releases it, in ms");
  options.add_int("repeats", &f->repeats, 1, 20, "timed runs of each case (medians are reported)");
}

// The name of a driver API result ("CUDA_ERROR_NOT_SUPPORTED").
inline std::string driver_error(CUresult result) {
  const char* name = nullptr;
  const bool named = drv::cuGetErrorName && drv::cuGetErrorName(result, &name) == CUDA_SUCCESS;
  return named && name ? name : "CUresult " + std::to_string(result);
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
inline bool wait_for_flag(const volatile unsigned int* flag, unsigned int value) {
  const double from = cs::host_now_ms();
  while (*flag != value)
    if (cs::host_now_ms() - from > kFlagTimeoutMs) return false;
  return true;
}

// A host thread that writes `value` into `flag` (mapped host memory a stream waits on) when
// cancel() has not come within `timeout_ms`: a wait that nobody satisfies ends instead of hanging
// the program. fired() says whether it had to.
class Watchdog {
 public:
  Watchdog(volatile unsigned int* flag, unsigned int value, int timeout_ms)
      : thread_([this, flag, value, timeout_ms, cancelled = cancel_.get_future()] {
          if (cancelled.wait_for(std::chrono::milliseconds(timeout_ms)) ==
              std::future_status::timeout) {
            fired_ = true;
            *flag = value;  // release the stream: what its waiter was waiting for
          }
        }) {}
  ~Watchdog() { cancel(); }
  void cancel() {
    if (!thread_.joinable()) return;
    cancel_.set_value();
    thread_.join();
  }
  bool fired() const { return fired_; }

 private:
  std::promise<void> cancel_;  // declared before thread_: they exist before the thread starts
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

}  // namespace lab

/// Checks a driver API call: prints file, line, expression and the error's name, then exits 1.
#define CU_CHECK(expression) ::lab::check_driver((expression), #expression, __FILE__, __LINE__)
