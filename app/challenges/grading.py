"""RunResult + what the challenge expects -> a verdict with per-check results, in order. Pure: no I/O.

Everything compared here came back from the sandbox as data (outcome, lines, raw tensors); nothing the child
computed about itself (its own allclose, say) is believed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from app.challenges import harness
from app.challenges.model import Challenge, Choice
from sandbox import RunResult, TensorData, outcomes

OUTPUT_CAP = 4000  # characters of stdout/stderr kept with a verdict


@dataclass(frozen=True)
class Check:
    """One line of the verdict: what was checked (zh/en), whether it held, and the detail when it did not."""

    name: str
    ok: bool
    zh: str
    en: str
    detail: str = ""  # language-neutral numbers, or an English message from the sandbox
    skipped: bool = False


@dataclass(frozen=True)
class Verdict:
    passed: bool
    kind: str
    outcome: str
    checks: list[Check]
    summary_zh: str
    summary_en: str
    exception_type: str | None = None
    message: str = ""
    line: int | None = None
    diagnosis: dict[str, Any] | None = None
    stdout: str = ""
    stderr: str = ""
    duration_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)  # kind-specific facts: truth, saved bytes ...

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["checks"] = [asdict(c) for c in self.checks]
        return data


def _run_fields(result: RunResult) -> dict[str, Any]:
    return {
        "outcome": result.outcome,
        "exception_type": result.exception_type,
        "message": result.message[:OUTPUT_CAP],
        "line": result.line,
        "diagnosis": result.diagnosis,
        "stdout": result.stdout[:OUTPUT_CAP],
        "stderr": result.stderr[:OUTPUT_CAP],
        "duration_ms": round(result.duration_ms, 1),
    }


def _summary(passed: bool, checks: list[Check]) -> tuple[str, str]:
    if passed:
        return "通过：每一项检查都满足。", "Passed: every check holds."
    failed = sum(1 for c in checks if not c.ok and not c.skipped)
    return f"未通过：{failed} 项检查不满足。", f"Not passed: {failed} check(s) failed."


def internal_verdict(challenge: Challenge, result: RunResult, why_en: str, why_zh: str) -> Verdict:
    """The challenge itself (or the sandbox) failed, not the submission."""
    check = Check("internal", False, why_zh, why_en, detail=result.message[:500])
    return Verdict(
        passed=False, kind=challenge.kind, checks=[check], summary_zh=why_zh, summary_en=why_en,
        **{**_run_fields(result), "outcome": outcomes.INTERNAL_ERROR},
    )


# Trigger #################################################################


def grade_trigger(challenge: Challenge, result: RunResult) -> Verdict:
    """The run must end in the expected outcome (and, if asked, with matching diagnosis fields or message)."""
    expect = challenge.expect
    assert expect is not None
    got_it = result.outcome == expect.outcome
    checks = [
        Check(
            "outcome", got_it, f"结果是 {expect.outcome}", f"outcome is {expect.outcome}",
            detail="" if got_it else f"got {result.outcome}",
        )
    ]
    diagnosis = result.diagnosis or {}
    for key, wanted in expect.diagnosis.items():
        value = diagnosis.get(key)
        ok = got_it and value == wanted
        checks.append(
            Check(f"diagnosis:{key}", ok, f"诊断中 {key} 为 {wanted}", f"diagnosis {key} is {wanted}",
                  detail="" if ok else f"got {value!r}", skipped=not got_it)
        )
    if expect.message:
        ok = got_it and expect.message.lower() in result.message.lower()
        checks.append(
            Check("message", ok, f"错误信息包含 “{expect.message}”", f"message contains “{expect.message}”",
                  detail="" if ok else (result.message.splitlines() or [""])[0][:200], skipped=not got_it)
        )
    passed = all(c.ok for c in checks)
    zh, en = _summary(passed, checks)
    return Verdict(passed=passed, kind=challenge.kind, checks=checks, summary_zh=zh, summary_en=en, **_run_fields(result))


# Fix #####################################################################


def grade_fix(challenge: Challenge, result: RunResult, reference: RunResult) -> Verdict:
    """The submission runs, its result and gradients match the reference's, and it keeps within the budget."""
    from sandbox.grading import compare  # torch: imported only when a fix challenge is graded

    if reference.outcome != outcomes.OK or any(n not in reference.values for n in harness.wants(challenge)):
        return internal_verdict(
            challenge, reference,
            "The challenge's reference solution failed in the sandbox; this is a bug in the challenge, not in your code.",
            "挑战的参考答案在沙箱中运行失败；这是挑战本身的问题，不是你的代码的问题。",
        )
    runs = result.outcome == outcomes.OK
    explanation = (result.diagnosis or {}).get("en", result.message)
    checks = [Check("runs", runs, "运行（含反向传播）没有出错", "runs, backward included, without an error",
                    detail="" if runs else f"{result.outcome}: {str(explanation)[:300]}")]
    labels = harness.labels(challenge)
    compared = [harness.OUTPUT] + ([harness.grad_name(s) for s in challenge.inputs if s.requires_grad] if challenge.backward else [])
    for name in compared:
        check_name, zh, en = labels[name]
        expected = reference.values[name]
        if not runs:
            checks.append(Check(check_name, False, f"{zh}与参考答案一致", f"{en} matches the reference", skipped=True))
            continue
        if not isinstance(expected, TensorData):
            return internal_verdict(challenge, reference, f"The reference sent back no tensor for {en}.", f"参考答案没有返回 {zh} 张量。")
        got = result.values.get(name)
        if name not in result.values:
            check_ok, detail = False, result.missing.get(name, "not sent back")
        elif got is None:
            check_ok, detail = False, "None" if name == harness.OUTPUT else "None (no gradient reached this input)"
        else:
            tensor_check = compare(name, got, expected.to_torch(), rtol=challenge.rtol, atol=challenge.atol)
            check_ok, detail = tensor_check.ok, tensor_check.reason or ""
        checks.append(Check(check_name, check_ok, f"{zh}与参考答案一致", f"{en} matches the reference", detail=detail))
    extra: dict[str, Any] = {}
    if challenge.budget_bytes is not None:
        budget = challenge.budget_bytes
        saved = result.values.get(harness.SAVED_BYTES)
        probe = result.values.get(harness.PROBE_OK)
        measured = isinstance(saved, int) and not isinstance(saved, bool) and probe is True
        ok = runs and measured and saved <= budget  # type: ignore[operator]
        if not runs:
            detail = ""
        elif not measured:
            detail = "the saved-tensor hooks did not see the saves (was torch.autograd.graph patched?)"
        else:
            detail = f"{saved} bytes saved; budget {budget}"
        checks.append(
            Check("budget", ok, f"为反向传播保存的字节数 ≤ {budget}", f"bytes saved for backward ≤ {budget}",
                  detail=detail, skipped=not runs)
        )
        extra = {"saved_bytes": saved if measured else None, "budget_bytes": budget}
    passed = all(c.ok for c in checks)
    zh, en = _summary(passed, checks)
    return Verdict(passed=passed, kind=challenge.kind, checks=checks, summary_zh=zh, summary_en=en,
                   extra=extra, **_run_fields(result))


