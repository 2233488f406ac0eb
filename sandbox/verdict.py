"""Turn what the fork server observed into a RunResult, on the trusted side.

The kill reason, exit status and signal come from the server (outside the child); the child's JSON report is
untrusted and only believed for what it is: a claim about the snippet's own exception. It is size-capped by the
server, parsed once, and every field is type-checked; unknown outcomes become internal_error.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sandbox import explain, outcomes
from sandbox.limits import Limits
from sandbox.protocol import ProtocolError, Value, value_from_json

# What the child may claim by itself (the others are imposed by the runner/server).
_CHILD_OUTCOMES = frozenset(outcomes.SNIPPET_OUTCOMES) | {
    outcomes.MEMORY_LIMIT, outcomes.OUTPUT_LIMIT, outcomes.SECURITY_VIOLATION,
}
_FAULT_FRAME = re.compile(r'File "<submission>", line (\d+)')
_DIAGNOSIS_INTS = ("saved_by_line", "modified_at_line", "expected_version", "found_version")
_DIAGNOSIS_STRS = ("tensor_dtype", "output_of", "backward_op", "saved_by_op", "inplace_op")
EXIT_CONFINE_FAILED = 70  # runner.EXIT_CONFINE_FAILED (not imported: runner imports torch)


@dataclass(frozen=True)
class RunResult:
    """The verdict on one run. `values` holds the requested tensors/numbers for trusted-side grading."""

    outcome: str
    exception_type: str | None
    message: str
    line: int | None
    diagnosis: dict[str, Any] | None
    stdout: str
    stderr: str
    duration_ms: float
    values: Mapping[str, Value] = field(default_factory=dict)
    missing: Mapping[str, str] = field(default_factory=dict)
    traceback: str = ""
    output_truncated: bool = False
    isolated: bool = True
    cpu_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.outcome == outcomes.OK

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict for the app (tensors summarised as dtype/shape; grade them with sandbox.grading)."""
        def summary(value: Value) -> Any:
            if hasattr(value, "dtype"):
                return {"dtype": value.dtype, "shape": list(value.shape)}  # type: ignore[union-attr]
            return value

        return {
            "outcome": self.outcome,
            "exception_type": self.exception_type,
            "message": self.message,
            "line": self.line,
            "diagnosis": self.diagnosis,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "duration_ms": self.duration_ms,
            "values": {k: summary(v) for k, v in self.values.items()},
            "missing": dict(self.missing),
            "traceback": self.traceback,
            "output_truncated": self.output_truncated,
            "isolated": self.isolated,
            "cpu_ms": self.cpu_ms,
        }


def internal_error(message: str, *, isolated: bool = True, duration_ms: float = 0.0) -> RunResult:
    en, zh = explain.sentences(outcomes.INTERNAL_ERROR, line=None)
    return RunResult(
        outcome=outcomes.INTERNAL_ERROR, exception_type=None, message=message, line=None,
        diagnosis={"en": en, "zh": zh}, stdout="", stderr="", duration_ms=duration_ms, isolated=isolated,
    )


