"""A schedule goes to Obsidian, is changed there as the plugin would, and comes back into the review history."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from fsrs import Card, Rating, Scheduler, State
from sqlmodel import Session, col, select

from app.export import obsidian_notes, srs_syntax
from app.export.obsidian import export_vault
from app.export.obsidian_import import import_vault
from app.models import LOCAL_USER_ID, ItemState, ReviewLog, StudySettings
from app.review import service
from tests.export.conftest import T0

ITEM = "inplace-version-counter#restore-values"


def answer_in_app(session: Session, item: str, rating: int, at: datetime) -> None:
    settings = session.get(StudySettings, LOCAL_USER_ID)
    assert settings is not None
    shown = service.show(session, user_id=LOCAL_USER_ID, item_id=item, settings=settings, now=at)
    service.answer(session, user_id=LOCAL_USER_ID, item_id=item, token=shown.token, rating=rating, duration_ms=4000,
                   study_session="app", now=at)


def review_in_obsidian(schedule: srs_syntax.FsrsSchedule, rating: Rating, at: datetime) -> srs_syntax.FsrsSchedule:
    """What the plugin (ts-fsrs, default parameters, no fuzz) writes after one review: py-fsrs computes the same."""
    if schedule.state == 0:  # new to the plugin
        card = Card(due=schedule.due)
    else:
        card = Card(state=State(schedule.state), step=schedule.learning_steps if schedule.state != 2 else None,
                    stability=schedule.stability, difficulty=schedule.difficulty, due=schedule.due,
                    last_review=schedule.last_review)
    new, _ = Scheduler(enable_fuzzing=False).review_card(card, rating, review_datetime=at)
    assert new.last_review is not None and new.stability is not None and new.difficulty is not None
    interval = round((new.due - new.last_review).total_seconds() / 86400) if new.state == State.Review else 0
    lapse = 1 if rating == Rating.Again and schedule.state == 2 else 0
    return srs_syntax.FsrsSchedule(new.due, interval, round(new.stability, 4), round(new.difficulty, 4), int(new.state),
                                   schedule.reps + 1, schedule.lapses + lapse, new.step or 0, new.last_review)


def note_for(vault: Path, card_id: str) -> Path:
    return next(p for p in vault.rglob("*.md") if f"\nid: {card_id}\n" in p.read_text(encoding="utf-8"))


def flashcard_schedule(note: Path, key: str) -> srs_syntax.FsrsSchedule | None:
    card = next(f for f in obsidian_notes.flashcards_in(note.read_text(encoding="utf-8")) if f.key == key).card
    found = card.schedule
    assert not found or isinstance(found[0], srs_syntax.FsrsSchedule)
    return found[0] if found else None  # type: ignore[return-value]


def replace_schedule(note: Path, key: str, schedule: srs_syntax.FsrsSchedule) -> None:
    """Edit the note as the plugin does after a review: the card's comment line is replaced (or added)."""
    text = note.read_text(encoding="utf-8")
    card = next(f for f in obsidian_notes.flashcards_in(text) if f.key == key).card
    old = card.text
    body = "\n".join(line for line in old.split("\n") if not srs_syntax.COMMENT_RE.fullmatch(line.strip()))
    note.write_text(text.replace(old, body + "\n" + schedule.comment(), 1), encoding="utf-8")


def logs(session: Session, item: str) -> list[ReviewLog]:
    session.expire_all()
    return list(session.exec(select(ReviewLog).where(col(ReviewLog.item_id) == item).order_by(col(ReviewLog.reviewed_at))))


