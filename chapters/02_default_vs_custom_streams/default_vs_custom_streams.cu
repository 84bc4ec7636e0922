// Chapter 02: the default stream and created streams
//
// The seed says "the default stream executes kernels serially; streams let kernels run at the same
// time". Each part measures that sentence or a rule behind it, prints its times and ends in
// CHECK lines; the lesson (README.md) says what they mean. The program is built twice, and each
// build checks what stream 0 means in it: 02_default_vs_custom_streams (the legacy default stream,
// one per device) and ..._per_thread (nvcc --default-stream per-thread: one per host thread).
//
// Build and run
//   cmake --preset default && cmake --build --preset default
//   build/bin/02_default_vs_custom_streams               # and ..._per_thread: every part
//   build/bin/02_default_vs_custom_streams --part legacy # one part; --help: the parts and flags
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/02_default_vs_custom_streams/default_vs_custom_streams.cu common/src/*.cpp -o 02_default_vs_custom_streams
// clang-format on
//   (the same with --default-stream per-thread for the second build)
//
// What to expect (default_vs_custom_streams_lab.cuh keeps the kernels' records, the timing helper
// and the seed parts' inputs; a reader may skip it)
//   1. concurrency: 8 kernels of 2 ms take 16 ms in stream 0, about 2 ms in 8 created streams.
//   2. legacy: a tiny kernel in the legacy default stream between kernel A and kernel B of two
//      blocking streams doubles their time; non-blocking streams do not wait for it.
//   3. threads: host threads launching into stream 0 take turns in the legacy build and run
//      together in the per-thread build.
//   4. connections: 32 streams on 8 hardware queues: issued depth-first, a stream's second kernel
//      holds back the streams queued behind it (false dependencies); breadth-first it does not.
//   5. seed_mm: the seed's torch.mm on two streams: each product fills the GPU, so two streams
//      cost nothing and gain little.
//   6. seed_sync: the seed's synchronize inside each stream's block makes two streams serial;
//      synchronizing once at the end lets them overlap.

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"
#include "default_vs_custom_streams_lab.cuh"

// nvcc defines CUDA_API_PER_THREAD_DEFAULT_STREAM in the --default-stream per-thread build.
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
constexpr bool kPerThreadBuild = true;
#else
constexpr bool kPerThreadBuild = false;
#endif

constexpr int kSpinThreads = 32;     // one warp: each spin kernel occupies one slot on one SM
constexpr int kTile = 16;            // the SGEMM's tile edge
constexpr double kLaunchMs = 0.010;  // a bar's allowance per launch: twice the H200 host's 5 us
constexpr cs::Compare kAtLeast = cs::Compare::at_least, kAtMost = cs::Compare::at_most;

// Kernels ---------------------------------------------------------------------------------------
// Waits task.duration_ns on the GPU's global timer (the same time at any clock), then writes when
// it ran. max_iters ends it only if the timer stands still (a clock64() bound ended waits early
// under the sanitizer: a block may resume on another SM, with another cycle counter).
__global__ void spin_kernel(lab::SpinTask task) {
  const unsigned long long start = cs::globaltimer_ns(), max_iters = task.duration_ns + 100000;
  unsigned long long now = start;
  for (unsigned long long i = 0; now - start < task.duration_ns && i < max_iters; ++i)
    now = cs::globaltimer_ns();
  if (threadIdx.x != 0) return;
  task.record->start_ns = start;
  task.record->end_ns = now;
  atomicAdd(&task.record->runs, 1u);
}

// C = A x B for n x n row-major matrices (torch.mm): each block computes one kTile x kTile tile.
__global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float a_tile[kTile][kTile], b_tile[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  float sum = 0.0f;
  for (int base = 0; base < n; base += kTile) {
    const int a_col = base + threadIdx.x, b_row = base + threadIdx.y;
    a_tile[threadIdx.y][threadIdx.x] = (row < n && a_col < n) ? a[size_t(row) * n + a_col] : 0.0f;
    b_tile[threadIdx.y][threadIdx.x] = (b_row < n && col < n) ? b[size_t(b_row) * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < kTile; ++k) sum += a_tile[threadIdx.y][k] * b_tile[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[size_t(row) * n + col] = sum;
}

// out = in * factor, element by element (PyTorch's t1 * 2).
__global__ void scale_kernel(const float* in, float* out, float factor, size_t count) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    out[i] = in[i] * factor;
}

// Part 1: the same kernels in the default stream and in created streams -----------------------
void part_concurrency(const lab::Setup& setup, int kernels) {
  std::vector<cudaStream_t> streams(kernels);
  for (cudaStream_t& stream : streams) CS_CHECK(cudaStreamCreate(&stream));
  lab::KernelLog log(setup);
  // core: concurrency (7 lines): Stream 0: each kernel waits for the one before it.
  const cs::Stats serial = lab::time_ms(setup, [&] {
    for (int i = 0; i < kernels; ++i) spin_kernel<<<1, kSpinThreads, 0, 0>>>(log.task());
  });
  // One created stream per kernel: nothing orders them, so they can share the GPU.
  const auto [issued, concurrent] = lab::time_issue_ms(setup, [&] {
    for (cudaStream_t stream : streams) spin_kernel<<<1, kSpinThreads, 0, stream>>>(log.task());
  });
  const double speedup = serial.min / concurrent.min;
  std::printf("  default stream: %.2f ms, %d streams: %.2f ms (issued in %.3f ms), speedup %.2fx\n",
              serial.min, kernels, concurrent.min, issued.min, speedup);
  const std::vector<lab::KernelRecord> rec = log.verify("concurrency_kernel");
  cs::TimelineData timeline;  // the last repeat of each: stream 0's kernels, then the streams'
  lab::add_kernels(timeline, &rec[rec.size() / 2 - kernels], kernels, "stream 0 #%d", "serial");
  lab::add_kernels(timeline, &rec[rec.size() - kernels], kernels, "stream %d", "concurrent");
  cs::publish_timeline(timeline, setup.common,
                       cs::format("Part 1: in turn in stream 0, together in %d streams", kernels));
  // Ideal: N kernels after kLaunchMs per launch, in one turn however many hardware queues they
  // share (nothing orders them; without concurrentKernels the check skips). 75% of it leaves room
  // for launch jitter and the kernels' start-up on the SMs.
  const double ideal = kernels * setup.kernel_ms / (setup.kernel_ms + kernels * kLaunchMs);
  cs::check_or_skip(setup.overlap_skip, "concurrency_speedup", speedup, kAtLeast, 0.75 * ideal, "x",
                    cs::format("0.75 x ideal %.2fx: %d kernels in 1 turn", ideal, kernels));
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 2: the legacy default stream's implicit synchronization ---------------------------------
void part_legacy(const lab::Setup& setup) {
  lab::KernelLog log(setup);
  cudaStream_t blocking[2], non_blocking[2];
  CS_CHECK(cudaStreamCreate(&blocking[0]));
  CS_CHECK(cudaStreamCreateWithFlags(&non_blocking[0], cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreate(&blocking[1]));
  CS_CHECK(cudaStreamCreateWithFlags(&non_blocking[1], cudaStreamNonBlocking));
  // core: legacy
  // Per middle stream: kernel A in stream [0], a kernel that lasts no time in `middle`, kernel B
  // in stream [1], in the blocking pair and then in the non-blocking pair; the ratio of the two
  // times (under CUDA_LAUNCH_BLOCKING=1 blocking time / one kernel's: both pairs take turns).
  auto ratio = [&](const char* name, cudaStream_t middle) {
    const cs::Stats blocked = lab::time_ms(setup, [&] {
      spin_kernel<<<1, kSpinThreads, 0, blocking[0]>>>(log.task());
      spin_kernel<<<1, kSpinThreads, 0, middle>>>(log.task(0));
      spin_kernel<<<1, kSpinThreads, 0, blocking[1]>>>(log.task());
    });
    const cs::Stats unblocked = lab::time_ms(setup, [&] {
      spin_kernel<<<1, kSpinThreads, 0, non_blocking[0]>>>(log.task());
      spin_kernel<<<1, kSpinThreads, 0, middle>>>(log.task(0));
      spin_kernel<<<1, kSpinThreads, 0, non_blocking[1]>>>(log.task());
    });
    const double r = blocked.min / (setup.env.launch_blocking ? setup.kernel_ms : unblocked.min);
    std::printf("  middle kernel in %s: %.2f ms blocking, %.2f ms non-blocking, %.2fx\n", name,
                blocked.min, unblocked.min, r);
    return r;
  };
  // The middle kernel in stream 0 as built, then in each default stream by its name.
  const double stream0 = ratio("0", 0);
  const double legacy = ratio("cudaStreamLegacy", cudaStreamLegacy);
  const double per_thread = ratio("cudaStreamPerThread", cudaStreamPerThread);
  // end core
  log.verify("legacy_kernel");
  // Serialized: ideal 2x, 1.6 leaves 20% slack. Not serialized: ideal 1x, 1.25 for launch jitter.
  const char* serial_why = setup.env.launch_blocking ? "blocking time / one kernel's"
                                                     : "blocking / non-blocking time, ideal 2x";
  const char* free_why = "blocking / non-blocking time, ideal 1x";
  if (kPerThreadBuild)
    cs::check_or_skip(setup.overlap_skip, "stream0_does_not_serialize", stream0, kAtMost, 1.25, "x",
                      free_why);
  else
    cs::check_or_skip(setup.concurrent_skip, "stream0_serializes_blocking_streams", stream0,
                      kAtLeast, 1.6, "x", serial_why);
  cs::check_or_skip(setup.concurrent_skip, "cudaStreamLegacy_serializes", legacy, kAtLeast, 1.6,
                    "x", serial_why);
  cs::check_or_skip(setup.overlap_skip, "cudaStreamPerThread_does_not_serialize", per_thread,
                    kAtMost, 1.25, "x", free_why);
  for (cudaStream_t s : blocking) CS_CHECK(cudaStreamDestroy(s));
  for (cudaStream_t s : non_blocking) CS_CHECK(cudaStreamDestroy(s));
}

// Part 3: host threads, each launching into its stream 0 ---------------------------------------
void part_threads(const lab::Setup& setup, int threads) {
  lab::KernelLog log(setup);
  // core: threads
  // The reference: one thread launches all kernels into its stream 0.
  const cs::Stats one_thread = lab::time_ms(setup, [&] {
    for (int t = 0; t < threads; ++t) spin_kernel<<<1, kSpinThreads, 0, 0>>>(log.task());
  });
  // Each std::thread launches into "stream 0": its own stream only in the per-thread build. The
  // clock runs from `go` until the last thread's synchronize has returned.
  std::vector<double> samples;
  for (int round = 0; round < setup.warmup + setup.repeats; ++round) {
    std::atomic<int> ready{0}, go{0}, done{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        CS_CHECK(cudaSetDevice(setup.common.device));  // the current device is the thread's
        // The thread's first launch sets up its stream 0, which can cost about a millisecond: it
        // happens here, outside the clock, with a kernel that does not spin.
        spin_kernel<<<1, kSpinThreads, 0, 0>>>(log.task(0));
        CS_CHECK_LAUNCH();
        CS_CHECK(cudaStreamSynchronize(0));
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        spin_kernel<<<1, kSpinThreads, 0, 0>>>(log.task());
        CS_CHECK_LAUNCH();
        CS_CHECK(cudaStreamSynchronize(0));
        done.fetch_add(1);
      });
    // end core
    while (ready.load() < threads) std::this_thread::yield();
    const double begin = cs::host_now_ms();
    go.store(1);
    while (done.load() < threads) std::this_thread::yield();
    if (round >= setup.warmup) samples.push_back(cs::host_now_ms() - begin);
    for (std::thread& thread : pool) thread.join();
  }
  // Fastest rounds: a thread the OS wakes late only adds time; kernels in turns never beat 1x.
  const double many_ms = cs::summarize(samples).min, speedup = one_thread.min / many_ms;
  std::printf("  fastest round: 1 thread %.2f ms, %d threads %.2f ms, speedup %.2fx\n",
              one_thread.min, threads, many_ms, speedup);
  // The last round: its last `threads` records (each thread's warm-up came before go), numbered
  // in the order the threads took them.
  const std::vector<lab::KernelRecord> rec = log.verify("threads_kernel");
  cs::TimelineData timeline;
  lab::add_kernels(timeline, &rec[rec.size() - threads], threads, "thread %d's stream 0", "kernel");
  cs::publish_timeline(timeline, setup.common,
                       kPerThreadBuild ? "Part 3: a stream 0 each" : "Part 3: a shared stream 0");
  // Per-thread: 75% of the ideal (each thread issues one launch: no issue time). Each thread
  // needs a core while its kernel runs (it spins in its synchronize), and one core stays with the
  // timing thread: past the free cores the OS decides how the threads take turns (32 threads on an
  // H100's 16-core host: 2 to 6 turns in 13 runs), and the bar says only that they did not
  // serialize. Legacy: ideal 1x, 1.25 leaves room for jitter.
  const int cores = std::max(1, int(std::thread::hardware_concurrency()) - 1);
  const int turns = setup.prop.concurrentKernels ? 1 : threads;
  const bool crowded = threads > cores && turns == 1;  // the OS, not the device, sets the turns
  const double ideal = double(threads) / turns, bar = crowded ? 2.0 : 0.75 * ideal;
  if (kPerThreadBuild)
    cs::check_or_skip(setup.timing_skip, "threads_run_concurrently", speedup, kAtLeast, bar, "x",
                      crowded ? "more threads than free cores: the OS sets the turns"
                              : cs::format("0.75 x ideal %.2fx: %d kernels in %d turn%s", ideal,
                                           threads, turns, turns == 1 ? "" : "s"));
  else
    cs::check_or_skip(setup.timing_skip, "threads_share_the_legacy_stream", speedup, kAtMost, 1.25,
                      "x", "ideal 1x: every thread's stream 0 is the one legacy stream");
}

// Part 4: more streams than hardware queues ----------------------------------------------------
void part_connections(const lab::Setup& setup, int stream_count) {
  // The hardware queues, and the streams that share each queue.
  const int queues = setup.env.max_connections, sharing = (stream_count + queues - 1) / queues;
  std::printf("  hardware queues: %d, streams per queue: up to %d\n", queues, sharing);
  // Created in one go: on the devices measured the driver deals them out over the queues in turn.
  std::vector<cudaStream_t> streams(stream_count);
  for (cudaStream_t& s : streams) CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  lab::KernelLog log(setup);
  // One stream's A then B: what every stream would take if none waited for another.
  const cs::Stats alone = lab::time_ms(setup, [&] {
    spin_kernel<<<1, kSpinThreads, 0, streams[0]>>>(log.task());
    spin_kernel<<<1, kSpinThreads, 0, streams[0]>>>(log.task());
  });
  // For comparison: kernel A alone in every stream (no kernel waits in any queue).
  const cs::Stats single = lab::time_ms(setup, [&] {
    for (cudaStream_t s : streams) spin_kernel<<<1, kSpinThreads, 0, s>>>(log.task());
  });
  // core: connections (11 lines): Depth-first: all of stream 1's work, then all of stream 2's, ...
  const auto [issued, depth] = lab::time_issue_ms(setup, [&] {
    for (cudaStream_t s : streams) {
      spin_kernel<<<1, kSpinThreads, 0, s>>>(log.task());  // A
      spin_kernel<<<1, kSpinThreads, 0, s>>>(log.task());  // B, after A
    }
  });
  // Breadth-first: kernel A of every stream, then kernel B of every stream.
  const cs::Stats breadth = lab::time_ms(setup, [&] {
    for (cudaStream_t s : streams) spin_kernel<<<1, kSpinThreads, 0, s>>>(log.task());  // A
    for (cudaStream_t s : streams) spin_kernel<<<1, kSpinThreads, 0, s>>>(log.task());  // B
  });
  // The ideal: one stream alone, plus kLaunchMs allowed to issue each launch.
  const double ideal_ms = alone.min + 2 * stream_count * kLaunchMs;
  std::printf(
      "  one stream alone %.2f ms (ideal %.2f), depth-first %.2f (issued in %.3f), "
      "breadth-first %.2f, A alone in every stream %.2f\n",
      alone.min, ideal_ms, depth.min, issued.min, breadth.min, single.min);
  log.verify("connections_kernel");
  // A queue for every stream: both orders within 1.2x of the ideal. Else, depth-first, a queue of
  // k streams runs A1, B1 beside A2, ..., Bk alone: k + 1 kernel times where one stream alone
  // needs 2; bar: 70% of that predicted loss. Breadth-first puts independent kernels side by
  // side: at most 10% slower than depth-first.
  const double predicted = (sharing + 1) / 2.0;
  if (sharing == 1) {
    cs::check_or_skip(setup.overlap_skip, "depth_first_within_ideal", depth.min / ideal_ms, kAtMost,
                      1.2, "x", "depth-first time / ideal, a queue per stream");
    cs::check_or_skip(setup.overlap_skip, "breadth_first_within_ideal", breadth.min / ideal_ms,
                      kAtMost, 1.2, "x", "breadth-first time / ideal, a queue per stream");
  } else {
    cs::check_or_skip(setup.overlap_skip, "false_dependencies", depth.min / alone.min, kAtLeast,
                      0.7 * predicted, "x",
                      cs::format("depth-first / alone, 0.7 x predicted %.1fx", predicted));
    cs::check_or_skip(setup.overlap_skip, "breadth_first_no_slower", breadth.min / depth.min,
                      kAtMost, 1.1, "x", "breadth-first time / depth-first time");
  }
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 5: the seed's torch.mm(A, A) and torch.mm(B, B) on two streams --------------------------
void part_seed_mm(const lab::Setup& setup, int n) {
  const size_t count = size_t(n) * n, bytes = count * sizeof(float);
  // core: seed_mm (20 lines)
  // PyTorch creates its streams non-blocking, so stream 0 never stands between them.
  cudaStream_t s1, s2;
  CS_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  const std::vector<float> host_a = lab::random_values(count, 0, false);  // torch.rand
  const std::vector<float> host_b = lab::random_values(count, 1, false);
  float *a, *b, *c, *d;
  for (float** p : {&a, &b, &c, &d}) CS_CHECK(cudaMalloc(p, bytes));
  CS_CHECK(cudaMemcpy(a, host_a.data(), bytes, cudaMemcpyHostToDevice));
  CS_CHECK(cudaMemcpy(b, host_b.data(), bytes, cudaMemcpyHostToDevice));
  CS_CHECK(cudaDeviceSynchronize());  // torch.cuda.synchronize(): the inputs are ready
  const dim3 block(kTile, kTile), grid((n + kTile - 1) / kTile, (n + kTile - 1) / kTile);
  matmul_tiled<<<grid, block, 0, s1>>>(a, a, c, n);  // with torch.cuda.stream(s1): C = mm(A, A)
  matmul_tiled<<<grid, block, 0, s2>>>(b, b, d, n);  // with torch.cuda.stream(s2): D = mm(B, B)
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaDeviceSynchronize());  // torch.cuda.synchronize(): wait for C and D
  // C.cpu() and D.cpu(), then each against the CPU's A x A and B x B, 1e-4 relative.
  std::vector<float> host_c(count), host_d(count);
  CS_CHECK(cudaMemcpy(host_c.data(), c, bytes, cudaMemcpyDeviceToHost));
  CS_CHECK(cudaMemcpy(host_d.data(), d, bytes, cudaMemcpyDeviceToHost));
  cs::verify_product("seed_mm_C", host_a.data(), host_a.data(), host_c.data(), n, 1e-4);
  cs::verify_product("seed_mm_D", host_b.data(), host_b.data(), host_d.data(), n, 1e-4);
  const cs::Stats mm_one = lab::time_ms(setup, [&] {
    matmul_tiled<<<grid, block, 0, s1>>>(a, a, c, n);
    matmul_tiled<<<grid, block, 0, s1>>>(b, b, d, n);
  });
  const cs::Stats mm_two = lab::time_ms(setup, [&] {
    matmul_tiled<<<grid, block, 0, s1>>>(a, a, c, n);
    matmul_tiled<<<grid, block, 0, s2>>>(b, b, d, n);
  });
  const unsigned blocks = grid.x * grid.y, sms = setup.prop.multiProcessorCount;
  std::printf("  both mm in s1: %.3f ms, on s1 and s2: %.3f ms (%u blocks each on %u SMs)\n",
              mm_one.min, mm_two.min, blocks, sms);
  // An mm that fills the GPU leaves two streams only tails to overlap: at most 1.2x (noise). With
  // fewer blocks than SMs the mm does not fill the GPU (the check's premise): it skips.
  const std::string small = cs::format("--matrix: %u blocks, fewer than the %u SMs", blocks, sms);
  cs::check_or_skip(cs::first_reason({setup.timing_skip, blocks < sms ? small : ""}),
                    "seed_mm_two_streams", mm_two.min / mm_one.min, kAtMost, 1.2, "x",
                    "two streams / one stream: each mm fills the GPU");
  for (float* p : {a, b, c, d}) CS_CHECK(cudaFree(p));
  for (cudaStream_t stream : {s1, s2}) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 6: the seed's t1 * 2 / t2 * 3, synchronizing inside each stream's block or once ---------
void part_seed_sync(const lab::Setup& setup, int n) {
  const size_t count = size_t(n) * n, bytes = count * sizeof(float);
  cudaStream_t s1, s2;
  CS_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  const std::vector<float> host_t1 = lab::random_values(count, 2, true);  // torch.randn(n, n)
  const std::vector<float> host_t2 = lab::random_values(count, 3, true);
  float *t1, *t2, *res1, *res2;
  for (float** p : {&t1, &t2, &res1, &res2}) CS_CHECK(cudaMalloc(p, bytes));
  CS_CHECK(cudaMemcpy(t1, host_t1.data(), bytes, cudaMemcpyHostToDevice));
  CS_CHECK(cudaMemcpy(t2, host_t2.data(), bytes, cudaMemcpyHostToDevice));
  CS_CHECK(cudaDeviceSynchronize());
  // Each block also runs a spin kernel of --kernel-ms for the rest of its work: the scale alone
  // lasts microseconds, too short to see what the synchronization costs.
  const int blocks = int(std::min<size_t>((count + 255) / 256, 4 * setup.prop.multiProcessorCount));
  lab::KernelLog log(setup);
  // core: seed_sync
  // A torch.cuda.stream(s) block: out = in * factor, then its spin. Both in s1: the reference.
  const cs::Stats serial = lab::time_ms(setup, [&] {
    scale_kernel<<<blocks, 256, 0, s1>>>(t1, res1, 2.0f, count);
    spin_kernel<<<1, kSpinThreads, 0, s1>>>(log.task());
    scale_kernel<<<blocks, 256, 0, s1>>>(t2, res2, 3.0f, count);
    spin_kernel<<<1, kSpinThreads, 0, s1>>>(log.task());
  });
  // The seed: s1.synchronize() inside the first block, s2.synchronize() inside the second.
  const cs::Stats sync_inside = lab::time_ms(setup, [&] {
    scale_kernel<<<blocks, 256, 0, s1>>>(t1, res1, 2.0f, count);
    spin_kernel<<<1, kSpinThreads, 0, s1>>>(log.task());
    CS_CHECK(cudaStreamSynchronize(s1));
    scale_kernel<<<blocks, 256, 0, s2>>>(t2, res2, 3.0f, count);
    spin_kernel<<<1, kSpinThreads, 0, s2>>>(log.task());
    CS_CHECK(cudaStreamSynchronize(s2));
  });
  // The fix: issue both blocks, then wait once (torch.cuda.synchronize()).
  const cs::Stats sync_once = lab::time_ms(setup, [&] {
    scale_kernel<<<blocks, 256, 0, s1>>>(t1, res1, 2.0f, count);
    spin_kernel<<<1, kSpinThreads, 0, s1>>>(log.task());
    scale_kernel<<<blocks, 256, 0, s2>>>(t2, res2, 3.0f, count);
    spin_kernel<<<1, kSpinThreads, 0, s2>>>(log.task());
    CS_CHECK(cudaDeviceSynchronize());
  });
  // end core
  // print(res1.shape, res2.shape): an elementwise product keeps its shape.
  std::printf("  res1.shape, res2.shape: torch.Size([%d, %d]) torch.Size([%d, %d])\n", n, n, n, n);
  std::vector<float> host_res1(count), host_res2(count);  // res1.cpu(), res2.cpu()
  CS_CHECK(cudaMemcpy(host_res1.data(), res1, bytes, cudaMemcpyDeviceToHost));
  CS_CHECK(cudaMemcpy(host_res2.data(), res2, bytes, cudaMemcpyDeviceToHost));
  std::vector<float> want1(count), want2(count);
  for (size_t i = 0; i < count; ++i) want1[i] = host_t1[i] * 2.0f, want2[i] = host_t2[i] * 3.0f;
  cs::verify("seed_res1 (t1 * 2)", host_res1, want1);
  cs::verify("seed_res2 (t2 * 3)", host_res2, want2);
  log.verify("seed_kernel");
  const double inside = sync_inside.min / serial.min, once = sync_once.min / serial.min;
  std::printf("  both blocks in s1: %.2f ms, synchronize inside each: %.2f ms, once: %.2f ms\n",
              serial.min, sync_inside.min, sync_once.min);
  // Inside: the host waits for s1 before it issues s2's work: serial time, 0.9 for timing noise.
  // Once: both blocks at once, ideal 0.5x; 0.6 for the scale kernels, plus 4 launches' allowance.
  cs::check_or_skip(setup.timing_skip, "seed_sync_inside_is_serial", inside, kAtLeast, 0.9, "x",
                    "the host waits for s1 before it issues s2's work");
  cs::check_or_skip(setup.overlap_skip, "seed_sync_once_overlaps", once, kAtMost,
                    0.6 + 4 * kLaunchMs / (2 * setup.kernel_ms), "x",
                    "ideal 0.5x: both blocks run at once");
  for (float* p : {t1, t2, res1, res2}) CS_CHECK(cudaFree(p));
  for (cudaStream_t stream : {s1, s2}) CS_CHECK(cudaStreamDestroy(stream));
}

int main(int argc, char** argv) {
  int kernels = 8, threads = 4, stream_count = 32, matrix = 1000, repeats = 5;
  double kernel_ms = 2.0;
  cs::CommonOptions common;
  cs::Options options(
      kPerThreadBuild ? "02_default_vs_custom_streams_per_thread" : "02_default_vs_custom_streams",
      "The default stream vs created streams.");
  cs::Parts parts(options,
                  {{"concurrency", "the same kernels in the default stream and in N streams"},
                   {"legacy", "a kernel in the legacy default stream serializes blocking streams"},
                   {"threads", "host threads launching into stream 0"},
                   {"connections", "more streams than hardware queues"},
                   {"seed_mm", "the seed's torch.mm on two streams"},
                   {"seed_sync", "the seed's t1 * 2 / t2 * 3: synchronize inside or once"}});
  options.add_int("kernels", &kernels, 1, 64, "kernels (and streams) in the concurrency part");
  options.add_double("kernel-ms", &kernel_ms, 0.1, 20.0, "how long each spin kernel runs, in ms");
  options.add_int("threads", &threads, 1, 32, "host threads in the threads part");
  options.add_int("streams", &stream_count, 1, 128, "streams in the connections part");
  options.add_int("matrix", &matrix, 16, 4096, "edge of the seed parts' square matrices");
  options.add_int("repeats", &repeats, 1, 50, "timed repeats of each run (the fastest counts)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  // The driver reads CUDA_LAUNCH_BLOCKING and CUDA_DEVICE_MAX_CONNECTIONS at the first CUDA call.
  const lab::Setup setup{common, cs::launch_environment(), kernel_ms, repeats};  // then the device
  if (parts.selected("seed_mm") || parts.selected("seed_sync"))  // 4 matrices of 4-byte floats
    cs::require_fits_on_device(16 * size_t(matrix) * matrix, cs::format("--matrix %d", matrix));
  std::printf("Build: --default-stream %s\n", kPerThreadBuild ? "per-thread" : "legacy");
  cs::print_launch_environment(setup.env);
  if (parts.begin("concurrency")) part_concurrency(setup, kernels);
  if (parts.begin("legacy")) part_legacy(setup);
  if (parts.begin("threads")) part_threads(setup, threads);
  if (parts.begin("connections")) part_connections(setup, stream_count);
  if (parts.begin("seed_mm")) part_seed_mm(setup, matrix);
  if (parts.begin("seed_sync")) part_seed_sync(setup, matrix);
  return cs::finish();
}
