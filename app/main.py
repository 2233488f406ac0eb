"""create_app(settings) -> FastAPI: wiring only (database, card sync, static files, routers, errors)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from fastapi import Depends, FastAPI
from sqlmodel import Session

from app.cards.routes import router as cards_router
from app.challenges.routes import router as challenges_router
from app.challenges.runtime import start_runtime
from app.error_pages import install_error_handlers
from app.export.routes import router as export_router
from app.library import open_indexed
from app.review.queue_cache import QueueCache
from app.review.routes import router as review_router
from app.review.service import prune_shown
from app.review.settings_routes import router as settings_router
from app.review.stats_routes import router as stats_router
from app.security import same_origin
from app.settings import Settings
from app.templating import static_files

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        now = datetime.now(UTC)
        engine, report = open_indexed(settings.db_path, settings.cards_dir, now=now)
        with Session(engine) as session:
            prune_shown(session, now=now)
        log.info("cards: %s", report.summary())
        app.state.engine = engine
        # Challenges: the sandbox (started lazily) and its worker pool, which re-queues unfinished submissions.
        app.state.challenges = start_runtime(settings, engine)
        yield
        app.state.challenges.stop()
        engine.dispose()

    app = FastAPI(
        title="DepthCards",
        lifespan=lifespan,
        dependencies=[Depends(same_origin)],
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.state.settings = settings
    app.state.queues = QueueCache()  # each user's day queue, kept between answers
    app.mount("/static", static_files(), name="static")
    app.include_router(cards_router)
    app.include_router(review_router)
    app.include_router(challenges_router)
    app.include_router(settings_router)
    app.include_router(stats_router)
    app.include_router(export_router)
    install_error_handlers(app)
    return app
