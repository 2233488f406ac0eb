"""One exception root for the app's domain errors; app/error_pages.py maps them to HTTP responses.

No web imports here: domain modules raise these without knowing about FastAPI.
"""

from __future__ import annotations


class AppError(Exception):
    """An error with a message meant for the person who caused it, and its HTTP status."""

    status_code = 400

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code


class NotFound(AppError):
    status_code = 404


class Conflict(AppError):
    """The request was valid but the world moved on (a stale token, an answer applied elsewhere)."""

    status_code = 409

