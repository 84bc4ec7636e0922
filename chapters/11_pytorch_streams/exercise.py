#!/usr/bin/env python3
"""Exercise for chapter 11: a consumer on a side stream that must wait for its producer.

The task
  Each round, a producer on the default stream writes the round's value into `source` with
  fill_(), late: the default stream is busy with earlier work (torch.cuda._sleep stands for it).
  A consumer on a side stream computes `source * 2` into that round's row of `results`. As given,
  the consumer reads `source` before the producer wrote it, although the program asks the side
  stream to wait, and its CHECK line fails. Find out why, using part 5 of chapter 11 ("race"), and
  fix the wait. The line marked TODO(exercise) is where to look. Do not synchronize the host in
  the loop (a check measures that issuing a round does not wait for the GPU), and do not change
  the producer, the consumer or the reference.

Run and test
  python3 chapters/11_pytorch_streams/exercise.py
  cmake --preset exercises && ctest --preset exercises -R '^11_pytorch_streams_exercise[.]'
  (the test runs where the configured python3 imports torch; elsewhere it is skipped)

What it prints
  The rounds, the time the host took to issue them, and the CHECK lines: every row of `results`
  equals twice its round's value, and issuing a round took at most half the producer's delay.
  Exit status 0 once the exercise is solved; 1 if a check fails; 2 for a bad command line; 77
  (with a SKIP: line) without torch or without a CUDA device.
"""

import argparse
import statistics
import sys
import time

SKIP_EXIT = 77
HOST_SHARE = 0.5  # issuing a round may take at most this share of the producer's delay

checks_run = 0
checks_failed = 0


def check_that(name, passed, detail):
    global checks_run, checks_failed
    checks_run += 1
    checks_failed += 0 if passed else 1
    print(f"CHECK {name}: {detail} ... {'PASS' if passed else 'FAIL'}", flush=True)


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
        description="Exercise: a side stream's consumer that must wait for the default stream's producer.")
    parser.add_argument("--rounds", type=bounded_int(1, 50), default=8,
                        help="rounds of producer and consumer (default: 8)")
    parser.add_argument("--elements", type=bounded_int(1024, 16 * 1024 * 1024), default=1024 * 1024,
                        help="values in `source` (default: 1048576)")
    parser.add_argument("--spin-ms", type=bounded_int(5, 200), default=20,
                        help="milliseconds the default stream is busy before each fill_() (default: 20)")
    parser.add_argument("--no-timing", action="store_true",
                        help="verify the results but skip the check on the host's issue time")
    return parser.parse_args()


def cycles_per_ms(torch):
    """How many cycles of torch.cuda._sleep make a millisecond on this device (timing events)."""
    probe_cycles = 10_000_000
    torch.cuda._sleep(probe_cycles)  # loads the kernel and wakes the clocks up
    samples = []
    for _ in range(3):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(probe_cycles)
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
    return probe_cycles / statistics.median(samples)


def run_rounds(torch, source, results, side, spin_cycles):
    """Issues every round without waiting for the GPU; returns the host's time per round, in ms."""
    begin = time.perf_counter()
    for r in range(results.shape[0]):
        torch.cuda._sleep(spin_cycles)  # the default stream is busy with earlier work ...
        source.fill_(float(r + 1))      # ... so the producer writes late
        with torch.cuda.stream(side):
            # TODO(exercise): the consumer must read `source` only after the fill_() above. Which
            # stream does this line make `side` wait for?
            side.wait_stream(torch.cuda.current_stream())
            torch.mul(source, 2.0, out=results[r])
    issue_ms = (time.perf_counter() - begin) * 1e3 / results.shape[0]
    torch.cuda.synchronize()
    return issue_ms


def main():
    args = parse_arguments()
    try:
        import torch
    except ImportError as error:
        print(f"SKIP: cannot import torch ({error})")
        return SKIP_EXIT
    if not torch.cuda.is_available():
        print(f"SKIP: no CUDA device (torch {torch.__version__} sees none)")
        return SKIP_EXIT
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    print(f"PyTorch {torch.__version__}; device {torch.cuda.current_device()}: {props.name}")

    side = torch.cuda.Stream()
    source = torch.zeros(args.elements, device="cuda")
    results = torch.zeros((args.rounds, args.elements), device="cuda")
    spin_cycles = int(args.spin_ms * cycles_per_ms(torch))
    with torch.cuda.stream(side):  # loads the consumer's kernel before the rounds
        torch.mul(source, 2.0, out=results[0])
    torch.cuda.synchronize()
    results.zero_()
    torch.cuda.synchronize()

    print(f"{args.rounds} rounds of {args.elements} values; before each fill_() the default stream "
          f"is busy for {args.spin_ms} ms")
    issue_ms = run_rounds(torch, source, results, side, spin_cycles)
    print(f"  the host issued a round in {issue_ms:.3f} ms")

    rounds = torch.arange(1, args.rounds + 1, dtype=torch.float64).unsqueeze(1)
    want = (rounds * 2.0).expand(args.rounds, args.elements)
    wrong = int((results.cpu().double() != want).sum())
    check_that("consumer_results", wrong == 0,
               f"{wrong} of {want.numel()} values differ from the CPU reference")
    if args.no_timing:
        print("CHECK host_not_blocked: skipped (--no-timing was given)")
    else:
        share = issue_ms / args.spin_ms
        check_that("host_not_blocked", share <= HOST_SHARE,
                   f"{share:.2f}x <= {HOST_SHARE:.2f}x (issuing a round took {issue_ms:.3f} ms of "
                   f"the producer's {args.spin_ms} ms: the wait must be on the GPU)")
    print("A stream waits for another only when told which one: the side stream's wait must name "
          "the stream\nthat the producer ran in.")

    if checks_failed == 0:
        print(f"\nAll {checks_run} checks passed.")
        return 0
    print(f"\n{checks_run - checks_failed} of {checks_run} checks passed; {checks_failed} FAILED.")
    return 1


if __name__ == "__main__":
    sys.exit(main())
