#!/usr/bin/env python3
"""Chapter 11: the seeds' PyTorch stream examples in Python, corrected where the seeds are wrong.

The same lesson as pytorch_streams.cpp beside this file, in the language the seeds use:
torch.cuda.Stream, `with torch.cuda.stream(s)`, current_stream, wait_stream, wait_event,
record_event, synchronize, record_stream and torch.cuda.device, each printed with the CUDA runtime
calls underneath. Corrections to the seeds:
  - work in a new stream that reads tensors made on the default stream waits for it first
    (s.wait_stream(torch.cuda.current_stream())), which the seeds leave out;
  - the "non-blocking execution in different streams" example synchronizes inside each block,
    which serializes the streams: measured here against one synchronize after both blocks;
  - the broken normal_()/sum() example runs next to its fix, with a slow producer so that the
    race is lost every time, and so does freeing a tensor another stream still reads.

Run: python3 pytorch_streams.py [--part NAME] [--matrix N] [--spin-ms N] [--repeats N] [--replays N]
     [--no-timing]
Exit status: 0 every check passed, 1 a check failed, 2 bad command line, 77 cannot run here (SKIP).
"""

import argparse
import os
import statistics
import sys
import time

# Bars, as in pytorch_streams.cpp: two equal spins take ~2x as long when the seed's synchronize()
# inside each block serializes them; 1.5x leaves room for launch and synchronization costs.
SERIALIZATION_RATIO = 1.5
# Relative tolerances against a float64 CPU reference: above float rounding, far below any stale
# or overwritten value.
SUM_TOLERANCE = 1e-3
MATMUL_TOLERANCE = 1e-4
REPLAY_TOLERANCE = 1e-5  # the captured fork/join's float32 result against float64 on the CPU
# Below this many replays the one synchronize after each batch weighs too much to claim a ratio.
REPLAYS_FOR_BAR = 20

SKIP_EXIT = 77
NORMAL_SIDE = 100  # the seed's torch.empty((100, 100))
REUSE_ELEMENTS = 4 * 1024 * 1024  # 16 MiB of floats: a cache segment of its own

PARTS = ["streams", "seeds", "serialize", "matmul", "race", "record", "priorities", "devices",
         "capture"]
STEPS_PER_BRANCH = 8  # elementwise steps on each stream in the captured fork/join: 2 kernels each
CAPTURE_ELEMENTS = 1 << 14
LAUNCH_BLOCKING = False
ONE_QUEUE = False

checks_run = 0
checks_failed = 0


def check_that(name, passed, detail):
    global checks_run, checks_failed
    checks_run += 1
    checks_failed += 0 if passed else 1
    print(f"CHECK {name}: {detail} ... {'PASS' if passed else 'FAIL'}", flush=True)
    return passed


def check_at_least(name, measured, bar, unit, why):
    return check_that(name, measured >= bar, f"{measured:.2f}{unit} >= {bar:.2f}{unit} ({why})")


def check_skipped(name, reason):
    print(f"CHECK {name}: skipped ({reason})", flush=True)


def close_to(got, want, tolerance):
    return abs(got - want) <= tolerance * max(1.0, abs(want))


def race_skip_reason(shown, no_timing):
    """Why a "race shown" check of a broken example is skipped, or "" when it is made (as the C++
    program's lab::race_skip_reason): --no-timing, or a race not lost under CUDA_LAUNCH_BLOCKING=1
    or in one hardware queue (the lesson says why)."""
    if no_timing:
        return "--no-timing: whether the race is lost depends on timing"
    if shown:
        return ""
    if LAUNCH_BLOCKING:
        return "CUDA_LAUNCH_BLOCKING=1: launch blocking hides this race"
    return "CUDA_DEVICE_MAX_CONNECTIONS=1: the race is up to timing" if ONE_QUEUE else ""


def verify(name, got, want, tolerance=0.0):
    """Compares two tensors element by element in float64 on the CPU, like cs::verify."""
    got = got.detach().cpu().double().flatten()
    want = want.detach().cpu().double().flatten()
    allowed = tolerance * want.abs().clamp(min=1.0)
    wrong = int(((got - want).abs() > allowed).sum())
    return check_that(name, wrong == 0, f"{wrong} of {want.numel()} values differ from the CPU reference")


