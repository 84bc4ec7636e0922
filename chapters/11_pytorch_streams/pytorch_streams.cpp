// Chapter 11: the seeds' PyTorch stream examples through the PyTorch C++ API, each torch.cuda
// idiom a thin layer over earlier chapters' CUDA calls. Needs libtorch (else CMake skips it):
//   cmake --preset default && cmake --build --preset default && build/bin/11_pytorch_streams
//   build/bin/11_pytorch_streams --part capture     # one part: streams, seeds, serialize, ...
//   python3 chapters/11_pytorch_streams/pytorch_streams.py   # the same lesson in Python
// One CHECK line per property, exit status 0 when all pass; pytorch_streams_lab.h may be skipped.

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <ATen/cuda/Sleep.h>                // at::cuda::sleep (torch.cuda._sleep)
#include <c10/cuda/CUDACachingAllocator.h>  // emptyCache()
#include <c10/cuda/CUDAFunctions.h>         // device_synchronize(), device_count()
#include <c10/util/StringUtil.h>            // c10::str
#include <set>

#include "cuda_streams.hpp"
#include "pytorch_streams_lab.h"

using c10::cuda::CUDAStream;
constexpr double kSumTolerance = 1e-3;  // against a double CPU sum: above rounding, below staleness

// stream.wait_stream(producer) in Python: the host does not block (chapter 05's event + wait).
void wait_stream(const CUDAStream& stream, const CUDAStream& producer) {
  at::cuda::CUDAEvent ready;  // cudaEventDisableTiming, like torch.cuda.Event()
  ready.record(producer);     // producer.record_event(): cudaEventRecord(ready, producer)
  ready.block(stream);        // stream.wait_event(ready): cudaStreamWaitEvent(stream, ready)
}

// Clock cycles per ms of at::cuda::sleep (torch.cuda._sleep), timed with events: median of 3.
double sleep_cycles_per_ms(const CUDAStream& stream) {
  c10::cuda::CUDAStreamGuard guard(stream);
  constexpr int64_t probe_cycles = 10'000'000;  // about 5 ms at 2 GHz
  at::cuda::sleep(probe_cycles);                // loads the kernel and wakes the clocks up
  std::vector<double> samples;
  for (int i = 0; i < 3; ++i) {
    at::cuda::CUDAEvent start(cudaEventDefault);
    at::cuda::CUDAEvent stop(cudaEventDefault);
    start.record(stream);
    at::cuda::sleep(probe_cycles);
    stop.record(stream);
    stop.synchronize();
    samples.push_back(start.elapsed_time(stop));
  }
  return static_cast<double>(probe_cycles) / std::max(cs::median(samples), 1e-3);
}

// Part 1: torch.cuda.current_stream(), torch.cuda.Stream(), `with torch.cuda.stream(s)`
void part_streams() {
  const CUDAStream default_stream = c10::cuda::getDefaultCUDAStream();  // core: streams (17 lines)
  const CUDAStream current = c10::cuda::getCurrentCUDAStream();
  const CUDAStream custom = c10::cuda::getStreamFromPool();
  unsigned int flags = 0;
  CS_CHECK(cudaStreamGetFlags(custom.stream(), &flags));
  cs::check_that("current_is_default", current == default_stream,
                 "before any guard the current stream is the default stream (cudaStream_t 0)");
  cs::check_that("pool_stream_non_blocking", (flags & cudaStreamNonBlocking) != 0,
                 "cudaStreamGetFlags: cudaStreamNonBlocking, never waits for the default stream");
  CUDAStream inside = current;
  {
    c10::cuda::CUDAStreamGuard guard(custom);  // with torch.cuda.stream(custom):
    inside = c10::cuda::getCurrentCUDAStream();
  }
  const CUDAStream after = c10::cuda::getCurrentCUDAStream();
  cs::check_that("stream_guard", inside == custom && after == default_stream,
                 "CUDAStreamGuard made the pool stream current in its scope, then the default");
  constexpr int kProbes = 64;  // stream requests, more than the pool holds per priority
  std::set<cudaStream_t> distinct;
  for (int i = 0; i < kProbes; ++i) distinct.insert(c10::cuda::getStreamFromPool().stream());
  cs::check_that("pool_is_reused", distinct.size() < static_cast<std::size_t>(kProbes),
                 cs::format("%d calls of getStreamFromPool() gave %zu distinct streams: two "
                            "torch.cuda.Stream() objects can be one CUDA stream",
                            kProbes, distinct.size()));
}

