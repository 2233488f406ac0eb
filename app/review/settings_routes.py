"""The settings page: study settings (GET/POST /settings) and the FSRS optimizer button.

The optimizer runs for seconds to minutes, so the button starts it in a background thread and the page
polls its progress (htmx, every second); one fit runs at a time per app.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from fsrs.scheduler import DEFAULT_PARAMETERS
from sqlmodel import Session

from app.deps import SessionDep
from app.errors import AppError
from app.models import LOCAL_USER_ID
from app.review import optimize as opt
from app.review import settings_form
from app.review.service import get_settings
from app.templating import is_partial, render

router = APIRouter(prefix="/settings", tags=["settings"])
log = logging.getLogger(__name__)

PHASES = {
    "start": ("读取复习记录", "Reading your review history"),
    "fit": ("拟合参数（每轮一次）", "Fitting parameters (epochs)"),
    "evaluate": ("比较新旧参数", "Comparing old and new parameters"),
    "reschedule": ("重新安排到期时间", "Rescheduling items"),
}


@dataclass
class OptimizeJob:
    """One optimizer run, shared between its thread and the polling requests."""

    phase: str = "start"
    done: int = 0
    total: int = 0
    report: opt.OptimizeReport | None = None
    error: str | None = None
    finished: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def update(self, phase: str, done: int, total: int) -> None:
        with self.lock:
            self.phase, self.done, self.total = phase, done, total

    def view(self) -> dict[str, Any]:
        with self.lock:
            return {"phase": PHASES.get(self.phase, (self.phase, self.phase)), "done": self.done, "total": self.total,
                    "report": self.report, "error": self.error, "finished": self.finished}


_START_LOCK = threading.Lock()


def _job(request: Request) -> OptimizeJob | None:
    return getattr(request.app.state, "optimize_job", None)


def _run(job: OptimizeJob, engine: Any, user_id: int) -> None:
    try:
        with Session(engine) as session:
            report = opt.optimize(session, user_id=user_id, now=datetime.now(UTC), progress=job.update)
        with job.lock:
            job.report = report
    except AppError as exc:
        with job.lock:
            job.error = exc.message
    except Exception:  # a thread has no error page: log it and tell the person polling
        log.exception("optimizer failed")
        with job.lock:
            job.error = "The optimizer failed; the error has been logged and nothing was changed."
    finally:
        with job.lock:
            job.finished = True


def _optimizer_context(request: Request, session: Session, *, refusal: opt.NotEnoughHistory | None = None) -> dict[str, Any]:
    job = _job(request)
    running = job is not None and not job.finished
    settings = get_settings(session, user_id=LOCAL_USER_ID)
    # Counting reads every answer: skip it while a fit runs and the block is polled every second.
    counted = None if running else opt.count_in_db(session, user_id=LOCAL_USER_ID, now=datetime.now(UTC))
    return {
        "counted": counted,
        "needed": opt.MIN_REVIEWS,
        "custom_parameters": settings.fsrs_parameters,
        "default_parameters": DEFAULT_PARAMETERS,
        "job": job.view() if job else None,
        "running": running,
        "refusal": refusal,
    }


def _page(request: Request, session: Session, *, raw: dict[str, str] | None = None,
          errors: dict[str, settings_form.Message] | None = None, saved: bool = False, refusal: opt.NotEnoughHistory | None = None,
          status_code: int = 200) -> Response:
    settings = get_settings(session, user_id=LOCAL_USER_ID)
    context = {
        "form": raw if raw is not None else settings_form.form_values(settings),
        "errors": errors or {},
        "saved": saved,
        **_optimizer_context(request, session, refusal=refusal),
    }
    return render(request, "review/settings.html", context, status_code=status_code)


@router.get("")
def settings_page(request: Request, session: SessionDep, saved: bool = False) -> Response:
    return _page(request, session, saved=saved)


@router.post("")
async def save_settings(request: Request, session: SessionDep) -> Response:
    form = await request.form()
    parsed = settings_form.parse_form({k: v for k, v in form.items() if isinstance(v, str)})
    if parsed.prefs is None:
        return _page(request, session, raw=parsed.raw, errors=parsed.errors, status_code=400)
    settings = get_settings(session, user_id=LOCAL_USER_ID)
    settings_form.apply(settings, parsed.prefs)
    session.add(settings)
    session.commit()
    return RedirectResponse("/settings?saved=true", status_code=303)


@router.get("/optimize")
def optimizer_status(request: Request, session: SessionDep) -> Response:
    """The optimizer block alone for htmx polling, or the whole settings page."""
    return render(request, "review/settings.html", _optimizer_context(request, session), block="optimizer")


@router.post("/optimize")
def start_optimizer(request: Request, session: SessionDep) -> Response:
    """Start a fit unless one is running; refuse (with how many more reviews) below fsrs's threshold."""
    refusal = None
    with _START_LOCK:
        job = _job(request)
        if job is None or job.finished:
            counted = opt.count_in_db(session, user_id=LOCAL_USER_ID, now=datetime.now(UTC))
            if counted < opt.MIN_REVIEWS:
                refusal = opt.NotEnoughHistory(counted)
            else:
                job = OptimizeJob()
                request.app.state.optimize_job = job
                engine = request.app.state.engine
                threading.Thread(target=_run, args=(job, engine, LOCAL_USER_ID), name="fsrs-optimizer", daemon=True).start()
    if not is_partial(request):  # without JavaScript: back to the page, which shows the run or the refusal
        if refusal is None:
            return RedirectResponse("/settings#optimizer", status_code=303)
        return _page(request, session, refusal=refusal)
    return render(request, "review/settings.html", _optimizer_context(request, session, refusal=refusal), block="optimizer")
