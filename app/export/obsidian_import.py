"""`depthcards import obsidian DIR`: reviews done in Obsidian, merged into the app's history.

The plugin keeps no review log, only each card's latest FSRS state in its `<!--SR:!fsrs,…-->` comment. A comment
whose lastReview is a moment the app has no answer for is a review done in Obsidian; it becomes one ReviewLog that
looks like an answer given in the app:

- reviewed_at = the comment's lastReview;
- rating = the grade that, applied with FSRS's default parameters (the plugin's) to the item's state before that
  review, gives the state closest to the comment's (same FSRS state first, then stability on a log scale, then
  difficulty); a lapse (lapses went up from a review state) is Again;
- state_after = our own scheduler's candidate for that rating at that moment (the user's parameters and fuzz),
  exactly what answering in the app would have stored; the comment is kept in the log for reference;
- token = "obsidian:<item id>:<lastReview>", unique, so importing the same vault twice adds nothing, and a comment
  the app itself wrote (export --with-schedule) matches the answer it came from and adds nothing either.

The plugin's comment records only the latest review: when its reps went up by more than one since the state the app
knew, the earlier reviews left no trace and only the latest is imported (reported as such). A review older than the
app's latest answer for the item (both sides reviewed) is slotted into the history and the item's state is rebuilt
by replaying its answers in time order. Everything happens in one transaction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from sqlmodel import Session, col, select

from app.export import obsidian_notes as notes
from app.export import srs_syntax
from app.export.common import ExportError
from app.models import LOCAL_USER_ID, ItemState, ReviewItem, ReviewLog, StudySettings
from app.review import scheduler
from app.review.scheduler import REVIEW_STATE
from app.review.service import answered, as_log_json, policy_for, snapshot

_SAME_MOMENT = timedelta(seconds=1)  # the comment keeps milliseconds; our logs keep microseconds
_PLUGIN_POLICY = scheduler.Policy(fuzz=False)  # ts-fsrs defaults: FSRS-6 weights, 1m/10m learning, 10m relearning


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)  # item ids that got a new review
    known: int = 0  # schedules the app already had
    unscheduled: int = 0  # flashcards never reviewed in Obsidian
    skipped: list[str] = field(default_factory=list)  # "<note>: <why>"
    collapsed: list[str] = field(default_factory=list)  # items reviewed several times in Obsidian: latest imported

    def summary(self) -> str:
        text = f"{len(self.imported)} review(s) imported, {self.known} already known, {self.unscheduled} never reviewed in Obsidian"
        if self.skipped:
            text += f", {len(self.skipped)} skipped"
        if self.collapsed:
            text += f"; {len(self.collapsed)} card(s) were reviewed more than once in Obsidian since the last import (only the latest review is recorded in the note)"
        return text


@dataclass(frozen=True)
class _Found:
    item_id: str
    note: str
    schedule: srs_syntax.FsrsSchedule
    comment: str


def scan_vault(vault: Path, report: ImportReport) -> list[_Found]:
    """Every scheduled follow-up flashcard in the vault's notes (any note with an `id` property, wherever moved)."""
    if not vault.is_dir():
        raise ExportError(f"{vault} is not a folder")
    found: list[_Found] = []
    for path in sorted(vault.rglob("*.md")):
        rel = path.relative_to(vault)
        if any(part.startswith(".") for part in rel.parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if "<!--SR:" not in text and "%%fu " not in text:
            continue
        front, _ = srs_syntax.split_front_matter(text)
        try:
            props = yaml.safe_load(front.strip().strip("-")) if front else None
        except yaml.YAMLError:
            report.skipped.append(f"{rel}: its properties are not valid YAML")
            continue
        card_id = props.get("id") if isinstance(props, dict) else None
        if not isinstance(card_id, str):
            continue
        for flashcard in notes.flashcards_in(text):
            schedules = flashcard.card.schedule
            if not schedules:
                report.unscheduled += 1
                continue
            first = schedules[0]
            item = f"{card_id}#{flashcard.key}"
            if isinstance(first, srs_syntax.Sm2Schedule):
                report.skipped.append(f"{rel}: {item} has an SM-2 schedule (set the plugin's algorithm to FSRS)")
            elif first is None or first.last_review is None:
                report.unscheduled += 1
            else:
                comment = srs_syntax.COMMENT_RE.search(flashcard.card.text)
                found.append(_Found(item, str(rel), first, comment.group(0) if comment else ""))
    return found


def infer_rating(before: dict[str, Any] | None, schedule: srs_syntax.FsrsSchedule, *, at: datetime, lapses_before: int,
                 state_before: int) -> int:
    """The grade that best explains the plugin's new state (see the module docstring)."""
    if schedule.lapses > lapses_before and state_before == REVIEW_STATE:
        return 1
    candidates = scheduler.next_states(before, policy=_PLUGIN_POLICY, now=at)

    def distance(rating: int) -> float:
        card = scheduler.load_card(candidates[rating])
        off = 0.0 if int(card.state) == schedule.state else 100.0
        stability = max(card.stability or 0.01, 0.01)
        off += abs(math.log(stability) - math.log(max(schedule.stability, 0.01)))
        off += abs((card.difficulty or 0.0) - schedule.difficulty) / 3
        return off

    return min(scheduler.RATINGS, key=distance)


def import_vault(session: Session, *, vault: Path, now: datetime, user_id: int = LOCAL_USER_ID) -> ImportReport:
    """Merge the vault's Obsidian reviews into the user's history, in one transaction; idempotent."""
    report = ImportReport()
    found = scan_vault(vault, report)
    settings = session.get(StudySettings, user_id) or StudySettings(user_id=user_id)
    policy = policy_for(settings)
    study_session = f"obsidian-import-{now.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    try:
        for entry in found:
            _merge_one(session, entry, user_id=user_id, policy=policy, study_session=study_session, report=report)
        session.commit()
    except Exception:
        session.rollback()
        raise
    return report



def _token(item_id: str, at: datetime) -> str:
    return f"obsidian:{item_id}:{srs_syntax.format_timestamp(at)}"


def _merge_one(
    session: Session, entry: _Found, *, user_id: int, policy: scheduler.Policy, study_session: str, report: ImportReport
) -> None:
    at = entry.schedule.last_review
    assert at is not None
    item = session.get(ReviewItem, entry.item_id)
    if item is None or item.retired_at is not None:
        report.skipped.append(f"{entry.note}: no active review item '{entry.item_id}'")
        return
    token = _token(entry.item_id, at)
    logs = list(
        session.exec(
            select(ReviewLog)
            .where(col(ReviewLog.user_id) == user_id, col(ReviewLog.item_id) == entry.item_id, col(ReviewLog.undone_at).is_(None))
            .order_by(col(ReviewLog.reviewed_at), col(ReviewLog.id))
        )
    )
    if any(log.token == token or abs(_aware(log.reviewed_at) - at) < _SAME_MOMENT for log in logs):
        report.known += 1
        return
    if session.exec(select(ReviewLog.id).where(col(ReviewLog.token) == token)).first() is not None:
        report.known += 1  # imported before, then undone in the app: stays undone
        return
    state = session.get(ItemState, (user_id, entry.item_id))
    earlier = [log for log in logs if _aware(log.reviewed_at) < at]
    if len(earlier) == len(logs):
        # The usual case: the Obsidian review is the newest; apply it as an answer in the app would.
        before_card = state.fsrs_card if state is not None and state.reps else None
        rating = _rating(entry, before_card, reps=state.reps if state else 0, lapses=state.lapses if state else 0, report=report)
        before = snapshot(state)
        after = _apply(state, user_id=user_id, item_id=entry.item_id, before_card=before_card, rating=rating, at=at,
                       policy=policy, session=session)
        session.add(_log(user_id, entry, rating, at, before, after, study_session, token))
    else:
        # Both sides reviewed: slot the Obsidian review in, then replay the item's answers in time order.
        before_card = earlier[-1].state_after.get("fsrs_card") if earlier else None
        lapses = sum(1 for log in earlier if log.rating == 1 and (log.state_before or {}).get("state") == REVIEW_STATE)
        rating = _rating(entry, before_card, reps=len(earlier), lapses=lapses, report=report)
        new_log = _log(user_id, entry, rating, at, None, {}, study_session, token)
        suspended = state.suspended if state is not None else False
        if state is not None:
            session.delete(state)
            session.flush()
        state = None
        for log in [*earlier, new_log, *logs[len(earlier):]]:
            before = snapshot(state)
            after = _apply(state, user_id=user_id, item_id=entry.item_id,
                           before_card=state.fsrs_card if state is not None and state.reps else None,
                           rating=log.rating, at=_aware(log.reviewed_at), policy=policy, session=session)
            state = session.get(ItemState, (user_id, entry.item_id))
            if log is new_log:
                new_log.state_before = before if before is not None else {"state": 0}
                new_log.state_after = {**after, "source": new_log.state_after["source"]}
        if state is not None and suspended:
            state.suspended = True
            session.add(state)
        session.add(new_log)
    session.flush()
    report.imported.append(entry.item_id)


def _rating(entry: _Found, before_card: dict[str, Any] | None, *, reps: int, lapses: int, report: ImportReport) -> int:
    at = entry.schedule.last_review
    assert at is not None
    if entry.schedule.reps > reps + 1:
        report.collapsed.append(entry.item_id)
    state = int(scheduler.load_card(before_card).state) if before_card else 0
    return infer_rating(before_card, entry.schedule, at=at, lapses_before=lapses, state_before=state)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)



def _apply(
    state: ItemState | None,
    *,
    user_id: int,
    item_id: str,
    before_card: dict[str, Any] | None,
    rating: int,
    at: datetime,
    policy: scheduler.Policy,
    session: Session,
) -> dict[str, Any]:
    """Move the item's state by one answer, as app/review/service.answer does; returns the log's state_after."""
    values = answered(state, scheduler.next_states(before_card, policy=policy, now=at)[rating], rating=rating, at=at)
    if state is None:
        session.add(ItemState(user_id=user_id, item_id=item_id, suspended=False, **values))
    else:
        for key, value in values.items():
            setattr(state, key, value)
        session.add(state)
    session.flush()
    return as_log_json(values)


def _log(user_id: int, entry: _Found, rating: int, at: datetime, before: dict[str, Any] | None, after: dict[str, Any],
         study_session: str, token: str) -> ReviewLog:
    return ReviewLog(
        user_id=user_id,
        item_id=entry.item_id,
        rating=rating,
        reviewed_at=at,
        duration_ms=None,
        state_before=before if before is not None else {"state": 0},
        state_after={**after, "source": {"obsidian": entry.comment, "note": entry.note}},
        study_session=study_session,
        token=token,
    )