// Part 2: the Stream-class seed (t1 + t2) and the context-manager seed (t1 * t2)
void part_seeds() {
  const auto options = torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA);
  const torch::Tensor t1 = torch::tensor({1, 2, 3, 4, 5}, options);  // made on the default stream
  const torch::Tensor t2 = torch::tensor({5, 4, 3, 2, 1}, options);
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();  // core: seeds (17 lines)
  const CUDAStream stream = c10::cuda::getStreamFromPool();
  torch::Tensor sum;
  {
    c10::cuda::CUDAStreamGuard guard(stream);
    wait_stream(stream, default_stream);  // stream.wait_stream(default), which the seed leaves out
    sum = t1 + t2;
    stream.synchronize();  // the seed's stream.synchronize(): cudaStreamSynchronize(stream)
  }
  std::printf("  print(res)  # res = t1 + t2 -> %s\n", lab::python_repr(sum).c_str());
  torch::Tensor product;
  {
    c10::cuda::CUDAStreamGuard guard(stream);
    wait_stream(stream, default_stream);  // stream.wait_stream(torch.cuda.default_stream())
    product = t1 * t2;
  }
  stream.synchronize();  // after the block, as the seed does: the host waits before printing
  std::printf("  print(res)  # res = t1 * t2 -> %s\n", lab::python_repr(product).c_str());
  cs::verify("seed_t1_plus_t2", lab::host_values(sum), lab::host_values(t1.cpu() + t2.cpu()));
  cs::verify("seed_t1_times_t2", lab::host_values(product), lab::host_values(t1.cpu() * t2.cpu()));
}

// Part 3: res1 = t1 * 2 and res2 = t2 * 3 on two streams, synchronize() inside each block or once
torch::Tensor scaled_in_stream(const CUDAStream& stream, const torch::Tensor& input, double factor,
                               int64_t spin, cs::Timeline* timeline, const std::string& row) {
  wait_stream(stream, c10::cuda::getCurrentCUDAStream());  // the inputs' stream, before the guard
  c10::cuda::CUDAStreamGuard guard(stream);
  cs::TimelineSpan span;
  if (timeline) span = timeline->span(row, "kernel", stream.stream());
  at::cuda::sleep(spin);  // torch.cuda._sleep(cycles): --spin-ms of slow work
  return input * factor;
}

