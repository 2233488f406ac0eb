"""Request checks that apply to the whole app."""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request

from app.errors import AppError

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def same_origin(request: Request) -> None:
    """Refuse a cross-site write: another web page must not answer reviews, restore settings or run code here.

    `async` only so FastAPI doesn't send this header check, which runs on every request, to its thread pool.

    Browsers send Origin with every cross-origin POST, including plain form posts and text/plain fetches that need
    no CORS preflight; other clients (curl, scripts) send none and are let through.
    """
    if request.method in _SAFE_METHODS:
        return
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host", ""):
        raise AppError("Cross-site requests may not change anything here.", status_code=403)
