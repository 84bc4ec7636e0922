// Chapter 08's machinery: its flags, the values and delays of part order's steps, the reading of
// the host functions' log, the queue between host functions and the worker thread, the CPU
// reference of part handoff, and the pragmas that keep a deprecated call compiling. None of it is
// the lesson; a reader may skip this file. The calls the chapter teaches are written out in
// host_callbacks.cu.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda_streams.hpp"

// cudaStreamAddCallback is "slated for deprecation" in the CUDA 13 headers. Should a later toolkit
// mark it deprecated, these keep the -Werror build working around the code that uses it on
// purpose: the host compiler's warning (GCC, Clang) and nvcc's own (1215 and 1444).
#define HOST_CALLBACKS_ALLOW_DEPRECATED_BEGIN                                                    \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wdeprecated-declarations\"") \
      _Pragma("nv_diag_suppress 1215") _Pragma("nv_diag_suppress 1444") static_assert(true, "")
#define HOST_CALLBACKS_ALLOW_DEPRECATED_END                       \
  _Pragma("nv_diag_default 1215") _Pragma("nv_diag_default 1444") \
      _Pragma("GCC diagnostic pop") static_assert(true, "")

namespace host_callbacks_lab {

// The chapter's flags, with their defaults.
struct Flags {
  int streams = 3;  // part order
  int steps = 8;
  int batches = 8;  // part handoff
  int batch_elements = 1 << 16;
  bool no_error_demos = false;  // parts rule and callback
  int host_ms = 20;             // part stall
};

inline void add_flags(cs::Options& options, Flags* f) {
  options.add_int("streams", &f->streams, 1, 16, "streams whose host functions write the log");
  options.add_int("steps", &f->steps, 1, 500, "kernel + copy + host function steps per stream");
  options.add_int("batches", &f->batches, 1, 64,
                  "batches handed from host functions to the worker");
  options.add_int("batch-elements", &f->batch_elements, 1, 1 << 20, "ints per batch");
  options.add_flag("no-error-demos", &f->no_error_demos,
                   "skip the calls that fail on purpose (the CUDA call inside a host function, "
                   "cudaStreamAddCallback during capture), e.g. under compute-sanitizer");
  options.add_int("host-ms", &f->host_ms, 1, 200,
                  "how long the slow host function of part stall sleeps, in ms");
}

// Each step's kernel of part order spins a pseudo-random time in this range, so that the streams
// finish their steps in a mixed-up order and only stream order keeps each stream's log in order.
constexpr unsigned kMinStepDelayUs = 20;
constexpr unsigned kMaxStepDelayUs = 200;

// The value that the kernel of step `step` in stream `stream` writes; the host function of that
// step must see exactly this value.
inline int step_value(int stream, int step) {
  return (stream + 1) * 1000 + step;
}

inline unsigned long long step_delay_ns(int stream, int step) {
  unsigned x = static_cast<unsigned>(stream) * 2654435761u + static_cast<unsigned>(step) * 40503u;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return 1000ull * (kMinStepDelayUs + x % (kMaxStepDelayUs - kMinStepDelayUs + 1));
}

// One line of the log: what the host function of (stream, step) saw, and on which thread.
struct LogEntry {
  int stream;
  int step;
  int seen;  // the value the host function found in the stream's pinned slot
  std::thread::id thread;
};

struct StepLog {
  std::mutex mutex;  // host functions of different streams may run on different threads
  std::vector<LogEntry> entries;
};

// The first lines of the log.
inline void print_log(const StepLog& log) {
  const std::size_t shown = log.entries.size() < 12 ? log.entries.size() : 12;
  std::printf("   log order  stream  step  value seen  value written before it\n");
  for (std::size_t i = 0; i < shown; ++i) {
    const LogEntry& e = log.entries[i];
    std::printf("   %9zu  %6d  %4d  %10d  %10d\n", i, e.stream, e.step, e.seen,
                step_value(e.stream, e.step));
  }
  if (log.entries.size() > shown) {
    std::printf("   ... %zu more entries\n", log.entries.size() - shown);
  }
}

// What the whole log shows, read (and printed) after every stream was synchronized.
struct LogReading {
  std::size_t entries = 0;
  bool in_issue_order = true;  // within every stream, steps 0..steps-1, each once
  std::size_t saw_prior_work = 0;
  int stream_switches = 0;
  std::size_t threads = 0;
  bool main_thread_ran_one = false;
};

inline LogReading read_log(const StepLog& log, int streams, int steps) {
  LogReading r;
  std::vector<int> next_step(static_cast<std::size_t>(streams), 0);
  std::set<std::thread::id> threads;
  for (std::size_t i = 0; i < log.entries.size(); ++i) {
    const LogEntry& e = log.entries[i];
    int& expected_step = next_step[static_cast<std::size_t>(e.stream)];
    if (e.step != expected_step) r.in_issue_order = false;
    expected_step = e.step + 1;
    if (e.seen == step_value(e.stream, e.step)) ++r.saw_prior_work;
    if (i > 0 && log.entries[i - 1].stream != e.stream) ++r.stream_switches;
    threads.insert(e.thread);
  }
  for (int next : next_step) r.in_issue_order = r.in_issue_order && next == steps;
  r.entries = log.entries.size();
  r.threads = threads.size();
  r.main_thread_ran_one = threads.count(std::this_thread::get_id()) > 0;
  print_log(log);
  std::printf(
      "The log switched streams %d times: host functions of different streams run in no promised\n"
      "order. They ran on %zu host thread%s owned by the driver%s.\n",
      r.stream_switches, r.threads, r.threads == 1 ? "" : "s",
      r.main_thread_ran_one ? " (one of them this program's main thread)"
                            : ", never on this program's main thread");
  return r;
}

// Batch numbers from host functions to the worker thread: a mutex, a condition variable, a deque.
class BatchQueue {
 public:
  void push(int batch) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batches_.push_back(batch);
    }
    ready_.notify_one();
  }
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  // Blocks until a batch is ready (true) or the queue is closed and drained (false).
  bool pop(int* batch) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !batches_.empty() || closed_; });
    if (batches_.empty()) return false;
    *batch = batches_.front();
    batches_.pop_front();
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<int> batches_;
  bool closed_ = false;
};

