"""What this study session has done so far (for the counters and the end-of-session summary)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, func, select
from sqlmodel import col

from app.models import ReviewLog
from app.prepared import Prepared


@dataclass(frozen=True)
class SessionSummary:
    answered: int
    again: int
    seconds: float

    @property
    def again_pct(self) -> int:
        return round(100 * self.again / self.answered) if self.answered else 0


# Compiled once: it runs after every answer.
_SUMMARY = Prepared(
    select(
        func.count().label("answered"),
        func.sum(col(ReviewLog.rating) == 1).label("again"),
        func.sum(ReviewLog.duration_ms).label("ms"),
    ).where(
        col(ReviewLog.user_id) == bindparam("user_id"),
        col(ReviewLog.study_session) == bindparam("study_session"),
        col(ReviewLog.undone_at).is_(None),
    )
)


def session_summary(connection: Connection, *, user_id: int, study_session: str) -> SessionSummary:
    row = _SUMMARY.first(connection, user_id=user_id, study_session=study_session)
    assert row is not None
    return SessionSummary(answered=int(row["answered"] or 0), again=int(row["again"] or 0), seconds=(row["ms"] or 0) / 1000)
