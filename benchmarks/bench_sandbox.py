"""Sandbox benchmark: persistent shell vs exec-per-command, cold vs warm start, teardown,
rollouts/hour at several concurrency levels - each next to its baseline, in one run.

    python benchmarks/bench_sandbox.py                  # full run (a few minutes on 2 cores)
    python benchmarks/bench_sandbox.py --commands 50 --starts 5 --episodes 8 --levels 1,8

Same as `tbrl bench sandbox`. See `tbrl_lib/sandbox/bench.py` for what each row measures.
"""

from __future__ import annotations

import argparse

from tbrl_lib.sandbox.bench import run_benchmark

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=200, help="trivial commands per method")
    parser.add_argument("--starts", type=int, default=10, help="containers per start-up method")
    parser.add_argument("--episodes", type=int, default=32, help="episodes per concurrency level")
    parser.add_argument("--levels", default="1,8,32", help="comma-separated concurrency levels")
    parser.add_argument("--out", default=None, help="also write the numbers as JSON here")
    args = parser.parse_args()
    run_benchmark(
        commands=args.commands,
        starts=args.starts,
        episodes=args.episodes,
        levels=[int(x) for x in args.levels.split(",")],
        out=args.out,
    )
