"""GET /export/handbook.html: the offline handbook as a download, with the CLI's filters as query parameters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response

from app.deps import SessionDep, SettingsDep
from app.export.common import Selection
from app.export.handbook import build_handbook, handbook_filename

router = APIRouter(prefix="/export", tags=["export"])

Slug = Annotated[str, Query(max_length=64, pattern=r"^[a-z0-9-]*$", description="A module or topic id.")]


@router.get("/handbook.html")
def handbook(
    session: SessionDep,
    settings: SettingsDep,
    lang: Literal["both", "zh", "en"] = "both",
    module: Slug = "",
    topic: Slug = "",
) -> Response:
    selection = Selection(module=module or None, topic=topic or None)
    book = build_handbook(session, selection=selection, lang=lang, now=datetime.now(UTC), cards_root=settings.cards_dir)
    name = handbook_filename(selection=selection, lang=lang)
    return Response(
        book.html,
        media_type="text/html; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"},
    )