def bounded_int(low, high):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or value > high:
            raise argparse.ArgumentTypeError(f"expects an integer from {low} to {high}, got '{text}'")
        return value

    return parse


def parse_arguments():
    parser = argparse.ArgumentParser(
        description="The seeds' PyTorch stream examples, corrected, with the CUDA calls underneath.")
    parser.add_argument("--matrix", type=bounded_int(16, 4096), default=1000,
                        help="side of the seeds' square tensors (default: 1000)")
    parser.add_argument("--spin-ms", type=bounded_int(1, 1000), default=10,
                        help="milliseconds of torch.cuda._sleep that stand for slow work (default: 10)")
    parser.add_argument("--repeats", type=bounded_int(1, 100), default=10,
                        help="timed repeats of the two-stream example (default: 10)")
    parser.add_argument("--replays", type=bounded_int(1, 10000), default=200,
                        help="iterations timed eagerly and as graph replays (default: 200)")
    parser.add_argument("--part", choices=["all"] + PARTS, default="all",
                        help="run one part of the lesson (default: all)")
    parser.add_argument("--no-timing", action="store_true",
                        help="verify the results but skip the timing checks")
    return parser.parse_args()


def launch_environment():
    """CUDA_LAUNCH_BLOCKING and CUDA_DEVICE_MAX_CONNECTIONS, read before CUDA starts."""
    blocking = os.environ.get("CUDA_LAUNCH_BLOCKING", "0") == "1"
    text = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "") or "8"
    if not text.isdigit() or not 1 <= int(text) <= 32:  # as the C++ programs say it
        print(f"pytorch_streams.py: error: CUDA_DEVICE_MAX_CONNECTIONS must be an integer from 1 "
              f"to 32, got '{text}'", file=sys.stderr)
        sys.exit(2)
    connections = int(text)
    if blocking:
        print("Environment: CUDA_LAUNCH_BLOCKING=1: every kernel launch waits for its kernel to finish, "
              "so one\n             host thread cannot keep kernels of two streams running at once.")
    if "CUDA_DEVICE_MAX_CONNECTIONS" in os.environ:
        print(f"Environment: CUDA_DEVICE_MAX_CONNECTIONS={connections}: the streams share {connections} "
              f"hardware work queue{' (work starts in issue order)' if connections == 1 else 's'}.")
    return blocking, connections


class Spinner:
    """torch.cuda._sleep(cycles) spins one GPU thread on the current stream (at::cuda::sleep in C++).

    The cycles per millisecond are measured here with timing events (cudaEventElapsedTime)."""

    def __init__(self, torch, stream):
        self.torch = torch
        probe_cycles = 10_000_000  # about 5 ms at 2 GHz
        samples = []
        with torch.cuda.stream(stream):
            torch.cuda._sleep(probe_cycles)  # loads the kernel and wakes the clocks up
            for _ in range(3):
                start = torch.cuda.Event(enable_timing=True)
                stop = torch.cuda.Event(enable_timing=True)
                start.record(stream)
                torch.cuda._sleep(probe_cycles)
                stop.record(stream)
                stop.synchronize()
                samples.append(start.elapsed_time(stop))
        self.cycles_per_ms = probe_cycles / statistics.median(samples)

    def spin(self, ms):
        self.torch.cuda._sleep(int(ms * self.cycles_per_ms))


def handle_text(stream):
    return "0 (the legacy default stream)" if stream.cuda_stream == 0 else hex(stream.cuda_stream)


