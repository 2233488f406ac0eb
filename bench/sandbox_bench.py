"""Sandbox benchmark: warm verdict latency vs a cold `python -c`, throughput, and the cost of isolation.

Run:  .venv/bin/python bench/sandbox_bench.py [--jobs 200] [--cold 5]

Targets (issue 4 §5): warm p50 >= 50x faster than cold, p95 <= 60 ms, >= 50 jobs/s, isolation adds <= 5 ms.
The machine is noisy (anchors: medians move up to +-40% between runs), so compare ratios, not single numbers.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sandbox import Limits, Sandbox  # noqa: E402

# The product's hot path: an in-place bug, so the verdict includes the diagnosis re-run.
INPLACE = (
    "import torch\n"
    "a = torch.randn(3, requires_grad=True)\n"
    "b = a.sigmoid()\n"
    "c = b * 2\n"
    "b.mul_(2)\n"
    "(b.sum() + c.sum()).backward()\n"
)
FIXED = INPLACE.replace("b.mul_(2)", "b = b * 2")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return (time.perf_counter() - began) * 1000


def cold_runs(n: int) -> list[float]:
    """A fresh interpreter per job (what a naive runner does): torch's import dominates."""
    env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-c", INPLACE]
    subprocess.run(cmd, capture_output=True, env=env)  # warm the page cache
    return [timed(lambda: subprocess.run(cmd, capture_output=True, env=env)) for _ in range(n)]


def latencies(box: Sandbox, code: str, n: int) -> tuple[list[float], list[float]]:
    """Client-side latency (submit -> RunResult) and server-side duration (fork -> reap), in ms."""
    client, server = [], []
    for _ in range(n):
        began = time.perf_counter()
        result = box.run(code)
        client.append((time.perf_counter() - began) * 1000)
        server.append(result.duration_ms)
    return client, server


def throughput(box: Sandbox, code: str, concurrency: int, jobs: int) -> float:
    with ThreadPoolExecutor(concurrency) as pool:
        began = time.perf_counter()
        outcomes = list(pool.map(lambda _: box.run(code).outcome, range(jobs)))
        elapsed = time.perf_counter() - began
    assert len(set(outcomes)) == 1, set(outcomes)
    return jobs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200, help="jobs per latency / throughput measurement")
    parser.add_argument("--cold", type=int, default=5, help="cold python -c runs (each ~1.7 s)")
    args = parser.parse_args()
    limits = Limits(wall_s=10)

    print(f"python {sys.version.split()[0]}, {args.jobs} jobs per row, {args.cold} cold runs\n")
    began = time.perf_counter()
    jailed = Sandbox(limits, max_concurrent=4)
    status = jailed.start()
    startup_s = time.perf_counter() - began
    if not status.isolated:
        sys.exit(f"isolation unavailable: {status.reason}")
    plain = Sandbox(limits, isolate=False, allow_unisolated=True, max_concurrent=4)
    plain.start()
    for box in (jailed, plain):
        latencies(box, INPLACE, 20)  # warm-up

    cold = cold_runs(args.cold)
    warm_client, warm_server = latencies(jailed, INPLACE, args.jobs)
    fixed_client, _ = latencies(jailed, FIXED, args.jobs)
    # Interleave isolated / unisolated so machine noise hits both alike.
    iso, uniso = [], []
    for _ in range(args.jobs // 10):
        iso += latencies(jailed, INPLACE, 10)[1]
        uniso += latencies(plain, INPLACE, 10)[1]
    rates = {c: throughput(jailed, INPLACE, c, args.jobs) for c in (1, 2, 4)}
    plain_rate = throughput(plain, INPLACE, 4, args.jobs)
    jailed.close()
    plain.close()

    cold_p50 = statistics.median(cold)
    p50, p95 = statistics.median(warm_client), percentile(warm_client, 0.95)
    added = statistics.median(iso) - statistics.median(uniso)
    rows = [
        ("fork server start-up (import torch, warm-ups, self-test)", f"{startup_s:.2f} s", "", ""),
        ("cold `python -c` in-place snippet, p50 [min-max]",
         f"{cold_p50:.0f} ms [{min(cold):.0f}-{max(cold):.0f}]", "", ""),
        ("warm verdict, in-place snippet + diagnosis: p50", f"{p50:.1f} ms", f"{cold_p50 / p50:.0f}x faster",
         _ok(cold_p50 / p50 >= 50, ">= 50x")),
        ("warm verdict, in-place snippet + diagnosis: p95", f"{p95:.1f} ms", f"{cold_p50 / p95:.0f}x faster",
         _ok(p95 <= 60, "<= 60 ms")),
        ("  same, server side fork -> reap: p50 / p95",
         f"{statistics.median(warm_server):.1f} / {percentile(warm_server, 0.95):.1f} ms", "", ""),
        ("warm verdict, fixed snippet (no error): p50 / p95",
         f"{statistics.median(fixed_client):.1f} / {percentile(fixed_client, 0.95):.1f} ms", "", ""),
        *[(f"throughput, {c} concurrent client{'s' if c > 1 else ''}", f"{rate:.0f} jobs/s",
           f"{rate * cold_p50 / 1000:.0f}x cold", _ok(rate >= 50, ">= 50/s") if c > 1 else "")
          for c, rate in rates.items()],
        ("throughput, 4 clients, unisolated fork", f"{plain_rate:.0f} jobs/s", "", ""),
        ("fork -> reap, isolated vs unisolated (medians)",
         f"{statistics.median(iso):.1f} vs {statistics.median(uniso):.1f} ms", f"+{added:.1f} ms",
         _ok(added <= 5, "<= 5 ms")),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>22}  {'ratio':>14}  target")
    print("-" * (width + 50))
    for name, value, ratio, target in rows:
        print(f"{name:<{width}}  {value:>22}  {ratio:>14}  {target}")


def _ok(passed: bool, target: str) -> str:
    return f"{'PASS' if passed else 'MISS'} ({target})"


if __name__ == "__main__":
    main()