constexpr int kThreads = 256;
inline int blocks_for(int n) {
  return (n + kThreads - 1) / kThreads < 1024 ? (n + kThreads - 1) / kThreads : 1024;
}

// The input of part handoff at flat index i, batches of n ints: element j of batch b.
inline int batch_input(std::size_t i, int n) {
  const std::size_t b = i / static_cast<std::size_t>(n), j = i % static_cast<std::size_t>(n);
  return static_cast<int>((b * 31 + j * 7) % 1000);
}

// The host's decision in part handoff: a number computed from a batch's first stage (its sum,
// folded into a range that fits a kernel's int argument).
constexpr long long kOffsetModulus = 1000003;
inline int offset_of(const int* stage1, int n) {
  long long sum = 0;
  for (int i = 0; i < n; ++i) sum += stage1[i];
  return static_cast<int>(sum % kOffsetModulus);
}

// The CPU reference of part handoff: x * x + the batch's offset, for every batch.
inline std::vector<int> handoff_reference(const int* input, int batches, int n) {
  std::vector<int> reference(static_cast<std::size_t>(batches) * static_cast<std::size_t>(n));
  std::vector<int> squares(static_cast<std::size_t>(n));
  for (int b = 0; b < batches; ++b) {
    const std::size_t first = static_cast<std::size_t>(b) * static_cast<std::size_t>(n);
    for (int j = 0; j < n; ++j) squares[j] = input[first + j] * input[first + j];
    const int offset = offset_of(squares.data(), n);
    for (int j = 0; j < n; ++j) reference[first + j] = squares[j] + offset;
  }
  return reference;
}

// Whether every batch reached the worker exactly once, and each stream's batches (batch b went to
// stream b % streams) in issue order; prints the order it came in.
inline bool arrived_in_stream_order(const std::vector<int>& order, int batches, int streams) {
  std::string text;
  for (std::size_t i = 0; i < order.size() && i < 16; ++i) {
    text += (i ? " " : "") + std::to_string(order[i]);
  }
  if (order.size() > 16) text += " ...";
  std::printf("   batches reached the worker in this order: %s\n", text.c_str());
  std::vector<int> last_of_stream(static_cast<std::size_t>(streams), -1);
  const std::set<int> distinct(order.begin(), order.end());
  bool ok = order.size() == static_cast<std::size_t>(batches) &&
            distinct.size() == static_cast<std::size_t>(batches);
  for (int b : order) {
    int& last = last_of_stream[static_cast<std::size_t>(b % streams)];
    if (b <= last) ok = false;
    last = b;
  }
  return ok;
}

