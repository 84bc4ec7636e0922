// Chapter 08: host functions in stream order
//
// cudaLaunchHostFunc(stream, fn, data) puts a call of a host function into a stream: it runs once
// all the work issued before it in that stream has finished, and the work issued after it waits
// until it returns. Between streams there is no order at all. A host function must not call CUDA:
// when it has to start more GPU work, it hands a note to a thread of the program's own. The older
// cudaStreamAddCallback gives its callback a status, and cannot be captured into a CUDA graph.
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/08_host_callbacks
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/08_host_callbacks/host_callbacks.cu common/src/*.cpp -o 08_host_callbacks
//   build/bin/08_host_callbacks --part stall   # one part: order, handoff, rule, stall, callback, graph
//   build/bin/08_host_callbacks --help         # every flag
// clang-format on
//
// What to expect (host_callbacks_lab.cuh holds the machinery; a reader may skip it)
//   1. order: kernel, copy, host function per step in several streams; the host functions' log
//      has each stream's steps in issue order, each with the value the work before it wrote.
//   2. handoff: host functions push batch numbers into a queue; a worker thread makes the CUDA
//      calls of the second stage; the results match the CPU's.
//   3. rule: a host function calls cudaStreamQuery (against the rule, a call that cannot wait).
//   4. stall: a host function that sleeps holds back the rest of its stream, not a kernel in
//      another stream (with one hardware queue, CUDA_DEVICE_MAX_CONNECTIONS=1, it may hold all).
//   5. callback: cudaStreamAddCallback runs in stream order, gets a status, and cannot be captured.
//   6. graph: a host function captured into a graph runs on every replay.
// Every property ends in a CHECK line; the exit status is 0 when all pass.

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"
#include "host_callbacks_lab.cuh"

namespace lab = host_callbacks_lab;

// Kernels

// Waits delay_ns on the GPU's nanosecond clock (cs::globaltimer_ns(), from
// cuda_streams/device_clock.cuh), then writes value: a step whose result appears late.
__global__ void write_after_delay(int* slot, int value, unsigned long long delay_ns) {
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < delay_ns) {
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

// Part 1: host functions run in stream order, and see the work issued before them

// A host function: no CUDA calls, only host memory and a lock.
void CUDART_CB record_step(void* data) {
  const auto* record = static_cast<const lab::StepRecord*>(data);
  const int seen = *record->host_slot;
  std::lock_guard<std::mutex> lock(record->log->mutex);
  record->log->entries.push_back({record->stream, record->step, seen, std::this_thread::get_id()});
}

void part_order(int stream_count, int steps, const cs::CommonOptions& common) {
  lab::print_order_intro(stream_count, steps);
  const std::size_t slots_bytes = static_cast<std::size_t>(stream_count) * sizeof(int);
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(stream_count));
  int *device_slots = nullptr, *host_slots = nullptr;
  for (cudaStream_t& s : streams) CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CS_CHECK(cudaMalloc(&device_slots, slots_bytes));
  CS_CHECK(cudaMallocHost(&host_slots, slots_bytes));  // pinned: the copies stay asynchronous
  for (int s = 0; s < stream_count; ++s) host_slots[s] = -1;
  lab::StepLog log;
  // One record per host function, alive until it has run: its stream, step and pinned slot.
  std::vector<lab::StepRecord> records = lab::step_records(&log, stream_count, steps, host_slots);

  cs::Timeline timeline;
  timeline.start(streams[0]);
  for (int k = 0; k < steps; ++k) {  // breadth first: the streams' steps are issued interleaved
    for (int s = 0; s < stream_count; ++s) {  // core: order (13 lines)
      cudaStream_t stream = streams[static_cast<std::size_t>(s)];
      const std::string row = "stream " + std::to_string(s);
      auto span = timeline.span(row, "kernel", stream);
      write_after_delay<<<1, 1, 0, stream>>>(&device_slots[s], lab::step_value(s, k),
                                             lab::step_delay_ns(s, k));
      CS_CHECK_LAUNCH();
      span = timeline.span(row, "D2H", stream);
      CS_CHECK(cudaMemcpyAsync(&host_slots[s], &device_slots[s], sizeof(int),
                               cudaMemcpyDeviceToHost, stream));
      span = timeline.span(row, "host function", stream);
      CS_CHECK(cudaLaunchHostFunc(stream, record_step, &records[s * steps + k]));
    }
  }
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamSynchronize(stream));
  cs::publish_timeline(timeline.collect(), common,
                       "Timeline (each host function waits for the copy before it):");
  const lab::LogReading r = lab::read_log(log, stream_count, steps);  // and prints what it saw
  // Stream order is a promise, not a likelihood: the bar is every host function, each stream's
  // in issue order, each having seen the value that the kernel and the copy before it produced.
  const std::size_t expected = records.size();
  cs::check_that("host_functions_in_stream_order", r.in_issue_order && r.entries == expected,
                 cs::format("%zu of %zu host functions logged; within every stream the steps "
                            "came in issue order 0..%d",
                            r.entries, expected, steps - 1));
  cs::check_that("host_functions_saw_prior_work", r.saw_prior_work == expected,
                 cs::format("%zu of %zu saw the value that the kernel and copy before them "
                            "produced",
                            r.saw_prior_work, expected));
  CS_CHECK(cudaFree(device_slots));
  CS_CHECK(cudaFreeHost(host_slots));
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 2: a host function hands work back through a queue, never by calling CUDA

// A host function: it only says "batch N is on the host"; the CUDA calls happen elsewhere.
void CUDART_CB announce_batch(void* data) {
  const auto* ready = static_cast<const lab::BatchReady*>(data);
  ready->queue->push(ready->batch);
}

// The worker: an ordinary host thread, so it may call CUDA, wait, and launch kernels.
void finish_batches(int device, lab::BatchQueue* queue, const lab::Batches* b,
                    std::vector<int>* order) {
  CS_CHECK(cudaSetDevice(device));  // a new thread starts on device 0
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int batch = 0;
  while (queue->pop(&batch)) {
    const std::size_t first = static_cast<std::size_t>(batch) * static_cast<std::size_t>(b->n);
    // Stage 1 of this batch is on the host: its host function ran, and a host function starts
    // only after the work before it in its stream has finished. The host decides from it.
    const int offset = lab::offset_of(b->host_stage1 + first, b->n);
    add_offset<<<lab::blocks_for(b->n), lab::kThreads, 0, stream>>>(
        b->device_stage1 + first, b->device_stage2 + first, b->n, offset);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(b->host_stage2 + first, b->device_stage2 + first,
                             static_cast<std::size_t>(b->n) * sizeof(int), cudaMemcpyDeviceToHost,
                             stream));
    CS_CHECK(cudaStreamSynchronize(stream));
    order->push_back(batch);
  }
  CS_CHECK(cudaStreamDestroy(stream));
}

void part_handoff(int device, int batches, int n, int stream_count) {
  const std::size_t batch_bytes = static_cast<std::size_t>(n) * sizeof(int);
  const std::size_t bytes = static_cast<std::size_t>(batches) * batch_bytes;
  cs::require_fits_on_device(3 * bytes, cs::format("--batches %d --batch-elements %d", batches, n));
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(stream_count));
  for (cudaStream_t& s : streams) CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  lab::Batches b;
  b.n = n;
  int *host_input = nullptr, *device_input = nullptr;
  for (int** p : {&host_input, &b.host_stage1, &b.host_stage2}) CS_CHECK(cudaMallocHost(p, bytes));
  for (int** p : {&device_input, &b.device_stage1, &b.device_stage2})
    CS_CHECK(cudaMalloc(p, bytes));
  for (std::size_t i = 0; i < bytes / sizeof(int); ++i) host_input[i] = lab::batch_input(i, n);

  lab::BatchQueue queue;
  std::vector<int> order;
  std::thread worker(finish_batches, device, &queue, &b, &order);
  std::vector<lab::BatchReady> ready(static_cast<std::size_t>(batches));  // alive until run
  for (int i = 0; i < batches; ++i) {  // core: handoff (13 lines)
    cudaStream_t stream = streams[static_cast<std::size_t>(i % stream_count)];
    const std::size_t first = static_cast<std::size_t>(i) * static_cast<std::size_t>(n);
    CS_CHECK(cudaMemcpyAsync(device_input + first, host_input + first, batch_bytes,
                             cudaMemcpyHostToDevice, stream));
    square<<<lab::blocks_for(n), lab::kThreads, 0, stream>>>(device_input + first,
                                                             b.device_stage1 + first, n);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(b.host_stage1 + first, b.device_stage1 + first, batch_bytes,
                             cudaMemcpyDeviceToHost, stream));
    ready[static_cast<std::size_t>(i)] = {&queue, i};
    CS_CHECK(cudaLaunchHostFunc(stream, announce_batch, &ready[static_cast<std::size_t>(i)]));
  }
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamSynchronize(stream));
  queue.close();  // every host function has pushed its batch; the worker drains and stops
  worker.join();
  lab::print_handoff(batches, n, stream_count);
  // The bar is every batch, handed over once, each stream's in issue order: host functions run in
  // stream order, and the queue keeps the order in which they pushed.
  cs::check_that("handoff_order", lab::arrived_in_stream_order(order, batches, stream_count),
                 cs::format("%zu of %d batches handed over once each, every stream's batches in "
                            "issue order",
                            order.size(), batches));
  const std::vector<int> reference = lab::handoff_reference(host_input, batches, n);
  cs::verify("handoff_results", b.host_stage2, reference.data(), reference.size());
  for (int* p : {device_input, b.device_stage1, b.device_stage2}) CS_CHECK(cudaFree(p));
  for (int* p : {host_input, b.host_stage1, b.host_stage2}) CS_CHECK(cudaFreeHost(p));
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 3: a host function must not call CUDA

void CUDART_CB call_cuda_inside(void* data) {
  auto* demo = static_cast<lab::RuleBreak*>(data);
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

void part_rule(bool no_error_demos) {
  lab::print_rule_intro();
  if (no_error_demos) {
    cs::check_skipped("rule_demo_returned",
                      "--no-error-demos: the CUDA call inside a host function was not made");
    return;
  }
  cudaStream_t stream = nullptr;  // core: rule (14 lines)
  int* counter = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CS_CHECK(cudaMalloc(&counter, sizeof(int)));
  CS_CHECK(cudaMemsetAsync(counter, 0, sizeof(int), stream));
  lab::RuleBreak demo;
  demo.stream = stream;
  increment<<<1, 1, 0, stream>>>(counter);  // work before the host function
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaLaunchHostFunc(stream, call_cuda_inside, &demo));
  // How long the host waits for that host function before it calls it a deadlock: it returns in
  // microseconds, and a hung driver thread must end the test, not hang it.
  constexpr int kRuleDemoTimeoutSeconds = 10;
  const bool returned = lab::wait_or_exit(&demo, kRuleDemoTimeoutSeconds);  // on the host
  lab::print_rule_result(demo.result);
  CS_CHECK(cudaStreamSynchronize(stream));
  cs::check_that("rule_demo_returned", returned,
                 cs::format("the host function returned (with %s) and its stream went on",
                            cudaGetErrorName(demo.result)));
  CS_CHECK(cudaFree(counter));
  CS_CHECK(cudaStreamDestroy(stream));
}

// Part 4: a slow host function holds back the rest of its stream, not another stream

// A host function that only sleeps: a stand-in for one that does too much.
void CUDART_CB sleep_on_host(void* data) {
  std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<const int*>(data)));
}

void part_stall(int host_ms, const cs::LaunchEnvironment& env, const cs::CommonOptions& common) {
  cudaStream_t a = nullptr, b = nullptr;
  cudaEvent_t start = nullptr, a_after = nullptr, b_done = nullptr;
  int* slot = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  for (cudaEvent_t* event : {&start, &a_after, &b_done}) CS_CHECK(cudaEventCreate(event));
  CS_CHECK(cudaMalloc(&slot, sizeof(int)));
  write_after_delay<<<1, 1, 0, b>>>(slot, 0, 0);  // warm-up: loads the kernel
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(b));

  const unsigned long long b_kernel_ns = 100000ull * host_ms;  // a tenth of the host function
  CS_CHECK(cudaEventRecord(start, a));                         // core: stall (13 lines)
  const double issue_from = cs::host_now_ms();
  CS_CHECK(cudaLaunchHostFunc(a, sleep_on_host, &host_ms));
  const double issue_ms = cs::host_now_ms() - issue_from;
  CS_CHECK(cudaEventRecord(a_after, a));  // stream A reaches it when the host function returned
  write_after_delay<<<1, 1, 0, b>>>(slot, 1, b_kernel_ns);  // issued after the host function
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(b_done, b));
  CS_CHECK(cudaEventSynchronize(a_after));
  CS_CHECK(cudaEventSynchronize(b_done));
  float a_ms = 0, b_ms = 0;
  CS_CHECK(cudaEventElapsedTime(&a_ms, start, a_after));
  CS_CHECK(cudaEventElapsedTime(&b_ms, start, b_done));
  lab::print_stall(host_ms, issue_ms, a_ms, b_ms);
  // The work after a host function in its stream waits until it returns: at least this fraction
  // of its sleep (which lasts at least host_ms; the margin covers the clocks' rounding).
  constexpr double kHeldFractionMin = 0.9;
  cs::check_or_skip(common.timing_skip_reason(), "host_function_holds_its_stream", a_ms / host_ms,
                    cs::Compare::at_least, kHeldFractionMin, "x",
                    "stream A's wait / the host function's sleep");
  // Another stream's kernel does not wait for it: done within this fraction of the sleep (it
  // runs a tenth of it), when stream B has a hardware queue of its own and the host is free.
  constexpr double kOtherStreamFractionMax = 0.5;
  const bool b_waited = b_ms >= kHeldFractionMin * host_ms;
  const std::string skip = cs::first_reason(
      {common.timing_skip_reason(), lab::one_host_thread_reason(env), lab::one_queue_reason(env)});
  cs::check_or_skip(skip, "other_stream_not_held", b_ms / host_ms, cs::Compare::at_most,
                    kOtherStreamFractionMax, "x",
                    "stream B's kernel done / the host function's sleep");
  lab::print_stall_environment(env, b_waited, issue_ms, host_ms);
  CS_CHECK(cudaFree(slot));
  for (cudaEvent_t event : {start, a_after, b_done}) CS_CHECK(cudaEventDestroy(event));
  for (cudaStream_t stream : {a, b}) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 5: cudaStreamAddCallback, the API that cudaLaunchHostFunc replaces

// A cudaStreamCallback_t: unlike a host function it is given the stream and a status, because it
// is also called after an error in the context (then the status names the error).
void CUDART_CB legacy_callback(cudaStream_t, cudaError_t status, void* data) {
  auto* record = static_cast<lab::CallbackRecord*>(data);
  record->called = true;
  record->status = status;
  record->seen = record->host_slot ? *record->host_slot : 0;
}

HOST_CALLBACKS_ALLOW_DEPRECATED_BEGIN;  // cudaStreamAddCallback: see host_callbacks_lab.cuh

void part_callback(bool no_error_demos) {
  cudaStream_t stream = nullptr;
  int *device_slot = nullptr, *host_slot = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CS_CHECK(cudaMalloc(&device_slot, sizeof(int)));
  CS_CHECK(cudaMallocHost(&host_slot, sizeof(int)));
  lab::CallbackRecord record;  // core: callback (8 lines)
  record.host_slot = host_slot;
  constexpr int kValue = 424242;  // written after 100 us, copied, then read by the callback
  write_after_delay<<<1, 1, 0, stream>>>(device_slot, kValue, 100000ull);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaMemcpyAsync(host_slot, device_slot, sizeof(int), cudaMemcpyDeviceToHost, stream));
  CS_CHECK(cudaStreamAddCallback(stream, legacy_callback, &record, 0));  // flags must be 0
  CS_CHECK(cudaStreamSynchronize(stream));
  lab::print_callback(record.status);
  cs::check_that("stream_callback",
                 record.called && record.status == cudaSuccess && record.seen == kValue,
                 cs::format("called with %s, saw %d (the copy before it wrote %d)",
                            cudaGetErrorName(record.status), record.seen, kValue));
  if (no_error_demos) {
    cs::check_skipped("stream_callback_not_capturable",
                      "--no-error-demos: cudaStreamAddCallback was not called during capture");
  } else {
    lab::CallbackRecord never_called;
    CS_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const cudaError_t added = cudaStreamAddCallback(stream, legacy_callback, &never_called, 0);
    cudaGraph_t rejected = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &rejected);
    if (rejected) CS_CHECK(cudaGraphDestroy(rejected));
    const cudaError_t cleared = cudaGetLastError();  // the failed calls set this thread's error
    lab::print_refused_capture(added, ended, rejected != nullptr, cleared);
    CS_CHECK(cudaStreamSynchronize(stream));
    cs::check_that(
        "stream_callback_not_capturable", added != cudaSuccess,
        cs::format("cudaStreamAddCallback refused capture with %s", cudaGetErrorName(added)));
  }
  CS_CHECK(cudaFree(device_slot));
  CS_CHECK(cudaFreeHost(host_slot));
  CS_CHECK(cudaStreamDestroy(stream));
}

HOST_CALLBACKS_ALLOW_DEPRECATED_END;

// Part 6: cudaLaunchHostFunc can be captured into a CUDA graph

void CUDART_CB record_replay(void* data) {
  auto* record = static_cast<lab::ReplayRecord*>(data);
  record->seen.push_back(*record->host_counter);
}

void part_graph() {
  cudaStream_t stream = nullptr;
  int *device_counter = nullptr, *host_counter = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CS_CHECK(cudaMalloc(&device_counter, sizeof(int)));
  CS_CHECK(cudaMallocHost(&host_counter, sizeof(int)));
  CS_CHECK(cudaMemsetAsync(device_counter, 0, sizeof(int), stream));  // replays count from 0
  CS_CHECK(cudaStreamSynchronize(stream));
  lab::ReplayRecord replays;
  replays.host_counter = host_counter;

  cudaGraph_t graph = nullptr;  // core: graph (16 lines)
  CS_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  increment<<<1, 1, 0, stream>>>(device_counter);
  CS_CHECK_LAUNCH();
  CS_CHECK(
      cudaMemcpyAsync(host_counter, device_counter, sizeof(int), cudaMemcpyDeviceToHost, stream));
  CS_CHECK(cudaLaunchHostFunc(stream, record_replay, &replays));
  CS_CHECK(cudaStreamEndCapture(stream, &graph));
  std::size_t nodes = 0;
  const int host_nodes = lab::count_host_nodes(graph, &nodes);
  cudaGraphExec_t graph_exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
  // Replays of the graph: its host node must run once per replay, in order, and see the counter
  // that the replay's kernel and copy produced (1, 2, 3, ...).
  constexpr int kReplays = 3;
  for (int r = 0; r < kReplays; ++r) CS_CHECK(cudaGraphLaunch(graph_exec, stream));
  CS_CHECK(cudaStreamSynchronize(stream));
  std::string seen;
  const bool replays_right = lab::read_replays(replays.seen, kReplays, &seen);
  std::printf(
      "Captured: increment kernel, copy to the host, host function -> a graph of %zu nodes, %d of "
      "them a host node.\n",
      nodes, host_nodes);
  cs::check_that("host_function_in_graph", replays_right && host_nodes == 1,
                 cs::format("%d replays; the host node ran %zu times and saw the counter at %s",
                            kReplays, replays.seen.size(), seen.c_str()));
  CS_CHECK(cudaGraphExecDestroy(graph_exec));
  CS_CHECK(cudaGraphDestroy(graph));
  CS_CHECK(cudaFree(device_counter));
  CS_CHECK(cudaFreeHost(host_counter));
  CS_CHECK(cudaStreamDestroy(stream));
}

int main(int argc, char** argv) {
  lab::Flags f;  // --streams, --steps, --batches, ...: see host_callbacks_lab.cuh
  cs::CommonOptions common;
  cs::Options options("08_host_callbacks",
                      "Host functions in stream order (cudaLaunchHostFunc), handing work back "
                      "through a queue, and the older cudaStreamAddCallback.");
  cs::Parts parts(options,
                  {{"order", "host functions run in stream order and see the work before them"},
                   {"handoff", "a host function hands CUDA work to a thread through a queue"},
                   {"rule", "a host function must not call CUDA"},
                   {"stall", "a slow host function holds back its own stream, not another"},
                   {"callback", "cudaStreamAddCallback: a status, and no stream capture"},
                   {"graph", "a host function captured into a graph runs on every replay"}});
  lab::add_flags(options, &f);
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  cs::select_device(common.device);
  cs::print_launch_environment(env);
  if (parts.begin("order")) part_order(f.streams, f.steps, common);
  if (parts.begin("handoff")) {
    part_handoff(common.device, f.batches, f.batch_elements, f.streams < 2 ? f.streams : 2);
  }
  if (parts.begin("rule")) part_rule(f.no_error_demos);
  if (parts.begin("stall")) part_stall(f.host_ms, env, common);
  if (parts.begin("callback")) part_callback(f.no_error_demos);
  if (parts.begin("graph")) part_graph();
  lab::print_closing();
  return cs::finish();
}
