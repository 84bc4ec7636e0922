// Chapter 13's machinery: a reader may skip this file.
//
// What is here: the flags, the reason a part cannot run here (SKIP), the lines the parts print.
// Every call the chapter teaches (PDL, conditional nodes) is in dependent_launch_and_graphs.cu.

#pragma once

#include <cstdio>
#include <string>

#include "cuda_streams.hpp"

// CUDA 12.3 to 12.9 name the graph calls that take edge data _v2; CUDA 13 gave the names back.
#if CUDART_VERSION < 13000
#define cudaGraphGetEdges cudaGraphGetEdges_v2
#define cudaGraphAddNode cudaGraphAddNode_v2
#endif

namespace lab {

constexpr int kThreads = 128;  // per block, for every kernel of the chapter

struct Flags {
  int chain = 1000;       // pdl: dependent kernels in the chain
  int prologue_us = 10;   // pdl: work before cudaGridDependencySynchronize
  bool fixed = false;     // pdl: run only the fixed consumer of the broken/fixed pair
  int iterations = 1000;  // graph: loop iterations
  int repeats = 3;        // timed runs of each case (the median is reported)
};

inline void add_flags(cs::Options& options, Flags* f) {
  options.add_int("chain", &f->chain, 10, 10000, "pdl: dependent kernels in one chain");
  options.add_int("prologue-us", &f->prologue_us, 1, 1000,
                  "pdl: work each kernel does before it needs its predecessor's output, in us");
  options.add_flag("fixed", &f->fixed,
                   "pdl: run only the fixed consumer of the broken/fixed pair (for "
                   "compute-sanitizer, which serializes kernels)");
  options.add_int("iterations", &f->iterations, 1, 10000, "graph: iterations of the loop");
  options.add_int("repeats", &f->repeats, 1, 20,
                  "timed runs of each case (the median is reported)");
}

// A part that this device or driver cannot run: alone (--part NAME) the program skips (77);
// among all parts it says why and the others go on.
inline void skip_part(const cs::Parts& parts, const std::string& reason) {
  if (parts.chosen() != "all") cs::skip(reason);
  std::printf("SKIP: %s; this part's checks do not run\n", reason.c_str());
}

inline void print_row(const std::string& what, double value_us) {
  std::printf("  %-58s %10s\n", what.c_str(), cs::format_ms(value_us / 1000.0).c_str());
}

// Part 1's cases: a short kernel with a prologue in a stream, the same kernel without one
// captured in a graph, a long kernel in a stream (a chain of at most kLongChainMax).
constexpr int kPdlCases = 3, kLongChainMax = 100;
constexpr unsigned long long kLongKernelUs = 50;
struct PdlCase {
  bool in_graph;
  unsigned long long prologue_ns, work_ns;
  int kernels;  // in the chain
};

// Part 1's per-kernel times, in us: [case][with PDL].
inline void print_pdl(int chain, int prologue_us, int long_chain, const double us[kPdlCases][2]) {
  const std::string names[kPdlCases] = {
      cs::format("in a stream, %d us prologue each", prologue_us),
      "captured in a graph, no prologue",
      cs::format("in a stream, %d kernels of %llu us, no prologue", long_chain, kLongKernelUs)};
  std::printf("%d dependent kernels, time per kernel (medians):\n", chain);
  std::printf("  %-47s %10s %10s\n", "", "without PDL", "with PDL");
  for (int c = 0; c < kPdlCases; ++c)
    std::printf("  %-47s %8.2f us %8.2f us\n", names[c].c_str(), us[c][0], us[c][1]);
}

}  // namespace lab