def _str(value: Any, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def _int(value: Any, low: int = 0, high: int = 1 << 31) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high else None


def _child_report(text: str) -> dict[str, Any] | None:
    lines = text.strip().splitlines()
    if not lines:
        return None
    try:
        report = json.loads(lines[-1])
    except ValueError:
        return None
    return report if isinstance(report, dict) else None


def _clean_diagnosis(raw: Any, max_line: int) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {}
    clean: dict[str, Any] = {}
    for key in _DIAGNOSIS_INTS:
        clean[key] = _int(raw.get(key))
    for key in ("saved_by_line", "modified_at_line"):
        if clean[key] is not None and not 1 <= clean[key] <= max_line:
            clean[key] = None
    for key in _DIAGNOSIS_STRS:
        clean[key] = _str(raw.get(key), 80)
    shape = raw.get("tensor_shape")
    clean["tensor_shape"] = (
        [d for d in shape if _int(d) is not None][:16] if isinstance(shape, list) else None
    )
    return clean


def _values(report: dict[str, Any], wants: Sequence[str]) -> tuple[dict[str, Value], dict[str, str]]:
    raw_values = report.get("values") if isinstance(report.get("values"), dict) else {}
    raw_missing = report.get("missing") if isinstance(report.get("missing"), dict) else {}
    values: dict[str, Value] = {}
    missing: dict[str, str] = {}
    for name in wants:
        if name in raw_values:
            try:
                values[name] = value_from_json(raw_values[name])
            except ProtocolError as exc:
                missing[name] = f"invalid data: {exc}"
        else:
            missing[name] = _str(raw_missing.get(name), 200) or "not sent back"
    return values, missing


def build(
    response: Mapping[str, Any], *, code: str, wants: Sequence[str], limits: Limits, isolated: bool
) -> RunResult:
    """The verdict for one finished job."""
    max_line = code.count("\n") + 1
    killed = response.get("killed")
    sig = _int(response.get("signal"))
    exit_code = _int(response.get("exit_code"), 0, 255)
    cpu_ms = float(response.get("cpu_ms") or 0.0)
    text = response.get("result") if isinstance(response.get("result"), str) else ""
    report = _child_report(text) or {}
    fault = _FAULT_FRAME.search(text)
    fault_line = int(fault.group(1)) if fault and 1 <= int(fault.group(1)) <= max_line else None

    outcome: str
    exception_type: str | None = None
    message = ""
    line: int | None = None
    limit_text = ""
    details: dict[str, Any] = {}
    from_report = False  # only a normally finished child's report carries values and a traceback
    if killed == "wall":
        outcome, limit_text = outcomes.TIMEOUT, f"wall clock {limits.wall_s:g} s"
        message = f"Stopped after the wall-clock limit of {limits.wall_s:g} s."
    elif killed == "output":
        outcome, limit_text = outcomes.OUTPUT_LIMIT, f"{limits.output_bytes} bytes of output"
        message = f"Printed more than {limits.output_bytes} bytes."
    elif killed == "result":
        outcome, limit_text = outcomes.OUTPUT_LIMIT, f"{limits.result_bytes} bytes of returned values"
        message = f"Sent back more than {limits.result_bytes} bytes of values."
    elif killed is not None:
        return internal_error(f"the job was stopped ({killed})", isolated=isolated)
    elif sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_ms >= limits.cpu_s * 1000):
        outcome, limit_text = outcomes.TIMEOUT, f"CPU time {limits.cpu_s} s"
        message = f"Used more than {limits.cpu_s} s of CPU time."
    elif sig == signal.SIGSYS:
        outcome, line = outcomes.SECURITY_VIOLATION, fault_line
        message = "A system call the sandbox forbids was blocked (processes, sockets, ptrace, mounts, ...)."
    elif sig is not None:
        outcome, line = outcomes.RUNTIME_ERROR, fault_line
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        exception_type, message = name, f"The process crashed with {name}."
    elif exit_code == EXIT_CONFINE_FAILED and "confine_error" in report:
        return internal_error(f"could not confine the job: {_str(report['confine_error'], 500)}", isolated=isolated)
    elif exit_code != 0 or report.get("outcome") not in _CHILD_OUTCOMES:
        outcome = outcomes.RUNTIME_ERROR
        exception_type = "SystemExit"
        message = f"The process exited with status {exit_code} before finishing."
    else:
        from_report = True
        outcome = report["outcome"]
        exception_type = _str(report.get("exception_type"), 200)
        message = _str(report.get("message"), 4000) or ""
        line = _int(report.get("line"), 1, max_line)
        if outcome == outcomes.INPLACE_VERSION_ERROR:
            details = _clean_diagnosis(report.get("diagnosis"), max_line)

    values, missing = _values(report, wants) if from_report else ({}, {n: "no result" for n in wants})
    diagnosis: dict[str, Any] | None = None
    if outcome != outcomes.OK:
        en, zh = explain.sentences(
            outcome, line=line, exception_type=exception_type, message=message, details=details,
            limit_text=limit_text,
        )
        diagnosis = {**details, "line": line, "en": en, "zh": zh}
    return RunResult(
        outcome=outcome,
        exception_type=exception_type,
        message=message,
        line=line,
        diagnosis=diagnosis,
        stdout=_str(response.get("stdout"), limits.output_bytes * 4) or "",
        stderr=_str(response.get("stderr"), limits.output_bytes * 4) or "",
        duration_ms=float(response.get("duration_ms") or 0.0),
        values=values,
        missing=missing,
        traceback=(_str(report.get("traceback"), 8000) or "") if from_report else "",
        output_truncated=bool(response.get("output_truncated")),
        isolated=isolated,
        cpu_ms=cpu_ms,
    )

