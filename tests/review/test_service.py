"""Answering, double answers, undo, bury and suspend against a real SQLite file with fixed clocks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine, func
from sqlmodel import Session, col, select

from app.errors import AppError, Conflict
from app.models import LOCAL_USER_ID, ItemState, ReviewLog, StudySettings
from app.review import service
from app.review.queue import Deck, counts, next_item
from tests.review.conftest import T0, WRITE_FAILED, failing_insert, show_next

U = LOCAL_USER_ID


def settings_of(session: Session) -> StudySettings:
    return service.get_settings(session, user_id=U)


def show_first(session: Session, now=T0) -> service.Shown:  # type: ignore[no-untyped-def]
    shown = show_next(session, now=now)
    assert shown is not None
    return shown


def answer(session: Session, shown: service.Shown, rating: int, *, now=T0, study_session: str = "s1") -> service.Answered:  # type: ignore[no-untyped-def]
    return service.answer(
        session, user_id=U, item_id=shown.item.id, token=shown.token, rating=rating,
        duration_ms=1500, study_session=study_session, now=now,
    )


def logs(session: Session) -> list[ReviewLog]:
    return list(session.exec(select(ReviewLog).order_by(col(ReviewLog.id))))


def state_of(session: Session, item_id: str) -> ItemState | None:
    session.expire_all()
    return session.get(ItemState, (U, item_id))


def test_an_answer_writes_state_and_log_together(session: Session) -> None:
    shown = show_first(session)
    assert shown.intervals == {1: "1m", 2: "6m", 3: "10m", 4: "8d"}
    result = answer(session, shown, 3)
    state = state_of(session, shown.item.id)
    assert state is not None and state.reps == 1 and state.state == 1
    assert state.due == T0 + timedelta(minutes=10)
    [log] = logs(session)
    assert (log.id, log.item_id, log.rating, log.duration_ms, log.state_before) == (result.log_id, shown.item.id, 3, 1500, {"state": 0})


def test_a_double_submitted_answer_is_applied_once(session: Session) -> None:
    shown = show_first(session)
    first = answer(session, shown, 3)
    again = answer(session, shown, 3, now=T0 + timedelta(seconds=2))
    assert again.replayed and again.log_id == first.log_id
    assert len(logs(session)) == 1
    assert state_of(session, shown.item.id).reps == 1  # type: ignore[union-attr]


def test_a_stale_tab_cannot_overwrite_a_newer_answer(session: Session) -> None:
    tab_a = show_first(session)
    tab_b = service.show(session, user_id=U, item_id=tab_a.item.id, settings=settings_of(session), now=T0)
    answer(session, tab_a, 4)
    with pytest.raises(Conflict, match="answered elsewhere"):
        answer(session, tab_b, 1)
    assert [log.rating for log in logs(session)] == [4]


@pytest.mark.parametrize("rating", [0, 5, -1])
def test_bad_grades_are_refused_and_change_nothing(session: Session, rating: int) -> None:
    shown = show_first(session)
    with pytest.raises(AppError, match="rating must be 1"):
        answer(session, shown, rating)
    assert logs(session) == [] and state_of(session, shown.item.id) is None


def test_unknown_token_and_mismatched_item(session: Session) -> None:
    shown = show_first(session)
    with pytest.raises(Conflict, match="token is unknown"):
        service.answer(session, user_id=U, item_id=shown.item.id, token="nope", rating=3, duration_ms=None, study_session="s", now=T0)
    with pytest.raises(AppError, match="issued for item"):
        service.answer(session, user_id=U, item_id="beta", token=shown.token, rating=3, duration_ms=None, study_session="s", now=T0)


def test_undo_restores_the_exact_previous_state_several_levels_deep(session: Session) -> None:
    first = show_first(session)
    answer(session, first, 3)  # new -> learning
    snapshot_after_first = state_of(session, first.item.id).model_dump()  # type: ignore[union-attr]
    t1 = T0 + timedelta(minutes=11)
    second = service.show(session, user_id=U, item_id=first.item.id, settings=settings_of(session), now=t1)
    answer(session, second, 3, now=t1)  # learning -> review
    third = show_first(session, now=t1)
    answer(session, third, 1, now=t1)

    assert service.undo(session, user_id=U, study_session="s1", now=t1) == third.item.id
    assert state_of(session, third.item.id) is None  # it was new: new again
    assert service.undo(session, user_id=U, study_session="s1", now=t1) == first.item.id
    assert state_of(session, first.item.id).model_dump() == snapshot_after_first  # type: ignore[union-attr]
    assert service.undo(session, user_id=U, study_session="s1", now=t1) == first.item.id
    assert state_of(session, first.item.id) is None
    assert service.undo(session, user_id=U, study_session="s1", now=t1) is None
    # Nothing is deleted from the history: the three answers are marked undone.
    assert [log.undone_at is not None for log in logs(session)] == [True, True, True]


def test_undo_only_touches_its_own_study_session(session: Session) -> None:
    shown = show_first(session)
    answer(session, shown, 3, study_session="other-tab")
    assert service.undo(session, user_id=U, study_session="s1", now=T0) is None


def test_a_crash_mid_answer_leaves_the_database_consistent(session: Session, engine: Engine) -> None:
    shown = show_first(session)
    # The log row's insert fails, and only once the item's state is written (in the same transaction).
    state_written = "EXISTS (SELECT 1 FROM item_state WHERE item_id = NEW.item_id)"
    with failing_insert(engine, "review_log", when=state_written), pytest.raises(WRITE_FAILED):
        answer(session, shown, 3)
    with Session(engine) as fresh:
        assert fresh.exec(select(func.count()).select_from(ReviewLog)).one() == 0
        assert fresh.get(ItemState, (U, shown.item.id)) is None
    answer(session, shown, 3)  # and the same token still works afterwards
    assert len(logs(session)) == 1


def test_bury_hides_until_the_next_study_day(session: Session) -> None:
    settings = settings_of(session)
    first_id = next_item(session, user_id=U, deck=Deck(), settings=settings, now=T0)
    assert first_id is not None
    service.bury(session, user_id=U, item_id=first_id, settings=settings, now=T0)
    assert next_item(session, user_id=U, deck=Deck(), settings=settings, now=T0) != first_id
    tomorrow = T0 + timedelta(days=1)  # 09:00 the next day, past the 4 am rollover
    assert next_item(session, user_id=U, deck=Deck(), settings=settings, now=tomorrow) == first_id


def test_suspend_hides_until_unsuspended(session: Session) -> None:
    settings = settings_of(session)
    before = counts(session, user_id=U, deck=Deck(), settings=settings, now=T0)
    first_id = next_item(session, user_id=U, deck=Deck(), settings=settings, now=T0)
    assert first_id is not None
    service.set_suspended(session, user_id=U, item_id=first_id, suspended=True, now=T0)
    later = T0 + timedelta(days=30)
    assert counts(session, user_id=U, deck=Deck(), settings=settings, now=later).new == before.new - 1
    service.set_suspended(session, user_id=U, item_id=first_id, suspended=False, now=T0)
    assert counts(session, user_id=U, deck=Deck(), settings=settings, now=later).new == before.new


def test_two_tabs_answering_at_once_apply_exactly_one(engine: Engine) -> None:
    """Real concurrency on a real SQLite file (WAL + busy timeout): many racing answers, one wins per item state."""
    import threading

    with Session(engine) as session:
        settings = settings_of(session)
        item_id = show_first(session).item.id
        tokens = [service.show(session, user_id=U, item_id=item_id, settings=settings, now=T0).token for _ in range(8)]
    outcomes: list[str] = []
    barrier = threading.Barrier(len(tokens))

    def tab(token: str, rating: int) -> None:
        with Session(engine) as own:
            barrier.wait()
            try:
                service.answer(own, user_id=U, item_id=item_id, token=token, rating=rating,
                               duration_ms=10, study_session=f"tab-{token[:4]}", now=T0)
                outcomes.append("applied")
            except Conflict:
                outcomes.append("conflict")

    threads = [threading.Thread(target=tab, args=(t, 1 + i % 4)) for i, t in enumerate(tokens)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(outcomes) == ["applied"] + ["conflict"] * (len(tokens) - 1)
    with Session(engine) as check:
        [log] = check.exec(select(ReviewLog)).all()
        state = check.get(ItemState, (U, item_id))
        assert state is not None and state.reps == 1 and state.fsrs_card == log.state_after["fsrs_card"]


def test_old_tokens_are_pruned_and_then_refused(session: Session) -> None:
    shown = show_first(session)
    assert service.prune_shown(session, now=T0 + timedelta(days=1)) == 0
    assert service.prune_shown(session, now=T0 + timedelta(days=3)) == 1
    with pytest.raises(Conflict, match="token is unknown or expired"):
        answer(session, shown, 3)
