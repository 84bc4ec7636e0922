// Chapter 02: the default stream and created streams.
//
// "The default stream executes kernels serially; streams let kernels run at the same time." The
// program measures that sentence and the rules behind it, one part each: concurrency, legacy,
// threads (per-thread default streams), connections (hardware queues), the seed's seed_mm and
// seed_sync. Built twice: build/bin/02_default_vs_custom_streams (the legacy default stream) and
// ..._per_thread (nvcc --default-stream per-thread); the lesson (README.md) has the nvcc line.
// --part NAME runs one part; --help lists the parts and the flags. Each part prints median times,
// its CHECK lines beside their bars, and a timeline. Machinery: default_vs_custom_streams_lab.cuh.

#include <cstdio>
#include <string>
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
constexpr const char* kBuildName =
    kPerThreadBuild ? "--default-stream per-thread" : "--default-stream legacy";

constexpr int kSpinThreads = 32;     // one warp: each spin kernel occupies one slot on one SM
constexpr int kTile = 16;            // the SGEMM's tile edge
constexpr double kLaunchMs = 0.010;  // a bar's allowance per launch: twice the H200 host's 5 us

// Kernels ---------------------------------------------------------------------------------------
// Waits task.duration_ns on the GPU's global timer (the same time at any clock), then writes when
// it ran. The iteration bound ends it only if the timer stands still (a clock64() bound ended
// waits early under the sanitizer: a block may resume on another SM, with another cycle counter).
__global__ void spin_kernel(lab::SpinTask task) {
  const unsigned long long start = cs::globaltimer_ns();
  const unsigned long long iteration_bound = task.duration_ns + 100000;
  unsigned long long now = start;
  for (unsigned long long i = 0; now - start < task.duration_ns && i < iteration_bound; ++i) {
    now = cs::globaltimer_ns();
  }
  if (threadIdx.x == 0) {
    task.record->start_ns = start;
    task.record->end_ns = now;
    atomicAdd(&task.record->runs, 1u);
  }
}

// C = A x B for n x n row-major matrices (torch.mm): each block computes one kTile x kTile tile.
__global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float a_tile[kTile][kTile];
  __shared__ float b_tile[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float sum = 0.0f;
  for (int base = 0; base < n; base += kTile) {
    const int a_col = base + threadIdx.x;
    const int b_row = base + threadIdx.y;
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
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    out[i] = in[i] * factor;
  }
}

