"""Inside the forked child: confine, run the snippet, classify what it raised, send back one JSON line.

Everything written here is *untrusted* by the time the client reads it (the snippet shares this process and can
forge it). The client therefore treats the child's report as a claim about the snippet's own exception only;
time, memory, output, crashes and denied syscalls are judged from what the server observed, and grading is done
on the trusted side from the raw tensors in `values`.
"""

from __future__ import annotations

import builtins
import io
import json
import linecache
import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any, NoReturn

import torch

from sandbox import confine, outcomes
from sandbox.diagnose import USER_FILE, diagnose_version_error, parse_version_message
from sandbox.limits import Limits
from sandbox.protocol import ProtocolError, TensorData

CHECK_FILE = "<check>"
EXIT_CONFINE_FAILED = 70
_MAX_MESSAGE = 4000
_MAX_TRACEBACK = 8000


def child_main(
    job: dict[str, Any], *, out_fd: int, err_fd: int, result_fd: int, isolated: bool, server_pid: int, workdir: str
) -> NoReturn:
    """Entry point of the forked child; never returns."""
    forked = time.perf_counter()
    try:
        limits = Limits.from_json(job["limits"])
        confine.enter(
            out_fd=out_fd, err_fd=err_fd, result_fd=result_fd, limits=limits, isolated=isolated,
            server_pid=server_pid, workdir=workdir,
        )
    except BaseException as exc:  # noqa: BLE001 - a job that cannot be confined must not run at all
        fd = confine.RESULT if _is_open(confine.RESULT) else result_fd
        _write_all(fd, json.dumps({"confine_error": f"{type(exc).__name__}: {exc}"[:_MAX_MESSAGE]}) + "\n")
        os._exit(EXIT_CONFINE_FAILED)
    confined = time.perf_counter()
    try:
        report = execute(job, limits)
        # Untrusted like the rest of the report; only used to show where time goes (bench).
        report["timing"] = {"confine_ms": (confined - forked) * 1000, "run_ms": (time.perf_counter() - confined) * 1000}
        payload = json.dumps(report)
    except MemoryError:
        payload = json.dumps({"outcome": outcomes.MEMORY_LIMIT, "message": "out of memory while reporting"})
    except BaseException as exc:  # noqa: BLE001
        payload = json.dumps({"outcome": outcomes.INTERNAL_ERROR, "message": f"runner: {type(exc).__name__}"})
    _flush_std()
    _write_all(confine.RESULT, payload + "\n")
    os._exit(0)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _write_all(fd: int, text: str) -> None:
    data = text.encode("utf-8", "replace")
    while data:
        data = data[os.write(fd, data):]


def _flush_std() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - the snippet may have replaced or closed them
            pass


