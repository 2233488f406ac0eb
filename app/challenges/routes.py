"""The playground and challenge pages, their htmx fragments, and the JSON API (/api/run, submissions)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, NoReturn, TypeVar

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, ValidationError
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer
from starlette.exceptions import HTTPException

from app.cards.queries import cards_by_id
from app.cards.render import to_html, to_inline_html
from app.challenges import service
from app.challenges.model import Challenge
from app.challenges.queue import Busy, Stopped
from app.challenges.runtime import ALLOW_UNISOLATED_ENV, ChallengeRuntime
from app.deps import SessionDep
from app.errors import AppError, NotFound
from app.models import LOCAL_USER_ID, Submission
from app.templating import is_partial, render, templates
from sandbox import SandboxUnavailable

router = APIRouter(tags=["challenges"])

MAX_CODE_BYTES = 64 * 1024
# JSON escaping can make a 64 KiB program up to six times longer (\uXXXX); anything beyond is refused unread.
MAX_BODY_BYTES = 8 * MAX_CODE_BYTES
KIND_NAMES = {"trigger": ("触发", "Trigger"), "fix": ("修复", "Fix"), "predict": ("预测", "Predict")}
M = TypeVar("M", bound=BaseModel)


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    code: str


class SubmissionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    code: str | None = None
    choice: str | None = None


# Plumbing ################################################################


def _runtime(request: Request) -> ChallengeRuntime:
    runtime: ChallengeRuntime = request.app.state.challenges
    return runtime


def _user_id(_request: Request) -> int:
    """Local mode has one user; this is the one place to change when there are more."""
    return LOCAL_USER_ID


def _challenge(request: Request, challenge_id: str) -> Challenge:
    challenge = _runtime(request).challenges.get(challenge_id)
    if challenge is None:
        raise NotFound(f"No challenge with id '{challenge_id}'.")
    return challenge


def _code_size(code: str) -> int:
    return len(code.encode("utf-8", "surrogatepass"))


def _check_code_size(code: str) -> None:
    size = _code_size(code)
    if size > MAX_CODE_BYTES:
        raise HTTPException(413, f"The code is {size} bytes; the limit is {MAX_CODE_BYTES} bytes (64 KiB).")


async def _read_json(request: Request, model: type[M]) -> M:
    """The body, refused unread past MAX_BODY_BYTES (413), then validated strictly (422)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise HTTPException(413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise HTTPException(413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    try:
        return model.model_validate_json(bytes(body))
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False, include_context=False, include_input=False)) from None


def _refuse(exc: Exception) -> NoReturn:
    """Queue and sandbox refusals as HTTP: 429 + Retry-After, or 503 with the reason."""
    if isinstance(exc, Busy):
        raise HTTPException(429, exc.message, headers={"Retry-After": str(exc.retry_after)})
    if isinstance(exc, Stopped):
        raise HTTPException(503, "The server is shutting down; try again in a moment.", headers={"Retry-After": "5"})
    if isinstance(exc, SandboxUnavailable):
        raise HTTPException(503, f"The sandbox is unavailable: {exc.reason}")
    raise exc


def card_challenges(request: Any, card_id: str) -> list[Challenge]:
    """The challenges that train a card (a Jinja global for the card page; [] when challenges are not loaded)."""
    app = getattr(request, "scope", {}).get("app") if request is not None else None
    runtime = getattr(getattr(app, "state", None), "challenges", None)
    return runtime.challenges.for_card(card_id) if isinstance(runtime, ChallengeRuntime) else []


@lru_cache(maxsize=512)
def _markdown(text: str) -> Markup:
    return Markup(to_html(text))  # noqa: S704 - markdown-it with html disabled escapes the source


@lru_cache(maxsize=512)
def _markdown_inline(text: str) -> Markup:
    return Markup(to_inline_html(text))  # noqa: S704


_CODE_FORMATTER = HtmlFormatter(linespans="code-line", cssclass="highlight code-lines")


@lru_cache(maxsize=128)
def _python(code: str) -> Markup:
    """Highlighted code with one <span id="code-line-N"> per line, so a diagnosis can mark a line."""
    return Markup(highlight(code, PythonLexer(), _CODE_FORMATTER))  # noqa: S704 - pygments escapes the code


templates.env.globals.update(card_challenges=card_challenges, challenge_kind_names=KIND_NAMES)
templates.env.filters.update(challenge_md=_markdown, challenge_md_inline=_markdown_inline, python_lines=_python)


# JSON API ################################################################