void part_serialize(int matrix, int repeats, int spin_ms, int64_t spin, bool concurrent_kernels,
                    const cs::LaunchEnvironment& env, const cs::CommonOptions& common) {
  torch::manual_seed(0);
  const torch::Tensor t1 = torch::randn({matrix, matrix}, torch::kCUDA);  // device='cuda'
  const torch::Tensor t2 = torch::randn({matrix, matrix}, torch::kCUDA);
  const CUDAStream stream1 = c10::cuda::getStreamFromPool();
  const CUDAStream stream2 = c10::cuda::getStreamFromPool();
  torch::Tensor res1, res2;                  // core: serialize (13 lines)
  auto seed = [&](cs::Timeline* timeline) {  // the host waits inside each block
    res1 = scaled_in_stream(stream1, t1, 2.0, spin, timeline, "seed: stream1");
    stream1.synchronize();
    res2 = scaled_in_stream(stream2, t2, 3.0, spin, timeline, "seed: stream2");
    stream2.synchronize();
  };
  auto fixed = [&](cs::Timeline* timeline) {  // issue both blocks, then wait once for both
    res1 = scaled_in_stream(stream1, t1, 2.0, spin, timeline, "fixed: stream1");
    res2 = scaled_in_stream(stream2, t2, 3.0, spin, timeline, "fixed: stream2");
    stream1.synchronize();
    stream2.synchronize();
  };
  fixed(nullptr);
  std::printf("  print(res1.shape, res2.shape) -> torch.Size(%s) torch.Size(%s)\n",
              c10::str(res1.sizes()).c_str(), c10::str(res2.sizes()).c_str());
  cs::verify("seed_res1_equals_t1_times_2", lab::host_values(res1),
             lab::host_values(t1.cpu() * 2.0));
  cs::verify("seed_res2_equals_t2_times_3", lab::host_values(res2),
             lab::host_values(t2.cpu() * 3.0));
  c10::cuda::device_synchronize();  // torch.cuda.synchronize()
  cs::Timeline timeline;            // one run of each, drawn
  timeline.start(stream1.stream());
  seed(&timeline);
  fixed(&timeline);
  cs::publish_timeline(timeline.collect(), common,
                       "synchronize() inside each block (seed) vs once after both (fixed)");
  if (common.no_timing) return cs::check_skipped("seed_sync_serializes", "--no-timing was given");
  const cs::Stats seed_ms = cs::time_device_ms(1, repeats, [&] { seed(nullptr); });
  const cs::Stats fixed_ms = cs::time_device_ms(1, repeats, [&] { fixed(nullptr); });
  std::printf("  seed %.2f ms, fixed %.2f ms (median of %d runs, %d ms spins)\n", seed_ms.median,
              fixed_ms.median, repeats, spin_ms);
  const std::string one_queue = env.max_connections == 1
                                    ? "CUDA_DEVICE_MAX_CONNECTIONS=1: stream1's multiply waits for "
                                      "its spin in the one queue, so the fix serializes too"
                                    : "";
  const std::string no_concurrency = concurrent_kernels ? "" : "concurrentKernels = 0";
  cs::check_or_skip(cs::first_reason({no_concurrency, cs::no_overlap_reason(env), one_queue}),
                    "seed_sync_serializes", seed_ms.median / std::max(fixed_ms.median, 1e-6),
                    cs::Compare::at_least, 1.5, "x",
                    "seed time / fixed time; ~2x for two equal spins that could overlap");
}

// Part 4: the StackOverflow seed: C = torch.mm(A, A) and D = torch.mm(B, B) on two streams
void part_matmul(int64_t side) {
  const torch::Tensor A = torch::rand({side, side}, torch::kCUDA);
  const torch::Tensor B = torch::rand({side, side}, torch::kCUDA);
  c10::cuda::device_synchronize();  // torch.cuda.synchronize(): wait for A and B to be made
  const CUDAStream s1 = c10::cuda::getStreamFromPool();  // core: matmul (12 lines)
  const CUDAStream s2 = c10::cuda::getStreamFromPool();
  torch::Tensor C, D;
  {
    c10::cuda::CUDAStreamGuard guard(s1);
    C = torch::mm(A, A);
  }
  {
    c10::cuda::CUDAStreamGuard guard(s2);
    D = torch::mm(B, B);
  }
  c10::cuda::device_synchronize();  // torch.cuda.synchronize(): "wait for C and D to be computed"
  const torch::Tensor A64 = A.cpu().to(torch::kFloat64), B64 = B.cpu().to(torch::kFloat64);
  cs::verify("seed_C_equals_A_mm_A", lab::host_values(C), lab::host_values(A64.mm(A64)), 1e-4);
  cs::verify("seed_D_equals_B_mm_B", lab::host_values(D), lab::host_values(B64.mm(B64)), 1e-4);
}

