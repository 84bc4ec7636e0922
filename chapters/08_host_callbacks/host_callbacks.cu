// Chapter 08: host functions in stream order
//
// cudaLaunchHostFunc(stream, fn, data) puts a call of a host function into a stream: it runs once
// all the work issued before it in that stream has finished, and the work issued after it waits
// until it returns. Between streams there is no order at all. A host function must not call CUDA:
// when it has to start more GPU work, it hands a note to a thread of the program's own. The older
// cudaStreamAddCallback gives its callback a status, and cannot be captured into a CUDA graph.
//
// clang-format off
//   cmake --preset default && cmake --build --preset default && build/bin/08_host_callbacks
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/08_host_callbacks/host_callbacks.cu common/src/*.cpp -o 08_host_callbacks
//   build/bin/08_host_callbacks --part stall   # one part: order, handoff, rule, stall, callback, graph
//   build/bin/08_host_callbacks --help         # every flag
// clang-format on
// Each part ends in CHECK lines (exit 0 when all pass); host_callbacks_lab.cuh may be skipped.

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"
#include "host_callbacks_lab.cuh"

namespace lab = host_callbacks_lab;

// Kernels
// Waits delay_ns on the GPU's clock (cs::globaltimer_ns()), then writes value: a late result.
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
  auto* record = static_cast<lab::StepRecord*>(data);
  record->seen = *record->host_slot;
  record->thread = std::this_thread::get_id();
  std::lock_guard<std::mutex> lock(*record->log_mutex);
  record->log->push_back(record);
}

void part_order(int stream_count, int steps, const cs::CommonOptions& common) {
  const std::size_t slots_bytes = static_cast<std::size_t>(stream_count) * sizeof(int);
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(stream_count));
  int *device_slots = nullptr, *host_slots = nullptr;
  for (cudaStream_t& s : streams) CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CS_CHECK(cudaMalloc(&device_slots, slots_bytes));
  CS_CHECK(cudaMallocHost(&host_slots, slots_bytes));  // pinned: the copies stay asynchronous
  for (int s = 0; s < stream_count; ++s) host_slots[s] = -1;
  std::mutex log_mutex;  // host functions of different streams may run on different threads
  std::vector<const lab::StepRecord*> log;  // in the order the host functions ran
  // One record per host function, alive until it has run: its stream, step and pinned slot.
  std::vector<lab::StepRecord> records;
  records.reserve(static_cast<std::size_t>(stream_count) * static_cast<std::size_t>(steps));
  cs::Timeline timeline;
  timeline.start(streams[0]);
  for (int k = 0; k < steps; ++k) {  // breadth first: the streams' steps are issued interleaved
    for (int s = 0; s < stream_count; ++s) {  // core: order (14 lines)
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
      records.push_back({&log_mutex, &log, s, k, &host_slots[s], -1, {}});
      CS_CHECK(cudaLaunchHostFunc(stream, record_step, &records.back()));
    }
  }
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamSynchronize(stream));
  cs::publish_timeline(timeline.collect(), common,
                       "Timeline (each host function waits for the copy before it):");
  std::size_t saw_prior_work = 0;  // read_log also prints the log's first lines
  const bool in_issue_order = lab::read_log(log, stream_count, steps, &saw_prior_work);
  // Stream order is a promise, not a likelihood: the bar is every host function, each stream's
  // in issue order, each having seen the value that the kernel and the copy before it produced.
  const std::size_t expected = records.size(), logged = log.size();
  cs::check_that("host_functions_in_stream_order", in_issue_order && logged == expected,
                 cs::format("%zu of %zu host functions logged; within every stream the steps "
                            "came in issue order 0..%d",
                            logged, expected, steps - 1));
  cs::check_that("host_functions_saw_prior_work", saw_prior_work == expected,
                 cs::format("%zu of %zu saw the value that the kernel and copy before them "
                            "produced",
                            saw_prior_work, expected));
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

void part_handoff(int device, int batches, int n, int stream_count) {
  const std::size_t batch_bytes = static_cast<std::size_t>(n) * sizeof(int);
  const std::size_t bytes = static_cast<std::size_t>(batches) * batch_bytes;
  cs::require_fits_on_device(3 * bytes, cs::format("--batches %d --batch-elements %d", batches, n));
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(stream_count));
  for (cudaStream_t& s : streams) CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Input, squares (stage 1), squares + offset (stage 2): pinned on the host, and on the device.
  int *host_input = nullptr, *host_stage1 = nullptr, *host_stage2 = nullptr;
  int *device_input = nullptr, *device_stage1 = nullptr, *device_stage2 = nullptr;
  for (int** p : {&host_input, &host_stage1, &host_stage2}) CS_CHECK(cudaMallocHost(p, bytes));
  for (int** p : {&device_input, &device_stage1, &device_stage2}) CS_CHECK(cudaMalloc(p, bytes));
  const std::size_t per_batch = static_cast<std::size_t>(n);
  for (std::size_t i = 0; i < bytes / sizeof(int); ++i) {  // element j of batch b: 31 b + 7 j
    host_input[i] = static_cast<int>((i / per_batch * 31 + i % per_batch * 7) % 1000);
  }
  lab::BatchQueue queue;
  std::vector<int> order;
  std::thread worker([&] {  // an ordinary host thread: it may call CUDA, wait, and launch kernels
    CS_CHECK(cudaSetDevice(device));  // a new thread starts on device 0
    cudaStream_t stream = nullptr;
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (int batch = queue.pop(); batch >= 0; batch = queue.pop()) {
      const std::size_t first = static_cast<std::size_t>(batch) * static_cast<std::size_t>(n);
      // Stage 1 of this batch is on the host: its host function ran, and a host function starts
      // only after the work before it in its stream has finished. The host decides from it.
      const int offset = lab::offset_of(host_stage1 + first, n);
      add_offset<<<lab::blocks_for(n), lab::kThreads, 0, stream>>>(
          device_stage1 + first, device_stage2 + first, n, offset);
      CS_CHECK_LAUNCH();
      CS_CHECK(cudaMemcpyAsync(host_stage2 + first, device_stage2 + first, batch_bytes,
                               cudaMemcpyDeviceToHost, stream));
      CS_CHECK(cudaStreamSynchronize(stream));
      order.push_back(batch);
    }
    CS_CHECK(cudaStreamDestroy(stream));
  });
  std::vector<lab::BatchReady> ready(static_cast<std::size_t>(batches));  // alive until run
  for (int i = 0; i < batches; ++i) {  // core: handoff (13 lines)
    cudaStream_t stream = streams[static_cast<std::size_t>(i % stream_count)];
    const std::size_t first = static_cast<std::size_t>(i) * static_cast<std::size_t>(n);
    CS_CHECK(cudaMemcpyAsync(device_input + first, host_input + first, batch_bytes,
                             cudaMemcpyHostToDevice, stream));
    square<<<lab::blocks_for(n), lab::kThreads, 0, stream>>>(device_input + first,
                                                             device_stage1 + first, n);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(host_stage1 + first, device_stage1 + first, batch_bytes,
                             cudaMemcpyDeviceToHost, stream));
    ready[static_cast<std::size_t>(i)] = {&queue, i};
    CS_CHECK(cudaLaunchHostFunc(stream, announce_batch, &ready[static_cast<std::size_t>(i)]));
  }
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamSynchronize(stream));
  queue.push(-1);  // every host function has pushed its batch; -1 tells the worker to stop
  worker.join();
  // The bar is every batch, handed over once, each stream's in issue order: host functions run in
  // stream order, and the queue keeps the order in which they pushed.
  cs::check_that("handoff_order", lab::arrived_in_stream_order(order, batches, stream_count),
                 cs::format("%zu of %d batches handed over once each, every stream's batches in "
                            "issue order",
                            order.size(), batches));
  const std::vector<int> reference = lab::handoff_reference(host_input, batches, n);
  cs::verify("handoff_results", host_stage2, reference.data(), reference.size());
  for (int* p : {device_input, device_stage1, device_stage2}) CS_CHECK(cudaFree(p));
  for (int* p : {host_input, host_stage1, host_stage2}) CS_CHECK(cudaFreeHost(p));
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 3: a host function must not call CUDA
void CUDART_CB call_cuda_inside(void* data) {
  auto* demo = static_cast<lab::RuleBreak*>(data);
  // Against the rule on purpose, with a call that only asks and never waits. A call that waits
  // for this stream (cudaStreamSynchronize) would wait for this very function: a deadlock.
  demo->result.set_value(cudaStreamQuery(demo->stream));
}

void part_rule(bool no_error_demos) {
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
  lab::RuleBreak demo{stream, {}};
  std::future<cudaError_t> result = demo.result.get_future();
  increment<<<1, 1, 0, stream>>>(counter);  // work before the host function
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaLaunchHostFunc(stream, call_cuda_inside, &demo));
  // How long the host waits for that host function before it calls it a deadlock: it returns in
  // microseconds, and a hung driver thread must end the test, not hang it.
  constexpr int kRuleDemoTimeoutSeconds = 10;
  cudaError_t queried = cudaErrorUnknown;
  const bool returned = lab::wait_or_exit(&result, kRuleDemoTimeoutSeconds, &queried);  // on host
  std::printf("cudaStreamQuery(its own stream) inside a host function returned %s.\n",
              cudaGetErrorName(queried));
  CS_CHECK(cudaStreamSynchronize(stream));
  cs::check_that("rule_demo_returned", returned,
                 cs::format("the host function returned (with %s) and its stream went on",
                            cudaGetErrorName(queried)));
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
  for (cudaStream_t* s : {&a, &b}) CS_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
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
  std::printf(
      "Stream A: a host function that sleeps %d ms (cudaLaunchHostFunc returned after %s).\n"
      "Stream A went on after %s; stream B's kernel was done after %s.\n",
      host_ms, cs::format_ms(issue_ms).c_str(), cs::format_ms(a_ms).c_str(),
      cs::format_ms(b_ms).c_str());
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
  const std::string skip =
      cs::first_reason({common.timing_skip_reason(), lab::why_b_may_wait_for_a(env)});
  cs::check_or_skip(skip, "other_stream_not_held", b_ms / host_ms, cs::Compare::at_most,
                    kOtherStreamFractionMax, "x",
                    "stream B's kernel done / the host function's sleep");
  if (env.launch_blocking) {  // what the setting did, measured
    std::printf(
        "Under CUDA_LAUNCH_BLOCKING=1 cudaLaunchHostFunc returned %s the host function had "
        "run,\nand stream B's kernel %s the host function.\n",
        issue_ms >= kHeldFractionMin * host_ms ? "only after" : "before",
        b_waited ? "waited for" : "did not wait for");
  }
  if (env.max_connections == 1) {
    std::printf("With one hardware queue stream B's kernel %s for the host function in stream A.\n",
                b_waited ? "waited" : "still did not wait");
  }
  CS_CHECK(cudaFree(slot));
  for (cudaEvent_t event : {start, a_after, b_done}) CS_CHECK(cudaEventDestroy(event));
  for (cudaStream_t stream : {a, b}) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 5: cudaStreamAddCallback, the API that cudaLaunchHostFunc replaces
// A cudaStreamCallback_t also gets the stream and a status: it is called after an error too.
void CUDART_CB legacy_callback(cudaStream_t, cudaError_t status, void* data) {
  auto* record = static_cast<lab::CallbackRecord*>(data);
  record->status = status;
  record->seen = record->host_slot ? *record->host_slot : 0;
}

// cudaStreamAddCallback is "slated for deprecation" (CUDA 13): should a later toolkit deprecate it,
// these keep the -Werror build working (the host compiler's warning, and nvcc's 1215 and 1444).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma nv_diag_suppress 1215
#pragma nv_diag_suppress 1444
void part_callback(bool no_error_demos) {
  cudaStream_t stream = nullptr;
  int *device_slot = nullptr, *host_slot = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CS_CHECK(cudaMalloc(&device_slot, sizeof(int)));
  CS_CHECK(cudaMallocHost(&host_slot, sizeof(int)));
  lab::CallbackRecord record{host_slot};  // core: callback (7 lines)
  constexpr int kValue = 424242;          // written after 100 us, copied, then read by the callback
  write_after_delay<<<1, 1, 0, stream>>>(device_slot, kValue, 100000ull);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaMemcpyAsync(host_slot, device_slot, sizeof(int), cudaMemcpyDeviceToHost, stream));
  CS_CHECK(cudaStreamAddCallback(stream, legacy_callback, &record, 0));  // flags must be 0
  CS_CHECK(cudaStreamSynchronize(stream));
  cs::check_that("stream_callback", record.status == cudaSuccess && record.seen == kValue,
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
    std::printf(
        "During stream capture cudaStreamAddCallback returned %s;\n"
        "cudaStreamEndCapture then returned %s and %s. cudaGetLastError() cleared %s.\n",
        cudaGetErrorName(added), cudaGetErrorName(ended), rejected ? "a graph" : "no graph",
        cudaGetErrorName(cleared));
    CS_CHECK(cudaStreamSynchronize(stream));
    cs::check_that(
        "stream_callback_not_capturable", added != cudaSuccess,
        cs::format("cudaStreamAddCallback refused capture with %s", cudaGetErrorName(added)));
  }
  CS_CHECK(cudaFree(device_slot));
  CS_CHECK(cudaFreeHost(host_slot));
  CS_CHECK(cudaStreamDestroy(stream));
}

#pragma nv_diag_default 1215
#pragma nv_diag_default 1444
#pragma GCC diagnostic pop
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
  lab::ReplayRecord replays{host_counter, {}};
  cudaGraph_t graph = nullptr;  // core: graph (13 lines)
  CS_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  increment<<<1, 1, 0, stream>>>(device_counter);
  CS_CHECK_LAUNCH();
  CS_CHECK(
      cudaMemcpyAsync(host_counter, device_counter, sizeof(int), cudaMemcpyDeviceToHost, stream));
  CS_CHECK(cudaLaunchHostFunc(stream, record_replay, &replays));
  CS_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t graph_exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
  // The host node must run once per replay and see what that replay's kernel wrote: 1, 2, 3, ...
  constexpr int kReplays = 3;
  for (int r = 0; r < kReplays; ++r) CS_CHECK(cudaGraphLaunch(graph_exec, stream));
  CS_CHECK(cudaStreamSynchronize(stream));
  std::size_t nodes = 0;  // the graph's nodes, and how many are host nodes (cudaLaunchHostFunc)
  CS_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  std::vector<cudaGraphNode_t> list(nodes);
  CS_CHECK(cudaGraphGetNodes(graph, list.data(), &nodes));
  int host_nodes = 0;
  for (cudaGraphNode_t node : list) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    CS_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeHost) ++host_nodes;
  }
  std::string seen;  // what the host node saw, replay after replay: it must be 1, 2, ..., kReplays
  bool replays_right = replays.seen.size() == static_cast<std::size_t>(kReplays);
  for (std::size_t i = 0; i < replays.seen.size(); ++i) {
    seen += (i ? ", " : "") + std::to_string(replays.seen[i]);
    replays_right = replays_right && replays.seen[i] == static_cast<int>(i) + 1;
  }
  std::printf("Captured: a graph of %zu nodes, %d of them a host node.\n", nodes, host_nodes);
  cs::check_that(
      "host_function_in_graph", replays_right && host_nodes == 1,
      cs::format("%d replays; the host node ran %zu times and saw the counter at %s", kReplays,
                 replays.seen.size(), seen.empty() ? "nothing" : seen.c_str()));
  CS_CHECK(cudaGraphExecDestroy(graph_exec));
  CS_CHECK(cudaGraphDestroy(graph));
  CS_CHECK(cudaFree(device_counter));
  CS_CHECK(cudaFreeHost(host_counter));
  CS_CHECK(cudaStreamDestroy(stream));
}

int main(int argc, char** argv) {
  int streams = 3, steps = 8, batches = 8, elements = 1 << 16, host_ms = 20;
  bool no_error_demos = false;
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
  options.add_int("streams", &streams, 1, 16, "streams whose host functions write the log");
  options.add_int("steps", &steps, 1, 500, "kernel + copy + host function steps per stream");
  options.add_int("batches", &batches, 1, 64, "batches handed from host functions to the worker");
  options.add_int("batch-elements", &elements, 1, 1 << 20, "ints per batch");
  options.add_flag("no-error-demos", &no_error_demos,
                   "skip the calls that fail on purpose (the CUDA call inside a host function, "
                   "cudaStreamAddCallback during capture), e.g. under compute-sanitizer");
  options.add_int("host-ms", &host_ms, 1, 200,
                  "how long the slow host function of part stall sleeps, in ms");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call
  cs::select_device(common.device);
  cs::print_launch_environment(env);
  if (parts.begin("order")) part_order(streams, steps, common);
  if (parts.begin("handoff")) part_handoff(common.device, batches, elements, std::min(streams, 2));
  if (parts.begin("rule")) part_rule(no_error_demos);
  if (parts.begin("stall")) part_stall(host_ms, env, common);
  if (parts.begin("callback")) part_callback(no_error_demos);
  if (parts.begin("graph")) part_graph();
  return cs::finish();
}