def _fresh_std_streams() -> None:
    # Line-buffered so output printed before a hang or a kill still reaches the user.
    sys.stdout = io.TextIOWrapper(
        io.FileIO(confine.STDOUT, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
        line_buffering=True,
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(confine.STDERR, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
        write_through=True,
    )
    sys.stdin = io.TextIOWrapper(io.FileIO(confine.STDIN, "r", closefd=False), encoding="utf-8")


class _Discard(io.TextIOBase):
    def write(self, s: str) -> int:
        return len(s)


def _user_line(tb: TracebackType | None, filename: str = USER_FILE) -> int | None:
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _format_traceback(exc: BaseException) -> str:
    """The exception with only the submission's (and checker's) frames: torch internals are noise here."""
    # lookup_lines=False: reading torch's own source files for frames we drop costs ~3 ms per error.
    stack = traceback.StackSummary.extract(traceback.walk_tb(exc.__traceback__), lookup_lines=False)
    frames = traceback.StackSummary.from_list([f for f in stack if f.filename in (USER_FILE, CHECK_FILE)])
    text = "".join(frames.format()) + "".join(traceback.format_exception_only(type(exc), exc))
    return text[-_MAX_TRACEBACK:]


def _exception_type(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _decode_inputs(raw: dict[str, Any]) -> dict[str, TensorData]:
    return {name: TensorData.from_json(obj) for name, obj in raw.items()}


def execute(job: dict[str, Any], limits: Limits, *, own_streams: bool = True) -> dict[str, Any]:
    """Run the submission (then the optional checker epilogue) and describe what happened."""
    if own_streams:
        _fresh_std_streams()
    source: str = job["code"]
    epilogue: str = job.get("epilogue") or ""
    seed = int(job.get("seed", 0))
    inputs = _decode_inputs(job.get("inputs") or {})
    linecache.cache[USER_FILE] = (len(source), None, source.splitlines(True), USER_FILE)
    linecache.cache[CHECK_FILE] = (len(epilogue), None, epilogue.splitlines(True), CHECK_FILE)
    try:
        code = compile(source, USER_FILE, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        line = exc.lineno if isinstance(exc, SyntaxError) else None
        return _report(outcomes.RUNTIME_ERROR, exc, line=line, where="submission")
    check = compile(epilogue, CHECK_FILE, "exec", dont_inherit=True) if epilogue else None

    def run_once(namespace: dict[str, Any]) -> None:
        torch.manual_seed(seed)
        random.seed(seed)
        namespace.update({name: data.to_torch() for name, data in inputs.items()})
        exec(code, namespace)
        if check is not None:
            exec(check, namespace)

    namespace = _namespace()
    try:
        run_once(namespace)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return _report(outcomes.RUNTIME_ERROR, exc, namespace=namespace, job=job, limits=limits)
    except BaseException as exc:  # noqa: BLE001 - every exception of the snippet is a verdict
        outcome = outcomes.classify_exception(exc)
        diagnosis = None
        if outcome == outcomes.INPLACE_VERSION_ERROR:
            diagnosis = parse_version_message(str(exc))
            if job.get("diagnose", True):
                diagnosis = _diagnose(lambda: run_once(_namespace()), str(exc)) or diagnosis
        return _report(outcome, exc, namespace=namespace, job=job, limits=limits, diagnosis=diagnosis)
    return _report(outcomes.OK, None, namespace=namespace, job=job, limits=limits)


def _namespace() -> dict[str, Any]:
    return {"__name__": "__main__", "__builtins__": builtins}


def _diagnose(rerun: Callable[[], None], message: str) -> dict[str, Any] | None:
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = _Discard()
    try:
        return diagnose_version_error(rerun, message)
    except Exception:  # noqa: BLE001 - a diagnosis is a bonus; the verdict stands without it
        return None
    finally:
        sys.stdout, sys.stderr = saved


def _report(
    outcome: str,
    exc: BaseException | None,
    *,
    line: int | None = None,
    where: str | None = None,
    namespace: dict[str, Any] | None = None,
    job: dict[str, Any] | None = None,
    limits: Limits | None = None,
    diagnosis: dict[str, Any] | None = None,
) -> dict[str, Any]:
    report: dict[str, Any] = {"outcome": outcome, "diagnosis": diagnosis}
    if exc is not None:
        report["exception_type"] = _exception_type(exc)
        report["message"] = str(exc)[:_MAX_MESSAGE]
        report["traceback"] = _format_traceback(exc)
        if line is None:
            line = _user_line(exc.__traceback__)
            if line is None and _user_line(exc.__traceback__, CHECK_FILE) is not None:
                where = "check"
                report["check_line"] = _user_line(exc.__traceback__, CHECK_FILE)
        report["line"] = line
        report["where"] = where or ("submission" if line is not None else None)
    if namespace is not None and job is not None and limits is not None:
        report["values"], report["missing"] = _collect(namespace, job.get("wants") or [], limits.result_bytes)
    return report


def _resolve(namespace: dict[str, Any], dotted: str) -> Any:
    head, *rest = dotted.split(".")
    value = namespace[head]
    for attr in rest:
        value = getattr(value, attr)
    return value


def _collect(namespace: dict[str, Any], wants: list[str], budget: int) -> tuple[dict[str, Any], dict[str, str]]:
    values: dict[str, Any] = {}
    missing: dict[str, str] = {}
    for name in wants:
        try:
            value = _resolve(namespace, name)
            if isinstance(value, torch.Tensor):
                data = TensorData.from_torch(value)
                if len(data.data) > budget:
                    missing[name] = "too large to send back"
                    continue
                budget -= len(data.data)
                values[name] = data.to_json()
            elif value is None or isinstance(value, (bool, int, float)):
                values[name] = value
            else:
                missing[name] = f"not a tensor or number ({type(value).__name__})"
        except (KeyError, AttributeError):
            missing[name] = "not defined"
        except (ProtocolError, Exception) as exc:  # noqa: BLE001
            missing[name] = f"cannot be sent back: {type(exc).__name__}"
    return values, missing


def warm_up() -> None:
    """Pay one-time costs in the server (lazy imports, dispatch and traceback caches) so children start warm.

    Runs the real execute() path on a passing and an in-place-failing snippet, output discarded (the server's
    own stdout is the control channel).
    """
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = _Discard()
    try:
        limits = Limits()
        fixed = "import torch\nx = torch.ones(2, requires_grad=True)\ny = x.sigmoid()\n(y * 2).sum().backward()\n"
        buggy = fixed.replace("(y * 2)", "y.mul_(2)\ny")
        for code in (fixed, buggy):
            report = execute({"code": code, "wants": ["x.grad"], "limits": limits.to_json()}, limits, own_streams=False)
            json.dumps(report)
            for value in report["values"].values():
                if value is not None:
                    TensorData.from_json(value).to_torch()
        torch.autograd.gradcheck(lambda t: (t * t).sum(), torch.ones(2, dtype=torch.float64, requires_grad=True))
        torch.manual_seed(0)  # the first call costs ~1 ms
    finally:
        sys.stdout, sys.stderr = saved
