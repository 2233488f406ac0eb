"""Playground and submission latency through a real server: uvicorn in a subprocess, HTTP from here.

Measures, after the sandbox is warm: POST /api/run (a passing snippet, and the in-place snippet whose verdict
includes the diagnosis re-run), throughput of /api/run with several clients at once, and a fix submission
from POST to `done` (two sandbox runs: the reference and the submission, plus grading on the server).

    .venv/bin/python bench/challenges_bench.py [--n 100] [--clients 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from app.devserver import start_server

ROOT = Path(__file__).resolve().parent.parent
OK = "import torch\nx = torch.ones(3, requires_grad=True)\n(x * x).sum().backward()\n"
BUGGY = "import torch\nx = torch.ones(3, requires_grad=True)\ny = x.sigmoid()\ny.mul_(2)\ny.sum().backward()\n"
FIX = "import torch\n\ndef forward(x, w):\n    y = torch.sigmoid(x @ w)\n    return 4 * (y * y).sum()\n"


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def timed(fn: Any, n: int) -> list[float]:
    times = []
    for _ in range(n):
        began = time.perf_counter()
        fn()
        times.append((time.perf_counter() - began) * 1000)
    return times


def report(name: str, times: list[float]) -> None:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    print(f"{name:44} p50 {statistics.median(times):7.1f} ms   p95 {p95:7.1f} ms   max {times[-1]:7.1f} ms   n={len(times)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="dc-bench-"))
    env = {"DEPTHCARDS_PER_USER_IN_FLIGHT": str(max(4, args.clients * 2)), "DEPTHCARDS_LOG_LEVEL": "warning"}
    began = time.perf_counter()
    server = start_server(data_dir=data, cards_dir=ROOT / "cards", env=env)
    base = server.base
    try:
        print(f"server up in {time.perf_counter() - began:.2f} s")
        began = time.perf_counter()
        first = post(base + "/api/run", {"code": OK})
        print(f"first run (cold sandbox start) {time.perf_counter() - began:.2f} s -> {first['outcome']}")
        for _ in range(5):
            post(base + "/api/run", {"code": BUGGY})
        report("POST /api/run, passing snippet", timed(lambda: post(base + "/api/run", {"code": OK}), args.n))
        report("POST /api/run, in-place error + diagnosis", timed(lambda: post(base + "/api/run", {"code": BUGGY}), args.n))

        total = args.n * 2
        began = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            results = list(pool.map(lambda _: post(base + "/api/run", {"code": BUGGY})["outcome"], range(total)))
        elapsed = time.perf_counter() - began
        assert set(results) == {"inplace_version_error"}, set(results)
        print(f"{'throughput, ' + str(args.clients) + ' clients, in-place snippet':44} {total / elapsed:7.1f} runs/s")

        def submission() -> None:
            sid = post(base + "/api/challenges/fix-sigmoid-scale-budget/submissions", {"code": FIX})["id"]
            while True:
                state = get(f"{base}/api/submissions/{sid}")
                if state["status"] == "done":
                    assert state["verdict"]["passed"], state
                    return
                time.sleep(0.005)

        submission()
        report("fix submission, POST -> done (polling 5 ms)", timed(submission, max(10, args.n // 4)))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
