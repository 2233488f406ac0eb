"""Indexing cards into a real SQLite file: unchanged files untouched, removed cards retired, edits picked up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session, select

from app.cards.index import sync_cards
from app.db import open_database
from app.models import CardRow, LoadProblem

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def rows(engine: Engine) -> dict[str, CardRow]:
    with Session(engine) as session:
        return {row.id: row for row in session.exec(select(CardRow))}


def test_first_sync_indexes_valid_cards_and_records_problems(tmp_path: Path, cards_dir: Path) -> None:
    engine = open_database(tmp_path / "db.sqlite3")
    report = sync_cards(engine, cards_dir, now=T0)
    assert sorted(report.added) == ["alpha", "beta", "gamma"]
    assert [str(p) for p in report.problems] == [
        "cards/m3/backprop/broken.md:14: unknown difficulty 'brutal' (expected one of: easy, medium, hard)"
    ]
    with Session(engine) as session:
        assert [p.line for p in session.exec(select(LoadProblem))] == [14]


def test_unchanged_files_are_not_rewritten(tmp_path: Path, cards_dir: Path) -> None:
    engine = open_database(tmp_path / "db.sqlite3")
    sync_cards(engine, cards_dir, now=T0)
    report = sync_cards(engine, cards_dir, now=T0 + timedelta(hours=1))
    assert (report.added, report.changed, report.unchanged) == ([], [], 3)
    assert {row.indexed_at for row in rows(engine).values()} == {T0}


def test_an_edit_is_picked_up(tmp_path: Path, cards_dir: Path) -> None:
    engine = open_database(tmp_path / "db.sqlite3")
    sync_cards(engine, cards_dir, now=T0)
    path = cards_dir / "m3" / "backprop" / "gamma.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Gamma card", "Gamma, reworded"), encoding="utf-8")
    report = sync_cards(engine, cards_dir, now=T0 + timedelta(hours=1))
    assert report.changed == ["gamma"]
    assert rows(engine)["gamma"].title_en == "Gamma, reworded"


def test_a_removed_card_is_retired_not_deleted_and_comes_back(tmp_path: Path, cards_dir: Path) -> None:
    engine = open_database(tmp_path / "db.sqlite3")
    sync_cards(engine, cards_dir, now=T0)
    path = cards_dir / "m3" / "backprop" / "gamma.md"
    saved = path.read_text(encoding="utf-8")
    path.unlink()
    report = sync_cards(engine, cards_dir, now=T0 + timedelta(hours=1))
    assert report.retired == ["gamma"]
    assert rows(engine)["gamma"].retired_at == T0 + timedelta(hours=1)
    # beta still links to gamma: the dangling link is reported
    assert any("related id 'gamma' does not exist" in str(p) for p in report.problems)
    path.write_text(saved, encoding="utf-8")
    sync_cards(engine, cards_dir, now=T0 + timedelta(hours=2))
    assert rows(engine)["gamma"].retired_at is None


def test_a_broken_edit_keeps_the_last_good_version(tmp_path: Path, cards_dir: Path) -> None:
    engine = open_database(tmp_path / "db.sqlite3")
    sync_cards(engine, cards_dir, now=T0)
    path = cards_dir / "m3" / "backprop" / "alpha.md"
    path.write_text(path.read_text(encoding="utf-8").replace("title:", "title: [", 1), encoding="utf-8")
    report = sync_cards(engine, cards_dir, now=T0 + timedelta(hours=1))
    assert any(p.path.endswith("alpha.md") and "malformed YAML" in p.message for p in report.problems)
    alpha = rows(engine)["alpha"]
    assert alpha.retired_at is None and alpha.title_en == "Alpha card"


def test_search_index_follows_edits(tmp_path: Path, cards_dir: Path) -> None:
    engine = open_database(tmp_path / "db.sqlite3")
    sync_cards(engine, cards_dir, now=T0)
    path = cards_dir / "m3" / "backprop" / "gamma.md"
    path.write_text(path.read_text(encoding="utf-8").replace("小卡片", "梯度检查点"), encoding="utf-8")
    sync_cards(engine, cards_dir, now=T0 + timedelta(hours=1))
    with engine.connect() as conn:
        hits = conn.execute(text("SELECT card_id FROM card_fts WHERE card_fts MATCH '\"检查\"'")).all()
        assert hits == [("gamma",)]
        assert conn.execute(text("SELECT count(*) FROM card_fts")).scalar() == 3


def test_a_crash_mid_sync_leaves_the_index_as_it_was(tmp_path: Path, cards_dir: Path, monkeypatch: object) -> None:
    import app.cards.index as index

    engine = open_database(tmp_path / "db.sqlite3")
    sync_cards(engine, cards_dir, now=T0)
    path = cards_dir / "m3" / "backprop" / "gamma.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Gamma card", "Gamma v2"), encoding="utf-8")
    (cards_dir / "m3" / "backprop" / "alpha.md").unlink()

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(index, "_write_cards", boom)  # type: ignore[attr-defined]
    try:
        sync_cards(engine, cards_dir, now=T0 + timedelta(hours=1))
    except OSError:
        pass
    after = rows(engine)
    assert after["gamma"].title_en == "Gamma card" and after["alpha"].retired_at is None


def test_the_index_keeps_each_cards_markdown_for_exports(tmp_path: Path, cards_dir: Path, good_card_text: str) -> None:
    from app.cards.parser import parse_card
    from app.cards.source import sections_from_source

    engine = open_database(tmp_path / "db.sqlite3")
    sync_cards(engine, cards_dir, now=T0)
    stored = sections_from_source(rows(engine)["gamma"].source)
    assert stored is not None
    card, _ = parse_card((cards_dir / "m3" / "backprop" / "gamma.md").read_text(encoding="utf-8"), "x")
    assert card is not None
    assert stored == (card.sections, card.followups)
    assert sections_from_source({}) is None  # a row indexed before sources were kept


def test_a_large_batch_compiles_in_helper_processes_with_the_same_result(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from app.cards import compile as compile_module
    from app.cards.deck import iter_card_files
    from app.cards.synthetic import write_synthetic_deck

    write_synthetic_deck(tmp_path / "cards", 40)
    files = list(iter_card_files(tmp_path / "cards"))
    serial = compile_module.compile_files(files)
    original = compile_module.PARALLEL_THRESHOLD
    compile_module.PARALLEL_THRESHOLD = 10  # force the helper path on a small deck
    try:
        shared = compile_module.compile_files(files)
    finally:
        compile_module.PARALLEL_THRESHOLD = original
    assert [(c.file.rel, c.card, c.rendered) for c in shared] == [(c.file.rel, c.card, c.rendered) for c in serial]
    assert "helper failed" not in caplog.text  # the helper really did its share