def current_and_pool_streams(torch):
    default_stream = torch.cuda.default_stream()
    current = torch.cuda.current_stream()
    custom = torch.cuda.Stream()
    print(f"  torch.cuda.current_stream(): cudaStream_t {handle_text(current)}")
    print(f"  torch.cuda.Stream():         cudaStream_t {handle_text(custom)}"
          "  (a pooled cudaStreamNonBlocking stream)")
    check_that("current_is_default", current == default_stream,
               "before any `with` the current stream is the default stream (cudaStream_t 0)")
    with torch.cuda.stream(custom):
        inside = torch.cuda.current_stream()
    after = torch.cuda.current_stream()
    check_that("stream_context", inside == custom and after == default_stream,
               "`with torch.cuda.stream(custom)` made it current inside the block and restored the "
               "default stream after it")
    handles = {torch.cuda.Stream().cuda_stream for _ in range(64)}
    print(f"  64 calls of torch.cuda.Stream() returned {len(handles)} distinct CUDA streams")
    check_that("pool_is_reused", len(handles) < 64,
               f"streams come round-robin from a pool of {len(handles)} per priority: two "
               "torch.cuda.Stream() objects can be one CUDA stream")


def small_tensor_seeds(torch):
    stream = torch.cuda.Stream()
    t1 = torch.tensor([1, 2, 3, 4, 5], device="cuda")  # made on the default stream
    t2 = torch.tensor([5, 4, 3, 2, 1], device="cuda")
    with torch.cuda.stream(stream):
        stream.wait_stream(torch.cuda.default_stream())  # the wait the seed leaves out
        res = t1 + t2
        stream.synchronize()  # the seed's synchronize inside the block: cudaStreamSynchronize
    print(f"  print(t1 + t2) -> {res}")
    verify("seed_t1_plus_t2", res, t1.cpu() + t2.cpu())

    with torch.cuda.stream(stream):
        stream.wait_stream(torch.cuda.default_stream())
        res = t1 * t2
    stream.synchronize()  # after the block, as the seed does
    print(f"  print(t1 * t2) -> {res}")
    verify("seed_t1_times_t2", res, t1.cpu() * t2.cpu())


def scaled_in_stream(torch, stream, tensor, factor, spinner, spin_ms):
    with torch.cuda.stream(stream):
        stream.wait_stream(torch.cuda.default_stream())
        spinner.spin(spin_ms)  # stands for slow work in the block
        return tensor * factor


def two_stream_seed(torch, args, spinner):
    torch.manual_seed(0)
    stream1 = torch.cuda.Stream()
    stream2 = torch.cuda.Stream()
    t1 = torch.randn(args.matrix, args.matrix, device="cuda")
    t2 = torch.randn(args.matrix, args.matrix, device="cuda")
    results = {}

    def seed_version():  # the seed: synchronize() inside each block serializes the streams
        results[1] = scaled_in_stream(torch, stream1, t1, 2, spinner, args.spin_ms)
        stream1.synchronize()
        results[2] = scaled_in_stream(torch, stream2, t2, 3, spinner, args.spin_ms)
        stream2.synchronize()

    def fixed_version():  # the fix: issue both blocks, then wait for both
        results[1] = scaled_in_stream(torch, stream1, t1, 2, spinner, args.spin_ms)
        results[2] = scaled_in_stream(torch, stream2, t2, 3, spinner, args.spin_ms)
        stream1.synchronize()
        stream2.synchronize()

    fixed_version()
    print(f"  print(res1.shape, res2.shape) -> {results[1].shape} {results[2].shape}")
    # The CPU multiplies in float too: one rounded multiply gives the same bits on both.
    verify("seed_res1_equals_t1_times_2", results[1], t1.cpu() * 2)
    verify("seed_res2_equals_t2_times_3", results[2], t2.cpu() * 3)
    if args.no_timing:
        check_skipped("seed_sync_serializes", "--no-timing was given")
        return

    def median_ms(version):
        version()  # warm-up
        torch.cuda.synchronize()
        samples = []
        for _ in range(args.repeats):
            begin = time.perf_counter()
            version()
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - begin) * 1e3)
        return statistics.median(samples)

    seed_ms = median_ms(seed_version)
    fixed_ms = median_ms(fixed_version)
    print(f"  seed {seed_ms:.2f} ms, fixed {fixed_ms:.2f} ms (median of {args.repeats} runs, "
          f"{args.spin_ms} ms spins)")
    if LAUNCH_BLOCKING:
        check_skipped("seed_sync_serializes", "CUDA_LAUNCH_BLOCKING=1: each kernel launch returns only "
                      "when its kernel is done, so kernels issued from one thread cannot overlap")
        return
    if ONE_QUEUE:
        check_skipped("seed_sync_serializes", "CUDA_DEVICE_MAX_CONNECTIONS=1: stream1's multiply waits "
                      "for its spin in the one queue, so the fix serializes too")
        return
    check_at_least("seed_sync_serializes", seed_ms / max(fixed_ms, 1e-6), SERIALIZATION_RATIO, "x",
                   "seed time / fixed time; ~2x for two equal spins that could overlap")


