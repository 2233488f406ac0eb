"""The statistics page (tables and a heatmap that need no JavaScript) and the same numbers as JSON for its charts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlmodel import Session

from app.deps import SessionDep
from app.models import LOCAL_USER_ID
from app.review import service, stats
from app.templating import render

router = APIRouter(tags=["stats"])

HEAT_LEVELS = 4


@dataclass(frozen=True)
class HeatCell:
    day: date
    count: int
    level: int  # 0 (none) .. HEAT_LEVELS (the busiest day)


def _level(count: int, busiest: int) -> int:
    return 0 if count == 0 else max(1, min(HEAT_LEVELS, math.ceil(HEAT_LEVELS * count / busiest)))


def heatmap_grid(heatmap: stats.Heatmap) -> dict[str, Any]:
    """A calendar grid: one column per week, Monday on top; month names over the week a month starts in."""
    first = heatmap.days[0].day
    pad = first.weekday()
    cells = [HeatCell(d.day, d.count, _level(d.count, heatmap.busiest)) for d in heatmap.days]
    months = [((pad + i) // 7 + 1, c.day.month) for i, c in enumerate(cells) if c.day.day == 1]
    return {"pad": pad, "cells": cells, "weeks": (pad + len(cells) + 6) // 7, "months": months}


def _overview(session: Session) -> stats.Stats:
    settings = service.get_settings(session, user_id=LOCAL_USER_ID)
    return stats.overview(session, user_id=LOCAL_USER_ID, settings=settings, now=datetime.now(UTC))


@router.get("/stats")
def stats_page(request: Request, session: SessionDep) -> Response:
    data = _overview(session)
    forecast = [d.count for d in data.forecast]
    context = {
        "stats": data,
        "grid": heatmap_grid(data.heatmap),
        "due": {"today": forecast[0], "tomorrow": forecast[1], "week": sum(forecast[:7]), "month": sum(forecast)},
    }
    return render(request, "review/stats.html", context, block="content")


@router.get("/stats.json")
def stats_json(session: SessionDep) -> stats.Stats:
    return _overview(session)
