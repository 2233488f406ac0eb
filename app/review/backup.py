"""Back up and restore one user's whole study state as JSON: settings, item states, review logs (undone ones too).

The file is stable: records in a fixed order (items and states by item id, logs in answer order), keys
sorted, datetimes as ISO 8601 in UTC, one record per line. So backup -> restore into an empty data dir ->
backup gives the same bytes.

Items: a backup lists the review items its states and logs refer to. A restore target may not have
indexed their cards yet, and review_item.card_id is a foreign key to card.id (enforced: PRAGMA
foreign_keys=ON). So for an item missing from the target we insert a *retired placeholder* item and, if
its card row is missing too, a retired placeholder card row (titles = the card id, empty fields). History
then hangs on real ids: when the card file is indexed later, sync_cards upserts that card row by id
(filling every field, retired_at = None) and sync_items un-retires the item, so nothing is lost or
duplicated. Until then the queue skips them (retired), as it does for any retired card.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal

from fsrs import Scheduler
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import delete, func, insert
from sqlmodel import Session, col, select

from app.cards.model import SECTIONS
from app.errors import AppError
from app.models import CardRow, ItemState, ReviewItem, ReviewLog, ShownItem, StudySettings, User
from app.review import scheduler
from app.review.settings_form import DAY_SECONDS, RETENTION_MAX, RETENTION_MIN, is_time_zone

FORMAT = "depthcards-backup"
VERSION = 1
PLACEHOLDER_PATH = "(restored from a backup; card not indexed yet)"
# What the card page reads from card.rendered, empty: a placeholder card's page shows as retired, not as an error.
_EMPTY_RENDERING: dict[str, Any] = {"sections": {key: {"zh": "", "en": ""} for key in SECTIONS}, "followups": []}
SETTINGS_FIELDS = ("desired_retention", "new_per_day", "max_reviews_per_day", "learning_steps", "relearning_steps",
                   "day_rollover_hour", "timezone", "fuzz", "fsrs_parameters")
STATE_FIELDS = ("item_id", "schema_version", "fsrs_card", "due", "stability", "difficulty", "state", "reps", "lapses",
                "first_reviewed_at", "last_reviewed_at", "buried_until", "suspended")
LOG_FIELDS = ("item_id", "rating", "reviewed_at", "duration_ms", "state_before", "state_after", "study_session", "token",
              "undone_at")
ITEM_FIELDS = ("id", "card_id", "followup_key", "position")


class BackupError(AppError):
    """A backup file that cannot be restored, or a restore that would overwrite study state."""


# The file's shape ########################################################
# Strict pydantic models: a wrong type or an unknown key is an error that names its place in the file.


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Settings(_Strict):
    desired_retention: float = Field(ge=RETENTION_MIN, le=RETENTION_MAX)
    new_per_day: int = Field(ge=0)
    max_reviews_per_day: int = Field(ge=0)
    learning_steps: list[int]
    relearning_steps: list[int]
    day_rollover_hour: int = Field(ge=0, le=23)
    timezone: str
    fuzz: bool
    fsrs_parameters: list[float] | None


class _Item(_Strict):
    id: str = Field(min_length=1)
    card_id: str = Field(min_length=1)
    followup_key: str | None
    position: int = Field(ge=0)


class _State(_Strict):
    item_id: str
    schema_version: int
    fsrs_card: dict[str, Any]
    due: AwareDatetime
    stability: float | None
    difficulty: float | None
    state: int = Field(ge=0, le=3)
    reps: int = Field(ge=0)
    lapses: int = Field(ge=0)
    first_reviewed_at: AwareDatetime | None
    last_reviewed_at: AwareDatetime | None
    buried_until: AwareDatetime | None
    suspended: bool


class _Log(_Strict):
    item_id: str
    rating: int = Field(ge=1, le=4)
    reviewed_at: AwareDatetime
    duration_ms: int | None = Field(ge=0)
    state_before: dict[str, Any] | None
    state_after: dict[str, Any]
    study_session: str
    token: str = Field(min_length=1)
    undone_at: AwareDatetime | None


class Backup(_Strict):
    """A whole backup file, validated."""

    format: Literal["depthcards-backup"]
    version: Literal[1]
    settings: _Settings
    items: list[_Item]
    item_states: list[_State]
    review_logs: list[_Log]


def _where(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc)) or "file"


def parse(text: str) -> Backup:
    """The validated backup; BackupError naming every problem's place (first 10) otherwise."""
    try:
        doc = Backup.model_validate_json(text)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        lines = [f"{_where(e['loc'])}: {e['msg']}" for e in errors[:10]]
        more = f"\n... and {len(errors) - 10} more" if len(errors) > 10 else ""
        raise BackupError("not a valid DepthCards backup:\n" + "\n".join(lines) + more) from None
    problems = _check(doc)
    if problems:
        more = f"\n... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise BackupError("not a valid DepthCards backup:\n" + "\n".join(problems[:10]) + more)
    return doc