@router.post("/api/run")
async def api_run(request: Request) -> JSONResponse:
    """Run code in the sandbox now (through the queue) and return the verdict: outcome, line, diagnosis, output."""
    body = await _read_json(request, RunRequest)
    _check_code_size(body.code)
    runtime = _runtime(request)
    try:
        result = await run_in_threadpool(runtime.run_now, user_id=_user_id(request), code=body.code)
    except (Busy, Stopped, SandboxUnavailable) as exc:
        _refuse(exc)
    return JSONResponse(result.to_json())


@router.post("/api/challenges/{challenge_id}/run")
async def api_challenge_run(request: Request, challenge_id: str) -> JSONResponse:
    """Run code as a submission to this challenge would run (with its checker), without grading or storing it."""
    challenge = _challenge(request, challenge_id)
    if challenge.kind == "predict":
        raise AppError("A predict challenge has nothing to run: choose an answer and submit it.")
    body = await _read_json(request, RunRequest)
    _check_code_size(body.code)
    runtime = _runtime(request)
    try:
        result = await run_in_threadpool(runtime.run_now, user_id=_user_id(request), code=body.code, challenge=challenge)
    except (Busy, Stopped, SandboxUnavailable) as exc:
        _refuse(exc)
    return JSONResponse(result.to_json())


def _submit(request: Request, challenge: Challenge, code: str | None, choice: str | None) -> Submission:
    if challenge.kind == "predict":
        if choice not in {c.id for c in challenge.choices}:
            raise AppError(f"Choose one of: {', '.join(c.id for c in challenge.choices)}.", status_code=422)
        code = ""
    else:
        if code is None:
            raise AppError("Send the code to grade.", status_code=422)
        _check_code_size(code)
        choice = None
    try:
        return _runtime(request).submit(user_id=_user_id(request), challenge=challenge, code=code, choice=choice)
    except (Busy, Stopped, SandboxUnavailable) as exc:
        _refuse(exc)


@router.post("/api/challenges/{challenge_id}/submissions", status_code=202)
async def api_submit(request: Request, challenge_id: str) -> JSONResponse:
    """Store a submission and queue it: 202 with its id; poll GET /api/submissions/{id} for the verdict."""
    challenge = _challenge(request, challenge_id)
    body = await _read_json(request, SubmissionRequest)
    submission = await run_in_threadpool(_submit, request, challenge, body.code, body.choice)
    return JSONResponse({"id": submission.id, "status": submission.status}, status_code=202,
                        headers={"Location": f"/api/submissions/{submission.id}"})


@router.get("/api/submissions/{submission_id}")
def api_submission(request: Request, session: SessionDep, submission_id: int) -> JSONResponse:
    """queued | running | done; when done, the verdict (passed, outcome, diagnosis, checks in order)."""
    submission = service.get_submission(session, submission_id=submission_id, user_id=_user_id(request))
    if submission is None:
        raise NotFound(f"No submission {submission_id}.")
    return JSONResponse(service.to_public(submission))


@router.get("/api/challenges")
def api_challenges(request: Request) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "card": c.card, "kind": c.kind, "difficulty": c.difficulty, "title": {"zh": c.title.zh, "en": c.title.en}}
        for c in _runtime(request).challenges.challenges.values()
    ]


# Pages ###################################################################


def _sandbox_context(request: Request) -> dict[str, Any]:
    runtime = _runtime(request)
    runtime.warm()
    return {"sandbox": runtime.state(), "allow_env": ALLOW_UNISOLATED_ENV}


@router.get("/playground")
def playground(request: Request) -> Response:
    return render(request, "challenges/playground.html", _sandbox_context(request), block="content")


@router.get("/challenges")
def challenge_index(request: Request) -> Response:
    challenges = sorted(_runtime(request).challenges.challenges.values(), key=lambda c: (c.card, c.kind, c.id))
    return render(request, "challenges/index.html", {"challenges": challenges}, block="content")


