// 08_host_callbacks: host functions that run in stream order.
//
// What it teaches
//   cudaLaunchHostFunc(stream, fn, data) puts a call of a host function into a stream. The
//   function runs once all the work issued before it in that stream has finished, and the work
//   issued after it waits until it returns. Between streams there is no order at all.
//   1. Order: each stream runs "kernel writes a value, copy it to the host, host function reads
//      it" several times; every host function appends what it saw to a mutex-protected log. The
//      log proves that each host function saw the data of the work before it, and that the host
//      functions of each stream ran in issue order.
//   2. Handing work back: a host function must not call CUDA. When it has to start more GPU work
//      it pushes a note into a queue; an ordinary host thread (std::thread and a condition
//      variable) takes the note and makes the CUDA calls. The results are checked.
//   3. The rule broken, safely: one host function calls cudaStreamQuery (a call that cannot wait)
//      and the program prints what the runtime returned. A synchronizing call there could
//      deadlock: the host function runs on a driver thread that the stream is waiting for.
//   4. cudaStreamAddCallback, the older API: its callback receives a status and also runs on
//      error paths, and it cannot be captured into a CUDA graph, while cudaLaunchHostFunc can
//      (shown: a captured host function runs on every replay).
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/08_host_callbacks
//   build/bin/08_host_callbacks --streams 4 --steps 16 --trace host_callbacks.json
//
// What to expect
//   The first lines of the host functions' log, an ASCII timeline of the streams (K kernel,
//   D copy to the host, H host function), the queue hand-off, the return code of the call made
//   against the rule, and CHECK lines that all end in PASS.

#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

namespace bars {
// How long the program waits for the host function that breaks the rule before it reports a
// failure instead of hanging: a deadlocked driver thread never returns, and a test must end.
constexpr int kRuleDemoTimeoutSeconds = 10;
}  // namespace bars

namespace settings {
// Each step's kernel spins a pseudo-random time in this range, so that the streams finish their
// steps in a mixed-up order and only stream order is left to keep each stream's log in order.
constexpr unsigned kMinStepDelayUs = 20;
constexpr unsigned kMaxStepDelayUs = 200;
// Replays of the graph that holds a captured host function.
constexpr int kGraphReplays = 3;
// The worker folds a batch's sum into this range before it sends it back as a kernel argument.
constexpr long long kOffsetModulus = 1000003;
}  // namespace settings

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

// Waits delay_ns on the global timer, then writes value: a step whose result appears late.
__global__ void write_after_delay(int* slot, int value, unsigned long long delay_ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < delay_ns) {
  }
  *slot = value;
}

__global__ void square(const int* in, int* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = in[i] * in[i];
  }
}

__global__ void add_offset(const int* in, int* out, int n, int offset) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = in[i] + offset;
  }
}

__global__ void increment(int* counter) {
  *counter += 1;
}

// ---------------------------------------------------------------------------------------------
// Part 1: the log that host functions write
// ---------------------------------------------------------------------------------------------

// The value that the kernel of step `step` in stream `stream` writes; the host function of that
// step must see exactly this value.
int step_value(int stream, int step) {
  return (stream + 1) * 1000 + step;
}

unsigned step_delay_us(int stream, int step) {
  unsigned x = static_cast<unsigned>(stream) * 2654435761u + static_cast<unsigned>(step) * 40503u;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return settings::kMinStepDelayUs +
         x % (settings::kMaxStepDelayUs - settings::kMinStepDelayUs + 1);
}

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

struct StepRecord {
  StepLog* log;
  int stream;
  int step;
  const int* host_slot;  // pinned memory, written by the copy issued just before
};

// A host function: no CUDA calls, only host memory and a lock.
void CUDART_CB record_step(void* data) {
  const auto* record = static_cast<const StepRecord*>(data);
  const int seen = *record->host_slot;
  std::lock_guard<std::mutex> lock(record->log->mutex);
  record->log->entries.push_back({record->stream, record->step, seen, std::this_thread::get_id()});
}

// ---------------------------------------------------------------------------------------------
// Part 2: handing work back through a queue
// ---------------------------------------------------------------------------------------------

// Batch numbers from host functions to the worker thread.
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