def _check(doc: Backup) -> list[str]:
    """What the types alone can't say: references, uniqueness, ranges fsrs enforces."""
    problems = []
    s = doc.settings
    for name in ("learning_steps", "relearning_steps"):
        if any(not 0 < step < DAY_SECONDS for step in getattr(s, name)):
            problems.append(f"settings.{name}: every step must be between 1 second and 1 day (in seconds)")
    if not is_time_zone(s.timezone):
        problems.append(f"settings.timezone: unknown time zone {s.timezone!r}")
    if s.fsrs_parameters is not None:
        try:
            Scheduler(parameters=s.fsrs_parameters)
        except ValueError as exc:
            problems.append(f"settings.fsrs_parameters: {' '.join(str(exc).split())}")
    item_ids: set[str] = set()
    for i, item in enumerate(doc.items):
        if item.id in item_ids:
            problems.append(f"items[{i}].id: duplicate item {item.id!r}")
        item_ids.add(item.id)
    seen: set[str] = set()
    for i, state in enumerate(doc.item_states):
        if state.item_id not in item_ids:
            problems.append(f"item_states[{i}].item_id: {state.item_id!r} is not in items")
        if state.item_id in seen:
            problems.append(f"item_states[{i}].item_id: a second state for {state.item_id!r}")
        seen.add(state.item_id)
        try:
            scheduler.load_card(state.fsrs_card)
        except Exception as exc:  # fsrs raises KeyError, TypeError or ValueError on a broken dict
            problems.append(f"item_states[{i}].fsrs_card: not an fsrs card ({type(exc).__name__}: {exc})")
    tokens: set[str] = set()
    for i, log in enumerate(doc.review_logs):
        if log.item_id not in item_ids:
            problems.append(f"review_logs[{i}].item_id: {log.item_id!r} is not in items")
        if log.token in tokens:
            problems.append(f"review_logs[{i}].token: duplicate token {log.token!r}")
        tokens.add(log.token)
    return problems


# Reading and writing the database ########################################