def matmul_seed(torch, args):
    s1 = torch.cuda.Stream()
    s2 = torch.cuda.Stream()
    A = torch.rand(args.matrix, args.matrix, device="cuda")
    B = torch.rand(args.matrix, args.matrix, device="cuda")
    torch.cuda.synchronize()  # wait for the tensors to initialise: cudaDeviceSynchronize
    with torch.cuda.stream(s1):
        C = torch.mm(A, A)
    with torch.cuda.stream(s2):
        D = torch.mm(B, B)
    torch.cuda.synchronize()  # wait for C and D to be computed
    print(f"  C: {C.shape}, D: {D.shape}, C[0][0] = {C[0][0].item():.4f}")
    verify("seed_C_equals_A_mm_A", C, A.cpu().double() @ A.cpu().double(), MATMUL_TOLERANCE)
    verify("seed_D_equals_B_mm_B", D, B.cpu().double() @ B.cpu().double(), MATMUL_TOLERANCE)


def normal_then_sum(torch, s, wait, spinner, spin_ms):
    # torch.empty leaves whatever memory held; ones make the stale contents recognizable.
    A = torch.empty((NORMAL_SIDE, NORMAL_SIDE), device="cuda").fill_(1.0)
    torch.cuda.synchronize()
    spinner.spin(spin_ms)  # the default stream is busy with earlier work ...
    A.normal_(0.0, 1.0)    # ... so normal_() runs late
    if wait:
        # Outside the `with` block the current stream is still the default one; inside it,
        # current_stream() would be s itself, and s.wait_stream(s) waits for nothing.
        s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        B = torch.sum(A)
    torch.cuda.synchronize()
    return B.item(), A.cpu().double().sum().item(), float(A.numel())


def broken_normal_sum(torch, args, spinner):
    s = torch.cuda.Stream()
    # A first run loads the kernels and leaves blocks cached for s: the runs below then neither
    # load a module nor call cudaMalloc between the two streams' work, either of which may wait
    # for the device and hide the race.
    normal_then_sum(torch, s, True, spinner, args.spin_ms)
    got, want, stale = normal_then_sum(torch, s, False, spinner, args.spin_ms)
    fixed_got, fixed_want, _ = normal_then_sum(torch, s, True, spinner, args.spin_ms)
    print(f"  seed (no wait):         sum() = {got:12.4f}, sum of A = {want:12.4f}")
    print(f"  fixed (s.wait_stream):  sum() = {fixed_got:12.4f}, sum of A = {fixed_want:12.4f}")
    broken_is_wrong = not close_to(got, want, SUM_TOLERANCE)
    how = ("matched A" if not broken_is_wrong else "read A before normal_()"
           if close_to(got, stale, SUM_TOLERANCE) else "raced normal_()")
    what = f"sum() {how}: it returned {got:.1f}, A's sum is {want:.4f}"
    skip = race_skip_reason(broken_is_wrong, args.no_timing)
    if skip:
        print(f"  seed: {what}")
        check_skipped("seed_normal_sum_race_shown", skip)
    else:
        check_that("seed_normal_sum_race_shown", broken_is_wrong, what)
    check_that("fixed_normal_sum", close_to(fixed_got, fixed_want, SUM_TOLERANCE),
               f"with s.wait_stream(default) sum() = {fixed_got:.4f}, A's sum {fixed_want:.4f}")