def test_schedule_round_trip_through_obsidian(session: Session, deck: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    answer_in_app(session, ITEM, 3, T0)
    answer_in_app(session, ITEM, 3, T0 + timedelta(minutes=12))
    state = session.get(ItemState, (LOCAL_USER_ID, ITEM))
    assert state is not None and state.state == 2  # graduated to review

    report = export_vault(session, vault=vault, cards_dir=deck / "cards", now=T0, with_schedule=True)
    assert report.scheduled == 1
    note = note_for(vault, "inplace-version-counter")
    exported = flashcard_schedule(note, "restore-values")
    assert exported is not None
    assert exported.reps == 2 and exported.state == 2 and exported.last_review == state.last_reviewed_at.replace(tzinfo=exported.due.tzinfo)  # type: ignore[union-attr]
    assert exported.due.replace(microsecond=0) == state.due.replace(tzinfo=exported.due.tzinfo, microsecond=0)
    assert flashcard_schedule(note, "why-not-copy") is None  # never reviewed: no comment, a new card for the plugin

    # Reviewed in Obsidian on its due day (Good), and a new card there (Again).
    t1 = exported.due + timedelta(hours=2)
    changed = review_in_obsidian(exported, Rating.Good, t1)
    replace_schedule(note, "restore-values", changed)
    new_card = srs_syntax.FsrsSchedule(t1, 0, 0.0, 0.0, 0, 0, 0, 0, None)
    first = review_in_obsidian(new_card, Rating.Again, t1 + timedelta(minutes=1))
    first = srs_syntax.FsrsSchedule(first.due, 0, first.stability, first.difficulty, first.state, 1, 0, first.learning_steps, first.last_review)
    replace_schedule(note, "why-not-copy", first)

    result = import_vault(session, vault=vault, now=t1 + timedelta(hours=1))
    assert sorted(result.imported) == sorted([ITEM, "inplace-version-counter#why-not-copy"])
    history = logs(session, ITEM)
    assert [log.rating for log in history] == [3, 3, 3]
    imported = history[-1]
    assert imported.reviewed_at.replace(tzinfo=t1.tzinfo) == t1.replace(microsecond=t1.microsecond // 1000 * 1000)
    assert imported.token.startswith("obsidian:") and imported.state_after["fsrs_card"]["last_review"]
    state = session.get(ItemState, (LOCAL_USER_ID, ITEM))
    assert state is not None and state.reps == 3 and state.state == 2
    assert state.stability is not None and abs(state.stability - changed.stability) / changed.stability < 0.05
    again = logs(session, "inplace-version-counter#why-not-copy")
    assert [log.rating for log in again] == [1]

    # Importing the same vault again adds nothing; exporting again writes our (same) state, no conflict.
    again_report = import_vault(session, vault=vault, now=t1 + timedelta(hours=2))
    assert again_report.imported == [] and again_report.known == 2
    assert len(logs(session, ITEM)) == 3
    reexport = export_vault(session, vault=vault, cards_dir=deck / "cards", now=t1, with_schedule=True)
    assert reexport.conflicts == [] and reexport.pending_import == []
    assert import_vault(session, vault=vault, now=t1 + timedelta(hours=3)).imported == []


def test_newer_obsidian_reviews_are_kept_until_imported(session: Session, deck: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    answer_in_app(session, ITEM, 3, T0)
    export_vault(session, vault=vault, cards_dir=deck / "cards", now=T0, with_schedule=True)
    note = note_for(vault, "inplace-version-counter")
    exported = flashcard_schedule(note, "restore-values")
    assert exported is not None
    later = review_in_obsidian(exported, Rating.Easy, T0 + timedelta(hours=1))
    replace_schedule(note, "restore-values", later)

    report = export_vault(session, vault=vault, cards_dir=deck / "cards", now=T0, with_schedule=True)
    assert report.pending_import == [ITEM]
    assert flashcard_schedule(note, "restore-values") == later  # not overwritten by the app's older state
    assert [log.rating for log in (import_vault(session, vault=vault, now=T0 + timedelta(hours=2)), logs(session, ITEM))[1]] == [3, 4]


def test_a_review_in_obsidian_between_two_app_answers_is_slotted_into_history(
    session: Session, deck: Path, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    answer_in_app(session, ITEM, 3, T0)
    export_vault(session, vault=vault, cards_dir=deck / "cards", now=T0, with_schedule=True)
    note = note_for(vault, "inplace-version-counter")
    exported = flashcard_schedule(note, "restore-values")
    assert exported is not None
    replace_schedule(note, "restore-values", review_in_obsidian(exported, Rating.Good, T0 + timedelta(minutes=5)))
    answer_in_app(session, ITEM, 3, T0 + timedelta(minutes=30))  # the app moved on meanwhile

    report = import_vault(session, vault=vault, now=T0 + timedelta(hours=1))
    assert report.imported == [ITEM]
    history = logs(session, ITEM)
    assert [log.token.startswith("obsidian:") for log in history] == [False, True, False]
    state = session.get(ItemState, (LOCAL_USER_ID, ITEM))
    assert state is not None and state.reps == 3
    assert state.last_reviewed_at is not None and state.last_reviewed_at.replace(tzinfo=T0.tzinfo) == T0 + timedelta(minutes=30)
