"""Card loading and serving benchmark (issue #2).

For N synthetic cards (100, 1000, 5000 by default) it prints:
  - cold load-and-index time, per 1000 cards (empty database: migrate + parse + render + write);
  - an unchanged restart (open + sync again) as a ratio to cold;
  - a card page's p50 latency over HTTP as a ratio to a static file served by the same uvicorn server.
Medians over repeats; ratios are measured within one run, since absolute times on this machine are noisy.

    .venv/bin/python bench/cards_load.py [--sizes 100 1000 5000] [--repeats 3] [--requests 300]
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.cards.index import sync_cards  # noqa: E402
from app.cards.synthetic import write_synthetic_deck  # noqa: E402
from app.db import open_database  # noqa: E402
from app.devserver import running_server  # noqa: E402


def load_times(cards_dir: Path, work: Path, repeats: int) -> tuple[float, float]:
    """Median seconds of a cold load (fresh database) and of an unchanged restart."""
    cold, warm = [], []
    for r in range(repeats):
        db = work / f"cold-{r}.sqlite3"
        start = time.perf_counter()
        engine = open_database(db)
        report = sync_cards(engine, cards_dir)
        cold.append(time.perf_counter() - start)
        assert not report.problems, report.problems[:3]
        engine.dispose()
        start = time.perf_counter()
        engine = open_database(db)
        report = sync_cards(engine, cards_dir)
        warm.append(time.perf_counter() - start)
        assert report.unchanged and not report.added, report.summary()
        engine.dispose()
    return statistics.median(cold), statistics.median(warm)


def _p50(conn: http.client.HTTPConnection, path: str, n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        times.append(time.perf_counter() - start)
        assert response.status == 200, (path, response.status)
    return statistics.median(times)


def page_ratio(cards_dir: Path, work: Path, requests: int) -> tuple[float, float, float]:
    """(card page p50, static file p50, ratio) against one real uvicorn server."""
    with running_server(data_dir=work / "serve", cards_dir=cards_dir, env={"DEPTHCARDS_LOG_LEVEL": "warning"}) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port)
        card_path = "/cards/synthetic-00007"
        static_path = "/static/app.css"
        _p50(conn, card_path, 20)  # warm up both paths
        _p50(conn, static_path, 20)
        # Interleave rounds so drift in machine load hits both sides alike.
        card, static = [], []
        for _ in range(5):
            card.append(_p50(conn, card_path, requests // 5))
            static.append(_p50(conn, static_path, requests // 5))
        conn.close()
        c, s = statistics.median(card), statistics.median(static)
        return c, s, c / s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()

    print(f"{'cards':>6} | {'cold s/1000':>11} | {'restart ×faster':>15} | {'card p50 ms':>11} | {'static p50 ms':>13} | {'card/static':>11}")
    print("-" * 82)
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            write_synthetic_deck(work / "cards", n)
            print(f"  generating and loading {n} cards…", end="\r", file=sys.stderr, flush=True)
            cold, warm = load_times(work / "cards", work, args.repeats)
            card, static, ratio = page_ratio(work / "cards", work, args.requests)
            print(
                f"{n:>6} | {cold / n * 1000:>11.2f} | {cold / warm:>15.1f} | {card * 1000:>11.2f} | {static * 1000:>13.2f} | {ratio:>11.2f}"
            )
    print("\ntargets: cold ≤ 2 s per 1000 cards; unchanged restart ≥ 10× faster than cold; card page ≤ 3× a static file")


if __name__ == "__main__":
    main()