def _lines(verdict: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Editor highlights from a verdict: the line that raised, and the lines that saved / modified the tensor."""
    if not verdict:
        return []
    diagnosis = verdict.get("diagnosis") or {}
    found = [(verdict.get("line"), "raised"), (diagnosis.get("saved_by_line"), "saved"), (diagnosis.get("modified_at_line"), "modified")]
    lines: list[dict[str, Any]] = []
    for line, kind in found:
        if isinstance(line, int) and not any(x["line"] == line for x in lines):
            lines.append({"line": line, "kind": kind})
    return lines


def _verdict_context(
    request: Request, session: SessionDep, submission: Submission | None, *, with_history: bool, oob: bool
) -> dict[str, Any]:
    """The verdict panel; with_history: it sits on a challenge page, whose history it refreshes (oob: now)."""
    verdict = submission.verdict if submission is not None and submission.status == service.DONE else None
    challenge = _runtime(request).challenges.get(submission.challenge_id or "") if submission is not None else None
    return {
        "submission": submission,
        "verdict": verdict,
        "lines_json": json.dumps(_lines(verdict)),
        "challenge": challenge,
        "choices": {c.id: c for c in challenge.choices} if challenge is not None else {},
        "with_history": with_history,
        "oob": oob and challenge is not None,
        "history": service.history(session, user_id=_user_id(request), challenge_id=challenge.id) if oob and challenge else [],
    }


@router.get("/challenges/{challenge_id}")
def challenge_page(request: Request, session: SessionDep, challenge_id: str) -> Response:
    challenge = _challenge(request, challenge_id)
    history = service.history(session, user_id=_user_id(request), challenge_id=challenge.id)
    context = {
        **_sandbox_context(request),
        "challenge": challenge,
        "card": next(iter(cards_by_id(session, ids=[challenge.card])), None),
        "history": history,
        "submission": None,
        "verdict": None,
        "lines_json": "[]",
        "choices": {c.id: c for c in challenge.choices},
        "with_history": True,
        "oob": False,
        "hints_shown": 0,
        "show_solution": False,
    }
    return render(request, "challenges/challenge.html", context, block="content")


@router.post("/challenges/{challenge_id}/submissions")
async def submit_form(request: Request, session: SessionDep, challenge_id: str) -> Response:
    """The page's Submit (htmx): store and queue, answer with the verdict panel that then polls itself."""
    challenge = _challenge(request, challenge_id)
    form = await request.form()
    code, choice = form.get("code"), form.get("choice")
    try:
        submission = await run_in_threadpool(
            _submit, request, challenge, code if isinstance(code, str) else None, choice if isinstance(choice, str) else None
        )
    except (HTTPException, AppError) as exc:
        if not is_partial(request):
            raise
        # The panel stays in place (with the reason), so the next Submit still has a target.
        status = exc.status_code
        message = exc.detail if isinstance(exc, HTTPException) else exc.message
        context = {"submission": None, "verdict": None, "lines_json": "[]", "error": message, "oob": False}
        response = render(request, "challenges/_verdict.html", context, status_code=status)
        response.headers.update(getattr(exc, "headers", None) or {})
        return response
    if not is_partial(request):  # no JavaScript: the submission's own page, which shows the verdict when done
        return RedirectResponse(f"/submissions/{submission.id}", status_code=303)
    context = _verdict_context(request, session, submission, with_history=True, oob=True)
    return render(request, "challenges/_verdict.html", context)


@router.get("/submissions/{submission_id}")
def submission_page(request: Request, session: SessionDep, submission_id: int) -> Response:
    """One submission's verdict: the full page, or (htmx polling) just the panel until it is done."""
    submission = service.get_submission(session, submission_id=submission_id, user_id=_user_id(request))
    if submission is None:
        raise NotFound(f"No submission {submission_id}.")
    with_history = request.query_params.get("history") == "1"
    context = _verdict_context(request, session, submission, with_history=with_history, oob=with_history)
    if is_partial(request):
        return render(request, "challenges/_verdict.html", context)
    return render(request, "challenges/submission.html", context)


@router.get("/challenges/{challenge_id}/hints/{count}")
def hints(request: Request, challenge_id: str, count: int) -> Response:
    """The first `count` hints and the button for the next one (or for the solution after the last)."""
    challenge = _challenge(request, challenge_id)
    if not 1 <= count <= len(challenge.hints):
        raise NotFound(f"Challenge '{challenge_id}' has {len(challenge.hints)} hint(s).")
    context = {"challenge": challenge, "hints_shown": count, "show_solution": False}
    return render(request, "challenges/_hints.html", context)


@router.get("/challenges/{challenge_id}/solution")
def solution(request: Request, challenge_id: str) -> Response:
    """Every hint, then the reference solution and its explanation: the last stage."""
    challenge = _challenge(request, challenge_id)
    if challenge.kind == "predict":
        raise NotFound("A predict challenge's answer is what the sandbox finds: submit a choice.")
    context = {"challenge": challenge, "hints_shown": len(challenge.hints), "show_solution": True}
    return render(request, "challenges/_hints.html", context)