def free_while_in_use(torch, side, record, spinner, spin_ms):
    # No cached block on the default stream may compete with A's for the next allocation; the side
    # stream's sum() gets blocks cached for it again, so no cudaMalloc falls between the streams.
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    with torch.cuda.stream(side):
        torch.ones(REUSE_ELEMENTS, device="cuda").sum().item()
    A = torch.ones(REUSE_ELEMENTS, device="cuda")  # made on the default stream
    with torch.cuda.stream(side):
        side.wait_stream(torch.cuda.default_stream())
        spinner.spin(spin_ms)  # a slow reader
        B = A.sum()
    if record:
        A.record_stream(side)
    reader_busy = not side.query()  # cudaStreamQuery: is sum() still queued on side?
    address = A.data_ptr()
    del A  # the block goes back to the allocator now, on the host's time
    following = torch.empty(REUSE_ELEMENTS, device="cuda").fill_(7.0)
    reused = following.data_ptr() == address
    torch.cuda.synchronize()
    return B.item(), float(REUSE_ELEMENTS), reused, reader_busy


def record_stream_hazard(torch, args, spinner):
    side = torch.cuda.Stream()
    free_while_in_use(torch, side, True, spinner, args.spin_ms)  # loads the kernels first
    got, want, reused, _ = free_while_in_use(torch, side, False, spinner, args.spin_ms)
    fixed_got, fixed_want, fixed_reused, reader_busy = free_while_in_use(
        torch, side, True, spinner, args.spin_ms)
    print(f"  without record_stream: next tensor got A's memory: {'yes' if reused else 'no':3}"
          f"  sum() = {got:.0f} (want {want:.0f})")
    print(f"  with record_stream:    next tensor got A's memory: {'yes' if fixed_reused else 'no':3}"
          f"  sum() = {fixed_got:.0f} (want {fixed_want:.0f})")
    broken_is_wrong = not close_to(got, want, SUM_TOLERANCE)
    how = ("the allocator gave A's block to the next tensor at once" if reused
           else "the next tensor got other memory")
    what = f"{how}; sum() returned {got:.0f}, want {want:.0f}"
    skip = race_skip_reason(broken_is_wrong, args.no_timing)
    if skip:
        print(f"  without record_stream: {what}")
        check_skipped("seed_free_without_record_stream_shown", skip)
    else:
        check_that("seed_free_without_record_stream_shown", broken_is_wrong, what)
    # record_stream's promise (no new owner for A's block while side may still read it) shows only
    # if sum() was still queued when A was freed. Where it had finished (always under
    # CUDA_LAUNCH_BLOCKING=1) the allocator may hand the block out at once, and rightly does.
    if not reader_busy:
        done = "sum() on the side stream had finished before A was freed"
        check_skipped("fixed_record_stream", f"CUDA_LAUNCH_BLOCKING=1: {done}" if LAUNCH_BLOCKING else done)
        return
    check_that("fixed_record_stream", not fixed_reused and close_to(fixed_got, fixed_want, SUM_TOLERANCE),
               f"after A.record_stream(side) A's block "
               f"{'went to the next tensor at once' if fixed_reused else 'waited for side'}: "
               f"sum() = {fixed_got:.0f}")


def priority_table(torch):
    torch_least, torch_greatest = torch.cuda.Stream.priority_range()
    print(f"  torch.cuda.Stream.priority_range(): {torch_least} .. {torch_greatest}"
          "  (PyTorch's pools; chapter 03 prints the device's own range)")
    print(f"\n  {'Python':38} {'stream.priority (cudaStreamGetPriority)'}")
    all_match = True
    # Down to two past PyTorch's greatest, to show the clamp.
    for p in range(torch_least, torch_greatest - 3, -1):
        reported = torch.cuda.Stream(priority=p).priority
        expected = max(p, torch_greatest)
        all_match = all_match and reported == expected
        note = "" if reported == expected else "   (expected max(p, greatest))"
        print(f"  {'torch.cuda.Stream(priority=' + str(p) + ')':38} {reported}{note}")
    try:
        default_priority = torch.cuda.default_stream().priority
    except RuntimeError as error:  # informative only
        default_priority = f"({str(error).splitlines()[0]})"
    print(f"  {'torch.cuda.default_stream()':38} {default_priority}")
    try:
        positive = torch.cuda.Stream(priority=torch_least + 1)
        print(f"  torch.cuda.Stream(priority={torch_least + 1}) was accepted (priority {positive.priority})")
    except RuntimeError as error:
        print(f"  torch.cuda.Stream(priority={torch_least + 1}) is refused: {str(error).splitlines()[0]}")
    check_that("priority_mapping", all_match,
               f"each pool stream's priority is max(p, {torch_greatest}): PyTorch keeps "
               f"{torch_least - torch_greatest + 1} priority pools")


