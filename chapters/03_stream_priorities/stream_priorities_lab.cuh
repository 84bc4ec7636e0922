// Chapter 03's measurement machinery: a reader may skip this file.
//
// What is here: the flood's size (waves of blocks from the occupancy the program measured), the
// buffers, events and the "flood has started" flag that every run shares, one run (flood, wait
// until it holds the SMs, submit the short kernel, time both with events, verify both), the
// medians over repeated runs, the reasons a priority check cannot hold in this process, and the
// tables, sentences and check details the parts print.
// The kernels, the streams and their priorities, and the launches stay in stream_priorities.cu:
// a run gets the launches as functions.

#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cuda_streams.hpp"

namespace lab {

constexpr int kThreads = 128;              // per block, for the flood and the short kernel alike
constexpr int kFloodCounters = 32;         // the flood counts its blocks on a few addresses
constexpr int kMinFloodWaves = 10;         // a flood must keep blocks waiting, not only running
constexpr double kStartTimeoutMs = 60000;  // generous: compute-sanitizer starts kernels slowly

// What thread i of the short kernel writes for request number `request`.
__host__ __device__ inline int short_value(int request, int i) {
  return request * 1000000 + i;
}

// A flood: `waves` waves of `resident` blocks (every block the SMs can hold at once).
struct Flood {
  int per_sm = 0;              // flood blocks one SM holds, by occupancy
  int resident = 0;            // per_sm x SMs: one full wave
  bool fills_threads = false;  // one wave takes every thread slot of every SM
  long long waves = 0;
  int blocks = 0;  // waves x resident
};

// Sizes a flood of `flood_ms` made of `block_us` blocks; exits 2 when one grid cannot hold it.
inline Flood size_flood(const cudaDeviceProp& prop, int per_sm, int flood_ms, int block_us) {
  Flood flood;
  flood.per_sm = per_sm;
  flood.resident = per_sm * prop.multiProcessorCount;
  flood.fills_threads = per_sm * kThreads == prop.maxThreadsPerMultiProcessor;
  flood.waves = flood_ms * 1000LL / block_us;
  const long long blocks = flood.waves * flood.resident;
  if (blocks > INT_MAX) {
    cs::usage_error(
        cs::format("--flood-ms %d with --block-us %d needs %lld blocks on this device, "
                   "more than one grid holds; use a shorter flood",
                   flood_ms, block_us, blocks));
  }
  flood.blocks = static_cast<int>(blocks);
  return flood;
}

// The command line, and what the parts derive from it and the device.
constexpr const char* kSummary =
    "Stream priorities: the device's range, clamping, PyTorch's mapping, and a "
    "short kernel's latency behind a flood of low-priority work.";

struct Flags {
  int flood_ms = 20, block_us = 20, short_us = 10, running_ms = 5, settle_us = 250, repeats = 10;
  bool same_priority = false;
};

inline void add_flags(cs::Options& options, Flags* f) {
  options.add_int("flood-ms", &f->flood_ms, 1, 100,
                  "how long the low-priority flood keeps every SM busy, in ms");
  options.add_int("block-us", &f->block_us, 5, 2000,
                  "how long each flood block runs, in us (shorter blocks let priority act sooner)");
  options.add_int("short-us", &f->short_us, 1, 1000,
                  "how long each block of the latency-sensitive kernel runs, in us");
  options.add_int("running-ms", &f->running_ms, 1, 100,
                  "how long the single wave of blocks runs in the no-preemption part, in ms");
  options.add_int("settle-us", &f->settle_us, 0, 2500,
                  "how long the host waits, once the flood has started, before submitting, in us");
  options.add_int("repeats", &f->repeats, 1, 20,
                  "timed runs of each case (the median is reported)");
  options.add_flag("same-priority", &f->same_priority,
                   "a control: the latency part's high-priority stream gets the least priority "
                   "too, so priority_latency_ratio must fail");
}

// Flags that must agree with each other (exit 2 otherwise), checked before any CUDA call.
inline void validate(const Flags& f) {
  if (static_cast<long long>(f.block_us) * kMinFloodWaves > f.flood_ms * 1000LL) {
    cs::usage_error(
        cs::format("--block-us %d with --flood-ms %d: the flood needs at least %d "
                   "waves of blocks, so --block-us must be at most %d",
                   f.block_us, f.flood_ms, kMinFloodWaves, f.flood_ms * 1000 / kMinFloodWaves));
  }
  if (2LL * f.settle_us > f.flood_ms * 1000LL || 2LL * f.settle_us > f.running_ms * 1000LL) {
    cs::usage_error(
        cs::format("--settle-us %d: the short kernel must be submitted in the first "
                   "half of the flood, so --settle-us must be at most half of "
                   "--flood-ms and of --running-ms (%d us here)",
                   f.settle_us, std::min(f.flood_ms, f.running_ms) * 500));
  }
}

struct Setup {
  Flood flood;
  unsigned long long block_ns, short_ns, running_ns;
  int sms, settle_us, repeats, block_us;
  bool same_priority;
};

inline Setup make_setup(const cudaDeviceProp& prop, int per_sm, const Flags& f) {
  return {size_flood(prop, per_sm, f.flood_ms, f.block_us),
          f.block_us * 1000ull,
          f.short_us * 1000ull,
          f.running_ms * 1000000ull,
          prop.multiProcessorCount,
          f.settle_us,
          f.repeats,
          f.block_us,
          f.same_priority};
}

inline void print_flood(const Setup& s, const std::string& flood_name) {
  const Flood& f = s.flood;
  std::printf(
      "   flood (%s): %lld waves x %d blocks (%d per SM by occupancy x %d SMs)\n"
      "     = %d blocks of %d threads, each running %d us\n",
      flood_name.c_str(), f.waves, f.resident, f.per_sm, s.sms, f.blocks, kThreads, s.block_us);
  std::printf(
      "   short kernel: %d blocks, each running %s, submitted %d us after the flood's "
      "first block started\n",
      s.sms, cs::format_ms(s.short_ns / 1e6).c_str(), s.settle_us);
}

// One run, in ms since the flood's start event (recorded just before the flood in its stream).
struct Run {
  double submitted_ms = 0;  // the event recorded just before the short kernel, in its stream
  double finished_ms = 0;   // the event recorded just after it
  double flood_ms = 0;      // the flood's end
};

// Medians (and spread) of a case's runs. Every difference below is between events of the same
// run: latency >= 0 because `finished` follows `submitted` in one stream; flood_left may be
// negative when the short kernel's stream reached its event only after the flood had ended.
struct Summary {
  cs::Stats latency;     // finished - submitted
  cs::Stats submitted;   // when the short kernel's stream reached it
  cs::Stats flood;       // the flood's length
  cs::Stats flood_left;  // flood - submitted: what the flood still had to run
};

inline Summary summarize(const std::vector<Run>& runs) {
  std::vector<double> latency, submitted, flood, left;
  for (const Run& run : runs) {
    latency.push_back(run.finished_ms - run.submitted_ms);
    submitted.push_back(run.submitted_ms);
    flood.push_back(run.flood_ms);
    left.push_back(run.flood_ms - run.submitted_ms);
  }
  return {cs::summarize(latency), cs::summarize(submitted), cs::summarize(flood),
          cs::summarize(left)};
}

// Why no priority can act on the short kernel here, or "": a setting, or fewer hardware queues
// than the part's `streams` (streams created back to back take the queues in turn).
inline std::string environment_reason(const cs::LaunchEnvironment& env, int streams) {
  if (env.launch_blocking) {
    return "CUDA_LAUNCH_BLOCKING=1: the flood's launch returned only after the flood had "
           "finished, so the short kernel was submitted to an idle GPU";
  }
  if (env.max_connections < streams) {
    return cs::format(
        "CUDA_DEVICE_MAX_CONNECTIONS=%d: the short kernel shares one hardware queue "
        "with the flood, so priority cannot move it ahead",
        env.max_connections);
  }
  return "";
}

// What went wrong, measured, when a case's short kernel reached its stream only in the last
// quarter of the flood: its stream waited behind the flood in a shared hardware queue.
inline std::string held_up_reason(const Summary& s, const std::string& which) {
  if (s.submitted.median <= 0.75 * s.flood.median) return "";
  return cs::format(
      "the %s short kernel reached its stream only %s into a %s flood: its "
      "stream waited behind the flood in a shared hardware queue",
      which.c_str(), cs::format_ms(s.submitted.median).c_str(),
      cs::format_ms(s.flood.median).c_str());
}

inline void print_summaries(const std::string& high_name, const Summary& high,
                            const std::string& low_name, const Summary& low, int repeats) {
  std::printf("\n   %-20s %-16s %-11s %-11s %-14s %s\n", "short kernel from", "latency: median",
              "min", "max", "submitted at", "flood lasted");
  for (const auto& [name, s] : {std::pair{high_name, high}, std::pair{low_name, low}}) {
    std::printf("   %-20s %-16s %-11s %-11s %-14s %s\n", name.c_str(),
                cs::format_ms(s.latency.median).c_str(), cs::format_ms(s.latency.min).c_str(),
                cs::format_ms(s.latency.max).c_str(), cs::format_ms(s.submitted.median).c_str(),
                cs::format_ms(s.flood.median).c_str());
  }
  std::printf(
      "   (latency: from an event just before the short kernel in its own stream to one just\n"
      "    after it; submitted at: when its stream reached that first event; medians of %d runs)\n",
      repeats);
}

// Where run_once() draws its flood and its short kernel: nowhere (the timed runs), or two rows
// of a timeline.
struct Trace {
  cs::Timeline* timeline = nullptr;
  std::string flood_row, short_row;