@contextmanager
def _transaction(session: Session, *, write: bool) -> Iterator[None]:
    """One SQLite transaction: a consistent snapshot to read, or the write lock taken up front."""
    session.commit()
    session.connection().exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield
        session.commit()
    except BaseException:
        session.rollback()
        raise


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def _jsonable(row: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    return {name: _iso(v) if isinstance(v := getattr(row, name), datetime) else v for name in fields}


def dump(session: Session, *, user_id: int) -> str:
    """The user's study state as backup JSON (deterministic: same state, same bytes)."""
    with _transaction(session, write=False):
        settings = session.get(StudySettings, user_id)
        if settings is None:
            raise BackupError(f"user {user_id} has no study settings: nothing to back up")
        states = session.exec(select(ItemState).where(col(ItemState.user_id) == user_id).order_by(col(ItemState.item_id))).all()
        logs = session.exec(select(ReviewLog).where(col(ReviewLog.user_id) == user_id).order_by(col(ReviewLog.id))).all()
        referenced = {s.item_id for s in states} | {log.item_id for log in logs}
        items = [item for item in session.exec(select(ReviewItem).order_by(col(ReviewItem.id))).all() if item.id in referenced]
    records = {
        "items": [_jsonable(i, ITEM_FIELDS) for i in items],
        "item_states": [_jsonable(s, STATE_FIELDS) for s in states],
        "review_logs": [_jsonable(log, LOG_FIELDS) for log in logs],
    }

    def line(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)

    parts = ["{", f'"format":{line(FORMAT)},', f'"version":{VERSION},',
             f'"settings":{line(_jsonable(settings, SETTINGS_FIELDS))},']
    for n, (key, rows) in enumerate(records.items()):
        comma = "," if n < len(records) - 1 else ""
        if rows:
            parts += [f'"{key}":[', ",\n".join(line(r) for r in rows), f"]{comma}"]
        else:
            parts.append(f'"{key}":[]{comma}')
    parts.append("}")
    return "\n".join(parts) + "\n"


def has_study_state(session: Session, *, user_id: int) -> str | None:
    """A description of the user's existing study state, or None when there is none to overwrite."""
    states = session.scalar(select(func.count()).select_from(ItemState).where(col(ItemState.user_id) == user_id)) or 0
    logs = session.scalar(select(func.count()).select_from(ReviewLog).where(col(ReviewLog.user_id) == user_id)) or 0
    settings = session.get(StudySettings, user_id)
    custom = settings is not None and any(
        getattr(settings, f) != getattr(StudySettings(user_id=user_id), f) for f in SETTINGS_FIELDS
    )
    if not (states or logs or custom):
        return None
    parts = [f"{states} item state(s)", f"{logs} review log(s)"] + (["changed settings"] if custom else [])
    return ", ".join(parts)


def restore(session: Session, doc: Backup, *, user_id: int, now: datetime, force: bool = False) -> dict[str, int]:
    """Replace the user's study state with a parsed backup's, in one transaction; counts of what was written.

    Refuses (BackupError) when the user already has study state, unless force.
    """
    with _transaction(session, write=True):
        existing = has_study_state(session, user_id=user_id)
        if existing and not force:
            raise BackupError(f"this data dir already has study state ({existing}); restore with --force to replace it")
        if session.get(User, user_id) is None:
            session.add(User(id=user_id, name="local" if user_id == 1 else f"user-{user_id}", created_at=now))
            session.flush()
        session.execute(delete(ShownItem).where(col(ShownItem.user_id) == user_id))
        session.execute(delete(ReviewLog).where(col(ReviewLog.user_id) == user_id))
        session.execute(delete(ItemState).where(col(ItemState.user_id) == user_id))
        settings = session.get(StudySettings, user_id) or StudySettings(user_id=user_id)
        for name in SETTINGS_FIELDS:
            setattr(settings, name, getattr(doc.settings, name))
        session.add(settings)
        placeholders = _ensure_items(session, doc.items, now=now)
        if doc.item_states:
            session.execute(insert(ItemState), [{"user_id": user_id, **s.model_dump()} for s in doc.item_states])
        for start in range(0, len(doc.review_logs), 5000):
            rows = [{"user_id": user_id, **log.model_dump()} for log in doc.review_logs[start : start + 5000]]
            session.execute(insert(ReviewLog), rows)
    return {"items": len(doc.items), "placeholders": placeholders, "item_states": len(doc.item_states),
            "review_logs": len(doc.review_logs)}


def _ensure_items(session: Session, items: list[_Item], *, now: datetime) -> int:
    """Create the review items the target lacks as retired placeholders (and their cards if unindexed)."""
    have_items = set(session.exec(select(ReviewItem.id)).all())
    missing = [item for item in items if item.id not in have_items]
    if not missing:
        return 0
    have_cards = set(session.exec(select(CardRow.id)).all())
    cards = sorted({item.card_id for item in missing} - have_cards)
    if cards:
        session.execute(insert(CardRow), [
            dict(id=c, path=PLACEHOLDER_PATH, content_hash="", title_zh=c, title_en=c, module_id="", module_zh="",
                 module_en="", topic_id="", topic_zh="", topic_en="", difficulty="", tags=[], related=[],
                 followup_keys=[], rendered=_EMPTY_RENDERING, indexed_at=now, retired_at=now)
            for c in cards
        ])
    session.execute(insert(ReviewItem), [{**item.model_dump(), "retired_at": now} for item in missing])
    return len(missing)