def one_device_seed(torch):
    ordinal = torch.cuda.current_device()
    cuda = torch.device("cuda")  # the current device
    chosen = torch.device(f"cuda:{ordinal}")
    x = torch.tensor([1.0, 2.0], device=chosen)
    y = torch.tensor([1.0, 2.0]).cuda()
    y2 = torch.tensor([1.0, 2.0]).to(device=cuda)
    z = x + y
    with torch.cuda.device(ordinal):  # c10::cuda::CUDAGuard: cudaSetDevice
        current = torch.cuda.current_device()
    print(f"  x.device = {x.device!r}, y.device = {y.device!r}, y2.device = {y2.device!r}, z.device = {z.device!r}")
    on_device = all(t.device.index == ordinal for t in (x, y, y2, z))
    check_that("tensors_on_current_device", on_device and current == ordinal,
               f"'cuda', .cuda() and .to('cuda') mean the current device, {ordinal}")
    verify("seed_z_equals_x_plus_y", z, x.cpu() + y.cpu())
    count = torch.cuda.device_count()
    if count < 2:
        print(f"  (the seed's torch.cuda.device(1) part needs 2 devices; this machine has {count})")
        return
    with torch.cuda.device(1):
        a = torch.tensor([1.0, 2.0], device=cuda)  # allocates a tensor on GPU 1
        b = torch.tensor([1.0, 2.0]).cuda()        # transfers a tensor from CPU to GPU 1
        c = a + b
        z = x + y                                  # on GPU 0: an operation runs where its tensors are
    check_that("seed_tensors_on_gpu1", a.device.index == 1 and b.device.index == 1 and c.device.index == 1,
               "a, b and c = a + b are on GPU 1")
    check_that("seed_z_stays_on_gpu0", z.device.index == 0, "z = x + y is on GPU 0 even inside the block")


def right_branch(t):
    """The side stream's arithmetic, on whatever device t lives (the CPU reference too)."""
    for _ in range(STEPS_PER_BRANCH):
        t = t * 0.5 + 1.0
    return t


def left_branch(torch, t):
    for _ in range(STEPS_PER_BRANCH):
        t = torch.sin(t) + 0.25
    return t


def fork_join(torch, x, side):
    """Fork onto side, a chain of small kernels on each stream, join, one kernel reading both."""
    side.wait_stream(torch.cuda.current_stream())  # fork: side waits for the current stream
    with torch.cuda.stream(side):
        right = right_branch(x)
    left = left_branch(torch, x)
    torch.cuda.current_stream().wait_stream(side)  # join: the current stream waits for side
    return left + right


def fork_join_on_cpu(torch, x):
    """The same arithmetic op by op on the CPU, in float64: float rounding differs by about 1e-6."""
    on_cpu = x.cpu().double()
    return left_branch(torch, on_cpu) + right_branch(on_cpu)


def per_iteration_ms(torch, iterations, work, rounds=5):
    work()  # warm-up
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        begin = time.perf_counter()
        for _ in range(iterations):
            work()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - begin) * 1e3 / iterations)
    return statistics.median(samples)


