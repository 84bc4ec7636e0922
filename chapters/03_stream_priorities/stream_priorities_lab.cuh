// Chapter 03's measurement machinery, which a reader may skip: the flags and the flood they size,
// the medians of repeated runs and their table, one run's drawing, and the settings under which no
// priority can act. The CUDA calls are all in stream_priorities.cu.

#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "cuda_streams.hpp"

constexpr int kThreads = 128;  // per block, for the flood and the short kernel alike

namespace lab {

// The command line, and the flood it sizes on this device: `waves` waves of `resident` blocks
// (blocks = waves x resident), where one wave is every flood block the SMs hold at once
// (resident = per_sm x sms); fills_threads: one wave takes every thread slot of every SM.
struct Setup {
  int flood_ms = 20, block_us = 20, short_us = 10, running_ms = 5, settle_us = 250, repeats = 10;
  int sms = 0, per_sm = 0, resident = 0, waves = 0, blocks = 0;
  bool same_priority = false, fills_threads = false;
};

inline void add_flags(cs::Options& options, Setup* s) {
  options.add_int("flood-ms", &s->flood_ms, 1, 100, "length of the low-priority flood, in ms");
  options.add_int("block-us", &s->block_us, 5, 2000, "length of each flood block, in us");
  options.add_int("short-us", &s->short_us, 1, 1000, "length of each short-kernel block, in us");
  options.add_int("running-ms", &s->running_ms, 1, 100, "length of part 4's wave, in ms");
  options.add_int("settle-us", &s->settle_us, 0, 2500, "wait after the flood starts, in us");
  options.add_int("repeats", &s->repeats, 1, 20, "timed runs of each case (median reported)");
  options.add_flag("same-priority", &s->same_priority, "control: high stream gets least priority");
}

// Flags that must agree with each other (exit 2 otherwise), checked before any CUDA call. A
// flood of at least 10 waves keeps blocks waiting, not only running.
inline void validate(const Setup& s) {
  if (s.block_us * 10 > s.flood_ms * 1000) {
    cs::usage_error(cs::format(
        "--block-us %d with --flood-ms %d: the flood needs at least 10 waves of blocks, so "
        "--block-us must be at most %d",
        s.block_us, s.flood_ms, s.flood_ms * 100));
  }
  if (2LL * s.settle_us > s.flood_ms * 1000LL || 2LL * s.settle_us > s.running_ms * 1000LL) {
    cs::usage_error(cs::format(
        "--settle-us %d: the short kernel must be submitted in the first half of the flood, so "
        "--settle-us must be at most half of --flood-ms and of --running-ms (%d us here)",
        s.settle_us, std::min(s.flood_ms, s.running_ms) * 500));
  }
}

// Sizes the flood from s->per_sm, the flood blocks one SM holds (by occupancy). The flags keep
// it far below a grid's limit: at most 20000 waves of at most 32 blocks per SM.
inline void size_flood(const cudaDeviceProp& prop, Setup* s) {
  s->sms = prop.multiProcessorCount;
  s->resident = s->per_sm * s->sms;
  s->fills_threads = s->per_sm * kThreads == prop.maxThreadsPerMultiProcessor;
  s->waves = s->flood_ms * 1000 / s->block_us;
  s->blocks = s->waves * s->resident;
}

// One run, in ms since the event recorded just before the flood in its stream: the events just
// before and just after the short kernel in its own stream, and the flood's end; and when the
// short kernel's first block began, on the GPU's clock since the flood's block 0 began.
struct Run {
  double submitted_ms = 0, finished_ms = 0, flood_ms = 0, started_ms = 0;
};

// Medians of a case's runs, in ms. flood_left (what the flood still had to run) is negative when
// the short kernel's stream reached its first event only after the flood ended.
struct Summary {
  double latency, submitted, flood, flood_left;
};

inline Summary summarize(const std::vector<Run>& runs) {
  std::vector<double> latency, reached, ends, left;  // the fields of Summary, in its order
  for (const Run& run : runs) {
    latency.push_back(run.finished_ms - run.submitted_ms);
    reached.push_back(run.submitted_ms);
    ends.push_back(run.flood_ms);
    left.push_back(run.flood_ms - run.submitted_ms);
  }
  return {cs::median(latency), cs::median(reached), cs::median(ends), cs::median(left)};
}

// One run drawn: the flood on one row; on the other the short kernel waiting (from its event
// before it to its first block's start, within the two events) and running. The flood's first
// block begins microseconds after its event: the two clocks agree to that much.
inline void publish_run(const Run& run, const std::string& flood_priority,
                        const std::string& short_priority, const cs::CommonOptions& common) {
  const double began = std::clamp(run.started_ms, run.submitted_ms, run.finished_ms);
  cs::TimelineData data{{"flood, " + flood_priority, "short, " + short_priority}, {}};
  data.spans.push_back({0, "flood", "", 0, run.flood_ms});
  data.spans.push_back({1, "waiting for SM slots", "", run.submitted_ms, began});
  data.spans.push_back({1, "running", "", began, run.finished_ms});
  cs::publish_timeline(data, common, "The short kernel at " + short_priority + ":");
}

// Why part 3's or part 4's timed check cannot hold here, or "" (queried, never measured):
// --no-timing, a launch setting, fewer hardware queues than the part's `streams` (streams
// created back to back took the queues in turn on the devices measured; not documented), or a
// device of one priority level.
inline std::string skip_reason(const cs::CommonOptions& common, const cs::LaunchEnvironment& env,
                               int streams, int levels) {
  if (!common.timing_skip_reason().empty()) return common.timing_skip_reason();
  if (env.launch_blocking) {
    return "CUDA_LAUNCH_BLOCKING=1: the flood's launch returned only after the flood had "
           "finished, so the short kernel was submitted to an idle GPU";
  }
  if (env.max_connections < streams) {
    return cs::format(
        "CUDA_DEVICE_MAX_CONNECTIONS=%d: the short kernel shares one hardware queue with the "
        "flood, so priority cannot move it ahead",
        env.max_connections);
  }
  return levels < 2 ? "this device has one stream priority level: nothing to reorder" : "";
}

// A part's table: one row per case, medians of `repeats` runs.
inline void print_table(std::initializer_list<std::pair<std::string, Summary>> rows, int repeats) {
  std::printf("\n   %-22s %-16s %-14s %s\n", "short kernel from", "latency: median", "submitted at",
              "flood lasted");
  for (const auto& [name, s] : rows) {
    std::printf("   %-22s %-16s %-14s %s\n", name.c_str(), cs::format_ms(s.latency).c_str(),
                cs::format_ms(s.submitted).c_str(), cs::format_ms(s.flood).c_str());
  }
  std::printf("   (medians of %d runs)\n", repeats);
}

}  // namespace lab