// Part 1: the same kernels in the default stream and in created streams -----------------------
void part_concurrency(const lab::Setup& setup, int kernels) {
  std::vector<cudaStream_t> streams(kernels);
  for (cudaStream_t& stream : streams) CS_CHECK(cudaStreamCreate(&stream));
  lab::KernelLog log(2 * kernels);
  // core: concurrency (12 lines): Stream 0: each kernel waits for the one before it.
  const cs::Stats serial = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
    for (int i = 0; i < kernels; ++i)
      spin_kernel<<<1, kSpinThreads, 0, 0>>>(log.task(i, setup.kernel_ns));
    CS_CHECK_LAUNCH();
  });
  // One created stream per kernel: nothing orders them, so they can share the GPU.
  const lab::Timed concurrent = lab::time_and_issue_ms(setup, [&] {
    for (int i = 0; i < kernels; ++i) {
      spin_kernel<<<1, kSpinThreads, 0, streams[i]>>>(log.task(kernels + i, setup.kernel_ns));
    }
    CS_CHECK_LAUNCH();
  });
  const double speedup = lab::ratio(serial.median, concurrent.time.median);
  lab::print_times(
      {{"default stream (one after another)", serial.median},
       {cs::format("%d created streams (launches issued in %.3f ms)", kernels, concurrent.issue_ms),
        concurrent.time.median}},
      speedup);
  lab::publish_concurrency_timeline(setup, log.verify("concurrency_kernel"), kernels);
  // Ideal: N kernels after kLaunchMs per launch, in one turn however many hardware queues they
  // share (nothing orders them), or in N turns on a device without concurrentKernels.
  const int turns = setup.concurrent_kernels() ? 1 : kernels;
  const double ideal = lab::ideal_speedup(kernels, setup.kernel_ms, turns, kernels * kLaunchMs);
  // 75% of the ideal leaves room for launch jitter and the kernels' start-up on the SMs.
  constexpr double kOfIdeal = 0.75;
  cs::check_or_skip(lab::overlap_skip(setup), "concurrency_speedup", speedup, cs::Compare::at_least,
                    kOfIdeal * ideal, "x",
                    lab::ideal_why(kOfIdeal, ideal, kernels, turns, setup, kernels * kLaunchMs));
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 2: the legacy default stream's implicit synchronization ---------------------------------
void part_legacy(const lab::Setup& setup) {
  // core: legacy
  cudaStream_t blocking[2], non_blocking[2];
  for (int i = 0; i < 2; ++i) {
    CS_CHECK(cudaStreamCreate(&blocking[i]));
    CS_CHECK(cudaStreamCreateWithFlags(&non_blocking[i], cudaStreamNonBlocking));
  }
  lab::KernelLog log(6 * 3);
  // Kernel A in pair[0], a kernel that lasts no time in `middle`, kernel B in pair[1], writing
  // records slot, slot + 1, slot + 2 (the timeline draws the first two runs).
  auto time_pair = [&](const cudaStream_t* pair, cudaStream_t middle, int slot) {
    const cs::Stats time = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
      spin_kernel<<<1, kSpinThreads, 0, pair[0]>>>(log.task(slot, setup.kernel_ns));
      spin_kernel<<<1, kSpinThreads, 0, middle>>>(log.task(slot + 1, 0));
      spin_kernel<<<1, kSpinThreads, 0, pair[1]>>>(log.task(slot + 2, setup.kernel_ns));
      CS_CHECK_LAUNCH();
    });
    return time.median;
  };
  // The middle kernel in stream 0 as built, then in each default stream by its name.
  const double stream0_blocking = time_pair(blocking, 0, 0);
  const double stream0_free = time_pair(non_blocking, 0, 3);
  const double legacy_blocking = time_pair(blocking, cudaStreamLegacy, 6);
  const double legacy_free = time_pair(non_blocking, cudaStreamLegacy, 9);
  const double per_thread_blocking = time_pair(blocking, cudaStreamPerThread, 12);
  const double per_thread_free = time_pair(non_blocking, cudaStreamPerThread, 15);
  // end core
  const std::vector<lab::KernelRecord> records = log.verify("legacy_kernel");
  std::printf("  %-30s %18s %22s %8s\n", "middle kernel's stream", "blocking A and B",
              "non-blocking A and B", "ratio");
  // Each row's ratio: blocking time / non-blocking time (under CUDA_LAUNCH_BLOCKING=1, / one
  // kernel's time, since the non-blocking pair takes turns too).
  const double stream0 = lab::legacy_row(
      setup, kPerThreadBuild ? "0 (this build: per-thread)" : "0 (this build: legacy)",
      stream0_blocking, stream0_free);
  const double legacy = lab::legacy_row(setup, "cudaStreamLegacy", legacy_blocking, legacy_free);
  const double per_thread =
      lab::legacy_row(setup, "cudaStreamPerThread", per_thread_blocking, per_thread_free);
  lab::publish_legacy_timeline(setup, records, kBuildName);
  // Serialized: ideal 2x (B waits for the tiny kernel, which waits for A); 1.6 leaves 20% slack.
  constexpr double kSerialized = 1.6;
  // Not serialized: ideal 1x (A and B overlap); 1.25 leaves room for launch jitter.
  constexpr double kNotSerialized = 1.25;
  const std::string skip = lab::concurrent_skip(setup), no_overlap = lab::overlap_skip(setup);
  const std::string serial_why = setup.env.launch_blocking
                                     ? "blocking time / one kernel's: A and B take turns"
                                     : "ideal 2x: B waits for the tiny kernel, which waits for A";
  const std::string free_why = "ideal 1x: A and B overlap as if stream 0 were not there";
  if (kPerThreadBuild) {
    cs::check_or_skip(no_overlap, "stream0_does_not_serialize", stream0, cs::Compare::at_most,
                      kNotSerialized, "x", "per-thread stream 0, " + free_why);
  } else {
    cs::check_or_skip(skip, "stream0_serializes_blocking_streams", stream0, cs::Compare::at_least,
                      kSerialized, "x", "legacy stream 0, " + serial_why);
  }
  cs::check_or_skip(skip, "cudaStreamLegacy_serializes", legacy, cs::Compare::at_least, kSerialized,
                    "x", serial_why);
  cs::check_or_skip(no_overlap, "cudaStreamPerThread_does_not_serialize", per_thread,
                    cs::Compare::at_most, kNotSerialized, "x", free_why);
  for (cudaStream_t stream : {blocking[0], blocking[1], non_blocking[0], non_blocking[1]})
    CS_CHECK(cudaStreamDestroy(stream));
}

