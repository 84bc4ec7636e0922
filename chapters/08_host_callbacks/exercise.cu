// Exercise for chapter 08: a host function that hands a batch over too early.
//
// The task
//   Batches go through a copy to the device, a slow first stage (it waits 5 ms on the GPU, then
//   squares every value) and a copy back to pinned host memory, on two streams. Then a host
//   function hands the batch to a worker thread through a queue (a host function must not call
//   CUDA itself). The worker reads the batch's results on the host, makes a host-side decision
//   from them (their sum) and launches the second stage on a stream of its own. As given, the
//   worker sees no results at all, every value of the second stage is wrong, and the CHECK lines
//   say so. Fix the hand-off. The line marked TODO(exercise) is where to look. Do not change the
//   kernels, the worker or the checks, and make no CUDA call in the host function.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/08_host_callbacks_exercise
//   ctest --preset exercises -R '^08_host_callbacks_exercise\.'
//
// What it prints
//   The order in which the batches reached the worker, an ASCII timeline (H = H2D, K = kernel,
//   D = D2H, F = the host function that hands the batch over), and the CHECK lines: every
//   stream's batches reached the worker in issue order, the worker saw each batch's first-stage
//   results, and the second stage's values match the CPU's.

#include <cuda_runtime.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

constexpr int kBlock = 256;
constexpr int kBatchStreams = 2;

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

__global__ void delay_kernel(unsigned long long ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) {
  }
}

__global__ void square(const std::uint32_t* in, std::uint32_t* out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = in[i] * in[i];
  }
}

// The second stage: every value plus the host's decision.
__global__ void add_offset(const std::uint32_t* in, std::uint32_t* out, std::size_t n,
                           std::uint32_t offset) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = in[i] + offset;
  }
}

std::uint32_t input_value(int batch, std::size_t i) {
  return static_cast<std::uint32_t>(batch) * 131071u + static_cast<std::uint32_t>(i) + 1u;
}

// The host-side decision the worker makes from a batch's first-stage results.
std::uint32_t decide(const std::uint32_t* values, std::size_t n) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += values[i];
  return sum;
}

// Batch numbers, from the host functions to the worker thread.
class HandoffQueue {
 public:
  void push(int batch) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batches_.push_back(batch);
    }
    ready_.notify_one();
  }
  int pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return !batches_.empty(); });
    const int batch = batches_.front();
    batches_.pop_front();
    return batch;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<int> batches_;
};

// What one host function needs: the queue and its batch's number.
struct Ticket {
  HandoffQueue* queue;
  int batch;
};

// Runs on a driver thread, in stream order: no CUDA calls here, only the hand-off.
void CUDART_CB hand_over(void* data) {
  const Ticket* ticket = static_cast<const Ticket*>(data);
  ticket->queue->push(ticket->batch);
}

