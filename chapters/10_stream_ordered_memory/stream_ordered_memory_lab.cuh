// Chapter 10's machinery: its flags, the table of a pool's counters, the loop that times an
// allocate/free cycle, and the reason a check cannot hold under CUDA_LAUNCH_BLOCKING=1. None of
// it is the lesson; a reader may skip this file. Every call the chapter teaches (cudaMallocAsync,
// cudaFreeAsync, cudaMemPool*, the release threshold, the events) is written out in
// stream_ordered_memory.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

namespace stream_ordered_memory_lab {

// The chapter's flags, with their defaults.
struct Flags {
  std::size_t bytes = std::size_t{64} << 20;  // parts counters, keep and cost
  int cycles = 50;                            // part cost
  std::size_t threshold = 0;                  // part cost: the "released" row's threshold
  int elements = 1 << 20;                     // part streams
};

inline void add_flags(cs::Options& options, Flags* f) {
  options.add_size("bytes", &f->bytes, 4096, std::size_t{16} << 30,
                   "bytes per allocation in parts counters, keep and cost");
  options.add_int("cycles", &f->cycles, 1, 1000,
                  "timed allocate/free cycles per way of allocating (part cost)");
  options.add_size("threshold", &f->threshold, 0, std::size_t{16} << 30,
                   "release threshold of part cost's second row (0: give everything back)");
  options.add_int("elements", &f->elements, 1, 1 << 26,
                  "unsigned ints shared between the two streams (part streams)");
}

// What a pool holds (reserved) and hands out (used), now and at its high watermark.
struct PoolCounters {
  std::uint64_t reserved = 0;
  std::uint64_t used = 0;
  std::uint64_t reserved_high = 0;
  std::uint64_t used_high = 0;
};

// A byte count for people; UINT64_MAX, the "keep everything" threshold, by its name.
inline std::string bytes_text(std::uint64_t bytes) {
  return bytes == UINT64_MAX ? std::string("UINT64_MAX")
                             : cs::format_bytes(static_cast<double>(bytes));
}

inline void print_counter_header() {
  std::printf("   %-34s %12s %12s %12s %12s\n", "", "reserved", "used", "reserved high",
              "used high");
}

inline void print_counters(const char* moment, const PoolCounters& c) {
  std::printf("   %-34s %12s %12s %12s %12s\n", moment, bytes_text(c.reserved).c_str(),
              bytes_text(c.used).c_str(), bytes_text(c.reserved_high).c_str(),
              bytes_text(c.used_high).c_str());
}

constexpr int kWarmupCycles = 5;  // untimed cycles before each way is timed

// Host time of each call of `cycle` in microseconds, after kWarmupCycles untimed ones; every
// cycle ends synchronized, so the host clock sees all of its work.
template <class Cycle>
cs::Stats time_cycles_us(int cycles, Cycle&& cycle) {
  for (int i = 0; i < kWarmupCycles; ++i) cycle();
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(cycles));
  for (int i = 0; i < cycles; ++i) {
    const double begin = cs::host_now_ms();
    cycle();
    samples.push_back(1000.0 * (cs::host_now_ms() - begin));
  }
  return cs::summarize(samples);
}

// One row of part cost's table: the way of allocating, its median, minimum and maximum.
inline void print_cost_row(const std::string& name, const cs::Stats& s, const std::string& note) {
  std::printf("   %-46s %7.1f us %7.1f us %7.1f us  %s\n", name.c_str(), s.median, s.min, s.max,
              note.c_str());
}

// What the release threshold of part cost's second row did, against the pool that kept its
// memory, and what CUDA_LAUNCH_BLOCKING=1 changed in the cycles.
inline void print_threshold_verdict(std::uint64_t threshold, double released_us, double kept_us,
                                    bool released_kept_memory, const cs::LaunchEnvironment& env) {
  if (kept_us > 0) {
    std::printf("   Threshold %s cost %.1fx the kept pool's cycle: %s\n",
                bytes_text(threshold).c_str(), released_us / kept_us,
                released_kept_memory ? "the pool kept the memory at this threshold too."
                                     : "the pool handed the memory back at every sync and had "
                                       "to map it again.");
  }
  if (env.launch_blocking) {
    std::printf(
        "   Under CUDA_LAUNCH_BLOCKING=1 each cycle's touch launch waited for its kernel; all\n"
        "   three ways paid that wait alike, so the comparison stands.\n");
  }
}

// Part streams' pool counters while its work was issued and after both streams finished, and
// how long the host took to issue the producer and everything after it.
inline void print_two_streams(const PoolCounters& in_flight, const PoolCounters& done,
                              double issue_ms) {
  std::printf(
      "Pool while the work was issued: used %s (high %s); after both streams: used %s, "
      "reserved %s.\nThe host issued the producer and everything after it in %s.\n",
      bytes_text(in_flight.used).c_str(), bytes_text(in_flight.used_high).c_str(),
      bytes_text(done.used).c_str(), bytes_text(done.reserved).c_str(),
      cs::format_ms(issue_ms).c_str());
}

// What the two settings change in part streams, in words.
inline void print_streams_settings(const cs::LaunchEnvironment& env) {
  if (env.launch_blocking) {
    std::printf(
        "Under CUDA_LAUNCH_BLOCKING=1 the producer had finished before the host issued B's wait,\n"
        "so the event was already complete; without the setting it is what keeps B from reading\n"
        "(and freeing) the memory before A wrote it.\n");
  }
  if (env.max_connections == 1) {
    std::printf(
        "One hardware queue: B's waits sit in the queue that A's work also uses, behind the\n"
        "producer they wait for; the events still order each use and each free.\n");
  }
}

// The reason a check cannot hold under CUDA_LAUNCH_BLOCKING=1, or "" without it: the launch
// returns only after its kernel has run, so `consequence`.
inline std::string launch_waits(const cs::LaunchEnvironment& env, const std::string& consequence) {
  return env.launch_blocking
             ? "CUDA_LAUNCH_BLOCKING=1: the launch returned only after the kernel, so " +
                   consequence
             : "";
}

}  // namespace stream_ordered_memory_lab