  cs::TimelineSpan span(const std::string& row, const char* kind, cudaStream_t stream) const {
    return timeline ? timeline->span(row, kind, stream) : cs::TimelineSpan();
  }
};

inline void publish_latency_timeline(const cs::TimelineData& data,
                                     const cs::CommonOptions& common) {
  cs::publish_timeline(data, common,
                       "One flood with the short kernel from the high-priority stream, then one "
                       "with it from the low-priority stream:");
}

// The detail of the latency check.
inline std::string latency_ratio_note(int levels) {
  return cs::format(
      "high-priority latency / low-priority latency, bar for a device with %d priority levels",
      levels);
}

// Part 1's heading: the device's range beside the seed's, then the table's header.
inline void print_range(int least, int greatest) {
  const int levels = least - greatest + 1;
  std::printf("   lower numbers are higher priorities\n");
  std::printf("   the seed says:     -1 (high) .. 0 (low)\n");
  std::printf(
      "   this device says:  %d (greatest) .. %d (least), %d level%s "
      "(cudaDeviceGetStreamPriorityRange)\n\n",
      greatest, least, levels, levels == 1 ? "" : "s");
  std::printf("   %-10s  %s\n", "asked (p)", "cudaStreamCreateWithPriority(p) gives");
}

// The priorities part 1 asks for: far above, every level (or both ends and their neighbours on
// a device with many), just below, far below.
inline std::vector<int> priorities_to_ask(int least, int greatest) {
  std::vector<int> asked = {100, least + 1};
  for (int p = least; p >= greatest; --p) {
    if (least - greatest < 8 || p >= least - 1 || p <= greatest + 1) asked.push_back(p);
  }
  asked.insert(asked.end(), {greatest - 1, -100});
  asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
  return asked;
}

inline const char* clamp_note(int asked, int got, int least, int greatest) {
  return got == asked      ? ""
         : got == least    ? "  clamped to the least"
         : got == greatest ? "  clamped to the greatest"
                           : "  neither p nor an end of the range";
}

// Part 1's table: add() prints one row (the priority asked, the one the stream got, and why they
// differ) and counts what the checks need.
struct RangeTable {
  int least = 0, greatest = 0;
  int for_plus_100 = 0, for_minus_100 = 0;  // what +100 and -100 gave
  int levels_kept = 0, levels_asked = 0;    // priorities asked inside the range, and kept as asked

