#!/usr/bin/env python3
"""Chapter 12 in PyTorch: green contexts through torch.cuda.green_contexts, where PyTorch has them.

What PyTorch calls, in the driver API that beyond_priorities.cu writes out:
  GreenContext(num_sms=N) or GreenContext.create(N, device)
      -> cuDeviceGetDevResource(SM), cuDevSmResourceSplitByCount(N), cuDevResourceGenerateDesc,
         cuGreenCtxCreate
  ctx.Stream()                  -> cuGreenCtxStreamCreate: work in it runs on the N SMs (which
                                   promises no concurrency with work elsewhere)
  ctx.set_context() / pop_context() (older PyTorch) -> the green context made current
The script runs one matrix product inside a green context of --sms SMs and on the whole device,
checks that both give the same result, and times both: on fewer SMs the same product takes longer,
which is the partition at work. Where this PyTorch has no torch.cuda.green_contexts it says SKIP:
(exit 77); any other error (no support in this build, a driver too old, ...) fails, printing it.

Run: python3 green_contexts.py [--sms N] [--matrix N]
Exit status: 0 shown, 1 a check failed or an error, 2 bad command line, 77 no torch, GPU or
torch.cuda.green_contexts.
"""

import argparse
import contextlib
import importlib.util
import statistics
import sys
import time
import traceback

SKIP_EXIT = 77
# The product on a partition of a few SMs against the whole device: an H200 has 132 SMs, so 16 of
# them should take several times longer; 2x leaves room for a product that does not fill them all.
SLOWER_ON_FEWER_SMS = 2.0
# Sums of 4096 products of N(0, 1) values are about 64 in size; float32 rounding in another
# order moves them by about 1e-4 of that.
RTOL, ATOL = 1e-3, 1e-2


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sms", type=int, default=16, help="SMs asked for the green context (1-256)")
    p.add_argument("--matrix", type=int, default=4096, help="side of the square matrices (256-16384)")
    a = p.parse_args()
    if not 1 <= a.sms <= 256:
        p.error(f"--sms expects an integer from 1 to 256, got '{a.sms}'")
    if not 256 <= a.matrix <= 16384:
        p.error(f"--matrix expects an integer from 256 to 16384, got '{a.matrix}'")
    return a


RESULTS = []


def check(name, ok, detail):
    print(f"CHECK {name}: {detail} ... {'PASS' if ok else 'FAIL'}")
    RESULTS.append(ok)
    return ok


def finish():
    failed = RESULTS.count(False)
    if not RESULTS:  # a run that proved nothing is no pass
        print("No check ran.")
        return 1
    if failed == 0:
        print(f"All {len(RESULTS)} checks passed.")
        return 0
    print(f"{len(RESULTS) - failed} of {len(RESULTS)} checks passed; {failed} FAILED.")
    return 1


def in_green_context(ctx):
    """A context manager that runs the PyTorch work inside it on the green context's SMs."""
    if hasattr(ctx, "Stream"):  # current PyTorch: a stream of the green context
        return torch.cuda.stream(ctx.Stream())

    @contextlib.contextmanager
    def current():  # older PyTorch: the green context made current around the work
        ctx.set_context()
        try:
            yield
        finally:
            ctx.pop_context()

    return current()


def make_green_context(sms, device):
    from torch.cuda.green_contexts import GreenContext

    try:  # the constructor's signature changed between releases
        return GreenContext(num_sms=sms, device_id=device)
    except TypeError:  # older PyTorch: GreenContext.create(num_sms, device_id)
        return GreenContext.create(sms, device)


def timed_ms(work, repeats=5):
    work()  # warm-up: the library's handles for this stream or context
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    args = parse()
    global torch
    try:
        import torch
    except ModuleNotFoundError as error:
        if error.name != "torch":  # torch is there, but something it needs is not: an error
            raise
        print(f"SKIP: PyTorch is not installed ({error})")
        return SKIP_EXIT
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return SKIP_EXIT
    # Only the module's absence says "this PyTorch has none"; any error past it fails (below).
    if importlib.util.find_spec("torch.cuda.green_contexts") is None:
        print(f"SKIP: this PyTorch ({torch.__version__}) has no torch.cuda.green_contexts")
        return SKIP_EXIT
    device = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(device)
    print(f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}, {props.name}, "
          f"{props.multi_processor_count} SMs")
    a = torch.randn(args.matrix, args.matrix, device="cuda")
    b = torch.randn(args.matrix, args.matrix, device="cuda")
    whole = a @ b
    torch.cuda.synchronize()  # the green context's stream reads a and b: they must be ready
    ctx = make_green_context(args.sms, device)
    with in_green_context(ctx):
        part = a @ b
    torch.cuda.synchronize()
    way = "ctx.Stream()" if hasattr(ctx, "Stream") else "ctx.set_context() / pop_context()"
    print(f"torch.cuda.green_contexts: a green context of {args.sms} SMs asked, work placed with "
          f"{way}")
    # The library may pick another kernel for fewer SMs (another order of the sums): the same
    # product up to float rounding, far below what a wrong or stale result would differ by.
    differ = int((~torch.isclose(part, whole, rtol=RTOL, atol=ATOL)).sum().item())
    check("green_context_result", differ == 0,
          f"{differ} of {whole.numel()} values differ from the same product on all SMs "
          f"(rtol {RTOL}, atol {ATOL})")

    def on_all():
        torch.matmul(a, b, out=whole)

    def on_partition():
        with in_green_context(ctx):
            torch.matmul(a, b, out=part)

    all_ms, part_ms = timed_ms(on_all), timed_ms(on_partition)
    print(f"  {args.matrix}x{args.matrix} product: {all_ms:.2f} ms on all "
          f"{props.multi_processor_count} SMs, {part_ms:.2f} ms in the green context")
    ratio = part_ms / all_ms if all_ms > 0 else 0.0
    if args.sms * 4 > props.multi_processor_count:
        print(f"CHECK fewer_sms_slower: skipped (--sms {args.sms} is over a quarter of the device)")
    else:
        check("fewer_sms_slower", ratio >= SLOWER_ON_FEWER_SMS,
                    f"{ratio:.2f}x >= {SLOWER_ON_FEWER_SMS:.2f}x (time in the green context / on "
                    f"all SMs: the partition holds only its SMs)")
    return finish()


def run():
    try:
        return main()
    except Exception as error:  # pylint: disable=broad-except: any error is a failure, shown
        traceback.print_exc()
        print(f"FAIL: {type(error).__name__}: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(run())