// An error's name and text, for the lines that show what a refused call returned.
inline std::string error_text(cudaError_t error) {
  return cs::format("%s (\"%s\")", cudaGetErrorName(error), cudaGetErrorString(error));
}

// How many of a graph's nodes are host nodes (cudaLaunchHostFunc captured); *nodes gets them all.
inline int count_host_nodes(cudaGraph_t graph, std::size_t* nodes) {
  CS_CHECK(cudaGraphGetNodes(graph, nullptr, nodes));
  std::vector<cudaGraphNode_t> list(*nodes);
  CS_CHECK(cudaGraphGetNodes(graph, list.data(), nodes));
  int host_nodes = 0;
  for (cudaGraphNode_t node : list) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    CS_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeHost) ++host_nodes;
  }
  return host_nodes;
}

// Why part stall's other stream may wait for the slow host function under a launch setting, or "".
inline std::string one_host_thread_reason(const cs::LaunchEnvironment& env) {
  return env.launch_blocking ? "CUDA_LAUNCH_BLOCKING=1: the host thread that issues stream B's "
                               "kernel may first wait inside cudaLaunchHostFunc"
                             : "";
}
inline std::string one_queue_reason(const cs::LaunchEnvironment& env) {
  return env.max_connections == 1 ? "CUDA_DEVICE_MAX_CONNECTIONS=1: stream B's kernel shares one "
                                    "hardware queue with stream A's wait for the host function"
                                  : "";
}

// What a launch setting did to part stall, in words, from what the run measured.
inline void print_stall_environment(const cs::LaunchEnvironment& env, bool b_waited,
                                    double issue_ms, int host_ms) {
  if (env.launch_blocking) {
    const bool issue_waited = issue_ms >= 0.9 * host_ms;
    std::printf(
        "Under CUDA_LAUNCH_BLOCKING=1 cudaLaunchHostFunc %s,\nand stream B's kernel %s the "
        "host function.\n",
        issue_waited ? "returned only after the host function had run"
                     : "returned before the host function had run",
        b_waited ? "waited for" : "did not wait for");
  }
  if (env.max_connections == 1) {
    if (b_waited) {
      std::printf(
          "With one hardware queue stream B's kernel waited for the host function in stream A:\n"
          "stream A's wait for it sits in the queue that every stream shares, so a slow host\n"
          "function in one stream held back the work of every stream.\n");
    } else {
      std::printf(
          "With one hardware queue stream B's kernel still did not wait for the host function\n"
          "in stream A in this run.\n");
    }
  }
}

// What the host functions and callbacks of each part are given (each alive until it has run).
struct StepRecord {  // part order
  StepLog* log;
  int stream;
  int step;
  const int* host_slot;  // pinned memory, written by the copy issued just before
};

inline std::vector<StepRecord> step_records(StepLog* log, int streams, int steps, int* host_slots) {
  std::vector<StepRecord> records;
  for (int s = 0; s < streams; ++s) {
    for (int k = 0; k < steps; ++k) records.push_back({log, s, k, &host_slots[s]});
  }
  return records;
}

struct BatchReady {  // part handoff
  BatchQueue* queue;
  int batch;
};

struct Batches {                 // part handoff's buffers
  int n = 0;                     // ints per batch
  int* device_stage1 = nullptr;  // squares, written by the stream that owns the batch
  int* device_stage2 = nullptr;  // squares + offset, written by the worker's stream
  int* host_stage1 = nullptr;    // pinned copies of stage 1
  int* host_stage2 = nullptr;    // pinned copies of stage 2
};

struct RuleBreak {  // part rule: what the host function got, and a way to wait for it
  cudaStream_t stream = nullptr;
  cudaError_t result = cudaSuccess;
  std::mutex mutex;
  std::condition_variable finished;
  bool returned = false;
};

struct CallbackRecord {  // part callback
  const int* host_slot = nullptr;
  bool called = false;
  cudaError_t status = cudaErrorUnknown;
  int seen = 0;
};

struct ReplayRecord {  // part graph
  const int* host_counter = nullptr;
  std::vector<int> seen;  // only the driver thread appends, one replay after the other
};

