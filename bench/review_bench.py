"""Review benchmark (issue "Study sessions", section 6): one synthetic user with many items and a long history.

Builds 2,500 synthetic cards (4 review items each: 10,000 items) and a simulated learner's 200,000 review
logs (app/review/synthetic.py, bulk inserts), then prints:
  - the due queue's p50 (target ≤ 5 ms): per request, the kept queue (app/review/queue_cache.py: the version
    check, then the next item and the counts from memory); and a full build from the database, which a page
    load, undo, bury, suspend or another writer's change causes;
  - the answer round trip over HTTP against a real uvicorn server (`python -m app serve`): POST
    /review/answer with HX-Request, as a ratio to /healthz on the same server (target ≤ 3×);
  - GET /stats p50 if that page exists (target ≤ 300 ms; skipped on 404);
  - EXPLAIN QUERY PLAN of the queue's statements, to see why when a target is missed.
Medians over repeats; ratios are measured within one run, since absolute times on this machine are noisy.

    .venv/bin/python bench/review_bench.py [--cards 2500] [--logs 200000] [--repeats 50] [--answers 200] [--keep DIR]

--keep DIR builds the synthetic user once into DIR and runs every later time on a fresh copy of it.
"""

from __future__ import annotations

import argparse
import http.client
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import Engine, func, select, update  # noqa: E402
from sqlmodel import Session  # noqa: E402

from app.cards.synthetic import write_synthetic_deck  # noqa: E402
from app.db import open_database  # noqa: E402
from app.library import open_indexed  # noqa: E402
from app.devserver import running_server  # noqa: E402
from app.models import LOCAL_USER_ID, ReviewItem, ReviewLog, StudySettings  # noqa: E402
from app.review import synthetic  # noqa: E402
from app.review.queue import Deck, load_day_queue, today  # noqa: E402
from app.review.queue_cache import QueueCache  # noqa: E402
from app.review.scheduler import Policy  # noqa: E402

DB = "depthcards.sqlite3"


