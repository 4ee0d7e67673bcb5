#!/usr/bin/env python3
"""Wall time per message of the core alone against the floor, side by side in one run.

Runs `workload_profile` (tests/examples/workload_profile.rs: the program whose instructions
bench/callgrind-core.sh counts) natively on each shared workload, rpcwire and the floor
(`serde_json::from_slice::<IgnoredAny>` plus a copy) alternated, ROUNDS times, and prints the
fastest and the median run of each as nanoseconds per message and their ratios. The fastest
run is the one least disturbed by the rest of the machine; the median shows the spread.
(CPU time, user + system, was tried in its place and moved with the wall time: on this
shared machine a busy neighbour slows a run down rather than holding its core.)
`workload_time` (tests/examples/workload_time.rs) times the same loops in one process, in
alternated chunks of about a millisecond, which escape a busy neighbour more often.

Usage: cargo build --release -p rpcwire-tests --example workload_profile
       bench/time-core.py [ROUNDS]   (default 5)
"""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
PROG = os.path.join(TARGET, "release", "examples", "workload_profile")
# Messages per run: about half a second each for rpcwire on a 2-core host.
MESSAGES = {"w1": 3_000_000, "w2": 3_000_000, "w3": 300_000, "w4": 500_000,
            "w5": 3_000_000, "w6": 3_000_000}


def ns_per_message(workload, n, mode):
    start = time.perf_counter()
    subprocess.run([PROG, workload, str(n)] + mode, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - start) / n * 1e9


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    if not os.path.exists(PROG):
        sys.exit(f"{PROG} not built: cargo build --release -p rpcwire-tests --example workload_profile")
    runs = {}
    for _ in range(rounds):
        for workload, n in MESSAGES.items():
            for name, mode in (("rpcwire", []), ("floor", ["floor"])):
                runs.setdefault((workload, name), []).append(ns_per_message(workload, n, mode))
    print(f"ns per message, {rounds} rounds, rpcwire and the floor alternated")
    print()
    print("| workload | rpcwire fastest | rpcwire median | floor fastest | floor median "
          "| ratio fastest | ratio median |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for workload in MESSAGES:
        r = sorted(runs[(workload, "rpcwire")])
        f = sorted(runs[(workload, "floor")])
        mid = rounds // 2
        print(f"| {workload.upper()} | {r[0]:.1f} | {r[mid]:.1f} | {f[0]:.1f} | {f[mid]:.1f} "
              f"| {r[0] / f[0]:.2f}x | {r[mid] / f[mid]:.2f}x |")


if __name__ == "__main__":
    main()