# Predict #################################################################


def matches(choice: Choice, result: RunResult) -> bool:
    """Does what the sandbox saw fit this choice's description?"""
    match = choice.match
    if match.get("outcome") != result.outcome:
        return False
    if "line" in match and match["line"] != result.line:
        return False
    if "stdout" in match and str(match["stdout"]).strip() != result.stdout.strip():
        return False
    return True


def grade_predict(challenge: Challenge, truth: RunResult, choice: str | None) -> Verdict:
    """The chosen answer must be the one choice that fits what the snippet really did in the sandbox."""
    fitting = [c for c in challenge.choices if matches(c, truth)]
    truth_ok = len(fitting) == 1
    described = f"{truth.outcome}" + (f", line {truth.line}" if truth.line else "")
    checks = [
        Check(
            "truth", truth_ok, "代码在沙箱中的实际行为恰好符合一个选项",
            "what the snippet really did fits exactly one choice",
            detail=described if truth_ok else f"{described}; fitting choices: {[c.id for c in fitting]}",
        )
    ]
    right = truth_ok and choice == fitting[0].id
    checks.append(
        Check("choice", right, "你的选择与实际行为一致", "your choice is what really happened",
              detail="" if right or not truth_ok else f"you chose {choice!r}; it was {fitting[0].id!r}",
              skipped=not truth_ok)
    )
    zh, en = _summary(right, checks)
    extra = {"choice": choice, "truth": fitting[0].id if truth_ok else None}
    return Verdict(passed=right, kind=challenge.kind, checks=checks, summary_zh=zh, summary_en=en,
                   extra=extra, **_run_fields(truth))