def capture(torch, args):
    x = torch.rand(CAPTURE_ELEMENTS, device="cuda")  # the graph's static input
    side = torch.cuda.Stream()
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):  # warm-up on a side stream, as PyTorch asks
        for _ in range(3):
            fork_join(torch, x, side)
    torch.cuda.current_stream().wait_stream(warm)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):  # captures on its own stream: cudaStreamBeginCapture ... End
            y = fork_join(torch, x, side)  # side joins the capture at the fork
    except RuntimeError as error:
        if not LAUNCH_BLOCKING:
            raise
        why = f"CUDA_LAUNCH_BLOCKING=1: the capture failed: {str(error).splitlines()[0]}"
        for name in ("graph_replay_matches_eager", "graph_replay_reads_new_input", "graph_replay_speedup"):
            check_skipped(name, why)
        return
    g.replay()  # cudaGraphLaunch on the current stream
    torch.cuda.synchronize()
    verify("graph_replay_matches_eager", y, fork_join_on_cpu(torch, x), REPLAY_TOLERANCE)
    x.copy_(torch.rand(CAPTURE_ELEMENTS, device="cuda"))  # new values, same memory
    g.replay()
    torch.cuda.synchronize()
    verify("graph_replay_reads_new_input", y, fork_join_on_cpu(torch, x), REPLAY_TOLERANCE)
    if args.no_timing:
        check_skipped("graph_replay_speedup", "--no-timing was given")
        return
    eager_ms = per_iteration_ms(torch, args.replays, lambda: fork_join(torch, x, side))
    replay_ms = per_iteration_ms(torch, args.replays, g.replay)
    print(f"  {4 * STEPS_PER_BRANCH + 1} kernels on two streams, {args.replays} iterations back to back "
          "(median of 5 runs):")
    print(f"    eager issue, op by op      {eager_ms * 1e3:8.1f} us per iteration")
    print(f"    torch.cuda.CUDAGraph.replay() {replay_ms * 1e3:5.1f} us per iteration")
    # One graph launch for all the kernels against one dispatch and launch per op; under
    # CUDA_LAUNCH_BLOCKING=1 both wait at every launch, and only "no slower" is claimed.
    bar = 1.0 if LAUNCH_BLOCKING else 1.5
    if args.replays < REPLAYS_FOR_BAR:
        check_skipped("graph_replay_speedup", f"fewer than {REPLAYS_FOR_BAR} replays")
        return
    check_at_least("graph_replay_speedup", eager_ms / max(replay_ms, 1e-9), bar, "x",
                   "eager time / replay time per iteration of the same fork/join")


def main():
    args = parse_arguments()
    global LAUNCH_BLOCKING, ONE_QUEUE
    LAUNCH_BLOCKING, connections = launch_environment()
    ONE_QUEUE = connections == 1
    try:
        import torch
    except ImportError as error:
        print(f"SKIP: cannot import torch ({error})")
        return SKIP_EXIT
    if not torch.cuda.is_available():
        print(f"SKIP: torch {torch.__version__} sees no CUDA device"
              f" (built for CUDA {torch.version.cuda})")
        return SKIP_EXIT
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    print(f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}; device "
          f"{torch.cuda.current_device()}: {props.name}")
    spinner = Spinner(torch, torch.cuda.Stream())
    print(f"torch.cuda._sleep spins {spinner.cycles_per_ms:.0f} cycles per ms on this device")

    parts = [("streams", "current, default and pool streams; the stream context",
              lambda: current_and_pool_streams(torch)),
             ("seeds", "t1 + t2 and t1 * t2 in a stream", lambda: small_tensor_seeds(torch)),
             ("serialize", "synchronize() inside each block serializes two streams",
              lambda: two_stream_seed(torch, args, spinner)),
             ("matmul", "torch.mm on two streams", lambda: matmul_seed(torch, args)),
             ("race", "normal_() on the default stream, sum() on another",
              lambda: broken_normal_sum(torch, args, spinner)),
             ("record", "freeing a tensor another stream still reads: record_stream",
              lambda: record_stream_hazard(torch, args, spinner)),
             ("priorities", "torch.cuda.Stream(priority=p) on the device's range",
              lambda: priority_table(torch)),
             ("devices", "torch.device and torch.cuda.device", lambda: one_device_seed(torch)),
             ("capture", "a fork/join captured with torch.cuda.graph, replayed",
              lambda: capture(torch, args))]
    for number, (name, what, run) in enumerate(parts, 1):
        if args.part in ("all", name):
            print(f"\n== Part {number} of {len(parts)}: {name}: {what}")
            run()

    if checks_failed == 0:
        print(f"\nAll {checks_run} checks passed.")
        return 0
    print(f"\n{checks_run - checks_failed} of {checks_run} checks passed; {checks_failed} FAILED.")
    return 1


if __name__ == "__main__":
    sys.exit(main())
