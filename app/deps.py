"""Request-scoped dependencies: the database session, the settings and the kept day queues."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session

from app.review.queue_cache import QueueCache
from app.settings import Settings


def get_session(request: Request) -> Iterator[Session]:
    with Session(request.app.state.engine) as session:
        yield session


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_queues(request: Request) -> QueueCache:
    queues: QueueCache = request.app.state.queues
    return queues


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
QueuesDep = Annotated[QueueCache, Depends(get_queues)]
