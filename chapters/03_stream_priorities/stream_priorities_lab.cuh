// Chapter 03's measurement machinery, which a reader may skip: the flags and the flood they size,
// the medians of repeated runs, the settings under which no priority can act, and the figures the
// parts print. The CUDA calls are all in stream_priorities.cu.

#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cuda_streams.hpp"

namespace lab {

constexpr int kThreads = 128;       // per block, for the flood and the short kernel alike
constexpr int kMinFloodWaves = 10;  // a flood must keep blocks waiting, not only running

// The command line, and the flood it sizes on this device: `waves` waves of `resident` blocks,
// where one wave is every flood block the SMs hold at once.
struct Setup {
  int flood_ms = 20, block_us = 20, short_us = 10, running_ms = 5, settle_us = 250, repeats = 10;
  bool same_priority = false;
  unsigned long long block_ns = 0, short_ns = 0, running_ns = 0;  // the flags above, in ns
  int sms = 0, per_sm = 0, resident = 0, blocks = 0;  // resident = per_sm x sms, one wave
  long long waves = 0;                                // blocks = waves x resident
  bool fills_threads = false;  // one wave takes every thread slot of every SM
};

inline void add_flags(cs::Options& options, Setup* s) {
  options.add_int("flood-ms", &s->flood_ms, 1, 100, "length of the low-priority flood, in ms");
  options.add_int("block-us", &s->block_us, 5, 2000, "length of each flood block, in us");
  options.add_int("short-us", &s->short_us, 1, 1000, "length of each short-kernel block, in us");
  options.add_int("running-ms", &s->running_ms, 1, 100, "length of part 4's wave, in ms");
  options.add_int("settle-us", &s->settle_us, 0, 2500, "wait after the flood starts, in us");
  options.add_int("repeats", &s->repeats, 1, 20, "timed runs of each case (median reported)");
  options.add_flag("same-priority", &s->same_priority,
                   "a control: part 3's high stream gets the least priority too (must fail)");
}

// Flags that must agree with each other (exit 2 otherwise), checked before any CUDA call.
inline void validate(const Setup& s) {
  if (static_cast<long long>(s.block_us) * kMinFloodWaves > s.flood_ms * 1000LL) {
    cs::usage_error(cs::format(
        "--block-us %d with --flood-ms %d: the flood needs at least %d waves of blocks, so "
        "--block-us must be at most %d",
        s.block_us, s.flood_ms, kMinFloodWaves, s.flood_ms * 1000 / kMinFloodWaves));
  }
  if (2LL * s.settle_us > s.flood_ms * 1000LL || 2LL * s.settle_us > s.running_ms * 1000LL) {
    cs::usage_error(cs::format(
        "--settle-us %d: the short kernel must be submitted in the first half of the flood, so "
        "--settle-us must be at most half of --flood-ms and of --running-ms (%d us here)",
        s.settle_us, std::min(s.flood_ms, s.running_ms) * 500));
  }
}

// Sizes the flood from `per_sm` (by occupancy); exits 2 when one grid cannot hold it.
inline void size_flood(const cudaDeviceProp& prop, int per_sm, Setup* s) {
  s->block_ns = s->block_us * 1000ull;
  s->short_ns = s->short_us * 1000ull;
  s->running_ns = s->running_ms * 1000000ull;
  s->sms = prop.multiProcessorCount;
  s->per_sm = per_sm;
  s->resident = per_sm * s->sms;
  s->fills_threads = per_sm * kThreads == prop.maxThreadsPerMultiProcessor;
  s->waves = s->flood_ms * 1000LL / s->block_us;
  const long long blocks = s->waves * s->resident;
  if (blocks > INT_MAX) {
    cs::usage_error(
        cs::format("--flood-ms %d with --block-us %d needs %lld blocks on this "
                   "device, more than one grid holds; use a shorter flood",
                   s->flood_ms, s->block_us, blocks));
  }
  s->blocks = static_cast<int>(blocks);
}

// Parts 3 and 4: what the flood, the short kernel and the single wave are, in figures.
inline void print_flood(const Setup& s, int flood_priority) {
  std::printf(
      "   flood (priority %d): %lld waves x %d blocks (%d per SM x %d SMs) of %d threads, "
      "each running %d us\n",
      flood_priority, s.waves, s.resident, s.per_sm, s.sms, kThreads, s.block_us);
  std::printf(
      "   short kernel: %d blocks, each running %s, submitted %d us after the flood's "
      "first block started\n",
      s.sms, cs::format_ms(s.short_ns / 1e6).c_str(), s.settle_us);
}

inline void print_wave(const Setup& s, int high_priority) {
  std::printf(
      "   one wave of %d blocks, each running %s, holds %s of every SM's thread slots; the "
      "priority %d kernel is submitted %d us after it started\n",
      s.resident, cs::format_ms(s.running_ns / 1e6).c_str(), s.fills_threads ? "all" : "not all",
      high_priority, s.settle_us);
}

// One run, in ms since the event recorded just before the flood in its stream: the events just
// before and just after the short kernel in its own stream, and the flood's end.
struct Run {
  double submitted_ms = 0, finished_ms = 0, flood_ms = 0;
};

// Medians (and spread) of a case's runs. flood_left (what the flood still had to run) is
// negative when the short kernel's stream reached its first event only after the flood ended.
struct Summary {
  cs::Stats latency, submitted, flood, flood_left;
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

// Where run_once() draws its flood and its short kernel: nowhere (the timed runs), or two rows
// of a timeline.
struct Trace {
  cs::Timeline* timeline = nullptr;
  std::string flood_row, short_row;
  cs::TimelineSpan span(const std::string& row, const char* kind, cudaStream_t stream) const {
    return timeline ? timeline->span(row, kind, stream) : cs::TimelineSpan();
  }
};

// Why part 3's or part 4's timed check cannot hold here, or "" (queried, never measured):
// --no-timing, a launch setting, fewer hardware queues than the part's `streams` (streams
// created back to back take the queues in turn), or, with `levels` < 2, `one_level`.
inline std::string skip_reason(const cs::CommonOptions& common, const cs::LaunchEnvironment& env,
                               int streams, int levels, const char* one_level) {
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
  return levels < 2 ? one_level : "";
}

// Why the high-priority latency is no measure of priority, or "": its kernel reached its stream
// only in the flood's last quarter, so its stream waited behind the flood in a shared queue.
inline std::string held_up_reason(const Summary& s) {
  if (s.submitted.median <= 0.75 * s.flood.median) return "";
  return cs::format(
      "the high-priority short kernel reached its stream only %s into a %s flood: its stream "
      "waited behind the flood in a shared hardware queue",
      cs::format_ms(s.submitted.median).c_str(), cs::format_ms(s.flood.median).c_str());
}

// The latency part's table: one row per case, medians of `repeats` runs.
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
  std::printf("   (medians of %d runs)\n", repeats);
}

// Part 4's measurement. Where the short kernel's stream reached it only after the wave had ended
// (one hardware queue, launch blocking), no running blocks were left to wait for.
inline void print_wave_latency(const Summary& s, int repeats) {
  const std::string left =
      s.flood_left.median > 0
          ? "the running blocks still had " + cs::format_ms(s.flood_left.median) + " to go"
          : "the wave had already ended";
  std::printf("   latency %s; %s when its stream reached it\n",
              cs::format_ms(s.latency.median).c_str(), left.c_str());
  std::printf("   (submitted at %s of a %s wave; medians of %d runs)\n",
              cs::format_ms(s.submitted.median).c_str(), cs::format_ms(s.flood.median).c_str(),
              repeats);
}

}  // namespace lab