// Part 3: host threads, each launching into its stream 0 ---------------------------------------
void part_threads(const lab::Setup& setup, int threads) {
  lab::KernelLog log(2 * threads);
  // core: threads (18 lines): the reference: one thread launches all kernels into its stream 0
  const cs::Stats one_thread = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
    for (int t = 0; t < threads; ++t) {
      spin_kernel<<<1, kSpinThreads, 0, 0>>>(log.task(threads + t, setup.kernel_ns));
    }
    CS_CHECK_LAUNCH();
  });
  // Each std::thread launches into "stream 0": its own stream only in the per-thread build.
  const cs::Stats many_threads = lab::time_host_threads_ms(
      setup, threads,
      [&](int) {
        CS_CHECK(cudaSetDevice(setup.device));  // the current device belongs to the host thread
        CS_CHECK(cudaStreamSynchronize(0));     // creates this thread's stream 0 (per-thread)
      },
      [&](int t) {
        spin_kernel<<<1, kSpinThreads, 0, 0>>>(log.task(t, setup.kernel_ns));
        CS_CHECK_LAUNCH();
        CS_CHECK(cudaStreamSynchronize(0));
      });
  const double speedup = lab::ratio(one_thread.median, many_threads.median);
  lab::print_times(
      {{cs::format("1 thread, %d kernels into stream 0", threads), one_thread.median},
       {cs::format("%d threads, 1 kernel each into stream 0", threads), many_threads.median}},
      speedup);
  lab::publish_threads_timeline(setup, log.verify("threads_kernel"), threads, kBuildName);
  // Per-thread: 75% of the ideal, in the turns the queues and the host's cores allow (each
  // thread issues one launch: no issue time). Legacy: ideal 1x, 1.25 leaves room for jitter.
  constexpr double kOfIdeal = 0.75;
  constexpr double kThreadsShareOne = 1.25;
  const int turns = std::max(setup.concurrent_kernels() ? 1 : threads, lab::host_turns(threads));
  const double ideal = lab::ideal_speedup(threads, setup.kernel_ms, turns, 0.0);
  if (kPerThreadBuild) {
    cs::check_or_skip(
        setup.timing_skip, "threads_run_concurrently", speedup, cs::Compare::at_least,
        kOfIdeal * ideal, "x",
        lab::ideal_why(kOfIdeal, ideal, threads, turns, setup, 0.0) + lab::cores_note(threads));
  } else {
    cs::check_or_skip(setup.timing_skip, "threads_share_the_legacy_stream", speedup,
                      cs::Compare::at_most, kThreadsShareOne, "x",
                      "ideal 1x: every thread's stream 0 is the one legacy stream");
  }
}