int main(int argc, char** argv) {
  int batches = 8;
  std::size_t batch_elements = 64 << 10;
  int stage_ms = 5;
  cs::CommonOptions common;
  cs::Options options("08_host_callbacks_exercise",
                      "Exercise: a host function must hand a batch over once its results exist.");
  options.add_int("batches", &batches, 1, 64, "batches to process");
  options.add_size("batch-elements", &batch_elements, 1, 1 << 20, "values per batch");
  options.add_int("stage-ms", &stage_ms, 1, 100, "how long the first stage waits, in ms");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  const cudaDeviceProp prop = cs::select_device(common.device);
  const int device = common.device;
  const int grid = 2 * prop.multiProcessorCount;
  const std::size_t n = batch_elements;
  const std::size_t total = n * static_cast<std::size_t>(batches);
  const std::size_t bytes = total * sizeof(std::uint32_t);

  std::uint32_t *host_in = nullptr, *host_mid = nullptr, *host_out = nullptr;
  std::uint32_t *dev_in = nullptr, *dev_mid = nullptr, *dev_out = nullptr;
  CS_CHECK(cudaMallocHost(&host_in, bytes));
  CS_CHECK(cudaMallocHost(&host_mid, bytes));
  CS_CHECK(cudaMallocHost(&host_out, bytes));
  CS_CHECK(cudaMalloc(&dev_in, bytes));
  CS_CHECK(cudaMalloc(&dev_mid, bytes));
  CS_CHECK(cudaMalloc(&dev_out, bytes));
  std::vector<std::uint32_t> want(total);
  std::vector<std::uint32_t> want_decision(static_cast<std::size_t>(batches));
  for (int b = 0; b < batches; ++b) {
    std::uint32_t* in = host_in + n * static_cast<std::size_t>(b);
    for (std::size_t i = 0; i < n; ++i) in[i] = input_value(b, i);
    std::vector<std::uint32_t> squared(n);
    for (std::size_t i = 0; i < n; ++i) squared[i] = in[i] * in[i];
    const std::uint32_t decision = decide(squared.data(), n);
    want_decision[static_cast<std::size_t>(b)] = decision;
    for (std::size_t i = 0; i < n; ++i)
      want[n * static_cast<std::size_t>(b) + i] = squared[i] + decision;
  }

  std::vector<cudaStream_t> streams(kBatchStreams);
  for (cudaStream_t& stream : streams) {
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  // Host functions get a stream of their own, so that a slow one cannot hold up the batches.
  cudaStream_t bookkeeping_stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&bookkeeping_stream, cudaStreamNonBlocking));

  // Every kernel once (a first launch loads the module, and loading may wait for running work),
  // then every buffer the batches fill starts at zero.
  delay_kernel<<<1, 32, 0, streams[0]>>>(1000);
  square<<<grid, kBlock, 0, streams[0]>>>(dev_in, dev_mid, 1);
  add_offset<<<grid, kBlock, 0, streams[0]>>>(dev_mid, dev_out, 1, 0);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaMemsetAsync(dev_mid, 0, bytes, streams[0]));
  CS_CHECK(cudaMemsetAsync(dev_out, 0, bytes, streams[0]));
  CS_CHECK(cudaStreamSynchronize(streams[0]));
  std::fill(host_mid, host_mid + total, 0u);
  std::fill(host_out, host_out + total, 0u);

  // The worker: takes a batch from the queue, decides on the host, launches the second stage.
  HandoffQueue queue;
  std::vector<int> arrival_order;
  std::vector<std::uint32_t> seen_decision(static_cast<std::size_t>(batches));
  std::thread worker([&] {
    CS_CHECK(cudaSetDevice(device));  // the current device belongs to each host thread
    cudaStream_t worker_stream = nullptr;
    CS_CHECK(cudaStreamCreateWithFlags(&worker_stream, cudaStreamNonBlocking));
    for (int k = 0; k < batches; ++k) {
      const int b = queue.pop();
      arrival_order.push_back(b);
      const std::size_t offset = n * static_cast<std::size_t>(b);
      const std::uint32_t decision = decide(host_mid + offset, n);
      seen_decision[static_cast<std::size_t>(b)] = decision;
      add_offset<<<grid, kBlock, 0, worker_stream>>>(dev_mid + offset, dev_out + offset, n,
                                                     decision);
      CS_CHECK_LAUNCH();
      CS_CHECK(cudaMemcpyAsync(host_out + offset, dev_out + offset, n * sizeof(std::uint32_t),
                               cudaMemcpyDeviceToHost, worker_stream));
    }
    CS_CHECK(cudaStreamSynchronize(worker_stream));
    CS_CHECK(cudaStreamDestroy(worker_stream));
  });

  std::vector<Ticket> tickets(static_cast<std::size_t>(batches));
  const auto stage_ns = static_cast<unsigned long long>(stage_ms) * 1000000ull;
  cs::Timeline timeline;
  timeline.start(streams[0]);
  for (int b = 0; b < batches; ++b) {
    cudaStream_t stream = streams[static_cast<std::size_t>(b % kBatchStreams)];
    const std::string row = "batch stream " + std::to_string(b % kBatchStreams);
    const std::string detail = "batch " + std::to_string(b);
    const std::size_t offset = n * static_cast<std::size_t>(b);
    const std::size_t batch_bytes = n * sizeof(std::uint32_t);
    int span = timeline.begin(row, "H2D", stream, detail);
    CS_CHECK(cudaMemcpyAsync(dev_in + offset, host_in + offset, batch_bytes, cudaMemcpyHostToDevice,
                             stream));
    timeline.end(span, stream);
    span = timeline.begin(row, "kernel", stream, detail);
    delay_kernel<<<1, 32, 0, stream>>>(stage_ns);
    square<<<grid, kBlock, 0, stream>>>(dev_in + offset, dev_mid + offset, n);
    CS_CHECK_LAUNCH();
    timeline.end(span, stream);
    span = timeline.begin(row, "D2H", stream, detail);
    CS_CHECK(cudaMemcpyAsync(host_mid + offset, dev_mid + offset, batch_bytes,
                             cudaMemcpyDeviceToHost, stream));
    timeline.end(span, stream);

    // Hand the batch to the worker.
    // TODO(exercise): the worker reads this batch's results as soon as the host function below
    // has run. When does a host function run, and after what?
    cudaStream_t handoff_stream = bookkeeping_stream;
    tickets[static_cast<std::size_t>(b)] = {&queue, b};
    span = timeline.begin(handoff_stream == stream ? row : "bookkeeping stream",
                          "function (hand-off)", handoff_stream, detail);
    CS_CHECK(cudaLaunchHostFunc(handoff_stream, hand_over, &tickets[static_cast<std::size_t>(b)]));
    timeline.end(span, handoff_stream);
  }
  worker.join();
  CS_CHECK(cudaDeviceSynchronize());
  cs::publish_timeline(timeline.collect(), common, "The batches, one row per stream:");

  std::string order_text;
  for (int b : arrival_order) order_text += " " + std::to_string(b);
  std::printf("%d batches of %zu values on %d streams; they reached the worker in this order:%s\n",
              batches, n, kBatchStreams, order_text.c_str());
  // Within each batch stream the batches must arrive in issue order; between streams no order
  // is promised.
  std::vector<int> last(kBatchStreams, -1);
  bool in_order = static_cast<int>(arrival_order.size()) == batches;
  for (int b : arrival_order) {
    int& previous = last[static_cast<std::size_t>(b % kBatchStreams)];
    if (b <= previous) in_order = false;
    previous = b;
  }
  cs::check_that("handoff_order", in_order,
                 std::to_string(arrival_order.size()) + " of " + std::to_string(batches) +
                     " batches handed over, every stream's batches in issue order");
  int right_decisions = 0;
  for (int b = 0; b < batches; ++b) {
    right_decisions +=
        seen_decision[static_cast<std::size_t>(b)] == want_decision[static_cast<std::size_t>(b)];
  }
  cs::check_that("worker_saw_results", right_decisions == batches,
                 std::to_string(right_decisions) + " of " + std::to_string(batches) +
                     " batches' first-stage results were on the host when the worker read them");
  cs::verify("second_stage_results", host_out, want.data(), total);

  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
  CS_CHECK(cudaStreamDestroy(bookkeeping_stream));
  for (std::uint32_t* p : {host_in, host_mid, host_out}) CS_CHECK(cudaFreeHost(p));
  for (std::uint32_t* p : {dev_in, dev_mid, dev_out}) CS_CHECK(cudaFree(p));
  return cs::finish();
}