  void add(int asked, int got) {
    if (asked == 100) for_plus_100 = got;
    if (asked == -100) for_minus_100 = got;
    if (asked <= least && asked >= greatest) levels_asked++, levels_kept += got == asked;
    std::printf("   %9s   %4d%s\n", cs::format("%+d", asked).c_str(), got,
                clamp_note(asked, got, least, greatest));
  }

  std::string kept_note() const {
    return cs::format("%d of the %d priorities asked inside %d .. %d were kept", levels_kept,
                      levels_asked, greatest, least);
  }
};

// The detail of the clamp checks.
inline std::string gave_note(int asked, int got, const char* end, int end_priority) {
  return cs::format("cudaStreamCreateWithPriority(%+d) gave %d, the %s priority is %d", asked, got,
                    end, end_priority);
}

// Part 2's table: the priority asked, PyTorch's, CUDA's own.
inline void print_pytorch_header() {
  std::printf("   %-10s  %-30s  %s\n", "asked (p)", "torch.cuda.Stream(priority=p)",
              "cudaStreamCreateWithPriority(p)");
}

inline void print_pytorch_row(int asked, int pytorch_gives, int cuda_gives) {
  std::printf("   %9s   %4d %-25s  %4d\n", cs::format("%+d", asked).c_str(), pytorch_gives, "",
              cuda_gives);
}

// What torch.cuda.Stream.priority_range() would return beside the device's range, in words.
inline void explain_pytorch(int pytorch_greatest, int least, int greatest, int pools) {
  std::printf(
      "   torch.cuda.Stream.priority_range() would return (0, %d); this device's is (%d, %d)\n",
      pytorch_greatest, least, greatest);
  std::printf(
      "   The seed's range is the two levels older PyTorch releases offered. Recent ones keep\n"
      "   pools at CUDA priorities 0 .. -%d and map any other p to the nearest pool, so a\n"
      "   PyTorch stream never gets more than -%d even where the device goes further; chapter 11\n"
      "   shows it through libtorch.\n",
      pools - 1, pools - 1);
}

inline void print_wave(const Setup& setup, int high_priority) {
  std::printf(
      "   one wave of %d blocks, each running %s, holds %s of every SM's thread slots;\n"
      "   the priority %d kernel is submitted %d us after the wave has started\n",
      setup.flood.resident, cs::format_ms(setup.running_ns / 1e6).c_str(),
      setup.flood.fills_threads ? "all" : "not all", high_priority, setup.settle_us);
}

// Part 4's measurement, in words. When the short kernel's stream reached its event only after
// the wave had ended (one hardware queue, launch blocking), no running blocks were left to wait
// for: say so instead of printing a negative time.
inline void print_wave_latency(const Summary& s, int repeats) {
  const std::string left =
      s.flood_left.median > 0
          ? "the running blocks still had " + cs::format_ms(s.flood_left.median) + " to go"
          : "the wave had already ended";
  std::printf(
      "   latency %s; %s when its stream reached it\n"
      "   (submitted at %s of a %s wave; medians of %d runs)\n",
      cs::format_ms(s.latency.median).c_str(), left.c_str(),
      cs::format_ms(s.submitted.median).c_str(), cs::format_ms(s.flood.median).c_str(), repeats);
}

// Why the latency ratio cannot hold here, or "": flags, environment, device; never a measurement.
inline std::string latency_skip_reason(const cs::CommonOptions& common,
                                       const cs::LaunchEnvironment& env, int levels) {
  return cs::first_reason(
      {common.timing_skip_reason(), environment_reason(env, 3),
       levels < 2 ? "this device has one stream priority level: priority cannot change the "
                    "order, so the bar does not apply"
                  : ""});
}

// Why the no-preemption fraction cannot hold in this process, or "" (queried, never measured).
inline std::string preemption_skip_reason(const cs::CommonOptions& common,
                                          const cs::LaunchEnvironment& env, int levels,
                                          const Flood& flood) {
  return cs::first_reason(
      {common.timing_skip_reason(), environment_reason(env, 2),
       levels < 2 ? "this device has one stream priority level: there is no higher priority" : "",
       flood.fills_threads ? ""
                           : "one wave of flood blocks leaves thread slots free on this device, "
                             "so the short kernel could run beside it"});
}

// What the latency part saw, in words (the teaching point also where its check is skipped).
inline void explain_latency(const cs::LaunchEnvironment& env, double ratio, double bar,
                            const Summary& high, const Summary& low, int block_us) {
  if (env.launch_blocking) {
    std::printf(
        "   CUDA_LAUNCH_BLOCKING=1: the flood's launch returned only when the flood had finished,\n"
        "   so both short kernels were submitted to an idle GPU (at %s of a %s flood) and\n"
        "   priority had nothing to reorder. One host thread cannot show priority here; launches\n"
        "   from a second host thread could.\n",
        cs::format_ms(high.submitted.median).c_str(), cs::format_ms(high.flood.median).c_str());
  } else if (!held_up_reason(high, "").empty()) {
    std::printf(
        "   The high-priority short kernel reached its stream only at %s of a %s flood (the\n"
        "   low-priority one at %s): it sat behind the flood in the same hardware queue%s.\n"
        "   Priority only orders blocks the scheduler already has, so from the host's submission\n"
        "   both waited for the rest of the flood whatever their priority; the latencies above\n"
        "   start only when the queue let them through.\n",
        cs::format_ms(high.submitted.median).c_str(), cs::format_ms(high.flood.median).c_str(),
        cs::format_ms(low.submitted.median).c_str(),
        env.max_connections == 1 ? " (CUDA_DEVICE_MAX_CONNECTIONS=1: one queue for all streams)"
                                 : "");
  } else if (!held_up_reason(low, "").empty()) {
    std::printf(
        "   The low-priority short kernel reached its stream only at %s of a %s flood: its\n"
        "   stream shared the flood's hardware queue, so its latency above starts after the\n"
        "   flood and cannot be compared with the high-priority one.\n",
        cs::format_ms(low.submitted.median).c_str(), cs::format_ms(low.flood.median).c_str());
  } else if (ratio > 0 && ratio <= bar) {
    std::printf(
        "   Priority picks whose pending blocks start when an SM slot frees. Here the "
        "high-priority\n"
        "   kernel's blocks went ahead of the flood's waiting ones as running flood blocks (%d us\n"
        "   each) finished, and the low-priority kernel waited behind the flood: %.0f times the\n"
        "   latency.\n",
        block_us, 1 / ratio);
  } else {
    std::printf(
        "   Here the high-priority kernel did not get ahead of the flood (latency ratio %.2f): "
        "its\n"
        "   priority was not higher (--same-priority), or the device did not act on it.\n",
        ratio);
  }
}

// What the preemption part saw, in words.
inline void explain_preemption(const cs::LaunchEnvironment& env, const Summary& s, bool waited) {
  if (env.launch_blocking) {
    std::printf(
        "   CUDA_LAUNCH_BLOCKING=1: the wave's launch returned only when its blocks had ended, so\n"
        "   the short kernel met no running blocks; nothing here can show preemption or its "
        "absence.\n");
  } else if (!held_up_reason(s, "").empty() || s.flood_left.min <= 0) {
    std::printf(
        "   The short kernel reached its stream only at %s of a %s wave: it waited behind the\n"
        "   wave in a shared hardware queue%s, before the block scheduler ever saw it:\n"
        "   the queue, not priority or preemption, decided when it started.\n",
        cs::format_ms(s.submitted.median).c_str(), cs::format_ms(s.flood.median).c_str(),
        env.max_connections == 1 ? " (CUDA_DEVICE_MAX_CONNECTIONS=1)" : "");
  } else if (waited) {
    std::printf(
        "   With no block waiting there is nothing to reorder: even the greatest priority waited\n"
        "   for the running blocks to end. The runtime's documentation says the same: priorities\n"
        "   \"do not preempt already-running work\". Keep the low-priority work's blocks short.\n");
  } else {
    std::printf(
        "   The high-priority kernel finished before the running blocks ended: it found free\n"
        "   slots, or running blocks were preempted.\n");
  }
}

inline double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  CS_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

// The buffers and events every run shares, and the tally of what the runs computed.
class Bench {
 public:
  Bench(int short_blocks, int settle_us) : short_blocks_(short_blocks), settle_us_(settle_us) {
    int* flag = nullptr;
    CS_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
    CS_CHECK(cudaHostGetDevicePointer(&started, flag, 0));
    started_host_ = flag;
    CS_CHECK(cudaMalloc(&blocks_done, kFloodCounters * sizeof(unsigned int)));
    CS_CHECK(cudaMalloc(&short_out, out_count() * sizeof(int)));
    // Zeroed now, not only in prepare(): the warm-up launch counts its block too.
    CS_CHECK(cudaMemset(blocks_done, 0, kFloodCounters * sizeof(unsigned int)));
    for (cudaEvent_t* e : {&flood_start, &flood_end, &submitted, &finished}) {
      CS_CHECK(cudaEventCreate(e));
    }
  }
  ~Bench() {
    for (cudaEvent_t e : {flood_start, flood_end, submitted, finished}) {
      CS_CHECK(cudaEventDestroy(e));
    }
    CS_CHECK(cudaFree(short_out));
    CS_CHECK(cudaFree(blocks_done));
    CS_CHECK(cudaFreeHost(const_cast<int*>(started_host_)));
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  int* started = nullptr;               // device pointer to the mapped flag
  unsigned int* blocks_done = nullptr;  // the flood's block counters
  int* short_out = nullptr;             // the short kernel's output

  cudaEvent_t flood_start = nullptr, flood_end = nullptr;  // around the flood, in its stream
  cudaEvent_t submitted = nullptr, finished = nullptr;     // around the short kernel, in its own

  // Before a run: clears the flood's counters and the short kernel's output, lets the GPU go
  // idle, lowers the flag; returns the run's request number (what the short kernel writes).
  int prepare(cudaStream_t stream) {
    CS_CHECK(cudaMemsetAsync(blocks_done, 0, kFloodCounters * sizeof(unsigned int), stream));
    CS_CHECK(cudaMemsetAsync(short_out, 0xff, out_count() * sizeof(int), stream));
    CS_CHECK(cudaStreamSynchronize(stream));
    *started_host_ = 0;
    return ++requests_;
  }

  // Waits until the flood's first block runs, then settle_us more.
  void wait_until_started() const {
    const double give_up = cs::host_now_ms() + kStartTimeoutMs;
    while (*started_host_ == 0) {
      if (cs::host_now_ms() > give_up) {
        std::fflush(stdout);
        std::fprintf(stderr, "error: the flood kernel did not start within %.0f s\n",
                     kStartTimeoutMs / 1000);
        std::exit(cs::kFailExitCode);
      }
    }
    const double settle_until = cs::host_now_ms() + settle_us_ / 1000.0;
    while (cs::host_now_ms() < settle_until) {
    }
  }

  // After a run (both streams synchronized): verifies it and returns its times.
  Run finish(int request, int flood_blocks) {
    verify(request, flood_blocks);
    return {elapsed_ms(flood_start, submitted), elapsed_ms(flood_start, finished),
            elapsed_ms(flood_start, flood_end)};
  }

  // The CHECK lines of every run so far: the short kernel's values, every flood block counted.
  void report_results() const {
    std::printf("   Results of the %d short-kernel runs and %d floods of this part:\n", requests_,
                floods_);
    cs::report_comparison("short_kernel_results", results_);
    cs::check_that(
        "every_flood_block_ran", complete_floods_ == floods_,
        cs::format("%d of %d floods counted every one of their blocks", complete_floods_, floods_));
  }

 private:
  std::size_t out_count() const { return static_cast<std::size_t>(short_blocks_) * kThreads; }

  void verify(int request, int flood_blocks) {
    std::vector<unsigned int> counts(kFloodCounters);
    CS_CHECK(cudaMemcpy(counts.data(), blocks_done, kFloodCounters * sizeof(unsigned int),
                        cudaMemcpyDeviceToHost));
    long long counted = 0;
    for (unsigned int c : counts) counted += c;
    ++floods_;
    if (counted == flood_blocks) ++complete_floods_;
    std::vector<int> got(out_count()), want(out_count());
    CS_CHECK(cudaMemcpy(got.data(), short_out, out_count() * sizeof(int), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < out_count(); ++i) {
      want[i] = short_value(request, static_cast<int>(i));
    }
    cs::accumulate(results_, cs::compare(got.data(), want.data(), out_count()));
  }

  int short_blocks_;
  int settle_us_;
  volatile int* started_host_ = nullptr;
  int requests_ = 0, floods_ = 0, complete_floods_ = 0;
  cs::Comparison results_;
};

}  // namespace lab
