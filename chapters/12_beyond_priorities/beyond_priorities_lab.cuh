// Chapter 12's machinery: a reader may skip this file.
//
// What is here: the driver functions the chapter calls (from the driver the runtime loaded), a
// check for driver API calls (CU_CHECK), the flags' defaults (main declares them), SKIP for a
// part, and a host watchdog that releases a stream wait nobody else would.
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
inline int driver_version = 0;                     // cudaDriverGetVersion: 12040 is CUDA 12.4
inline std::string green_missing, memops_missing;  // "driver 12.4 older than cuGreen..."

// One function at one version (*fn stays nullptr when the driver is older).
inline void get(const char* name, void** fn, int version, std::string* missing) {
  if (driver_version < version) {  // "driver 12.4 older than cuGreenCtxStreamCreate (CUDA 12.5)"
    *missing += missing->empty() ? cs::format("driver %d.%d older than ", driver_version / 1000,
                                              driver_version % 1000 / 10)
                                 : ", ";
    *missing += cs::format("%s (CUDA %d.%d)", name, version / 1000, version % 1000 / 10);
    return;
  }
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  CS_CHECK(cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || *fn == nullptr) {
    std::fprintf(stderr, "cudaGetDriverEntryPointByVersion(%s, %d): %d\n", name, version, found);
    std::exit(cs::kFailExitCode);
  }
}

// Each function: its name, the CUDA version whose signature its pointer has (PFN_name_vVERSION)
// and the part that needs it, in the order a skipped part names them. CS_DRV_GET's #fn is the
// function's own name (cuda.h's macros, cuStreamDestroy -> cuStreamDestroy_v2, rename only the
// pointer).
// clang-format off
#define CS_DRV_FUNCTIONS(X)                                                                        \
  X(cuGetErrorName, 6000, green) X(cuDeviceGet, 2000, green)                                       \
  X(cuDeviceGetDevResource, 12040, green) X(cuDevSmResourceSplitByCount, 12040, green)             \
  X(cuDevResourceGenerateDesc, 12040, green) X(cuGreenCtxCreate, 12040, green)                     \
  X(cuGreenCtxStreamCreate, 12050, green) X(cuGreenCtxGetDevResource, 12040, green)                \
  X(cuGreenCtxDestroy, 12040, green) X(cuStreamDestroy, 4000, green)                               \
  X(cuStreamWaitValue32, 11070, memops) X(cuStreamWriteValue32, 11070, memops)
// clang-format on
#define CS_DRV_DECLARE(name, version, part) inline PFN_##name##_v##version name = nullptr;
#define CS_DRV_GET(fn, v, part) get(#fn, reinterpret_cast<void**>(&fn), v, &part##_missing);
CS_DRV_FUNCTIONS(CS_DRV_DECLARE)
inline void load() {
  CS_CHECK(cudaDriverGetVersion(&driver_version));
  CS_DRV_FUNCTIONS(CS_DRV_GET)
}
}  // namespace drv

namespace lab {

// The flags: green's flood_ms, short_us and sms; memops' releases, watchdog_ms and broken (stream
// B writes the round before A's value: a control); repeats for both.
struct Flags {
  int flood_ms = 20, short_us = 20, sms = 16, releases = 50, watchdog_ms = 100, repeats = 3;
  bool broken = false;
};

// Checks a driver API call: exits 1, naming the call and its result ("CUDA_ERROR_INVALID_VALUE").
inline void check_driver(CUresult result, const char* call, const char* file, int line) {
  const char* name = "";  // its name, where cuGetErrorName knows it
  if (result == CUDA_SUCCESS) return;
  if (drv::cuGetErrorName && drv::cuGetErrorName(result, &name) != CUDA_SUCCESS) name = "";
  std::fprintf(stderr, "%s:%d: %s failed: CUresult %d %s\n", file, line, call, int(result), name);
  std::exit(cs::kFailExitCode);
}

// A part that this device or driver cannot run: alone (--part NAME) the program skips (77);
// among all parts it says why and the others go on.
inline void skip_part(const cs::Parts& parts, std::string reason, const char* query = nullptr) {
  if (query) reason += cs::format(": %s says CUDA_ERROR_NOT_SUPPORTED", query);  // the query's no
  if (parts.chosen() != "all") cs::skip(reason);
  std::printf("SKIP: %s; this part's checks do not run\n", reason.c_str());
}

// A host thread that writes `value` into `flag` (mapped host memory a stream waits on) when
// cancel() has not come within `timeout_ms`: a wait that nobody satisfies ends instead of hanging
// the program. `fired` (and cancel()) says whether it had to.
struct Watchdog {
  std::promise<void> cancelled;  // declared before thread: they exist before the thread starts
  std::atomic<bool> fired{false};
  std::thread thread;
  Watchdog(volatile unsigned int* flag, unsigned int value, int timeout_ms)
      : thread([this, flag, value, timeout_ms, done = cancelled.get_future()] {
          if (done.wait_for(std::chrono::milliseconds(timeout_ms)) == std::future_status::timeout)
            fired = true, *flag = value;  // release the stream: what its waiter was waiting for
        }) {}
  ~Watchdog() { cancel(); }
  bool cancel() {
    if (thread.joinable()) cancelled.set_value(), thread.join();
    return fired;
  }
};

}  // namespace lab

/// Checks a driver API call: prints file, line, expression and the error's name, then exits 1.
#define CU_CHECK(expression) ::lab::check_driver((expression), #expression, __FILE__, __LINE__)
