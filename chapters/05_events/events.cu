// Chapter 05: events
//
// What it teaches
//   A CUDA event is a marker in a stream: it completes when the GPU reaches it. With events a
//   program times GPU work, makes one stream wait for another without stopping the host, asks
//   whether work is done without waiting for it, and waits for it without burning a CPU core.
//     1. Timing a kernel right (events around it) and wrong (a host clock read right after the
//        asynchronous launch returns), side by side with the kernel's known duration.
//     2. cudaEventRecord + cudaStreamWaitEvent: a slow producer in one non-blocking stream and a
//        consumer in another, ordered on the GPU while the host only issues work; the consumer's
//        results are checked every round. A table maps PyTorch's record_event, wait_event,
//        wait_stream and synchronize (the seed's methods) onto these calls.
//     3. cudaEventQuery: the host does its own work while a kernel runs and counts how much.
//     4. Event flags: the cost of record + query with and without cudaEventDisableTiming, and the
//        host CPU time spent waiting for a kernel with and without cudaEventBlockingSync.
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/05_events
//   build/bin/05_events --kernel-ms 50 --wait-ms 200      # longer kernels
//   build/bin/05_events --help                            # every flag
//
// What to expect
//   A few microseconds for the unsynchronized host clock against about 10 ms for the events;
//   the mapping table and 20 checked producer/consumer rounds issued in microseconds each; the
//   host's work count while a 20 ms kernel ran; per-event costs of the two kinds of event (about
//   equal); and the CPU time of a spinning wait (about the kernel's 50 ms) against a blocking one
//   (well under a millisecond). Every property ends in a CHECK line; exit status 0 when all pass.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

namespace {

// Every bar of the chapter, in one place.
namespace bars {
// Events around a kernel that runs a known time measure it to within this fraction.
constexpr double kEventTimingErrorMax = 0.10;
// A host clock read right after the launch returns sees at most this fraction of the kernel: the
// launch only queues it (a few microseconds against milliseconds).
constexpr double kUnsyncedHostClockMax = 0.5;
// Issuing a producer/consumer round (two launches, an event, a wait, a copy) takes the host at
// most this fraction of the producer's delay: the wait happens on the GPU, not on the host.
constexpr double kIssueOverProducerMax = 0.5;
// The host keeps polling cudaEventQuery for at least this fraction of the kernel's run time:
// cudaErrorNotReady really meant "still running".
constexpr double kPolledFractionMin = 0.5;
// A timing-disabled event costs at most this many times a timing event per record + query. The
// two are about equal on the host (the documented gain is small); the bar only catches a gross
// regression, not noise.
constexpr double kDisableTimingCostMax = 1.5;
// Waiting with a cudaEventBlockingSync event uses at most this fraction of the CPU time that a
// spinning wait uses.
constexpr double kBlockingCpuMax = 0.5;
}  // namespace bars

constexpr int kThreads = 256;
constexpr int kHostWorkSteps = 2000;  // xorshift steps in one unit of the host's own work

}  // namespace

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

// Holds the calling thread for `ns` nanoseconds of wall time, whatever the clock rate.
__device__ void spin_for(unsigned long long ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) {
  }
}

