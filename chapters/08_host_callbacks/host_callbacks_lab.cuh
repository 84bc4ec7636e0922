// Chapter 08's machinery: the values and delays of part order's steps, the reading of
// the host functions' log, the queue between host functions and the worker thread, and the CPU
// reference of part handoff. None of it is the lesson; a reader may skip this file. The calls the
// chapter teaches are written out in host_callbacks.cu.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda_streams.hpp"

namespace host_callbacks_lab {

// The value that the kernel of step `step` in stream `stream` writes; the host function of that
// step must see exactly this value.
inline int step_value(int stream, int step) {
  return (stream + 1) * 1000 + step;
}

// A pseudo-random 20..200 us per step, so that the streams finish their steps in a mixed-up order
// and only stream order keeps each stream's log in order.
inline unsigned long long step_delay_ns(int stream, int step) {
  unsigned x = static_cast<unsigned>(stream) * 2654435761u + static_cast<unsigned>(step) * 40503u;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return 1000ull * (20 + x % 181);
}

// One per host function of part order, alive until it has run: what it is given, what it saw.
struct StepRecord {
  std::mutex* log_mutex;
  std::vector<const StepRecord*>* log;
  int stream, step;
  const int* host_slot;    // pinned memory, written by the copy issued just before
  int seen;                // the value the host function found there
  std::thread::id thread;  // the thread it ran on
};

// Whether, within every stream, the log has steps 0..steps-1, each once; *saw_prior_work counts
// the host functions that saw the value written before them. Prints the log's first lines.
inline bool read_log(const std::vector<const StepRecord*>& log, int streams, int steps,
                     std::size_t* saw_prior_work) {
  bool in_issue_order = true;
  std::vector<int> next_step(static_cast<std::size_t>(streams), 0);
  std::set<std::thread::id> threads;
  int switches = 0;
  std::printf("   log order  stream  step  value seen  value written before it\n");
  for (std::size_t i = 0; i < log.size(); ++i) {
    const StepRecord& e = *log[i];
    const int want = step_value(e.stream, e.step);
    if (i < 12) std::printf("   %9zu  %6d  %4d  %10d  %10d\n", i, e.stream, e.step, e.seen, want);
    int& expected_step = next_step[static_cast<std::size_t>(e.stream)];
    if (e.step != expected_step) in_issue_order = false;
    expected_step = e.step + 1;
    if (e.seen == want) ++*saw_prior_work;
    if (i > 0 && log[i - 1]->stream != e.stream) ++switches;
    threads.insert(e.thread);
  }
  if (log.size() > 12) std::printf("   ... %zu more entries\n", log.size() - 12);
  for (int next : next_step) in_issue_order = in_issue_order && next == steps;
  std::printf(
      "The log switched streams %d times. The host functions ran on %zu host thread%s, %s.\n",
      switches, threads.size(), threads.size() == 1 ? "" : "s",
      threads.count(std::this_thread::get_id()) ? "one of them this program's main thread"
                                                : "never on this program's main thread");
  return in_issue_order;
}

// Batch numbers from host functions to the worker thread: a mutex, a condition variable, a deque.
// A batch number of -1 tells the worker to stop.
struct BatchQueue {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<int> batches;

  void push(int batch) {
    std::lock_guard<std::mutex> lock(mutex);
    batches.push_back(batch);
    ready.notify_one();
  }
  int pop() {  // blocks until a batch number is there
    std::unique_lock<std::mutex> lock(mutex);
    ready.wait(lock, [&] { return !batches.empty(); });
    const int batch = batches.front();
    batches.pop_front();
    return batch;
  }
};

constexpr int kThreads = 256;
inline int blocks_for(int n) {
  return (n + kThreads - 1) / kThreads < 1024 ? (n + kThreads - 1) / kThreads : 1024;
}

// The host's decision in part handoff: a number computed from a batch's first stage (its sum,
// folded into a range that fits a kernel's int argument).
inline int offset_of(const int* stage1, int n) {
  long long sum = 0;
  for (int i = 0; i < n; ++i) sum += stage1[i];
  return static_cast<int>(sum % 1000003);
}

// The CPU reference of part handoff: x * x + the batch's offset, for every batch.
inline std::vector<int> handoff_reference(const int* input, int batches, int n) {
  const std::size_t per_batch = static_cast<std::size_t>(n);
  std::vector<int> reference(static_cast<std::size_t>(batches) * per_batch);
  for (std::size_t i = 0; i < reference.size(); ++i) reference[i] = input[i] * input[i];
  for (std::size_t first = 0; first < reference.size(); first += per_batch) {
    const int offset = offset_of(&reference[first], n);
    for (std::size_t i = first; i < first + per_batch; ++i) reference[i] += offset;
  }
  return reference;
}

// Whether every batch reached the worker exactly once, and each stream's batches (batch b went to
// stream b % streams) in issue order; prints the order it came in.
inline bool arrived_in_stream_order(const std::vector<int>& order, int batches, int streams) {
  std::printf("   batches reached the worker in this order:");
  for (std::size_t i = 0; i < order.size() && i < 16; ++i) std::printf(" %d", order[i]);
  std::printf("%s\n", order.size() > 16 ? " ..." : "");
  std::vector<int> last_of_stream(static_cast<std::size_t>(streams), -1);
  bool ok = order.size() == static_cast<std::size_t>(batches) &&
            std::set<int>(order.begin(), order.end()).size() == order.size();
  for (int b : order) {
    int& last = last_of_stream[static_cast<std::size_t>(b % streams)];
    if (b <= last) ok = false;
    last = b;
  }
  return ok;
}

// What the host functions and callbacks of the other parts are given (alive until they have run).
struct BatchReady {  // part handoff
  BatchQueue* queue;
  int batch;
};

struct CallbackRecord {  // part callback
  const int* host_slot = nullptr;
  cudaError_t status = cudaErrorUnknown;  // until it is called
  int seen = 0;
};

struct ReplayRecord {  // part graph
  const int* host_counter = nullptr;
  std::vector<int> seen;  // only the driver thread appends, one replay after the other
};

struct RuleBreak {  // part rule: the stream, and how the host function says what its call returned
  cudaStream_t stream = nullptr;
  std::promise<cudaError_t> result;
};

// Waits on the host, with a deadline, for part rule's host function to return; should the driver
// thread hang inside the forbidden call, this says so and ends the program instead of hanging.
inline bool wait_or_exit(std::future<cudaError_t>* result, int seconds, cudaError_t* value) {
  if (result->wait_for(std::chrono::seconds(seconds)) == std::future_status::ready) {
    *value = result->get();
    return true;
  }
  cs::check_that("rule_demo_returned", false,
                 cs::format("the host function that called cudaStreamQuery did not return within "
                            "%d s (deadlock)",
                            seconds));
  std::fflush(stdout);
  std::_Exit(cs::kFailExitCode);  // the stream can never finish; nothing can be cleaned up
}

// Why part stall's stream B may wait for stream A's host function under a launch setting, or "".
inline std::string why_b_may_wait_for_a(const cs::LaunchEnvironment& env) {
  return env.launch_blocking ? "CUDA_LAUNCH_BLOCKING=1: the host thread that issues stream B's "
                               "kernel may first wait inside cudaLaunchHostFunc"
         : env.max_connections == 1 ? "CUDA_DEVICE_MAX_CONNECTIONS=1: stream B's kernel shares one "
                                      "hardware queue with stream A's wait for the host function"
                                    : "";
}

}  // namespace host_callbacks_lab