struct BatchReady {
  BatchQueue* queue;
  int batch;
};

// A host function: it only says "batch N is on the host"; the CUDA calls happen elsewhere.
void CUDART_CB announce_batch(void* data) {
  const auto* ready = static_cast<const BatchReady*>(data);
  ready->queue->push(ready->batch);
}

struct BatchBuffers {
  int batch_elements = 0;
  int* device_stage1 = nullptr;  // squares, written by the stream that owns the batch
  int* device_stage2 = nullptr;  // squares + offset, written by the worker's stream
  int* host_stage1 = nullptr;    // pinned copies of stage 1
  int* host_stage2 = nullptr;    // pinned copies of stage 2
};

int blocks_for(int n) {
  return (n + 255) / 256 < 1024 ? (n + 255) / 256 : 1024;
}

// The worker: an ordinary host thread, so it may call CUDA, wait, and launch kernels.
void finish_batches(int device, BatchQueue* queue, const BatchBuffers* buffers,
                    std::vector<int>* arrival_order) {
  CS_CHECK(cudaSetDevice(device));  // a new thread starts on device 0
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int n = buffers->batch_elements;
  int batch = 0;
  while (queue->pop(&batch)) {
    const std::size_t first = static_cast<std::size_t>(batch) * static_cast<std::size_t>(n);
    // The host's decision: a number computed from the batch's first stage.
    long long sum = 0;
    for (int i = 0; i < n; ++i) sum += buffers->host_stage1[first + static_cast<std::size_t>(i)];
    const int offset = static_cast<int>(sum % settings::kOffsetModulus);
    // Stage 1 of this batch is complete on the device: its host function has run, and a host
    // function starts only after the work before it in its stream has finished.
    add_offset<<<blocks_for(n), 256, 0, stream>>>(buffers->device_stage1 + first,
                                                  buffers->device_stage2 + first, n, offset);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(buffers->host_stage2 + first, buffers->device_stage2 + first,
                             static_cast<std::size_t>(n) * sizeof(int), cudaMemcpyDeviceToHost,
                             stream));
    CS_CHECK(cudaStreamSynchronize(stream));
    arrival_order->push_back(batch);
  }
  CS_CHECK(cudaStreamDestroy(stream));
}

// ---------------------------------------------------------------------------------------------
// Part 3: a host function that calls CUDA anyway
// ---------------------------------------------------------------------------------------------

struct RuleBreak {
  cudaStream_t stream = nullptr;
  cudaError_t result = cudaSuccess;
  std::mutex mutex;
  std::condition_variable finished;
  bool returned = false;
};

void CUDART_CB call_cuda_inside(void* data) {
  auto* demo = static_cast<RuleBreak*>(data);
  // Against the rule on purpose, with a call that only asks and never waits. A call that waits
  // for this stream (cudaStreamSynchronize) would wait for this very function: a deadlock.
  const cudaError_t result = cudaStreamQuery(demo->stream);
  {
    std::lock_guard<std::mutex> lock(demo->mutex);
    demo->result = result;
    demo->returned = true;
  }
  demo->finished.notify_one();
}

// ---------------------------------------------------------------------------------------------
// Parts 4 and 5: the older callback API, and host functions in a graph
// ---------------------------------------------------------------------------------------------

struct LegacyCallbackRecord {
  const int* host_slot = nullptr;
  bool called = false;
  cudaError_t status = cudaErrorUnknown;
  int seen = 0;
};

// cudaStreamCallback_t: unlike a host function it is given the stream and a status, because it
// is also called after an error in the context (then the status names the error).
void CUDART_CB legacy_callback(cudaStream_t, cudaError_t status, void* data) {
  auto* record = static_cast<LegacyCallbackRecord*>(data);
  record->called = true;
  record->status = status;
  record->seen = record->host_slot ? *record->host_slot : 0;
}

// cudaStreamAddCallback is "slated for deprecation" in the CUDA 13 headers; should a later
// toolkit mark it deprecated, this keeps the -Werror build working where it is used on purpose:
// the host compiler's warning (GCC, Clang) and nvcc's own (1215 and 1444: "declared deprecated").
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
#pragma nv_diag_suppress 1215
#pragma nv_diag_suppress 1444
cudaError_t add_legacy_callback(cudaStream_t stream, LegacyCallbackRecord* record) {
  return cudaStreamAddCallback(stream, legacy_callback, record, 0);
}
#pragma nv_diag_default 1215
#pragma nv_diag_default 1444
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