// Part 5: the notes' "sum() may start execution before normal_() finishes!", and the fix
void part_race(int64_t spin, const cs::LaunchEnvironment& env, const cs::CommonOptions& common) {
  const CUDAStream s = c10::cuda::getStreamFromPool();  // s = torch.cuda.Stream()
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();
  double got = 0, want = 0;  // what sum() returned; the CPU's sum of A
  const auto normal_then_sum = [&](bool wait) {
    // core: race (11 lines): torch.empty keeps old contents; ones make stale reads recognizable
    torch::Tensor A = torch::empty({100, 100}, torch::kCUDA).fill_(1.0f);  // the seed's (100, 100)
    c10::cuda::device_synchronize();
    at::cuda::sleep(spin);  // the default stream is busy with earlier work ...
    A.normal_(0.0, 1.0);    // ... so normal_() runs late
    torch::Tensor B;
    {
      c10::cuda::CUDAStreamGuard guard(s);       // with torch.cuda.stream(s):
      if (wait) wait_stream(s, default_stream);  // s.wait_stream(torch.cuda.default_stream())
      B = torch::sum(A);
    }
    c10::cuda::device_synchronize();
    got = B.item<double>();
    want = A.cpu().to(torch::kFloat64).sum().item<double>();
  };
  normal_then_sum(true);  // loads kernels, caches blocks: no cudaMalloc may hide the race below
  normal_then_sum(false);
  const bool lost = !lab::close_to(got, want, kSumTolerance);
  const bool stale = lab::close_to(got, 100.0 * 100.0, kSumTolerance);  // the ones A held before
  const char* what = !lost ? "matched A" : stale ? "read A before normal_()" : "raced normal_()";
  cs::check_that_or_skip(
      lab::race_skip_reason(lost, env, common.no_timing), "seed_normal_sum_race_shown", lost,
      cs::format("sum() %s: it returned %.1f, A's sum is %.4f", what, got, want));
  normal_then_sum(true);
  cs::check_that("fixed_normal_sum", lab::close_to(got, want, kSumTolerance),
                 cs::format("with s.wait_stream(default) sum() = %.4f, A's sum %.4f", got, want));
}

// Part 6: a tensor freed on the host while another stream still reads it: record_stream
void part_record(int64_t spin, const cs::LaunchEnvironment& env, const cs::CommonOptions& common) {
  constexpr int64_t kElements = 4 * 1024 * 1024;  // 16 MiB of floats: a cache segment of its own
  const CUDAStream side = c10::cuda::getStreamFromPool();
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();
  double got = 0;                            // what the slow sum() on side returned
  bool reused = false, reader_busy = false;  // A's block went to the next tensor; sum() was queued
  const auto free_while_in_use = [&](bool record) {
    c10::cuda::device_synchronize();  // torch.cuda.empty_cache(): no cached block competes with A
    c10::cuda::CUDACachingAllocator::emptyCache();
    {
      c10::cuda::CUDAStreamGuard guard(side);  // ... and blocks cached for side again: no
      (void)torch::ones({kElements}, torch::kCUDA).sum().item();  // cudaMalloc in the race
    }
    torch::Tensor A = torch::ones({kElements}, torch::kCUDA);  // made on the default stream
    torch::Tensor B;                                           // core: record (14 lines)
    {
      c10::cuda::CUDAStreamGuard guard(side);
      wait_stream(side, default_stream);  // side.wait_stream(torch.cuda.default_stream())
      at::cuda::sleep(spin);              // a slow reader
      B = A.sum();
    }
    if (record) A.record_stream(side);  // A.record_stream(side) in Python
    reader_busy = !side.query();        // cudaStreamQuery(side): is sum() still queued?
    const void* address = A.data_ptr();
    A = torch::Tensor();  // `del A`: the block goes back to the allocator now, on the host's time
    const torch::Tensor next = torch::empty({kElements}, torch::kCUDA).fill_(7.0f);
    reused = next.data_ptr() == address;
    c10::cuda::device_synchronize();
    got = B.item<double>();
  };
  free_while_in_use(true);  // loads the kernels
  free_while_in_use(false);
  const double want = kElements;  // the sum of A's ones
  const bool shown = !lab::close_to(got, want, kSumTolerance);
  const char* what = reused ? "the allocator gave A's block to the next tensor at once"
                            : "the next tensor got other memory";
  cs::check_that_or_skip(lab::race_skip_reason(shown, env, common.no_timing),
                         "seed_free_without_record_stream_shown", shown,
                         cs::format("%s; sum() returned %.0f, want %.0f", what, got, want));
  free_while_in_use(true);
  const std::string done = "sum() on the side stream had finished before A was freed";
  cs::check_that_or_skip(
      reader_busy ? "" : (env.launch_blocking ? "CUDA_LAUNCH_BLOCKING=1: " : "") + done,
      "fixed_record_stream", !reused && lab::close_to(got, want, kSumTolerance),
      cs::format("after A.record_stream(side) A's block %s: sum() = %.0f",
                 reused ? "went to the next tensor at once" : "waited for side", got));
}

