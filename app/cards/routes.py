"""Pages over the card library: home (browse, filter, search), card, knowledge graph, status."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from app.cards import queries
from app.cards.model import DIFFICULTIES, SECTION_NAMES_ZH, SECTIONS
from app.deps import SessionDep
from app.errors import AppError, NotFound
from app.templating import render

router = APIRouter(tags=["cards"])

SearchText = Annotated[str, Query(max_length=200, description="Words in Chinese or English.")]
TagFilter = Annotated[str, Query(max_length=64, description="Only cards with this tag.")]


@router.get("/")
def home(request: Request, session: SessionDep, q: SearchText = "", difficulty: str = "", tag: TagFilter = "") -> Response:
    if difficulty and difficulty not in DIFFICULTIES:
        raise AppError(f"unknown difficulty {difficulty!r}: choose one of {', '.join(DIFFICULTIES)}")
    cards = queries.list_cards(session, query=q.strip() or None, difficulty=difficulty or None, tag=tag or None)
    context = {
        "modules": queries.group_by_module(cards),
        "total": len(cards),
        "tags": queries.tag_counts(session),
        "difficulty_counts": queries.difficulty_counts(cards),
        "filters": {"q": q, "difficulty": difficulty, "tag": tag},
        "filtered": bool(q.strip() or difficulty or tag),
    }
    return render(request, "cards/index.html", context, block="results")


@router.get("/cards/{card_id}")
def card_page(request: Request, session: SessionDep, card_id: str) -> Response:
    card = queries.get_card(session, card_id=card_id)
    if card is None:
        raise NotFound(f"No card with id '{card_id}'.")
    previous, following = queries.topic_neighbours(session, card=card)
    context = {
        "card": card,
        "sections": [(key, SECTIONS[key], SECTION_NAMES_ZH[key]) for key in SECTIONS],
        "related": queries.cards_by_id(session, ids=card.related),
        "backlinks": queries.backlinks(session, card_id=card.id),
        "previous": previous,
        "next": following,
    }
    return render(request, "cards/card.html", context, block="content")


@router.get("/graph")
def graph_page(request: Request) -> Response:
    return render(request, "cards/graph.html", {}, block="content")


@router.get("/graph.json")
def graph_data(session: SessionDep) -> JSONResponse:
    return JSONResponse(queries.graph_elements(session))


@router.get("/status")
def status_page(request: Request, session: SessionDep) -> Response:
    context = {
        "problems": queries.load_problems(session),
        "retired": queries.retired_cards(session),
        "active": queries.count_active(session),
    }
    return render(request, "status.html", context, block="content")


@router.get("/healthz", include_in_schema=False)
def healthz() -> dict[str, str]:
    return {"status": "ok"}
