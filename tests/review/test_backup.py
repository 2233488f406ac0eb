"""Backup and restore: the real CLI on real SQLite files; refusals and malformed files change nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, update
from sqlmodel import Session, col

from app.cards.index import sync_cards
from app.db import open_database
from app.library import open_indexed
from app.main import create_app
from app.models import LOCAL_USER_ID, CardRow, ItemState, ReviewItem, ReviewLog, StudySettings
from app.review import backup, synthetic
from app.review.items import sync_items
from app.settings import Settings
from tests.conftest import ROOT

T0 = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)
DB = "depthcards.sqlite3"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def studied_data_dir(path: Path, *, items: int = 30, days: int = 90, seed: int = 3) -> Path:
    """A data dir whose local user has a history (with undone answers), custom settings, a buried and a suspended item."""
    engine = open_database(path / DB)
    with Session(engine) as session:
        ids = synthetic.add_items(session, items, now=T0)
        synthetic.write_history(session, synthetic.simulate(ids, user_id=LOCAL_USER_ID, start=T0, days=days, seed=seed, undo_every=7))
        session.execute(update(StudySettings).values(
            fsrs_parameters=list(synthetic.TRUE_PARAMETERS), timezone="Asia/Shanghai", new_per_day=7, learning_steps=[30, 300, 3600]))
        session.execute(update(ItemState).where(col(ItemState.item_id) == ids[0]).values(suspended=True))
        session.execute(update(ItemState).where(col(ItemState.item_id) == ids[1]).values(buried_until=T0 + timedelta(days=days, hours=3)))
        session.commit()
    engine.dispose()
    return path


def counts(data_dir: Path) -> dict[str, int]:
    engine = open_database(data_dir / DB)
    with Session(engine) as session:
        result = {
            "states": session.scalar(select(func.count()).select_from(ItemState)) or 0,
            "logs": session.scalar(select(func.count()).select_from(ReviewLog)) or 0,
            "undone": session.scalar(select(func.count()).select_from(ReviewLog).where(col(ReviewLog.undone_at).is_not(None))) or 0,
            "retired_items": session.scalar(select(func.count()).select_from(ReviewItem).where(col(ReviewItem.retired_at).is_not(None))) or 0,
        }
    engine.dispose()
    return result


def test_backup_restore_backup_is_byte_identical(tmp_path: Path) -> None:
    source = studied_data_dir(tmp_path / "source")
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    assert cli("backup", str(first), "--data-dir", str(source)).returncode == 0

    empty = tmp_path / "empty"
    restored = cli("restore", str(first), "--data-dir", str(empty))
    assert restored.returncode == 0, restored.stderr
    assert "retired placeholders" in restored.stdout
    assert cli("backup", str(second), "--data-dir", str(empty)).returncode == 0
    assert first.read_bytes() == second.read_bytes()

    before, after = counts(source), counts(empty)
    assert after["states"] == before["states"] == 30
    assert after["logs"] == before["logs"] and after["undone"] == before["undone"] > 0  # undone answers travel too
    assert after["retired_items"] == 30  # no card is indexed in the empty dir: every item is a placeholder

    doc = json.loads(first.read_text(encoding="utf-8"))
    assert doc["settings"]["timezone"] == "Asia/Shanghai" and doc["settings"]["fsrs_parameters"] == list(synthetic.TRUE_PARAMETERS)
    assert [s["item_id"] for s in doc["item_states"]] == sorted(s["item_id"] for s in doc["item_states"])
    assert all(log["reviewed_at"].endswith("+00:00") for log in doc["review_logs"])
    assert any(s["suspended"] for s in doc["item_states"]) and any(s["buried_until"] for s in doc["item_states"])


def test_restore_refuses_existing_state_unless_forced(tmp_path: Path) -> None:
    source = studied_data_dir(tmp_path / "source", items=12, days=40, seed=1)
    other = studied_data_dir(tmp_path / "other", items=20, days=60, seed=2)
    saved, other_before = tmp_path / "source.json", tmp_path / "other-before.json"
    cli("backup", str(saved), "--data-dir", str(source))
    cli("backup", str(other_before), "--data-dir", str(other))

    refused = cli("restore", str(saved), "--data-dir", str(other))
    assert refused.returncode == 1
    assert "already has study state" in refused.stderr and "--force" in refused.stderr
    check = tmp_path / "check.json"
    cli("backup", str(check), "--data-dir", str(other))
    assert check.read_bytes() == other_before.read_bytes()  # nothing changed

    forced = cli("restore", str(saved), "--data-dir", str(other), "--force")
    assert forced.returncode == 0, forced.stderr
    cli("backup", str(check), "--data-dir", str(other))
    assert check.read_bytes() == saved.read_bytes()  # that user's state is now exactly the backup's


def test_settings_alone_count_as_study_state(tmp_path: Path) -> None:
    engine = open_database(tmp_path / DB)
    with Session(engine) as session:
        assert backup.has_study_state(session, user_id=LOCAL_USER_ID) is None
        session.execute(update(StudySettings).values(desired_retention=0.85))
        session.commit()
        assert backup.has_study_state(session, user_id=LOCAL_USER_ID) == "0 item state(s), 0 review log(s), changed settings"


def _valid_doc(tmp_path: Path) -> dict[str, object]:
    source = studied_data_dir(tmp_path / "source", items=6, days=20, seed=4)
    engine = open_database(source / DB)
    with Session(engine) as session:
        doc: dict[str, object] = json.loads(backup.dump(session, user_id=LOCAL_USER_ID))
    return doc


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (lambda d: "{not json", "Invalid JSON"),
        (lambda d: json.dumps(d)[:-40], "Invalid JSON"),
        (lambda d: json.dumps({**d, "format": "anki"}), "format: Input should be 'depthcards-backup'"),
        (lambda d: json.dumps({**d, "version": 2}), "version: Input should be 1"),
        (lambda d: json.dumps({k: v for k, v in d.items() if k != "review_logs"}), "review_logs: Field required"),
        (lambda d: json.dumps({**d, "extra": 1}), "extra: Extra inputs are not permitted"),
        (lambda d: json.dumps({**d, "review_logs": [{**d["review_logs"][0], "rating": 5}]}),  # type: ignore[index]
         "review_logs[0].rating: Input should be less than or equal to 4"),
        (lambda d: json.dumps({**d, "review_logs": [{**d["review_logs"][0], "rating": "3"}]}),  # type: ignore[index]
         "review_logs[0].rating: Input should be a valid integer"),
        (lambda d: json.dumps({**d, "review_logs": [{**d["review_logs"][0], "reviewed_at": "2025-03-01T08:00:00"}]}),  # type: ignore[index]
         "review_logs[0].reviewed_at: Input should have timezone info"),
        (lambda d: json.dumps({**d, "review_logs": [{**d["review_logs"][0], "item_id": "ghost"}]}),  # type: ignore[index]
         "review_logs[0].item_id: 'ghost' is not in items"),
        (lambda d: json.dumps({**d, "review_logs": [d["review_logs"][0], d["review_logs"][0]]}),  # type: ignore[index]
         "review_logs[1].token: duplicate token"),
        (lambda d: json.dumps({**d, "item_states": [{**d["item_states"][0], "fsrs_card": {"due": "soon"}}]}),  # type: ignore[index]
         "item_states[0].fsrs_card: not an fsrs card"),
        (lambda d: json.dumps({**d, "settings": {**d["settings"], "timezone": "Mars/Olympus"}}),  # type: ignore[dict-item]
         "settings.timezone: unknown time zone 'Mars/Olympus'"),
        (lambda d: json.dumps({**d, "settings": {**d["settings"], "learning_steps": [60, 90000]}}),  # type: ignore[dict-item]
         "settings.learning_steps: every step must be between 1 second and 1 day"),
        (lambda d: json.dumps({**d, "settings": {**d["settings"], "fsrs_parameters": [1.0] * 3}}),  # type: ignore[dict-item]
         "settings.fsrs_parameters: Expected 21 parameters, got 3."),
        (lambda d: json.dumps({**d, "settings": {**d["settings"], "desired_retention": 0.2}}),  # type: ignore[dict-item]
         "settings.desired_retention: Input should be greater than or equal to 0.7"),
    ],
)
def test_malformed_backups_name_the_problem(tmp_path: Path, break_it: object, message: str) -> None:
    text = break_it(_valid_doc(tmp_path))  # type: ignore[operator]
    with pytest.raises(backup.BackupError) as caught:
        backup.parse(text)
    assert "not a valid DepthCards backup" in caught.value.message
    assert message in caught.value.message


def test_a_malformed_file_changes_nothing(tmp_path: Path) -> None:
    target = studied_data_dir(tmp_path / "target", items=8, days=30, seed=5)
    before = tmp_path / "before.json"
    cli("backup", str(before), "--data-dir", str(target))
    broken = tmp_path / "broken.json"
    doc = json.loads(before.read_text(encoding="utf-8"))
    doc["review_logs"][-1]["rating"] = 9  # the very last record: a partial restore would already have written the rest
    broken.write_text(json.dumps(doc), encoding="utf-8")

    for data_dir in (target, tmp_path / "empty"):
        result = cli("restore", str(broken), "--data-dir", str(data_dir), "--force")
        assert result.returncode == 1
        assert f"review_logs[{len(doc['review_logs']) - 1}].rating: Input should be less than or equal to 4" in result.stderr
    assert not (tmp_path / "empty").exists()  # not even an empty database was created
    after = tmp_path / "after.json"
    cli("backup", str(after), "--data-dir", str(target))
    assert after.read_bytes() == before.read_bytes()


def test_placeholders_become_real_when_the_cards_are_indexed(tmp_path: Path, cards_dir: Path) -> None:
    """History restored before its cards are indexed hangs on placeholder rows, which indexing fills in."""
    source, _ = open_indexed(tmp_path / "source" / DB, cards_dir, now=T0)
    with Session(source) as session:
        ids = list(session.exec(select(ReviewItem.id).order_by(ReviewItem.id)).scalars())
        synthetic.write_history(session, synthetic.simulate(ids, user_id=LOCAL_USER_ID, start=T0, days=30, seed=6))
        text = backup.dump(session, user_id=LOCAL_USER_ID)

    target: Engine = open_database(tmp_path / "target" / DB)
    with Session(target) as session:
        written = backup.restore(session, backup.parse(text), user_id=LOCAL_USER_ID, now=T0)
        assert written["placeholders"] == len(ids) == 6
        cards = session.exec(select(CardRow)).scalars().all()
        assert {c.id for c in cards} == {"alpha", "beta", "gamma"} and all(c.retired_at is not None for c in cards)

    settings = Settings(data_dir=tmp_path / "target", cards_dir=tmp_path / "no-cards")
    with TestClient(create_app(settings)) as client:  # a placeholder card's page shows as retired, not as an error
        page = client.get("/cards/alpha")
        assert page.status_code == 200 and "retired" in page.text

    report = sync_cards(target, cards_dir, now=T0 + timedelta(days=1))
    sync_items(target, now=T0 + timedelta(days=1))
    assert sorted(report.added) == ["alpha", "beta", "gamma"]
    with Session(target) as session:
        assert session.scalar(select(func.count()).select_from(ReviewItem).where(col(ReviewItem.retired_at).is_(None))) == 6
        assert session.get(CardRow, "alpha").title_en == "Alpha card"  # type: ignore[union-attr]
        assert backup.dump(session, user_id=LOCAL_USER_ID) == text  # and the history is intact