// Part 7: torch.cuda.Stream(priority=p): how PyTorch's argument maps onto the device's range
void part_priorities() {
  int least = 0, greatest = 0;
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  std::printf("  cudaDeviceGetStreamPriorityRange: least %d, greatest %d\n", least, greatest);
  if (greatest == least) return cs::check_skipped("priority_mapping", "a single priority");
  const auto [torch_least, torch_greatest] = CUDAStream::priority_range();
  std::printf("  priority_range(): %d .. %d; cudaStreamGetPriority:", torch_least, torch_greatest);
  const auto priority_of = [](const CUDAStream& stream) {  // core: priorities (14 lines)
    int priority = 0;
    CS_CHECK(cudaStreamGetPriority(stream.stream(), &priority));
    return priority;
  };
  bool all_match = true;
  for (int p = least; p >= greatest - 1; --p) {                    // one past the device's greatest
    const int got = priority_of(c10::cuda::getStreamFromPool(p));  // torch.cuda.Stream(priority=p)
    std::printf(" %d", got);
    all_match &= got == std::max(p, torch_greatest);
  }
  const int high = priority_of(c10::cuda::getStreamFromPool(true));
  const int low = priority_of(c10::cuda::getStreamFromPool(false));
  all_match &= high == torch_greatest && low == torch_least;
  std::printf("; getStreamFromPool(true): %d, (false): %d\n", high, low);
  cs::check_that(
      "priority_mapping", all_match,
      cs::format("each pool stream's priority is max(p, %d): PyTorch keeps %d priority pools",
                 torch_greatest, torch_least - torch_greatest + 1));
}

// Part 8: torch.device('cuda:0'), .cuda(), .to(device) and torch.cuda.device(k)
void part_devices(int ordinal) {
  const torch::Device cuda(torch::kCUDA);  // torch.device('cuda'): the current device
  const torch::Device chosen("cuda:" + std::to_string(ordinal));  // core: devices (11 lines)
  const auto doubles = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Tensor x = torch::tensor({1.0, 2.0}, doubles.device(chosen));
  const torch::Tensor y = torch::tensor({1.0, 2.0}, doubles).cuda();
  const torch::Tensor y2 = torch::tensor({1.0, 2.0}, doubles).to(cuda);
  const torch::Tensor z = x + y;
  int current = -1;
  {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(ordinal));  // torch.cuda.device(k)
    CS_CHECK(cudaGetDevice(&current));
  }
  bool all_here = current == ordinal;
  for (const torch::Tensor* t : {&x, &y, &y2, &z}) all_here &= t->get_device() == ordinal;
  cs::check_that("tensors_on_current_device", all_here,
                 cs::format("'cuda', .cuda() and .to('cuda') mean the current device, %d; "
                            "inside CUDAGuard cudaGetDevice = %d",
                            ordinal, current));
  cs::verify("seed_z_equals_x_plus_y", lab::host_values(z), lab::host_values(x.cpu() + y.cpu()));
}