def build(work: Path, *, cards: int, logs: int) -> tuple[Path, Path, datetime]:
    """Cards on disk, indexed; a simulated history ending now (the server reads the real clock)."""
    cards_dir, data_dir = work / "cards", work / "data"
    write_synthetic_deck(cards_dir, cards)
    start = time.perf_counter()
    engine, report = open_indexed(data_dir / DB, cards_dir, now=datetime.now(UTC))
    assert not report.problems, report.problems[:3]
    print(f"  indexed {cards} cards in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    with Session(engine) as session:
        item_ids = list(session.exec(select(ReviewItem.id).order_by(ReviewItem.id)).scalars())
        # ~20 answers per item over five years (cut at `logs`); items keep arriving until past "now", so some are new.
        days = 2100
        # The history stops a few days ago: a backlog of due reviews to answer over HTTP.
        begin = datetime.now(UTC) - timedelta(days=days + 4)
        start = time.perf_counter()
        history = synthetic.simulate(item_ids, user_id=LOCAL_USER_ID, start=begin, days=days, seed=11,
                                     policy=Policy(), introduce_over=1.05, undo_every=50, max_logs=logs)
        print(f"  simulated {len(history.logs):,} answers on {len(history.states):,} of {len(item_ids):,} items "
              f"in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        start = time.perf_counter()
        synthetic.write_history(session, history)
        # A heavy user raises the review cap, so the queue doesn't run dry during the answer loop.
        session.execute(update(StudySettings).values(max_reviews_per_day=9999))
        session.commit()
        print(f"  wrote them in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    engine.dispose()
    return data_dir, cards_dir, datetime.now(UTC)


def _p50(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm the page cache and SQLAlchemy's statement cache
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def queue_times(engine: Engine, now: datetime, repeats: int) -> dict[str, float]:
    with Session(engine) as session:
        settings = session.get(StudySettings, LOCAL_USER_ID)
        assert settings is not None
        deck = Deck()
        queues = QueueCache()

        def kept() -> None:
            queue = queues.get(session, user_id=LOCAL_USER_ID, deck=deck, now=now).queue
            queue.next_item(now)
            queue.counts(now)

        return {
            "per request (kept)": _p50(kept, repeats),
            "full build": _p50(lambda: load_day_queue(session, user_id=LOCAL_USER_ID, deck=deck, settings=settings, now=now), repeats),
            "  of which daily limits": _p50(lambda: today(session, user_id=LOCAL_USER_ID, settings=settings, now=now), repeats),
        }


def answer_breakdown(engine: Engine, repeats: int) -> dict[str, float]:
    """In process, each part of what POST /review/answer does (app/review/routes.py:answer then _reviewer)."""
    from app.review import service
    from app.review.reviewer import answer_and_show_next
    from app.review.routes import _deck_choices
    from app.review.session_stats import session_summary

    with Session(engine) as session:
        settings = service.get_settings(session, user_id=LOCAL_USER_ID)
        deck = Deck()
        queues = QueueCache()

        shown = service.show_next(session, user_id=LOCAL_USER_ID, settings=settings, now=datetime.now(UTC),
                                  queue=queues.get(session, user_id=LOCAL_USER_ID, deck=deck, now=datetime.now(UTC)).queue)

        def answer_one() -> None:
            """What POST /review/answer does before rendering: the answer and the next token in one transaction."""
            nonlocal shown
            assert shown is not None, "nothing left to review"
            shown = answer_and_show_next(
                session, queues, user_id=LOCAL_USER_ID, deck=deck, item_id=shown.item.id, token=shown.token, rating=3,
                duration_ms=4000, study_session="bench-breakdown", now=datetime.now(UTC),
            ).shown

        return {
            "answer + next token": _p50(answer_one, repeats),
            "kept queue, checked": _p50(lambda: queues.get(session, user_id=LOCAL_USER_ID, deck=deck, now=datetime.now(UTC)), repeats),
            "session summary": _p50(lambda: session_summary(session.connection(), user_id=LOCAL_USER_ID, study_session="bench-breakdown"), repeats),
            "deck choices": _p50(lambda: _deck_choices(session), max(3, repeats // 10)),
        }


def explain(engine: Engine, now: datetime) -> None:
    """Time and EXPLAIN QUERY PLAN every statement that a full build of the day queue runs.

    Caught with SQLite's own trace callback, which sees prepared statements too (SQLAlchemy's events don't),
    with their parameters filled in.
    """
    captured: list[str] = []
    with Session(engine) as session:
        settings = session.get(StudySettings, LOCAL_USER_ID)
        assert settings is not None
        raw = session.connection().connection.dbapi_connection
        assert raw is not None
        raw.set_trace_callback(lambda sql: captured.append(sql) if sql.lstrip().upper().startswith("SELECT") else None)
        try:
            load_day_queue(session, user_id=LOCAL_USER_ID, deck=Deck(), settings=settings, now=now)
        finally:
            raw.set_trace_callback(None)
        for statement in dict.fromkeys(captured):
            took = min(_timed(lambda: raw.execute(statement).fetchall()) for _ in range(5))
            plan = raw.execute("EXPLAIN QUERY PLAN " + statement).fetchall()
            print(f"\n  {took * 1000:7.2f} ms  {' '.join(statement.split())[:160]}...")
            for row in plan:
                print(f"             {row[-1]}")


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _field(html: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', html)
    if match is None:
        raise RuntimeError(f"no {name} in the reviewer (nothing left to review?)")
    return match.group(1)


def http_times(data_dir: Path, cards_dir: Path, answers: int) -> dict[str, float | None]:
    env = {"DEPTHCARDS_LOG_LEVEL": "warning"}
    with running_server(data_dir=data_dir, cards_dir=cards_dir, env=env, timeout=180) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port)

        def get(path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
            conn.request("GET", path, headers=headers or {})
            response = conn.getresponse()
            return response.status, response.read().decode()

        status, page = get("/review")
        assert status == 200, status
        form = {k: _field(page, k) for k in ("item_id", "token", "study_session")}
        hx = {"HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded"}
        answer_times, health_times = [], []
        for i in range(answers + 5):
            body = urllib.parse.urlencode({**form, "rating": "3", "deck": "all", "duration_ms": "4000"})
            start = time.perf_counter()
            conn.request("POST", "/review/answer", body=body, headers=hx)
            response = conn.getresponse()
            fragment = response.read().decode()
            took = time.perf_counter() - start
            assert response.status == 200, (response.status, fragment[:300])
            form = {**form, "item_id": _field(fragment, "item_id"), "token": _field(fragment, "token")}
            # Interleave the trivial endpoint, so drift in machine load hits both alike.
            start = time.perf_counter()
            get("/healthz")
            health = time.perf_counter() - start
            if i >= 5:  # the first few warm caches
                answer_times.append(took)
                health_times.append(health)

        review_page = _p50(lambda: get("/review"), 20)
        status, _ = get("/stats")
        stats = _p50(lambda: get("/stats"), 20) if status == 200 else None
        conn.close()
        return {"answer": statistics.median(answer_times), "healthz": statistics.median(health_times),
                "review page": review_page, "stats": stats, "stats status": status}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cards", type=int, default=2500, help="synthetic cards (4 review items each)")
    parser.add_argument("--logs", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="build here and keep it (later runs use a copy of it)")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="review-bench-"))
    scratch = Path(tempfile.mkdtemp(prefix="review-bench-run-"))
    try:
        if (work / "data" / DB).exists():
            data_dir, cards_dir, now = work / "data", work / "cards", datetime.now(UTC)
        else:
            data_dir, cards_dir, now = build(work, cards=args.cards, logs=args.logs)
        if args.keep is not None:
            # Answering uses up the backlog: run on a copy, so the kept build gives the same start every time.
            shutil.copytree(data_dir, scratch / "data")
            data_dir = scratch / "data"
        engine = open_database(data_dir / DB)
        with Session(engine) as session:
            items = session.scalar(select(func.count()).select_from(ReviewItem))
            logs = session.scalar(select(func.count()).select_from(ReviewLog))
        print(f"synthetic user: {items:,} items, {logs:,} review logs ({(data_dir / DB).stat().st_size / 1e6:.0f} MB)")

        print("\ndue queue (in process, p50 over %d):" % args.repeats)
        for name, seconds in queue_times(engine, now, args.repeats).items():
            print(f"  {name:22} {seconds * 1000:8.2f} ms")
        with Session(engine) as session:
            settings = session.get(StudySettings, LOCAL_USER_ID)
            assert settings is not None
            queue = load_day_queue(session, user_id=LOCAL_USER_ID, deck=Deck(), settings=settings, now=now).counts(now)
        print(f"  (queue now: {queue.new} new, {queue.learning} learning, {queue.review} due reviews)")
        explain(engine, now)
        engine.dispose()

        print(f"\nHTTP (real uvicorn, p50 over {args.answers} answers):")
        result = http_times(data_dir, cards_dir, args.answers)
        answer, health = result["answer"], result["healthz"]
        assert answer is not None and health is not None
        print(f"  POST /review/answer    {answer * 1000:8.2f} ms")
        print(f"  GET /healthz           {health * 1000:8.2f} ms")
        print(f"  answer / healthz       {answer / health:8.1f} ×")
        print(f"  GET /review            {result['review page'] * 1000:8.2f} ms")  # type: ignore[operator]
        if result["stats"] is None:
            print(f"  GET /stats             skipped (status {result['stats status']})")
        else:
            print(f"  GET /stats             {result['stats'] * 1000:8.2f} ms")  # type: ignore[operator]
        engine = open_database(data_dir / DB)
        print(f"\nthe answer round trip's parts (in process, p50 over {args.repeats}):")
        for name, seconds in answer_breakdown(engine, args.repeats).items():
            print(f"  {name:22} {seconds * 1000:8.2f} ms")
        engine.dispose()
        print("\ntargets: due query ≤ 5 ms; answer round trip ≤ 3× /healthz; statistics page ≤ 300 ms")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
