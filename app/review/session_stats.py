"""What this study session has done so far (for the counters and the end-of-session summary)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlmodel import Session, col

from app.models import ReviewLog


@dataclass(frozen=True)
class SessionSummary:
    answered: int
    again: int
    seconds: float

    @property
    def again_pct(self) -> int:
        return round(100 * self.again / self.answered) if self.answered else 0


def session_summary(session: Session, *, user_id: int, study_session: str) -> SessionSummary:
    row = session.execute(
        select(func.count(), func.sum(col(ReviewLog.rating) == 1), func.sum(ReviewLog.duration_ms)).where(
            col(ReviewLog.user_id) == user_id, col(ReviewLog.study_session) == study_session, col(ReviewLog.undone_at).is_(None)
        )
    ).one()
    return SessionSummary(answered=int(row[0] or 0), again=int(row[1] or 0), seconds=(row[2] or 0) / 1000)