// Part 9: multistream capture: a fork/join captured with at::cuda::CUDAGraph, replayed
constexpr int kStepsPerBranch = 8;  // elementwise steps on each stream: 2 kernels each
// Fork onto `side`, a chain of small kernels on each stream, join, one kernel reading both.
torch::Tensor fork_join(const torch::Tensor& x, const CUDAStream& side) {
  const CUDAStream current = c10::cuda::getCurrentCUDAStream();
  wait_stream(side, current);  // fork: side.wait_stream(torch.cuda.current_stream())
  torch::Tensor right = x;
  {
    c10::cuda::CUDAStreamGuard guard(side);  // with torch.cuda.stream(side):
    for (int i = 0; i < kStepsPerBranch; ++i) right = right * 0.5 + 1.0;
  }
  torch::Tensor left = x;
  for (int i = 0; i < kStepsPerBranch; ++i) left = torch::sin(left) + 0.25;
  wait_stream(current, side);  // join: torch.cuda.current_stream().wait_stream(side)
  return left + right;         // right's blocks are reused on side only after the next fork's wait
}

void part_capture(int replays, const cs::LaunchEnvironment& env, const cs::CommonOptions& common) {
  constexpr int64_t kElements = 1 << 14;  // small: each kernel takes microseconds
  const torch::Tensor x = torch::rand({kElements}, torch::kCUDA);       // the graph's static input
  const CUDAStream default_stream = c10::cuda::getCurrentCUDAStream();  // core: capture (21 lines)
  const CUDAStream capture = c10::cuda::getStreamFromPool();            // never capture on stream 0
  const CUDAStream side = c10::cuda::getStreamFromPool();
  wait_stream(capture, default_stream);  // capture.wait_stream(default_stream): x came from it
  {
    c10::cuda::CUDAStreamGuard guard(capture);  // warm-up on a side stream, as PyTorch asks
    for (int i = 0; i < 3; ++i) (void)fork_join(x, side);
  }
  wait_stream(default_stream, capture);  // default_stream.wait_stream(capture): the warm-up's join
  c10::cuda::device_synchronize();
  at::cuda::CUDAGraph graph;  // torch.cuda.CUDAGraph()
  torch::Tensor y;            // the graph's static output, in its private memory pool
  try {
    c10::cuda::CUDAStreamGuard guard(capture);  // with torch.cuda.graph(g): (its own stream)
    graph.capture_begin();   // cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal)
    y = fork_join(x, side);  // side joins the capture at the fork; nothing runs yet
    graph.capture_end();     // cudaStreamEndCapture + cudaGraphInstantiate
  } catch (const c10::Error& error) {
    if (!env.launch_blocking) throw;
    return lab::skip_capture_checks(error);  // says why, for each check below
  }
  const auto replay_and_compare = [&](const char* name) {
    {
      c10::cuda::CUDAStreamGuard guard(capture);
      wait_stream(capture, default_stream);  // capture.wait_stream(default_stream): x's new values
      graph.replay();                        // cudaGraphLaunch(exec, capture)
    }
    capture.synchronize();
    // Within 1e-5 relative: float rounding stays near 1e-6, a stale input is off by about 0.1.
    cs::verify(name, lab::host_values(y), lab::fork_join_on_cpu(x, kStepsPerBranch), 1e-5);
  };
  replay_and_compare("graph_replay_matches_eager");
  x.copy_(torch::rand({kElements}, torch::kCUDA));  // new values in the same memory
  replay_and_compare("graph_replay_reads_new_input");
  if (common.no_timing) return cs::check_skipped("graph_replay_speedup", "--no-timing was given");
  c10::cuda::CUDAStreamGuard guard(capture);  // each time: `replays` iterations, one sync
  const cs::Stats eager = cs::time_device_ms(1, 5, [&] {
    for (int i = 0; i < replays; ++i) (void)fork_join(x, side);
  });
  const cs::Stats replayed = cs::time_device_ms(1, 5, [&] {
    for (int i = 0; i < replays; ++i) graph.replay();
  });
  const double eager_ms = eager.median / replays, replay_ms = replayed.median / replays;
  std::printf("  %d kernels, %d iterations, median of 5 runs: eager %s, replay %s per iteration\n",
              4 * kStepsPerBranch + 1, replays, cs::format_ms(eager_ms).c_str(),
              cs::format_ms(replay_ms).c_str());
  // One graph launch against a launch per op: 1.5x, or "no slower" where every launch blocks.
  cs::check_or_skip(replays < 20 ? "fewer than 20 replays" : "", "graph_replay_speedup",
                    eager_ms / std::max(replay_ms, 1e-6), cs::Compare::at_least,
                    env.launch_blocking ? 1.0 : 1.5, "x",
                    "eager time / replay time per iteration of the same fork/join");
}

