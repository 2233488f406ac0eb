"""In-place version errors explained in the user's own line numbers."""

from __future__ import annotations

import pytest

from sandbox import Sandbox, outcomes

T = "import torch\n"

CASES = [
    # (id, code, line of backward, saved_by_line, modified_at_line, saved op, in-place op, shape)
    (
        "sigmoid-mul_",
        T + "a = torch.randn(3, requires_grad=True)\nb = a.sigmoid()\nc = b * 2\nb.mul_(2)\n(b.sum() + c.sum()).backward()\n",
        6, 3, 5, "sigmoid", "mul_", [3],
    ),
    (
        "exp-iadd",
        T + "w = torch.randn(2, 4, requires_grad=True)\nprint('start')\ny = w.exp()\ny += 1\nloss = y.sum()\nloss.backward()\n",
        7, 4, 5, "exp", "add_", [2, 4],
    ),
    (
        "mul-input-overwritten",
        T + "a = torch.ones(3, requires_grad=True)\nb = a * 2\nc = a * b\nb.add_(1)\nc.sum().backward()\n",
        6, 4, 5, "mul", "add_", [3],
    ),
    (
        "inside-functions",
        T + "def layer(x):\n    h = x.tanh()\n    return h\n\ndef corrupt(h):\n    h.zero_()\n\n"
        "x = torch.randn(5, requires_grad=True)\nh = layer(x)\ncorrupt(h)\nh.sum().backward()\n",
        12, 3, 7, "tanh", "zero_", [5],
    ),
    (
        "view-write-bumps-base",
        T + "a = torch.randn(4, requires_grad=True)\nb = a.sigmoid()\nb[0].mul_(0)\nb.sum().backward()\n",
        5, 3, 4, "sigmoid", "mul_", [4],
    ),
    (
        "second-write-is-not-blamed",
        T + "a = torch.randn(3, requires_grad=True)\nb = a.exp()\nb.add_(1)\nb.add_(2)\nb.sum().backward()\n",
        6, 3, 4, "exp", "add_", [3],
    ),
]


@pytest.mark.parametrize(
    ("code", "line", "saved_by", "modified_at", "saved_op", "inplace_op", "shape"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_version_error_lines(
    sandbox: Sandbox, code: str, line: int, saved_by: int, modified_at: int, saved_op: str, inplace_op: str,
    shape: list[int],
) -> None:
    result = sandbox.run(code)
    assert result.outcome == outcomes.INPLACE_VERSION_ERROR, result
    d = result.diagnosis
    assert d is not None
    assert (result.line, d["saved_by_line"], d["modified_at_line"]) == (line, saved_by, modified_at), d
    assert (d["saved_by_op"], d["inplace_op"], d["tensor_shape"], d["tensor_dtype"]) == (
        saved_op, inplace_op, shape, "float32"
    ), d
    assert d["expected_version"] < d["found_version"]
    assert f"line {modified_at}" in d["en"] and f"第 {modified_at} 行" in d["zh"]


def test_diagnosis_rerun_does_not_duplicate_output(sandbox: Sandbox) -> None:
    code = CASES[1][1]
    result = sandbox.run(code)
    assert result.stdout == "start\n"


def test_diagnosis_can_be_turned_off(sandbox: Sandbox) -> None:
    result = sandbox.run(CASES[0][1], diagnose=False)
    assert result.outcome == outcomes.INPLACE_VERSION_ERROR
    assert result.diagnosis is not None and result.diagnosis["modified_at_line"] is None
    assert result.diagnosis["expected_version"] == 0  # still parsed from the message


def test_versions_and_sentences(sandbox: Sandbox) -> None:
    result = sandbox.run(CASES[0][1])
    d = result.diagnosis
    assert d is not None
    assert (d["expected_version"], d["found_version"], d["backward_op"]) == (0, 1, "SigmoidBackward0")
    assert d["en"] == (
        "The float32 tensor of shape [3] that `sigmoid` on line 3 saved for backward was overwritten by the "
        "in-place `mul_` on line 5 (version 0 → 1), so the backward pass on line 6 cannot compute the gradient."
    )
    assert "第 3 行" in d["zh"] and "第 5 行" in d["zh"] and "`mul_`" in d["zh"]


@pytest.mark.parametrize(
    ("code", "outcome", "line"),
    [
        ("import torch\na = torch.ones(2, requires_grad=True)\n\na.mul_(3)\n", outcomes.LEAF_INPLACE_ERROR, 4),
        ("import torch\na = torch.ones(2, requires_grad=True)\na[1] = 0\n", outcomes.VIEW_INPLACE_ERROR, 3),
    ],
)
def test_other_inplace_errors_have_lines(sandbox: Sandbox, code: str, outcome: str, line: int) -> None:
    result = sandbox.run(code)
    assert (result.outcome, result.line) == (outcome, line)
    assert f"line {line}" in result.diagnosis["en"]  # type: ignore[index]