// A kernel of known duration: one thread waits `ns`, then records how long it really waited.
__global__ void spin_kernel(unsigned long long ns, unsigned long long* waited_ns) {
  const unsigned long long start = globaltimer_ns();
  spin_for(ns);
  *waited_ns = globaltimer_ns() - start;
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

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

namespace {

volatile std::uint64_t g_host_work_sink = 0;  // keeps the host's work from being optimized away

// One unit of the host's own work (a stand-in for preparing the next batch).
std::uint64_t host_work_unit(std::uint64_t state) {
  for (int i = 0; i < kHostWorkSteps; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
  }
  return state;
}

// CPU time of the whole process (every thread, the CUDA driver's included), in ms.
double process_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// cudaEventQuery: cudaSuccess once the GPU has passed the event, cudaErrorNotReady while it has
// not (a state, not a failure), anything else is a real error.
bool event_done(cudaEvent_t event) {
  const cudaError_t state = cudaEventQuery(event);
  if (state == cudaErrorNotReady) {
    // Clear it in case the runtime also kept it as this thread's last error, so that the next
    // CS_CHECK_LAUNCH() does not report it as a failed launch.
    (void)cudaGetLastError();
    return false;
  }
  CS_CHECK(state);
  return true;
}

// PyTorch's s.wait_stream(other): work issued to `waiting` from now on waits for everything
// issued to `other` so far. It is an event recorded on `other` and waited for by `waiting`.
void wait_stream(cudaStream_t waiting, cudaStream_t other, cudaEvent_t scratch) {
  CS_CHECK(cudaEventRecord(scratch, other));
  CS_CHECK(cudaStreamWaitEvent(waiting, scratch, 0));
}

double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  CS_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

// Host cost per event of cudaEventRecord followed by cudaEventQuery, in microseconds.
double record_query_us(cudaStream_t stream, cudaEvent_t event, int records) {
  CS_CHECK(cudaStreamSynchronize(stream));
  const double begin = cs::host_now_ms();
  for (int i = 0; i < records; ++i) {
    CS_CHECK(cudaEventRecord(event, stream));
    (void)event_done(event);
  }
  const double total_ms = cs::host_now_ms() - begin;
  CS_CHECK(cudaStreamSynchronize(stream));
  return total_ms * 1000.0 / records;
}

struct WaitCost {
  double cpu_ms = 0;
  double wall_ms = 0;
};

// CPU and wall time of launching a kernel of `ns` and waiting for it with cudaEventSynchronize.
WaitCost wait_cost(cudaStream_t stream, cudaEvent_t done, unsigned long long ns,
                   unsigned long long* waited_ns) {
  CS_CHECK(cudaStreamSynchronize(stream));
  const double cpu_begin = process_cpu_ms();
  const double wall_begin = cs::host_now_ms();
  spin_kernel<<<1, 1, 0, stream>>>(ns, waited_ns);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(done, stream));
  CS_CHECK(cudaEventSynchronize(done));
  return {process_cpu_ms() - cpu_begin, cs::host_now_ms() - wall_begin};
}

const char* schedule_name(unsigned int flags) {
  switch (flags & cudaDeviceScheduleMask) {
    case cudaDeviceScheduleSpin:
      return "spin";
    case cudaDeviceScheduleYield:
      return "yield";
    case cudaDeviceScheduleBlockingSync:
      return "blocking sync";
    default:
      return "auto (spins while the process has fewer CUDA contexts than CPU cores)";
  }
}

std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, ms < 0.1 ? "%.4f ms" : ms < 100 ? "%.3f ms" : "%.1f ms", ms);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  int kernel_ms = 10;
  int producer_ms = 2;
  int rounds = 20;
  std::size_t elements = 1 << 20;
  int overlap_ms = 20;
  int records = 5000;
  int wait_ms = 50;
  int repeats = 5;
  cs::CommonOptions common;
  cs::Options options("05_events",
                      "Events: timing, cross-stream dependencies, polling and waiting, with "
                      "and without timing and blocking sync.");
  options.add_int("kernel-ms", &kernel_ms, 1, 1000,
                  "length of the kernel timed right and wrong, in ms");
  options.add_int("producer-ms", &producer_ms, 1, 1000,
                  "how long the producer waits before it writes, in ms");
  options.add_int("rounds", &rounds, 1, 1000, "producer/consumer rounds, each checked");
  options.add_size("elements", &elements, 1, std::size_t{1} << 26,
                   "values the producer writes and the consumer reads in each round");
  options.add_int("overlap-ms", &overlap_ms, 1, 1000,
                  "length of the kernel the host works beside, polling cudaEventQuery, in ms");
  options.add_int("records", &records, 1, 1000000, "events recorded and queried per cost sample");
  options.add_int("wait-ms", &wait_ms, 1, 1000,
                  "length of the kernel waited for with and without blocking sync, in ms");
  options.add_int("repeats", &repeats, 1, 100,
                  "timed samples of each measurement (median reported)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  const cudaDeviceProp prop = cs::select_device(common.device);
  const int n = static_cast<int>(elements);
  const std::size_t bytes = elements * sizeof(unsigned int);
  cs::require_fits_on_device(2 * bytes, "--elements " + std::to_string(elements));

  cudaStream_t stream = nullptr;    // parts 1, 3 and 4
  cudaStream_t producer = nullptr;  // part 2
  cudaStream_t consumer = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  unsigned long long* waited_ns = nullptr;
  CS_CHECK(cudaMalloc(&waited_ns, sizeof(unsigned long long)));

  // Load the kernels before anything is timed.
  spin_kernel<<<1, 1, 0, stream>>>(0, waited_ns);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(stream));

  // --- 1. Timing a kernel: right and wrong ---------------------------------------------------
  const unsigned long long kernel_ns = static_cast<unsigned long long>(kernel_ms) * 1000000ull;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  CS_CHECK(cudaEventCreate(&start));  // timing events: cudaEventElapsedTime needs them
  CS_CHECK(cudaEventCreate(&stop));
  std::vector<double> unsynced, synced, by_events;
  for (int r = 0; r <= repeats; ++r) {  // r == 0 is a warm-up
    // Wrong: the launch only queues the kernel, so this clock stops before the kernel runs.
    const double t0 = cs::host_now_ms();
    spin_kernel<<<1, 1, 0, stream>>>(kernel_ns, waited_ns);
    const double t1 = cs::host_now_ms();
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaStreamSynchronize(stream));
    const double t2 = cs::host_now_ms();  // the host clock is right only after a synchronize

    // Right: events in the stream, around the kernel.
    CS_CHECK(cudaEventRecord(start, stream));
    spin_kernel<<<1, 1, 0, stream>>>(kernel_ns, waited_ns);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(stop, stream));
    CS_CHECK(cudaEventSynchronize(stop));
    if (r == 0) continue;
    unsynced.push_back(t1 - t0);
    synced.push_back(t2 - t0);
    by_events.push_back(elapsed_ms(start, stop));
  }
  unsigned long long kernel_waited_ns = 0;
  CS_CHECK(
      cudaMemcpy(&kernel_waited_ns, waited_ns, sizeof kernel_waited_ns, cudaMemcpyDeviceToHost));
  const double unsynced_ms = cs::median(unsynced);
  const double synced_ms = cs::median(synced);
  const double event_ms = cs::median(by_events);
  std::printf(
      "\n1. Timing a kernel that runs %d ms (it waits on the GPU's global timer; it measured\n"
      "   itself at %s), medians of %d runs:\n",
      kernel_ms, format_ms(static_cast<double>(kernel_waited_ns) / 1e6).c_str(), repeats);
  std::printf("   %-58s %s\n", "wrong: host clock around the launch, no synchronization",
              format_ms(unsynced_ms).c_str());
  std::printf("   %-58s %s\n", "host clock around launch + cudaStreamSynchronize",
              format_ms(synced_ms).c_str());
  std::printf("   %-58s %s\n", "right: cudaEventRecord before and after, cudaEventElapsedTime",
              format_ms(event_ms).c_str());
  if (common.no_timing) {
    cs::check_skipped("event_timing_error", "--no-timing");
    cs::check_skipped("unsynchronized_host_clock", "--no-timing");
  } else {
    cs::check("event_timing_error", 100.0 * std::abs(event_ms - kernel_ms) / kernel_ms,
              cs::Compare::at_most, 100.0 * bars::kEventTimingErrorMax, "%",
              "events against the kernel's known " + std::to_string(kernel_ms) + " ms");
    cs::check("unsynchronized_host_clock", unsynced_ms / kernel_ms, cs::Compare::at_most,
              bars::kUnsyncedHostClockMax, "x",
              "host clock without synchronization / kernel time: it saw only the launch");
  }
  std::printf(
      "   A launch returns as soon as the kernel is queued. Events are timestamped by the GPU\n"
      "   when the stream reaches them, so they bracket the kernel itself; a host clock is\n"
      "   only right after a synchronization, and then it includes the launch and the wake-up.\n");

  // --- 2. One stream waits for another on the GPU --------------------------------------------
  std::printf("\n2. One stream waits for another; the host does not\n");
  std::printf("   %-36s %s\n", "PyTorch (the seed's methods)", "CUDA runtime");
  const char* mapping[][2] = {
      {"e = s.record_event()", "cudaEventRecord(e, s)"},
      {"s.wait_event(e)", "cudaStreamWaitEvent(s, e, 0)"},
      {"s.wait_stream(other)", "cudaEventRecord(e, other); cudaStreamWaitEvent(s, e, 0)"},
      {"s.synchronize()", "cudaStreamSynchronize(s)"},
      {"e.synchronize()", "cudaEventSynchronize(e)"},
      {"e.query(), s.query()", "cudaEventQuery(e), cudaStreamQuery(s)"},
      {"start.elapsed_time(end)", "cudaEventElapsedTime(&ms, start, end)"},
      {"torch.cuda.Event()", "cudaEventCreateWithFlags(&e, cudaEventDisableTiming)"},
      {"torch.cuda.Event(enable_timing=True)", "cudaEventCreate(&e)"},
      {"torch.cuda.Event(blocking=True)", "... | cudaEventBlockingSync"},
      {"torch.cuda.synchronize()", "cudaDeviceSynchronize()"},
  };
  for (const auto& row : mapping) std::printf("   %-36s %s\n", row[0], row[1]);

  unsigned int* data = nullptr;
  unsigned int* result = nullptr;
  unsigned int* host_result = nullptr;
  CS_CHECK(cudaMalloc(&data, bytes));
  CS_CHECK(cudaMalloc(&result, bytes));
  CS_CHECK(cudaMallocHost(&host_result, bytes));  // pinned: the copy back stays asynchronous
  cudaEvent_t produced = nullptr;
  cudaEvent_t scratch = nullptr;
  CS_CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CS_CHECK(cudaEventCreateWithFlags(&scratch, cudaEventDisableTiming));
  const int grid = static_cast<int>(std::min<long long>(
      (static_cast<long long>(n) + kThreads - 1) / kThreads, 4LL * prop.multiProcessorCount));
  const unsigned long long producer_ns = static_cast<unsigned long long>(producer_ms) * 1000000ull;

  // Warm-up (loads both kernels), then the checked rounds.
  produce<<<grid, kThreads, 0, producer>>>(0, -1, data, n);
  CS_CHECK_LAUNCH();
  consume<<<grid, kThreads, 0, producer>>>(data, result, n);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(producer));

  cs::Comparison consumer_results;
  std::vector<unsigned int> want(elements);
  std::vector<double> issue_ms;
  cs::Timeline timeline;  // the first rounds, drawn
  const int drawn_rounds = std::min(rounds, 3);
  timeline.start(producer);
  for (int round = 0; round < rounds; ++round) {
    const bool drawn = round < drawn_rounds;
    const std::string label = "round " + std::to_string(round);
    const double begin = cs::host_now_ms();
    int span = drawn ? timeline.begin("stream A (producer)", "produce", producer, label) : -1;
    produce<<<grid, kThreads, 0, producer>>>(producer_ns, round, data, n);
    CS_CHECK_LAUNCH();
    if (drawn) timeline.end(span, producer);
    if (round % 2 == 0) {
      CS_CHECK(cudaEventRecord(produced, producer));         // e = producer.record_event()
      CS_CHECK(cudaStreamWaitEvent(consumer, produced, 0));  // consumer.wait_event(e)
    } else {
      wait_stream(consumer, producer, scratch);  // consumer.wait_stream(producer)
    }
    span = drawn ? timeline.begin("stream B (consumer)", "consume", consumer, label) : -1;
    consume<<<grid, kThreads, 0, consumer>>>(data, result, n);
    CS_CHECK_LAUNCH();
    if (drawn) timeline.end(span, consumer);
    span = drawn ? timeline.begin("stream B (consumer)", "D2H copy", consumer, label) : -1;
    CS_CHECK(cudaMemcpyAsync(host_result, result, bytes, cudaMemcpyDeviceToHost, consumer));
    if (drawn) timeline.end(span, consumer);
    issue_ms.push_back(cs::host_now_ms() - begin);
    // consumer.synchronize(): the host waits only here, for the result it is about to read.
    // The next round's producer overwrites `data`, so it must not start before this consumer.
    CS_CHECK(cudaStreamSynchronize(consumer));
    for (std::size_t i = 0; i < elements; ++i) {
      want[i] = consumed_value(produced_value(round, static_cast<unsigned int>(i)));
    }
    cs::accumulate(consumer_results, cs::compare(host_result, want.data(), elements));
  }
  const double issue_median_ms = cs::median(issue_ms);
  cs::publish_timeline(timeline.collect(), common,
                       "The first " + std::to_string(drawn_rounds) +
                           " rounds: each consumer starts when its producer ends");
  std::printf(
      "\n   %d rounds: a producer (stream A) waits %d ms, then writes %zu values; a consumer\n"
      "   (stream B) waits for it on the GPU (record_event + wait_event in even rounds,\n"
      "   wait_stream in odd ones), computes from them, and copies its result to the host.\n",
      rounds, producer_ms, elements);
  std::printf("   host time to issue a round: %s (median); the producer alone takes %d ms\n",
              format_ms(issue_median_ms).c_str(), producer_ms);
  cs::report_comparison("consumer_results", consumer_results);
  if (common.no_timing) {
    cs::check_skipped("host_not_blocked_by_wait", "--no-timing");
  } else {
    cs::check("host_not_blocked_by_wait", issue_median_ms / producer_ms, cs::Compare::at_most,
              bars::kIssueOverProducerMax, "x",
              "time to issue a round / the producer's delay: the GPU did the waiting");
  }
  std::printf(
      "   Every round's values differ from the last, so a consumer that ran early would have\n"
      "   read stale data (chapter 07 removes the wait and shows it).\n");

  // --- 3. Host work while the GPU runs --------------------------------------------------------
  cudaEvent_t done = nullptr;
  CS_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  const unsigned long long overlap_ns = static_cast<unsigned long long>(overlap_ms) * 1000000ull;
  CS_CHECK(cudaStreamSynchronize(stream));
  const double launch_at = cs::host_now_ms();
  spin_kernel<<<1, 1, 0, stream>>>(overlap_ns, waited_ns);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(done, stream));
  long long units = 0;  // one per cudaErrorNotReady: a unit of work, then ask again
  std::uint64_t state = 88172645463325252ull;
  while (!event_done(done)) {
    state = host_work_unit(state);
    ++units;
  }
  const double polled_ms = cs::host_now_ms() - launch_at;
  g_host_work_sink = state;
  std::printf(
      "\n3. Host work while a %d ms kernel runs: poll cudaEventQuery between units of work\n",
      overlap_ms);
  std::printf(
      "   cudaEventQuery said cudaErrorNotReady %lld times, then cudaSuccess after %s;\n"
      "   meanwhile the host finished %lld units of its own work (%d xorshift steps each)\n",
      units, format_ms(polled_ms).c_str(), units, kHostWorkSteps);
  if (common.no_timing) {
    cs::check_skipped("host_worked_while_gpu_ran", "--no-timing");
    cs::check_skipped("polled_while_kernel_ran", "--no-timing");
  } else {
    cs::check_that("host_worked_while_gpu_ran", units > 0,
                   std::to_string(units) + " units of host work done before the kernel finished");
    cs::check("polled_while_kernel_ran", polled_ms / overlap_ms, cs::Compare::at_least,
              bars::kPolledFractionMin, "x",
              "polling time / kernel time: cudaErrorNotReady lasted as long as the kernel");
  }

  // --- 4. Event flags -------------------------------------------------------------------------
  cudaEvent_t timing_event = nullptr;
  cudaEvent_t quiet_event = nullptr;
  CS_CHECK(cudaEventCreate(&timing_event));
  CS_CHECK(cudaEventCreateWithFlags(&quiet_event, cudaEventDisableTiming));
  std::vector<double> timing_us, quiet_us;
  (void)record_query_us(stream, timing_event, records);  // warm-up
  (void)record_query_us(stream, quiet_event, records);
  for (int r = 0; r < repeats; ++r) {
    // Alternate the order, so that a drift of the machine touches both alike.
    if (r % 2 == 0) {
      timing_us.push_back(record_query_us(stream, timing_event, records));
      quiet_us.push_back(record_query_us(stream, quiet_event, records));
    } else {
      quiet_us.push_back(record_query_us(stream, quiet_event, records));
      timing_us.push_back(record_query_us(stream, timing_event, records));
    }
  }
  const double timing_cost = cs::median(timing_us);
  const double quiet_cost = cs::median(quiet_us);
  std::printf("\n4. Event flags\n");
  std::printf("   host cost of cudaEventRecord + cudaEventQuery per event (median of %d x %d):\n",
              repeats, records);
  std::printf("   %-44s %.3f us\n", "timing event (cudaEventCreate)", timing_cost);
  std::printf("   %-44s %.3f us\n", "cudaEventDisableTiming", quiet_cost);
  if (common.no_timing) {
    cs::check_skipped("disable_timing_cost", "--no-timing");
  } else {
    cs::check("disable_timing_cost", quiet_cost / timing_cost, cs::Compare::at_most,
              bars::kDisableTimingCostMax, "x",
              "disable-timing / timing cost per record + query: not clearly dearer");
  }
  std::printf(
      "   A timing event makes the GPU write a timestamp; a timing-disabled one does not, and\n"
      "   the runtime documents it as the best for cudaEventQuery and cudaStreamWaitEvent.\n"
      "   Here it cost %.0f%% of a timing event on the host: %s. Use timing events only to time.\n",
      100 * quiet_cost / timing_cost,
      quiet_cost < 0.9 * timing_cost   ? "cheaper"
      : quiet_cost > 1.1 * timing_cost ? "dearer"
                                       : "about the same");

  unsigned int device_flags = 0;
  CS_CHECK(cudaGetDeviceFlags(&device_flags));
  cudaEvent_t spinning = nullptr;
  cudaEvent_t blocking = nullptr;
  CS_CHECK(cudaEventCreateWithFlags(&spinning, cudaEventDisableTiming));
  CS_CHECK(cudaEventCreateWithFlags(&blocking, cudaEventDisableTiming | cudaEventBlockingSync));
  const unsigned long long wait_ns = static_cast<unsigned long long>(wait_ms) * 1000000ull;
  std::vector<double> spin_cpu, spin_wall, block_cpu, block_wall;
  for (int r = 0; r < repeats; ++r) {
    const bool spin_first = r % 2 == 0;
    for (int turn = 0; turn < 2; ++turn) {
      const bool spin = (turn == 0) == spin_first;
      const WaitCost cost = wait_cost(stream, spin ? spinning : blocking, wait_ns, waited_ns);
      (spin ? spin_cpu : block_cpu).push_back(cost.cpu_ms);
      (spin ? spin_wall : block_wall).push_back(cost.wall_ms);
    }
  }
  const double spin_cpu_ms = cs::median(spin_cpu);
  const double block_cpu_ms = cs::median(block_cpu);
  std::printf(
      "\n   host CPU time (the whole process) while cudaEventSynchronize waits for a %d ms\n"
      "   kernel, median of %d (device schedule flag: %s):\n",
      wait_ms, repeats, schedule_name(device_flags));
  std::printf("   %-44s CPU %-12s wall %s\n", "without cudaEventBlockingSync (spins)",
              format_ms(spin_cpu_ms).c_str(), format_ms(cs::median(spin_wall)).c_str());
  std::printf("   %-44s CPU %-12s wall %s\n", "with cudaEventBlockingSync (sleeps)",
              format_ms(block_cpu_ms).c_str(), format_ms(cs::median(block_wall)).c_str());
  if (common.no_timing) {
    cs::check_skipped("blocking_sync_cpu", "--no-timing");
  } else {
    cs::check("blocking_sync_cpu", block_cpu_ms / spin_cpu_ms, cs::Compare::at_most,
              bars::kBlockingCpuMax, "x", "blocking-sync CPU time / spinning CPU time");
  }
  const double wake_up_us = 1000 * (cs::median(block_wall) - cs::median(spin_wall));
  std::printf(
      "   A spinning wait keeps a core busy; a blocking one frees it. Here the blocking wait's\n"
      "   wall time was %.0f us %s than the spinning one's%s. The event flag is\n"
      "   enough for cudaEventSynchronize on that event; cudaSetDeviceFlags(\n"
      "   cudaDeviceScheduleBlockingSync) would make every wait of the process block,\n"
      "   cudaStreamSynchronize and cudaDeviceSynchronize included.\n\n",
      std::abs(wake_up_us), wake_up_us >= 0 ? "longer" : "shorter",
      wake_up_us >= 0 ? " (waking the thread up)" : "");

  for (cudaEvent_t event :
       {start, stop, produced, scratch, done, timing_event, quiet_event, spinning, blocking}) {
    CS_CHECK(cudaEventDestroy(event));
  }
  CS_CHECK(cudaFreeHost(host_result));
  CS_CHECK(cudaFree(result));
  CS_CHECK(cudaFree(data));
  CS_CHECK(cudaFree(waited_ns));
  for (cudaStream_t s : {stream, producer, consumer}) CS_CHECK(cudaStreamDestroy(s));
  return cs::finish();
}