int main(int argc, char** argv) {
  int matrix = 1000, spin_ms = 10, repeats = 10, replays = 200;  // the flags, by default
  bool multi_device = false;
  cs::CommonOptions common;
  cs::Options options("11_pytorch_streams", "The seeds' PyTorch stream examples, in C++.");
  cs::Parts parts(options,
                  {{"streams", "current, default and pool streams; the stream guard"},
                   {"seeds", "t1 + t2 and t1 * t2 in a stream"},
                   {"serialize", "synchronize() inside each block serializes two streams"},
                   {"matmul", "torch.mm on two streams"},
                   {"race", "normal_() on the default stream, sum() on another"},
                   {"record", "freeing a tensor another stream still reads: record_stream"},
                   {"priorities", "torch.cuda.Stream(priority=p) on the device's range"},
                   {"devices", "torch.device and torch.cuda.device"},
                   {"capture", "a fork/join captured with CUDAGraph, replayed"}});
  options.add_int("matrix", &matrix, 16, 4096, "side of the seeds' square tensors");
  options.add_int("spin-ms", &spin_ms, 1, 1000, "ms of at::cuda::sleep standing for slow work");
  options.add_int("repeats", &repeats, 1, 100, "timed repeats of the two-stream example");
  options.add_int("replays", &replays, 1, 10000, "iterations timed eagerly and replayed");
  options.add_flag("multi-device", &multi_device, "run only the seed's 2-device example");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call
  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::print_launch_environment(env);
  return lab::run_or_fail([&] {
    if (multi_device) return lab::multi_device_seed();  // only the seed's devices 1 and 2
    cs::require_fits_on_device(  // exit 2: --matrix N's eight N x N floats (+ PyTorch's) can't fit
        8 * sizeof(float) * matrix * matrix + (64u << 20), cs::format("--matrix %d", matrix));
    const double cycles_per_ms = sleep_cycles_per_ms(c10::cuda::getStreamFromPool());
    const int64_t spin = static_cast<int64_t>(spin_ms * cycles_per_ms);  // --spin-ms, in cycles
    std::printf("PyTorch %s (C++ API), %d device(s); at::cuda::sleep spins %.0f cycles per ms\n",
                TORCH_VERSION, static_cast<int>(c10::cuda::device_count()), cycles_per_ms);
    if (parts.begin("streams")) part_streams();
    if (parts.begin("seeds")) part_seeds();
    if (parts.begin("serialize"))
      part_serialize(matrix, repeats, spin_ms, spin, prop.concurrentKernels, env, common);
    if (parts.begin("matmul")) part_matmul(matrix);
    if (parts.begin("race")) part_race(spin, env, common);
    if (parts.begin("record")) part_record(spin, env, common);
    if (parts.begin("priorities")) part_priorities();
    if (parts.begin("devices")) part_devices(common.device);
    if (parts.begin("capture")) part_capture(replays, env, common);
  });
}