struct ReplayRecord {
  const int* host_counter = nullptr;
  std::vector<int> seen;  // only the driver thread appends, one replay after the other
};

void CUDART_CB record_replay(void* data) {
  auto* record = static_cast<ReplayRecord*>(data);
  record->seen.push_back(*record->host_counter);
}

std::string error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (\"" + cudaGetErrorString(error) + "\")";
}

// ---------------------------------------------------------------------------------------------

int main(int argc, char** argv) {
  int stream_count = 3;
  int steps = 8;
  int batches = 8;
  int batch_elements = 1 << 16;
  bool no_error_demos = false;
  cs::CommonOptions common;
  cs::Options options("08_host_callbacks",
                      "Host functions in stream order (cudaLaunchHostFunc), handing work back "
                      "through a queue, and the older cudaStreamAddCallback.");
  options.add_int("streams", &stream_count, 1, 16, "streams whose host functions write the log");
  options.add_int("steps", &steps, 1, 500, "kernel + copy + host function steps per stream");
  options.add_int("batches", &batches, 1, 64, "batches handed from host functions to the worker");
  options.add_int("batch-elements", &batch_elements, 1, 1 << 20, "ints per batch");
  options.add_flag("no-error-demos", &no_error_demos,
                   "skip the calls that fail on purpose (the CUDA call inside a host function, "
                   "cudaStreamAddCallback during capture), e.g. under compute-sanitizer");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  cs::select_device(common.device);
  const std::size_t batch_bytes =
      static_cast<std::size_t>(batches) * static_cast<std::size_t>(batch_elements) * sizeof(int);
  cs::require_fits_on_device(3 * batch_bytes, "--batches " + std::to_string(batches) +
                                                  " --batch-elements " +
                                                  std::to_string(batch_elements));

  std::vector<cudaStream_t> streams(static_cast<std::size_t>(stream_count));
  for (cudaStream_t& stream : streams) {
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }

  // ===== 1. Host functions run in stream order ===============================================
  std::printf("\n1. Host functions run in stream order\n");
  std::printf(
      "   Each of %d streams runs %d steps: a kernel writes a value (after a %u..%u us "
      "wait), a copy brings it to pinned host memory, a host function logs what it "
      "sees.\n",
      stream_count, steps, settings::kMinStepDelayUs, settings::kMaxStepDelayUs);
  int* device_slots = nullptr;
  int* host_slots = nullptr;
  CS_CHECK(cudaMalloc(&device_slots, static_cast<std::size_t>(stream_count) * sizeof(int)));
  CS_CHECK(cudaMallocHost(&host_slots, static_cast<std::size_t>(stream_count) * sizeof(int)));
  for (int s = 0; s < stream_count; ++s) host_slots[s] = -1;

  StepLog log;
  log.entries.reserve(static_cast<std::size_t>(stream_count * steps));
  std::vector<StepRecord> records;
  records.reserve(static_cast<std::size_t>(stream_count * steps));
  for (int s = 0; s < stream_count; ++s) {
    for (int k = 0; k < steps; ++k) records.push_back({&log, s, k, &host_slots[s]});
  }

  cs::Timeline timeline;
  timeline.start(streams[0]);
  // Breadth first, so that the streams' steps are issued interleaved.
  for (int k = 0; k < steps; ++k) {
    for (int s = 0; s < stream_count; ++s) {
      cudaStream_t stream = streams[static_cast<std::size_t>(s)];
      const std::string row = "stream " + std::to_string(s);
      int span = timeline.begin(row, "kernel", stream);
      write_after_delay<<<1, 1, 0, stream>>>(&device_slots[s], step_value(s, k),
                                             1000ull * step_delay_us(s, k));
      CS_CHECK_LAUNCH();
      timeline.end(span, stream);
      span = timeline.begin(row, "D2H", stream);
      CS_CHECK(cudaMemcpyAsync(&host_slots[s], &device_slots[s], sizeof(int),
                               cudaMemcpyDeviceToHost, stream));
      timeline.end(span, stream);
      span = timeline.begin(row, "host function", stream);
      CS_CHECK(cudaLaunchHostFunc(stream, record_step,
                                  &records[static_cast<std::size_t>(s * steps + k)]));
      timeline.end(span, stream);
    }
  }
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamSynchronize(stream));
  const cs::TimelineData timeline_data = timeline.collect();

  // Every entry is read after the streams were synchronized: the host functions have returned.
  const std::size_t expected_entries = static_cast<std::size_t>(stream_count * steps);
  const std::size_t shown = log.entries.size() < 12 ? log.entries.size() : 12;
  std::printf("\n   log order  stream  step  value seen  value written before it\n");
  for (std::size_t i = 0; i < shown; ++i) {
    const LogEntry& e = log.entries[i];
    std::printf("   %9zu  %6d  %4d  %10d  %10d\n", i, e.stream, e.step, e.seen,
                step_value(e.stream, e.step));
  }
  if (log.entries.size() > shown) {
    std::printf("   ... %zu more entries\n", log.entries.size() - shown);
  }

  std::vector<int> next_step(static_cast<std::size_t>(stream_count), 0);
  bool in_issue_order = true;
  std::size_t saw_prior_work = 0;
  int stream_switches = 0;
  std::set<std::thread::id> threads;
  for (std::size_t i = 0; i < log.entries.size(); ++i) {
    const LogEntry& e = log.entries[i];
    int& expected_step = next_step[static_cast<std::size_t>(e.stream)];
    if (e.step != expected_step) in_issue_order = false;
    expected_step = e.step + 1;
    if (e.seen == step_value(e.stream, e.step)) ++saw_prior_work;
    if (i > 0 && log.entries[i - 1].stream != e.stream) ++stream_switches;
    threads.insert(e.thread);
  }
  for (int next : next_step) in_issue_order = in_issue_order && next == steps;
  in_issue_order = in_issue_order && log.entries.size() == expected_entries;
  const bool main_thread_ran_one = threads.count(std::this_thread::get_id()) > 0;

  cs::publish_timeline(timeline_data, common,
                       "Timeline of part 1 (each host function waits for the copy before it):");
  std::printf(
      "\n   The log switched streams %d times: host functions of different streams run in "
      "no promised order.\n",
      stream_switches);
  std::printf("   They ran on %zu host thread%s owned by the driver%s.\n", threads.size(),
              threads.size() == 1 ? "" : "s",
              main_thread_ran_one ? " (one of them this program's main thread)"
                                  : ", never on this program's main thread");
  cs::check_that("host_functions_in_stream_order", in_issue_order,
                 std::to_string(log.entries.size()) + " of " + std::to_string(expected_entries) +
                     " host functions logged; within every stream the steps came in issue order "
                     "0.." +
                     std::to_string(steps - 1));
  cs::check_that("host_functions_saw_prior_work", saw_prior_work == expected_entries,
                 std::to_string(saw_prior_work) + " of " + std::to_string(expected_entries) +
                     " saw the value that the kernel and copy before them produced");

  // ===== 2. Handing work back: a queue to a host thread =====================================
  std::printf("\n2. A host function hands work back through a queue, never by calling CUDA\n");
  const std::size_t total_elements =
      static_cast<std::size_t>(batches) * static_cast<std::size_t>(batch_elements);
  const std::size_t one_batch_bytes = static_cast<std::size_t>(batch_elements) * sizeof(int);
  int* host_input = nullptr;
  int* device_input = nullptr;
  BatchBuffers buffers;
  buffers.batch_elements = batch_elements;
  CS_CHECK(cudaMallocHost(&host_input, batch_bytes));
  CS_CHECK(cudaMallocHost(&buffers.host_stage1, batch_bytes));
  CS_CHECK(cudaMallocHost(&buffers.host_stage2, batch_bytes));
  CS_CHECK(cudaMalloc(&device_input, batch_bytes));
  CS_CHECK(cudaMalloc(&buffers.device_stage1, batch_bytes));
  CS_CHECK(cudaMalloc(&buffers.device_stage2, batch_bytes));
  for (std::size_t i = 0; i < total_elements; ++i) {
    const std::size_t b = i / static_cast<std::size_t>(batch_elements);
    const std::size_t j = i % static_cast<std::size_t>(batch_elements);
    host_input[i] = static_cast<int>((b * 31 + j * 7) % 1000);
  }

  BatchQueue queue;
  std::vector<int> arrival_order;
  std::thread worker(finish_batches, common.device, &queue, &buffers, &arrival_order);
  const int batch_streams = stream_count < 2 ? stream_count : 2;
  std::vector<BatchReady> ready(static_cast<std::size_t>(batches));
  for (int b = 0; b < batches; ++b) {
    cudaStream_t stream = streams[static_cast<std::size_t>(b % batch_streams)];
    const std::size_t first =
        static_cast<std::size_t>(b) * static_cast<std::size_t>(batch_elements);
    CS_CHECK(cudaMemcpyAsync(device_input + first, host_input + first, one_batch_bytes,
                             cudaMemcpyHostToDevice, stream));
    square<<<blocks_for(batch_elements), 256, 0, stream>>>(
        device_input + first, buffers.device_stage1 + first, batch_elements);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(buffers.host_stage1 + first, buffers.device_stage1 + first,
                             one_batch_bytes, cudaMemcpyDeviceToHost, stream));
    ready[static_cast<std::size_t>(b)] = {&queue, b};
    CS_CHECK(cudaLaunchHostFunc(stream, announce_batch, &ready[static_cast<std::size_t>(b)]));
  }
  for (int s = 0; s < batch_streams; ++s) {
    CS_CHECK(cudaStreamSynchronize(streams[static_cast<std::size_t>(s)]));
  }
  queue.close();  // every host function has pushed its batch; the worker drains and stops
  worker.join();

  std::vector<int> reference(total_elements);
  for (int b = 0; b < batches; ++b) {
    const std::size_t first =
        static_cast<std::size_t>(b) * static_cast<std::size_t>(batch_elements);
    long long sum = 0;
    for (int j = 0; j < batch_elements; ++j) {
      const long long x = host_input[first + static_cast<std::size_t>(j)];
      sum += x * x;
    }
    const int offset = static_cast<int>(sum % settings::kOffsetModulus);
    for (int j = 0; j < batch_elements; ++j) {
      const int x = host_input[first + static_cast<std::size_t>(j)];
      reference[first + static_cast<std::size_t>(j)] = x * x + offset;
    }
  }
  std::printf(
      "   %d batches of %d ints on %d stream%s: H2D, square, D2H, then a host function "
      "pushes the batch number;\n   a worker thread adds the batch's sum (a host "
      "decision) on the GPU in its own stream.\n",
      batches, batch_elements, batch_streams, batch_streams == 1 ? "" : "s");
  std::string order_text;
  for (std::size_t i = 0; i < arrival_order.size() && i < 16; ++i) {
    order_text += (i ? " " : "") + std::to_string(arrival_order[i]);
  }
  if (arrival_order.size() > 16) order_text += " ...";
  std::printf("   batches reached the worker in this order: %s\n", order_text.c_str());
  std::vector<int> last_of_stream(static_cast<std::size_t>(batch_streams), -1);
  std::set<int> distinct(arrival_order.begin(), arrival_order.end());
  bool arrival_in_stream_order = arrival_order.size() == static_cast<std::size_t>(batches) &&
                                 distinct.size() == static_cast<std::size_t>(batches);
  for (int b : arrival_order) {
    int& last = last_of_stream[static_cast<std::size_t>(b % batch_streams)];
    if (b <= last) arrival_in_stream_order = false;
    last = b;
  }
  cs::check_that("handoff_order", arrival_in_stream_order,
                 std::to_string(arrival_order.size()) + " of " + std::to_string(batches) +
                     " batches handed over once each, every stream's batches in issue order");
  cs::verify("handoff_results", buffers.host_stage2, reference.data(), total_elements);

  // ===== 3. What a host function must not do ================================================
  std::printf("\n3. A host function must not call CUDA\n");
  std::printf(
      "   It runs on a driver thread while its stream waits for it to return. A call "
      "that waits for the stream\n   (cudaStreamSynchronize, a synchronous cudaMemcpy) "
      "would wait for itself; the documentation says any\n   CUDA call there may fail "
      "with cudaErrorNotPermitted, but does not promise it.\n");
  if (no_error_demos) {
    cs::check_skipped("rule_demo_returned",
                      "--no-error-demos: the CUDA call inside a host "
                      "function was not made");
  } else {
    RuleBreak demo;
    demo.stream = streams[0];
    increment<<<1, 1, 0, streams[0]>>>(device_slots);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaLaunchHostFunc(streams[0], call_cuda_inside, &demo));
    bool returned = false;
    {
      // A host-side wait with a deadline, not a CUDA call: should the driver thread hang inside
      // the forbidden call, this program reports it and ends instead of hanging with it.
      std::unique_lock<std::mutex> lock(demo.mutex);
      returned = demo.finished.wait_for(lock, std::chrono::seconds(bars::kRuleDemoTimeoutSeconds),
                                        [&] { return demo.returned; });
    }
    if (!returned) {
      cs::check_that("rule_demo_returned", false,
                     "the host function that called cudaStreamQuery did not return within " +
                         std::to_string(bars::kRuleDemoTimeoutSeconds) + " s (deadlock)");
      std::fflush(stdout);
      std::_Exit(cs::kFailExitCode);  // the stream can never finish; nothing can be cleaned up
    }
    std::printf("   cudaStreamQuery(its own stream) inside a host function returned %s.\n",
                error_text(demo.result).c_str());
    if (demo.result == cudaErrorNotPermitted) {
      std::printf("   The driver refused the call, as the documentation allows.\n");
    } else {
      std::printf(
          "   This driver returned %s, but the rule stands: a CUDA call inside a host "
          "function is not\n   guaranteed to work, and one that waits would deadlock.\n",
          cudaGetErrorName(demo.result));
    }
    CS_CHECK(cudaStreamSynchronize(streams[0]));
    cs::check_that("rule_demo_returned", returned,
                   "the host function returned (with " +
                       std::string(cudaGetErrorName(demo.result)) + ") and its stream went on");
  }

  // ===== 4. The older API: cudaStreamAddCallback ============================================
  std::printf("\n4. cudaStreamAddCallback, the API that cudaLaunchHostFunc replaces\n");
  LegacyCallbackRecord legacy;
  legacy.host_slot = &host_slots[0];
  const int legacy_value = 424242;
  write_after_delay<<<1, 1, 0, streams[0]>>>(&device_slots[0], legacy_value, 100000ull);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaMemcpyAsync(&host_slots[0], &device_slots[0], sizeof(int), cudaMemcpyDeviceToHost,
                           streams[0]));
  CS_CHECK(add_legacy_callback(streams[0], &legacy));
  CS_CHECK(cudaStreamSynchronize(streams[0]));
  std::printf("   The callback ran in stream order too, and was given status %s.\n",
              cudaGetErrorName(legacy.status));
  std::printf(
      "   That status is why it was replaced: a callback is also called after an error "
      "in the context, so\n   every callback must handle that case, while a host "
      "function is simply not called then.\n");
  cs::check_that("stream_callback",
                 legacy.called && legacy.status == cudaSuccess && legacy.seen == legacy_value,
                 std::string("called with ") + cudaGetErrorName(legacy.status) + ", saw " +
                     std::to_string(legacy.seen) + " (the copy before it wrote " +
                     std::to_string(legacy_value) + ")");

  // ===== 5. Host functions can be captured into a graph; callbacks cannot ===================
  std::printf("\n5. cudaLaunchHostFunc can be captured into a CUDA graph\n");
  int* device_counter = nullptr;
  int* host_counter = nullptr;
  CS_CHECK(cudaMalloc(&device_counter, sizeof(int)));
  CS_CHECK(cudaMallocHost(&host_counter, sizeof(int)));
  CS_CHECK(cudaMemsetAsync(device_counter, 0, sizeof(int), streams[0]));
  CS_CHECK(cudaStreamSynchronize(streams[0]));
  ReplayRecord replays;
  replays.host_counter = host_counter;

  cudaGraph_t graph = nullptr;
  CS_CHECK(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeGlobal));
  increment<<<1, 1, 0, streams[0]>>>(device_counter);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaMemcpyAsync(host_counter, device_counter, sizeof(int), cudaMemcpyDeviceToHost,
                           streams[0]));
  CS_CHECK(cudaLaunchHostFunc(streams[0], record_replay, &replays));
  CS_CHECK(cudaStreamEndCapture(streams[0], &graph));

  std::size_t node_count = 0;
  CS_CHECK(cudaGraphGetNodes(graph, nullptr, &node_count));
  std::vector<cudaGraphNode_t> nodes(node_count);
  CS_CHECK(cudaGraphGetNodes(graph, nodes.data(), &node_count));
  int host_nodes = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    CS_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeHost) ++host_nodes;
  }
  cudaGraphExec_t graph_exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
  for (int r = 0; r < settings::kGraphReplays; ++r) {
    CS_CHECK(cudaGraphLaunch(graph_exec, streams[0]));
  }
  CS_CHECK(cudaStreamSynchronize(streams[0]));
  std::string seen_text;
  bool replays_right = replays.seen.size() == static_cast<std::size_t>(settings::kGraphReplays);
  for (std::size_t i = 0; i < replays.seen.size(); ++i) {
    seen_text += (i ? ", " : "") + std::to_string(replays.seen[i]);
    if (replays.seen[i] != static_cast<int>(i) + 1) replays_right = false;
  }
  std::printf(
      "   Captured: increment kernel, copy to the host, host function -> a graph of %zu "
      "nodes, %d of them a host node.\n",
      node_count, host_nodes);
  cs::check_that("host_function_in_graph", replays_right && host_nodes == 1,
                 std::to_string(settings::kGraphReplays) + " replays; the host node ran " +
                     std::to_string(replays.seen.size()) + " times and saw the counter at " +
                     (seen_text.empty() ? std::string("nothing") : seen_text));
  CS_CHECK(cudaGraphExecDestroy(graph_exec));
  CS_CHECK(cudaGraphDestroy(graph));

  if (no_error_demos) {
    cs::check_skipped("stream_callback_not_capturable",
                      "--no-error-demos: cudaStreamAddCallback was not called during capture");
  } else {
    LegacyCallbackRecord never_called;
    CS_CHECK(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeGlobal));
    const cudaError_t add_status = add_legacy_callback(streams[0], &never_called);
    cudaGraph_t rejected = nullptr;
    const cudaError_t end_status = cudaStreamEndCapture(streams[0], &rejected);
    if (rejected) CS_CHECK(cudaGraphDestroy(rejected));
    const cudaError_t cleared = cudaGetLastError();  // the failed calls set this thread's error
    std::printf(
        "   cudaStreamAddCallback during capture returned %s;\n   cudaStreamEndCapture "
        "then returned %s%s.\n",
        error_text(add_status).c_str(), cudaGetErrorName(end_status),
        rejected ? " and a graph" : " and no graph");
    std::printf("   cudaGetLastError() cleared %s; the error is not sticky, the stream goes on.\n",
                cudaGetErrorName(cleared));
    CS_CHECK(cudaStreamSynchronize(streams[0]));
    cs::check_that(
        "stream_callback_not_capturable", add_status != cudaSuccess,
        std::string("cudaStreamAddCallback refused capture with ") + cudaGetErrorName(add_status));
  }

  std::printf(
      "\nA host function runs in stream order on a driver thread, sees the results of "
      "the work before it and\nholds back the work after it. Keep it short, make no CUDA "
      "calls in it, and hand CUDA work to\nyour own thread through a queue.\n");

  CS_CHECK(cudaFree(device_counter));
  CS_CHECK(cudaFreeHost(host_counter));
  CS_CHECK(cudaFree(device_input));
  CS_CHECK(cudaFree(buffers.device_stage1));
  CS_CHECK(cudaFree(buffers.device_stage2));
  CS_CHECK(cudaFreeHost(host_input));
  CS_CHECK(cudaFreeHost(buffers.host_stage1));
  CS_CHECK(cudaFreeHost(buffers.host_stage2));
  CS_CHECK(cudaFree(device_slots));
  CS_CHECK(cudaFreeHost(host_slots));
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
  return cs::finish();
}