// Part 4: more streams than hardware queues ----------------------------------------------------
void part_connections(const lab::Setup& setup, int stream_count) {
  const int queues = setup.connections();
  const int sharing = (stream_count + queues - 1) / queues;  // streams per hardware queue
  lab::print_queues(setup, sharing);
  // Created in one go, so that the driver deals them out over the queues in turn.
  std::vector<cudaStream_t> streams(stream_count);
  for (cudaStream_t& s : streams) CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Records [layout][stream][A, B]; layouts: alone, A everywhere, depth-, breadth-first.
  lab::KernelLog log(4 * 2 * stream_count);
  auto task = [&](int layout, int s, int b) {
    return log.task((layout * stream_count + s) * 2 + b, setup.kernel_ns);
  };
  // One stream's A then B: what every stream would take if none waited for another.
  const cs::Stats alone = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
    spin_kernel<<<1, kSpinThreads, 0, streams[0]>>>(task(0, 0, 0));
    spin_kernel<<<1, kSpinThreads, 0, streams[0]>>>(task(0, 0, 1));
    CS_CHECK_LAUNCH();
  });
  // For comparison: kernel A alone in every stream (no kernel waits in any queue).
  const lab::Timed single = lab::time_and_issue_ms(setup, [&] {
    for (int s = 0; s < stream_count; ++s)
      spin_kernel<<<1, kSpinThreads, 0, streams[s]>>>(task(1, s, 0));
    CS_CHECK_LAUNCH();
  });
  // core: connections (15 lines): Depth-first: all of stream 1's work, then all of stream 2's, ...
  const lab::Timed depth = lab::time_and_issue_ms(setup, [&] {
    for (int s = 0; s < stream_count; ++s) {
      spin_kernel<<<1, kSpinThreads, 0, streams[s]>>>(task(2, s, 0));
      spin_kernel<<<1, kSpinThreads, 0, streams[s]>>>(task(2, s, 1));
    }
    CS_CHECK_LAUNCH();
  });
  // Breadth-first: kernel A of every stream, then kernel B of every stream.
  const cs::Stats breadth = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
    for (int s = 0; s < stream_count; ++s)
      spin_kernel<<<1, kSpinThreads, 0, streams[s]>>>(task(3, s, 0));
    for (int s = 0; s < stream_count; ++s)
      spin_kernel<<<1, kSpinThreads, 0, streams[s]>>>(task(3, s, 1));
    CS_CHECK_LAUNCH();
  });
  const double ideal_ms = alone.median + 2 * stream_count * kLaunchMs;
  lab::print_connections_table(alone.median, ideal_ms, depth, breadth.median, single, stream_count);
  lab::publish_connections_timelines(setup, log.verify("connections_kernel"), stream_count);
  const std::string skip = lab::overlap_skip(setup);
  if (sharing == 1) {
    // Enough queues: both orders within 1.2x of the ideal (one stream's time plus issue time).
    constexpr double kWithinIdeal = 1.2;
    const std::string why =
        cs::format("every stream has a queue of its own: %d >= %d streams", queues, stream_count);
    cs::check_or_skip(skip, "depth_first_within_ideal", lab::ratio(depth.time.median, ideal_ms),
                      cs::Compare::at_most, kWithinIdeal, "x", why);
    cs::check_or_skip(skip, "breadth_first_within_ideal", lab::ratio(breadth.median, ideal_ms),
                      cs::Compare::at_most, kWithinIdeal, "x", why);
  } else {
    // Depth-first, a queue of k streams runs A1, B1 beside A2, ..., Bk alone: k + 1 kernel times
    // where one stream alone needs 2. Bar: 70% of that predicted loss.
    const double predicted = (sharing + 1) / 2.0;
    constexpr double kOfPredictedLoss = 0.7;
    cs::check_or_skip(skip, "false_dependencies", lab::ratio(depth.time.median, alone.median),
                      cs::Compare::at_least, kOfPredictedLoss * predicted, "x",
                      cs::format("depth-first / one stream alone, %.1f x predicted %.1fx: %d "
                                 "streams per queue, each B holds its queue until its A ends",
                                 kOfPredictedLoss, predicted, sharing));
    // Breadth-first puts independent kernels side by side: at most 10% slower than depth-first.
    constexpr double kBreadthVsDepth = 1.1;
    cs::check_or_skip(skip, "breadth_first_no_slower",
                      lab::ratio(breadth.median, depth.time.median), cs::Compare::at_most,
                      kBreadthVsDepth, "x", "breadth-first time / depth-first time");
  }
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 5: the seed's torch.mm(A, A) and torch.mm(B, B) on two streams --------------------------
void part_seed_mm(const lab::Setup& setup, int n) {
  const size_t count = size_t(n) * n, bytes = count * sizeof(float);
  // core: seed_mm (17 lines)
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
  const dim3 block(kTile, kTile);
  const dim3 grid((n + kTile - 1) / kTile, (n + kTile - 1) / kTile);
  matmul_tiled<<<grid, block, 0, s1>>>(a, a, c, n);  // with torch.cuda.stream(s1): C = mm(A, A)
  matmul_tiled<<<grid, block, 0, s2>>>(b, b, d, n);  // with torch.cuda.stream(s2): D = mm(B, B)
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaDeviceSynchronize());  // torch.cuda.synchronize(): wait for C and D
  // Float sums of n products against a double CPU reference: 1e-4 relative.
  constexpr double kGemmTolerance = 1e-4;
  lab::verify_square("seed_mm_C", "A x A", "C = mm(A, A) on s1", host_a, c, n, kGemmTolerance);
  lab::verify_square("seed_mm_D", "B x B", "D = mm(B, B) on s2", host_b, d, n, kGemmTolerance);
  const cs::Stats mm_one = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
    matmul_tiled<<<grid, block, 0, s1>>>(a, a, c, n);
    matmul_tiled<<<grid, block, 0, s1>>>(b, b, d, n);
    CS_CHECK_LAUNCH();
  });
  const cs::Stats mm_two = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
    matmul_tiled<<<grid, block, 0, s1>>>(a, a, c, n);
    matmul_tiled<<<grid, block, 0, s2>>>(b, b, d, n);
    CS_CHECK_LAUNCH();
  });
  std::printf("  both mm in s1: %.3f ms, on s1 and s2: %.3f ms (%u blocks each on %d SMs)\n",
              mm_one.median, mm_two.median, grid.x * grid.y, setup.prop.multiProcessorCount);
  // An mm that fills the GPU leaves two streams only tails to overlap: at most 1.2x (noise).
  constexpr double kTwoStreamGemmMax = 1.2;
  const std::string skip = lab::mm_skip(setup, grid.x * grid.y);
  cs::check_or_skip(
      skip, "seed_mm_two_streams", lab::ratio(mm_two.median, mm_one.median), cs::Compare::at_most,
      kTwoStreamGemmMax, "x",
      "two streams / one stream: each mm fills the GPU, so streams overlap only tails");
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
  lab::KernelLog log(6);
  // core: seed_sync (23 lines)
  // with torch.cuda.stream(stream): out = in * factor, then the rest of the block's work.
  auto block = [&](cudaStream_t stream, const float* in, float* out, float factor, int slot) {
    scale_kernel<<<blocks, 256, 0, stream>>>(in, out, factor, count);
    spin_kernel<<<1, kSpinThreads, 0, stream>>>(log.task(slot, setup.kernel_ns));
    CS_CHECK_LAUNCH();
  };
  const cs::Stats serial = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
    block(s1, t1, res1, 2.0f, 0);  // both blocks in one stream: the reference
    block(s1, t2, res2, 3.0f, 1);
  });
  // The seed: s1.synchronize() inside the first block, s2.synchronize() inside the second.
  const cs::Stats sync_inside = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
    block(s1, t1, res1, 2.0f, 2);
    CS_CHECK(cudaStreamSynchronize(s1));
    block(s2, t2, res2, 3.0f, 3);
    CS_CHECK(cudaStreamSynchronize(s2));
  });
  // The fix: issue both blocks, then wait once (torch.cuda.synchronize()).
  const cs::Stats sync_once = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
    block(s1, t1, res1, 2.0f, 4);
    block(s2, t2, res2, 3.0f, 5);
    CS_CHECK(cudaDeviceSynchronize());
  });
  std::printf(  // print(res1.shape, res2.shape): an elementwise product keeps its shape
      "  res1.shape, res2.shape: torch.Size([%d, %d]) torch.Size([%d, %d])\n", n, n, n, n);
  lab::verify_scaled("seed_res1 (t1 * 2)", res1, host_t1, 2.0f);
  lab::verify_scaled("seed_res2 (t2 * 3)", res2, host_t2, 3.0f);
  log.verify("seed_kernel");
  const double inside = lab::ratio(sync_inside.median, serial.median);
  const double once = lab::ratio(sync_once.median, serial.median);
  lab::print_times({{"both blocks in one stream (serial)", serial.median},
                    {cs::format("the seed: synchronize inside each block (%.2fx serial)", inside),
                     sync_inside.median},
                    {cs::format("the fix: issue both, synchronize once (%.2fx serial)", once),
                     sync_once.median}});
  // The host waits for s1 before it issues s2's work: serial time, 0.9 for timing noise.
  constexpr double kSyncInsideMin = 0.9;
  cs::check_or_skip(setup.timing_skip, "seed_sync_inside_is_serial", inside, cs::Compare::at_least,
                    kSyncInsideMin, "x", "the host waits for s1 before it issues s2's work");
  // Both blocks at once: ideal 0.5x; 0.6 for the scale kernels, plus the 4 launches' allowance.
  const double sync_once_max = 0.6 + 4 * kLaunchMs / (2 * setup.kernel_ms);
  cs::check_or_skip(lab::overlap_skip(setup), "seed_sync_once_overlaps", once, cs::Compare::at_most,
                    sync_once_max, "x", "ideal 0.5x: both blocks run at once");
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
  options.add_int("repeats", &repeats, 1, 50, "timed repeats of each measurement (median)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  // The driver reads CUDA_LAUNCH_BLOCKING and CUDA_DEVICE_MAX_CONNECTIONS at the first CUDA call.
  const cs::LaunchEnvironment env = cs::launch_environment();
  const lab::Setup setup = lab::make_setup(common, env, kernel_ms, repeats);
  if (parts.selected("seed_mm") || parts.selected("seed_sync")) {
    cs::require_fits_on_device(4 * size_t(matrix) * matrix * sizeof(float),
                               cs::format("--matrix %d", matrix));
  }
  lab::print_setup(setup, kBuildName, kPerThreadBuild);
  if (parts.begin("concurrency")) part_concurrency(setup, kernels);
  if (parts.begin("legacy")) part_legacy(setup);
  if (parts.begin("threads")) part_threads(setup, threads);
  if (parts.begin("connections")) part_connections(setup, stream_count);
  if (parts.begin("seed_mm")) part_seed_mm(setup, matrix);
  if (parts.begin("seed_sync")) part_seed_sync(setup, matrix);
  return cs::finish();
}
