"""What this study session has done so far (for the counters and the end-of-session summary)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, func, select
from sqlmodel import col

from app.models import ReviewLog


@dataclass(frozen=True)
class SessionSummary:
    answered: int
    again: int
    seconds: float

    @property
    def again_pct(self) -> int:
        return round(100 * self.again / self.answered) if self.answered else 0


# Built once: it runs after every answer.
_SUMMARY = select(func.count(), func.sum(col(ReviewLog.rating) == 1), func.sum(ReviewLog.duration_ms)).where(
    col(ReviewLog.user_id) == bindparam("user_id"),
    col(ReviewLog.study_session) == bindparam("study_session"),
    col(ReviewLog.undone_at).is_(None),
)


def session_summary(connection: Connection, *, user_id: int, study_session: str) -> SessionSummary:
    row = connection.execute(_SUMMARY, {"user_id": user_id, "study_session": study_session}).one()
    return SessionSummary(answered=int(row[0] or 0), again=int(row[1] or 0), seconds=(row[2] or 0) / 1000)
