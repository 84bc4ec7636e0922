// Chapter 05: events
//
// A CUDA event is a marker in a stream: it completes when the GPU reaches it. With events a
// program times GPU work, makes one stream wait for another without stopping the host, asks
// whether work is done without waiting for it, and waits for it without burning a CPU core.
// PyTorch's record_event, wait_event, wait_stream and Event.synchronize are built on them.
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/05_events
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/05_events/events.cu common/src/*.cpp -o 05_events
// clang-format on
//   build/bin/05_events --part dependency     # one part: timing, dependency, query or flags
//   build/bin/05_events --help                # every flag
//
// What to expect (events_lab.cuh holds measurement machinery; a reader may skip it)
//   1. timing: a 10 ms kernel timed by events (10 ms) and by a host clock read right after the
//      launch returns (a few microseconds: the launch only queued the kernel).
//   2. dependency: a slow producer in stream A and a consumer in stream B, ordered on the GPU by
//      cudaEventRecord + cudaStreamWaitEvent; every round checked, each issued in microseconds.
//   3. query: the host's own work done while a 20 ms kernel runs, polling cudaEventQuery.
//   4. flags: record + query cost with and without cudaEventDisableTiming (not equal; which is
//      cheaper varies between runs), and the CPU time of a spinning wait (about the kernel's
//      50 ms) against a cudaEventBlockingSync one.
// Every property ends in a CHECK line; the exit status is 0 when all pass.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"
#include "events_lab.cuh"

constexpr int kThreads = 256;

// Kernels

// Holds the calling thread for `ns` nanoseconds of wall time, whatever the clock rate
// (cs::globaltimer_ns() is the GPU's nanosecond clock, from cuda_streams/device_clock.cuh).
__device__ void spin_for(unsigned long long ns) {
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < ns) {
  }
}

// A kernel of known duration: one thread waits `ns`, then records how long it really waited.
__global__ void spin_kernel(unsigned long long ns, unsigned long long* waited_ns) {
  const unsigned long long start = cs::globaltimer_ns();
  spin_for(ns);
  if (waited_ns != nullptr) *waited_ns = cs::globaltimer_ns() - start;
}

// What the producer writes at index i in round `round`: different in every round, so a consumer
// that read the previous round's data would compute wrong results.
__host__ __device__ unsigned int produced_value(int round, unsigned int i) {
  return static_cast<unsigned int>(round) * 2654435761u + i;
}
__host__ __device__ unsigned int consumed_value(unsigned int produced) {
  return produced * 3u + 1u;
}

// A slow producer: every block first waits `delay_ns`, then writes its share of the data.
__global__ void produce(unsigned long long delay_ns, int round, unsigned int* data, int n) {
  if (threadIdx.x == 0) spin_for(delay_ns);
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    data[i] = produced_value(round, static_cast<unsigned int>(i));
  }
}

__global__ void consume(const unsigned int* data, unsigned int* result, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    result[i] = consumed_value(data[i]);
  }
}

// Part 1: timing a kernel right (events) and wrong (a host clock without synchronization)

void part_timing(int kernel_ms, int repeats, const cs::LaunchEnvironment& env,
                 const cs::CommonOptions& common) {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  unsigned long long* waited_ns = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CS_CHECK(cudaEventCreate(&start));  // timing events: cudaEventElapsedTime needs them
  CS_CHECK(cudaEventCreate(&stop));
  CS_CHECK(cudaMalloc(&waited_ns, sizeof(unsigned long long)));
  const unsigned long long kernel_ns = static_cast<unsigned long long>(kernel_ms) * 1000000ull;

  std::vector<double> unsynced, synced, by_events;
  for (int r = 0; r <= repeats; ++r) {  // r == 0 is a warm-up
    // core: timing
    // Wrong: the launch only queues the kernel, so this clock stops before the kernel runs.
    const double t0 = cs::host_now_ms();
    spin_kernel<<<1, 1, 0, stream>>>(kernel_ns, waited_ns);
    const double t1 = cs::host_now_ms();
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaStreamSynchronize(stream));
    const double t2 = cs::host_now_ms();  // the host clock is right only after a synchronize

    // Right: events in the stream, around the kernel, timestamped by the GPU.
    CS_CHECK(cudaEventRecord(start, stream));
    spin_kernel<<<1, 1, 0, stream>>>(kernel_ns, waited_ns);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(stop, stream));
    CS_CHECK(cudaEventSynchronize(stop));
    float event_ms = 0;
    CS_CHECK(cudaEventElapsedTime(&event_ms, start, stop));
    // end core
    if (r == 0) continue;
    unsynced.push_back(t1 - t0);
    synced.push_back(t2 - t0);
    by_events.push_back(event_ms);
  }
  unsigned long long measured_ns = 0;
  CS_CHECK(cudaMemcpy(&measured_ns, waited_ns, sizeof measured_ns, cudaMemcpyDeviceToHost));
  const double unsynced_ms = cs::median(unsynced);
  const double event_ms = cs::median(by_events);
  std::printf("A kernel that runs %d ms (it measured itself at %s), medians of %d runs:\n",
              kernel_ms, cs::format_ms(static_cast<double>(measured_ns) / 1e6).c_str(), repeats);
  events_lab::print_row("wrong: host clock around the launch, no synchronization", unsynced_ms);
  events_lab::print_row("host clock around the launch + cudaStreamSynchronize", cs::median(synced));
  events_lab::print_row("right: cudaEventRecord before and after, cudaEventElapsedTime", event_ms);

  // Events around a kernel of known duration measure it to within this fraction (they add only
  // the GPU's few microseconds between an event and the kernel's start and end).
  constexpr double kEventTimingErrorMax = 0.10;
  cs::check_or_skip(common.timing_skip_reason(), "event_timing_error",
                    100.0 * std::abs(event_ms - kernel_ms) / kernel_ms, cs::Compare::at_most,
                    100.0 * kEventTimingErrorMax, "%",
                    "events against the kernel's known " + std::to_string(kernel_ms) + " ms");
  // A host clock read right after the launch returns sees at most this fraction of the kernel:
  // the launch only queues it (microseconds against milliseconds). Under CUDA_LAUNCH_BLOCKING=1
  // the launch itself waits for the kernel, and the wrong clock happens to be right.
  constexpr double kUnsyncedHostClockMax = 0.5;
  const std::string launch_waited =
      events_lab::launch_waits(env, "the host clock measured it too: the mistake is hidden");
  cs::check_or_skip(cs::first_reason({common.timing_skip_reason(), launch_waited}),
                    "unsynchronized_host_clock", unsynced_ms / kernel_ms, cs::Compare::at_most,
                    kUnsyncedHostClockMax, "x",
                    "host clock without synchronization / kernel time: it saw only the launch");
  if (env.launch_blocking) {
    std::printf(
        "Under CUDA_LAUNCH_BLOCKING=1 the launch returned only after the kernel, so the\n"
        "unsynchronized host clock saw %.2fx of it; without the setting it sees microseconds.\n",
        unsynced_ms / kernel_ms);
  }
  CS_CHECK(cudaFree(waited_ns));
  for (cudaEvent_t event : {start, stop}) CS_CHECK(cudaEventDestroy(event));
  CS_CHECK(cudaStreamDestroy(stream));
}

// Part 2: one stream waits for another on the GPU; the host does not

// PyTorch's s.wait_stream(other): work issued to `waiting` from now on waits for everything
// issued to `other` so far. Reusing `scratch` is safe: the wait takes the event's state now.
void wait_stream(cudaStream_t waiting, cudaStream_t other, cudaEvent_t scratch) {
  CS_CHECK(cudaEventRecord(scratch, other));
  CS_CHECK(cudaStreamWaitEvent(waiting, scratch, 0));
}

void part_dependency(int sms, int producer_ms, int rounds, int n, const cs::LaunchEnvironment& env,
                     const cs::CommonOptions& common) {
  events_lab::print_pytorch_table();  // the C++ names of PyTorch's stream and event methods
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(unsigned int);
  cs::require_fits_on_device(2 * bytes, cs::format("--elements %d", n));
  cudaStream_t producer = nullptr, consumer = nullptr;
  cudaEvent_t produced = nullptr, scratch = nullptr;
  unsigned int *data = nullptr, *result = nullptr, *host_result = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  CS_CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));  // only for ordering
  CS_CHECK(cudaEventCreateWithFlags(&scratch, cudaEventDisableTiming));
  CS_CHECK(cudaMalloc(&data, bytes));
  CS_CHECK(cudaMalloc(&result, bytes));
  CS_CHECK(cudaMallocHost(&host_result, bytes));  // pinned: the copy back stays asynchronous
  const int grid = std::min((n + kThreads - 1) / kThreads, 4 * sms);  // n is at most 64 Mi
  const unsigned long long producer_ns = static_cast<unsigned long long>(producer_ms) * 1000000ull;
  produce<<<grid, kThreads, 0, producer>>>(0, -1, data, n);  // warm-up: loads both kernels
  consume<<<grid, kThreads, 0, producer>>>(data, result, n);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(producer));

  cs::Comparison consumer_results;
  std::vector<unsigned int> want(n);
  std::vector<double> issue_ms;
  const int drawn_rounds = std::min(rounds, 3);
  cs::Timeline timeline;  // the first rounds, drawn
  timeline.start(producer);
  for (int round = 0; round < rounds; ++round) {
    const bool drawn = round < drawn_rounds;
    const std::string label = "round " + std::to_string(round);
    const double begin = cs::host_now_ms();
    cs::TimelineSpan span;
    if (drawn) span = timeline.span("stream A (producer)", "produce", producer, label);
    // core: dependency
    produce<<<grid, kThreads, 0, producer>>>(producer_ns, round, data, n);
    CS_CHECK_LAUNCH();
    span.end();
    if (round % 2 == 0) {
      CS_CHECK(cudaEventRecord(produced, producer));         // e = producer.record_event()
      CS_CHECK(cudaStreamWaitEvent(consumer, produced, 0));  // consumer.wait_event(e)
    } else {
      wait_stream(consumer, producer, scratch);  // consumer.wait_stream(producer)
    }
    if (drawn) span = timeline.span("stream B (consumer)", "consume", consumer, label);
    consume<<<grid, kThreads, 0, consumer>>>(data, result, n);
    CS_CHECK_LAUNCH();
    if (drawn) span = timeline.span("stream B (consumer)", "D2H copy", consumer, label);
    CS_CHECK(cudaMemcpyAsync(host_result, result, bytes, cudaMemcpyDeviceToHost, consumer));
    span.end();
    issue_ms.push_back(cs::host_now_ms() - begin);
    // consumer.synchronize(): the host waits only here, for the result it is about to read.
    // The next round's producer overwrites `data`, so it must not start before this consumer.
    CS_CHECK(cudaStreamSynchronize(consumer));
    // end core
    for (int i = 0; i < n; ++i) want[i] = consumed_value(produced_value(round, i));
    cs::accumulate(consumer_results, cs::compare(host_result, want.data(), want.size()));
  }
  cs::publish_timeline(
      timeline.collect(), common,
      cs::format("The first %d rounds: each consumer starts when its producer ends", drawn_rounds));
  const double issue_median_ms = cs::median(issue_ms);
  std::printf(
      "%d rounds of %d values (wait_event in even rounds, wait_stream in odd ones): the\n"
      "host issued a round in %s (median); the producer alone takes %d ms.\n",
      rounds, n, cs::format_ms(issue_median_ms).c_str(), producer_ms);
  cs::report_comparison("consumer_results", consumer_results);
  // Issuing a round (two launches, an event, a wait, a copy) takes the host at most this fraction
  // of the producer's delay: the wait happens on the GPU, not on the host.
  constexpr double kIssueOverProducerMax = 0.5;
  const std::string launch_waited =
      events_lab::launch_waits(env, "the host waited for the producer there");
  cs::check_or_skip(cs::first_reason({common.timing_skip_reason(), launch_waited}),
                    "host_not_blocked_by_wait", issue_median_ms / producer_ms, cs::Compare::at_most,
                    kIssueOverProducerMax, "x",
                    "time to issue a round / the producer's delay: the GPU did the waiting");
  if (env.max_connections == 1) {
    std::printf(
        "One hardware queue: the consumer's wait sits in it behind the producer it waits\n"
        "for, so the dependency holds; anything issued after the wait would wait too.\n");
  }
  CS_CHECK(cudaFreeHost(host_result));
  CS_CHECK(cudaFree(result));
  CS_CHECK(cudaFree(data));
  for (cudaEvent_t event : {produced, scratch}) CS_CHECK(cudaEventDestroy(event));
  for (cudaStream_t stream : {producer, consumer}) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 3: the host works while the GPU runs, polling cudaEventQuery

void part_query(int overlap_ms, const cs::LaunchEnvironment& env, const cs::CommonOptions& common) {
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CS_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  spin_kernel<<<1, 1, 0, stream>>>(0, nullptr);  // warm-up: loads the kernel
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(stream));

  const unsigned long long overlap_ns = static_cast<unsigned long long>(overlap_ms) * 1000000ull;
  // core: query
  spin_kernel<<<1, 1, 0, stream>>>(overlap_ns, nullptr);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(done, stream));
  const double polling_from = cs::host_now_ms();  // the launch has returned: the host is free
  long long units = 0;  // one per cudaErrorNotReady: a unit of work, then ask again
  cudaError_t state = cudaEventQuery(done);  // never blocks
  while (state == cudaErrorNotReady) {       // a state, not a failure: the GPU is still busy
    events_lab::host_work_unit();
    ++units;
    state = cudaEventQuery(done);
  }
  CS_CHECK(state);           // anything but cudaSuccess or cudaErrorNotReady is a real error
  (void)cudaGetLastError();  // leave no cudaErrorNotReady behind for the next CS_CHECK_LAUNCH()
  // end core
  const double polled_ms = cs::host_now_ms() - polling_from;
  std::printf(
      "While a %d ms kernel ran, cudaEventQuery said cudaErrorNotReady %lld times, then\n"
      "cudaSuccess after %s of polling; between the calls the host did %lld units of its\n"
      "own work (%d xorshift steps each).\n",
      overlap_ms, units, cs::format_ms(polled_ms).c_str(), units, events_lab::kHostWorkSteps);

  // Under CUDA_LAUNCH_BLOCKING=1 the launch returns after the kernel: nothing is left to overlap.
  const std::string skip =
      cs::first_reason({common.timing_skip_reason(),
                        events_lab::launch_waits(env, "no time was left to work in beside it")});
  const std::string worked = cs::format("%lld units of host work while the kernel ran", units);
  cs::check_that_or_skip(skip, "host_worked_while_gpu_ran", units > 0, worked);
  // The host kept polling for at least this fraction of the kernel's run time after the launch
  // returned: cudaErrorNotReady really meant "still running".
  constexpr double kPolledFractionMin = 0.5;
  cs::check_or_skip(skip, "polled_while_kernel_ran", polled_ms / overlap_ms, cs::Compare::at_least,
                    kPolledFractionMin, "x",
                    "polling time / kernel time: cudaErrorNotReady lasted as long as the kernel");
  CS_CHECK(cudaEventDestroy(done));
  CS_CHECK(cudaStreamDestroy(stream));
}

// Part 4: event flags: cudaEventDisableTiming's cost, cudaEventBlockingSync's CPU time

void part_flags(int records, int wait_ms, int repeats, const cs::LaunchEnvironment& env,
                const cs::CommonOptions& common) {
  cudaStream_t stream = nullptr;
  // core: flags
  cudaEvent_t timing = nullptr, quiet = nullptr, spinning = nullptr, blocking = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CS_CHECK(cudaEventCreate(&timing));  // the GPU writes a timestamp when it reaches it
  CS_CHECK(cudaEventCreateWithFlags(&quiet, cudaEventDisableTiming));
  CS_CHECK(cudaEventCreateWithFlags(&spinning, cudaEventDisableTiming));
  CS_CHECK(cudaEventCreateWithFlags(&blocking, cudaEventDisableTiming | cudaEventBlockingSync));
  // end core

  std::vector<double> timing_us, quiet_us;
  (void)events_lab::record_query_us(stream, timing, records);  // warm-up
  (void)events_lab::record_query_us(stream, quiet, records);
  for (int r = 0; r < 2 * repeats; ++r) {  // alternate the order: a drift touches both alike
    const bool timed = (r % 2 == 0) == (r % 4 < 2);
    (timed ? timing_us : quiet_us)
        .push_back(events_lab::record_query_us(stream, timed ? timing : quiet, records));
  }
  const double timing_cost = cs::median(timing_us), quiet_cost = cs::median(quiet_us);
  std::printf(
      "Host cost of cudaEventRecord + cudaEventQuery per event (median of %d x %d):\n"
      "  timing event (cudaEventCreate)    %.3f us\n  cudaEventDisableTiming            %.3f us\n",
      repeats, records, timing_cost, quiet_cost);
  // A timing-disabled event costs at most this many times a timing event. Which is cheaper on
  // the host varies (H200: 0.42x and 0.29x); the bar only catches a gross regression.
  constexpr double kDisableTimingCostMax = 1.5;
  const bool few = records * repeats < 1000;  // too few events to time a cost of about 1 us
  cs::check_or_skip(
      cs::first_reason({common.timing_skip_reason(),
                        few ? "--records x --repeats below 1000: too few to time" : "",
                        timing_cost > 0 ? "" : "the timing event's cost was 0"}),
      "disable_timing_cost", quiet_cost / timing_cost, cs::Compare::at_most, kDisableTimingCostMax,
      "x", "disable-timing / timing cost per record + query: not clearly dearer");

  std::vector<double> spin_cpu, spin_wall, block_cpu, block_wall;
  const unsigned long long wait_ns = static_cast<unsigned long long>(wait_ms) * 1000000ull;
  spin_kernel<<<1, 1, 0, stream>>>(0, nullptr);  // warm-up: loads the kernel
  CS_CHECK_LAUNCH();
  for (int r = 0; r < 2 * repeats; ++r) {
    const bool spin = (r % 2 == 0) == (r % 4 < 2);  // spin first, then blocking first, ...
    CS_CHECK(cudaStreamSynchronize(stream));
    const double cpu_from = events_lab::process_cpu_ms();
    const double wall_from = cs::host_now_ms();
    spin_kernel<<<1, 1, 0, stream>>>(wait_ns, nullptr);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(spin ? spinning : blocking, stream));
    CS_CHECK(cudaEventSynchronize(spin ? spinning : blocking));  // spins, or sleeps until woken
    (spin ? spin_cpu : block_cpu).push_back(events_lab::process_cpu_ms() - cpu_from);
    (spin ? spin_wall : block_wall).push_back(cs::host_now_ms() - wall_from);
  }
  unsigned int device_flags = 0;
  CS_CHECK(cudaGetDeviceFlags(&device_flags));
  const double spin_cpu_ms = cs::median(spin_cpu), block_cpu_ms = cs::median(block_cpu);
  std::printf(
      "Process CPU time while cudaEventSynchronize waits for a %d ms kernel, median of %d\n"
      "(device schedule flag: %s):\n",
      wait_ms, repeats, events_lab::schedule_name(device_flags));
  events_lab::print_wait("without cudaEventBlockingSync (spins)", spin_cpu_ms, spin_wall);
  events_lab::print_wait("with cudaEventBlockingSync (sleeps)", block_cpu_ms, block_wall);
  // Waiting on a cudaEventBlockingSync event uses at most this fraction of the CPU time of a
  // spinning wait. Under CUDA_LAUNCH_BLOCKING=1 the wait happens inside the launch, before
  // cudaEventSynchronize is reached, so the event's flag has nothing left to change.
  constexpr double kBlockingCpuMax = 0.5;
  const std::string launch_waited = events_lab::launch_waits(
      env, "cudaEventSynchronize had nothing left to wait for, whatever the flag");
  cs::check_or_skip(cs::first_reason({common.timing_skip_reason(), launch_waited,
                                      spin_cpu_ms > 0 ? "" : "the spinning wait used no CPU"}),
                    "blocking_sync_cpu", block_cpu_ms / spin_cpu_ms, cs::Compare::at_most,
                    kBlockingCpuMax, "x", "blocking-sync CPU time / spinning CPU time");
  for (cudaEvent_t event : {timing, quiet, spinning, blocking}) CS_CHECK(cudaEventDestroy(event));
  CS_CHECK(cudaStreamDestroy(stream));
}

int main(int argc, char** argv) {
  events_lab::Flags f;  // --kernel-ms, --producer-ms, --rounds, ...: see events_lab.cuh
  cs::CommonOptions common;
  cs::Options options("05_events",
                      "Events: timing, cross-stream dependencies, polling and waiting, with "
                      "and without timing and blocking sync.");
  cs::Parts parts(options,
                  {{"timing", "events time a kernel, a host clock without sync does not"},
                   {"dependency", "one stream waits for another, the host does not"},
                   {"query", "the host works while the GPU runs (cudaEventQuery)"},
                   {"flags", "cudaEventDisableTiming's cost, cudaEventBlockingSync's CPU"}});
  events_lab::add_flags(options, &f);
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::print_launch_environment(env);
  const int n = static_cast<int>(f.elements);
  if (parts.begin("timing")) part_timing(f.kernel_ms, f.repeats, env, common);
  if (parts.begin("dependency")) {
    part_dependency(prop.multiProcessorCount, f.producer_ms, f.rounds, n, env, common);
  }
  if (parts.begin("query")) part_query(f.overlap_ms, env, common);
  if (parts.begin("flags")) part_flags(f.records, f.wait_ms, f.repeats, env, common);
  return cs::finish();
}
