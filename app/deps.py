"""Request-scoped dependencies: the database session, the settings and the kept day queues.

They are `async def` although none awaits: FastAPI runs a plain `def` dependency in its thread pool, and each
such hop (two for a generator: enter and exit) cost an answer about 0.1 ms. Opening a Session does no I/O;
closing one returns its connection to the pool.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session

from app.review.queue_cache import QueueCache
from app.settings import Settings


async def get_session(request: Request) -> AsyncIterator[Session]:
    with Session(request.app.state.engine) as session:
        yield session


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_queues(request: Request) -> QueueCache:
    queues: QueueCache = request.app.state.queues
    return queues


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
QueuesDep = Annotated[QueueCache, Depends(get_queues)]
