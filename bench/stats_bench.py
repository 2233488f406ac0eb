"""Stats page benchmark: a synthetic year of study (10k items, 200k review logs by default), then timings.

Rows are written straight into a migrated SQLite file (no FSRS replay: the point is the volume and the shape
of the rows, which copy what app.review.service writes, JSON snapshots included). The zone has DST, so the
study-day SQL takes its CASE path. It prints the median of each stats query, of stats.overview, and of
GET /stats and GET /stats.json through the app (TestClient, same process). Target: the page ≤ 300 ms.

    .venv/bin/python bench/stats_bench.py [--items 10000] [--logs 200000] [--repeats 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402
from sqlmodel import Session  # noqa: E402

from app.db import open_database  # noqa: E402
from app.main import create_app  # noqa: E402
from app.models import LOCAL_USER_ID, StudySettings  # noqa: E402
from app.review import stats  # noqa: E402
from app.settings import Settings  # noqa: E402

NOW = datetime.now(UTC).replace(microsecond=0)  # the page reads the wall clock, so the data ends now
ITEMS_PER_CARD = 4
DB_FORMAT = "%Y-%m-%d %H:%M:%S.%f"  # how SQLAlchemy stores a DateTime in SQLite


def _db(t: datetime) -> str:
    return t.astimezone(UTC).strftime(DB_FORMAT)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat()


def _snapshot(state: int, reps: int, last: datetime, due: datetime, stability: float, difficulty: float) -> dict[str, Any]:
    """An item state as service._snapshot writes it into review_log.state_before."""
    return {
        "buried_until": None, "difficulty": difficulty, "reps": reps, "first_reviewed_at": _iso(last),
        "fsrs_card": {"schema_version": 1, "card_id": 0, "state": state, "step": None if state == 2 else 0,
                      "stability": stability, "difficulty": difficulty, "due": _iso(due), "last_review": _iso(last)},
        "schema_version": 1, "stability": stability, "lapses": 0, "suspended": False, "due": _iso(due),
        "state": state, "last_reviewed_at": _iso(last),
    }


def generate(path: Path, *, n_items: int, n_logs: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    engine = open_database(path)
    engine.dispose()
    con = sqlite3.connect(path)
    n_cards = n_items // ITEMS_PER_CARD
    now_db = _db(NOW)
    con.executemany(
        "INSERT INTO card (id, path, content_hash, title_zh, title_en, module_id, module_zh, module_en, topic_id, topic_zh,"
        " topic_en, difficulty, tags, related, followup_keys, rendered, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(f"c{i:05d}", f"m/t/c{i:05d}.md", "x", "卡", f"Card {i}", "m", "模块", "Module", f"t{i % 10}", "主题", "Topic",
          "medium", "[]", "[]", json.dumps([f"q{k}" for k in range(ITEMS_PER_CARD - 1)]), "{}", now_db) for i in range(n_cards)],
    )
    items = [(f"c{i:05d}" if k == 0 else f"c{i:05d}#q{k - 1}", f"c{i:05d}", None if k == 0 else f"q{k - 1}", k)
             for i in range(n_cards) for k in range(ITEMS_PER_CARD)]
    con.executemany("INSERT INTO review_item (id, card_id, followup_key, position) VALUES (?,?,?,?)", items)
    studied = [item[0] for item in items[: int(len(items) * 0.8)]]  # a fifth never reviewed: new
    # Each studied item gets a sorted run of answers spread over the past year.
    per_item: dict[str, list[datetime]] = {item: [] for item in studied}
    for _ in range(n_logs):
        per_item[rng.choice(studied)].append(NOW - timedelta(seconds=rng.randrange(365 * 86400)))
    logs, states = [], []
    for n, (item, times) in enumerate(per_item.items()):
        times.sort()
        prev: dict[str, Any] = {"state": 0}
        stability, difficulty = rng.uniform(0.5, 5), rng.uniform(1, 10)
        for k, at in enumerate(times):
            rating = 1 if rng.random() < 0.1 else rng.choice((2, 3, 3, 3, 4))
            state = 3 if rating == 1 and k else 2
            stability = max(0.1, stability * (0.3 if rating == 1 else rng.uniform(1.5, 3)))
            due = at + timedelta(days=min(3650, max(1, round(stability))) if state == 2 else 0, minutes=10 if state == 3 else 0)
            after = _snapshot(state, k + 1, at, due, stability, difficulty)
            undone = _db(at + timedelta(seconds=5)) if rng.random() < 0.01 else None
            logs.append((LOCAL_USER_ID, item, rating, _db(at), rng.randrange(2000, 30000), json.dumps(prev), json.dumps(after),
                         f"s{n % 97}", f"t{len(logs)}", undone))
            prev = after
        if times:
            suspended = rng.random() < 0.03
            buried = _db(NOW + timedelta(hours=10)) if rng.random() < 0.01 else None
            states.append((LOCAL_USER_ID, item, 1, json.dumps(prev["fsrs_card"]), _db(datetime.fromisoformat(prev["due"])),
                           prev["stability"], prev["difficulty"], prev["state"], len(times), 0, _db(times[0]), _db(times[-1]),
                           buried, suspended))
    logs.sort(key=lambda row: row[3])  # the app appends logs as they happen: rowid order is time order
    con.executemany(
        "INSERT INTO review_log (user_id, item_id, rating, reviewed_at, duration_ms, state_before, state_after, study_session,"
        " token, undone_at) VALUES (?,?,?,?,?,?,?,?,?,?)", logs,
    )
    con.executemany(
        "INSERT INTO item_state (user_id, item_id, schema_version, fsrs_card, due, stability, difficulty, state, reps, lapses,"
        " first_reviewed_at, last_reviewed_at, buried_until, suspended) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", states,
    )
    con.execute("UPDATE study_settings SET timezone = 'Europe/Berlin', day_rollover_hour = 4 WHERE user_id = ?", (LOCAL_USER_ID,))
    con.commit()
    con.execute("ANALYZE")
    con.close()


def median_ms(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(first call, median of the following `repeats`) in milliseconds."""
    start = time.perf_counter()
    fn()
    first = (time.perf_counter() - start) * 1000
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return first, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--logs", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="write the database here and keep it")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.keep or Path(tmp)
        db = data_dir / "depthcards.sqlite3"
        if not db.exists():
            start = time.perf_counter()
            generate(db, n_items=args.items, n_logs=args.logs)
            print(f"generated {args.items} items, {args.logs} logs in {time.perf_counter() - start:.1f} s "
                  f"({db.stat().st_size / 1e6:.0f} MB)")
        engine = open_database(db)
        with Session(engine) as session:
            settings = session.get(StudySettings, LOCAL_USER_ID)
            assert settings is not None
            kw: dict[str, Any] = {"user_id": LOCAL_USER_ID, "settings": settings, "now": NOW}
            for name in ("heatmap", "forecast", "retention", "state_counts", "difficulty_bins", "stability_bins", "overview"):
                fn = getattr(stats, name)
                first, med = median_ms(lambda fn=fn: fn(session, **kw), args.repeats)
                print(f"{name:>16}: first {first:7.1f} ms, median {med:7.1f} ms")
            print(f"heatmap total {stats.heatmap(session, **kw).total}")

        # The app without its lifespan: a card sync against an empty cards dir would retire the synthetic cards.
        app = create_app(Settings(data_dir=data_dir, cards_dir=data_dir / "no-cards"))
        app.state.engine = engine
        client = TestClient(app)
        for path in ("/stats", "/stats.json"):
            first, med = median_ms(lambda path=path: client.get(path).raise_for_status(), args.repeats)
            print(f"{'GET ' + path:>16}: first {first:7.1f} ms, median {med:7.1f} ms")
        engine.dispose()


if __name__ == "__main__":
    main()