// Waits on the host, with a deadline, for part rule's host function to return; should the driver
// thread hang inside the forbidden call, this says so and ends the program instead of hanging.
inline bool wait_or_exit(RuleBreak* demo, int seconds) {
  std::unique_lock<std::mutex> lock(demo->mutex);
  if (demo->finished.wait_for(lock, std::chrono::seconds(seconds),
                              [&] { return demo->returned; })) {
    return true;
  }
  cs::check_that("rule_demo_returned", false,
                 cs::format("the host function that called cudaStreamQuery did not return within "
                            "%d s (deadlock)",
                            seconds));
  std::fflush(stdout);
  std::_Exit(cs::kFailExitCode);  // the stream can never finish; nothing can be cleaned up
}

// Whether the host node saw 1, 2, ... `replays` (one value per replay); *text lists what it saw.
inline bool read_replays(const std::vector<int>& seen, int replays, std::string* text) {
  bool right = seen.size() == static_cast<std::size_t>(replays);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    *text += (i ? ", " : "") + std::to_string(seen[i]);
    if (seen[i] != static_cast<int>(i) + 1) right = false;
  }
  if (text->empty()) *text = "nothing";
  return right;
}

// The words of each part.
inline void print_order_intro(int streams, int steps) {
  std::printf(
      "Each of %d streams runs %d steps: a kernel writes a value (after a %u..%u us wait), a copy\n"
      "brings it to pinned host memory, a host function logs what it sees.\n",
      streams, steps, kMinStepDelayUs, kMaxStepDelayUs);
}

inline void print_handoff(int batches, int n, int streams) {
  std::printf(
      "%d batches of %d ints on %d stream%s: H2D, square, D2H, then a host function pushes the\n"
      "batch number; a worker thread adds the batch's sum (a host decision) on the GPU in its own\n"
      "stream.\n",
      batches, n, streams, streams == 1 ? "" : "s");
}

inline void print_rule_intro() {
  std::printf(
      "A host function runs on a driver thread while its stream waits for it to return. A call\n"
      "that waits for the stream (cudaStreamSynchronize, a synchronous cudaMemcpy) would wait for\n"
      "itself; the documentation says any CUDA call there may fail with cudaErrorNotPermitted,\n"
      "but does not promise it.\n");
}

inline void print_rule_result(cudaError_t result) {
  std::printf("cudaStreamQuery(its own stream) inside a host function returned %s.\n",
              error_text(result).c_str());
  if (result == cudaErrorNotPermitted) {
    std::printf("The driver refused the call, as the documentation allows.\n");
  } else {
    std::printf(
        "This driver returned %s, but the rule stands: a CUDA call inside a host function is not\n"
        "guaranteed to work, and one that waits would deadlock.\n",
        cudaGetErrorName(result));
  }
}

inline void print_stall(int host_ms, double issue_ms, double a_ms, double b_ms) {
  std::printf(
      "Stream A: a host function that sleeps %d ms (cudaLaunchHostFunc returned after %s).\n"
      "Stream B: a %s kernel issued right after it.\n"
      "Stream A went on after %s; stream B's kernel was done after %s.\n",
      host_ms, cs::format_ms(issue_ms).c_str(), cs::format_ms(host_ms / 10.0).c_str(),
      cs::format_ms(a_ms).c_str(), cs::format_ms(b_ms).c_str());
}

inline void print_callback(cudaError_t status) {
  std::printf(
      "The callback ran in stream order too, and was given status %s. That status is why it was\n"
      "replaced: a callback is also called after an error in the context, so every callback must\n"
      "handle that case, while a host function is simply not called then.\n",
      cudaGetErrorName(status));
}

inline void print_refused_capture(cudaError_t added, cudaError_t ended, bool graph,
                                  cudaError_t cleared) {
  std::printf(
      "During stream capture cudaStreamAddCallback returned %s;\n"
      "cudaStreamEndCapture then returned %s and %s. cudaGetLastError() cleared %s;\n"
      "the error is not sticky, the stream goes on.\n",
      error_text(added).c_str(), cudaGetErrorName(ended), graph ? "a graph" : "no graph",
      cudaGetErrorName(cleared));
}

inline void print_closing() {
  std::printf(
      "\nA host function runs in stream order on a driver thread, sees the results of the work\n"
      "before it and holds back the work after it. Keep it short, make no CUDA calls in it, and\n"
      "hand CUDA work to your own thread through a queue.\n");
}

}  // namespace host_callbacks_lab
