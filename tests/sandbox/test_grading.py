"""Grading happens on the trusted side: the child can lie about itself, never about the comparison."""

from __future__ import annotations

import torch

from sandbox import Sandbox, outcomes
from sandbox.grading import compare, compare_all

# The challenge: gradients of loss = (a * b).sum() + b.exp().sum() with respect to a and b.
INPUTS = {"a": torch.tensor([1.0, 2.0, 3.0], requires_grad=True), "b": torch.tensor([0.5, -1.0, 2.0], requires_grad=True)}
CHECK = "loss = forward(a, b)\nloss.backward()\n"


def reference() -> dict[str, torch.Tensor]:
    a, b = (t.detach().clone().requires_grad_() for t in INPUTS.values())
    ((a * b).sum() + b.exp().sum()).backward()
    return {"a.grad": a.grad, "b.grad": b.grad}  # type: ignore[dict-item]


def grade(sandbox: Sandbox, code: str) -> tuple[str, list[bool]]:
    result = sandbox.run(code, inputs=INPUTS, epilogue=CHECK, wants=["a.grad", "b.grad"])
    return result.outcome, [c.ok for c in compare_all(result.values, reference())]


def test_correct_submission_passes(sandbox: Sandbox) -> None:
    code = "import torch\ndef forward(a, b):\n    return (a * b).sum() + b.exp().sum()\n"
    assert grade(sandbox, code) == (outcomes.OK, [True, True])


def test_wrong_gradient_fails(sandbox: Sandbox) -> None:
    code = "import torch\ndef forward(a, b):\n    return (a * b).sum() + b.sum()\n"
    assert grade(sandbox, code) == (outcomes.OK, [True, False])


def test_cant_pass_by_monkeypatching_allclose(sandbox: Sandbox) -> None:
    code = (
        "import torch\n"
        "torch.allclose = lambda *a, **k: True\n"
        "torch.testing.assert_close = lambda *a, **k: None\n"
        "torch.Tensor.__eq__ = lambda *a, **k: True\n"
        "def forward(a, b):\n    return (a * 0).sum() + (b * 0).sum()\n"
    )
    outcome, checks = grade(sandbox, code)
    assert (outcome, checks) == (outcomes.OK, [False, False])
    assert torch.allclose(torch.zeros(1), torch.zeros(1)) and not torch.allclose(torch.zeros(1), torch.ones(1))


def test_cant_forge_a_result(sandbox: Sandbox) -> None:
    # Print a fake server answer on stdout, then write a fake report claiming success to the result pipe.
    code = (
        "import os, json, base64, struct\n"
        "print(json.dumps({'id': 1, 'event': 'done', 'exit_code': 0, 'result': '{\"outcome\": \"ok\"}'}))\n"
        "fake = base64.b64encode(struct.pack('3f', 9, 9, 9)).decode()\n"
        "t = {'tensor': True, 'dtype': 'float32', 'shape': [3], 'data': fake}\n"
        "report = {'outcome': 'ok', 'values': {'a.grad': t, 'b.grad': t}, 'diagnosis': None}\n"
        "os.write(3, (json.dumps(report) + '\\n').encode())\n"
        "os._exit(0)\n"
    )
    result = sandbox.run(code, inputs=INPUTS, epilogue=CHECK, wants=["a.grad", "b.grad"])
    assert result.stdout.startswith('{"id": 1, "event": "done"')  # just text, never parsed
    assert [c.ok for c in compare_all(result.values, reference())] == [False, False]


def test_cant_claim_an_outcome_the_runner_imposes(sandbox: Sandbox) -> None:
    code = "import os\nos.write(3, b'{\"outcome\": \"timeout\"}\\n')\nos._exit(0)\n"
    result = sandbox.run(code)
    assert result.outcome == outcomes.RUNTIME_ERROR  # not a believable report


def test_malformed_tensors_are_rejected(sandbox: Sandbox) -> None:
    code = (
        "import os, json\n"
        "bad = {'tensor': True, 'dtype': 'float32', 'shape': [1000000], 'data': 'AAAA'}\n"
        "evil = {'tensor': True, 'dtype': 'object', 'shape': [1], 'data': 'AAAA'}\n"
        "os.write(3, (json.dumps({'outcome': 'ok', 'values': {'x': bad, 'y': evil}}) + '\\n').encode())\n"
        "os._exit(0)\n"
    )
    result = sandbox.run(code, wants=["x", "y"])
    assert result.values == {}
    assert set(result.missing) == {"x", "y"} and all(m.startswith("invalid data") for m in result.missing.values())


def test_values_round_trip(sandbox: Sandbox) -> None:
    code = (
        "import torch\nf = torch.arange(6, dtype=torch.float64).reshape(2, 3)\nh = torch.ones(2, dtype=torch.bfloat16)\n"
        "i = torch.tensor([[1, -2]])\nflag = torch.tensor(True)\nempty = torch.zeros(0, 4)\nn = 3\nx = 0.5\nnothing = None\n"
        "t = f.t()\nobj = object()\n"
    )
    wants = ["f", "h", "i", "flag", "empty", "n", "x", "nothing", "t", "obj", "undefined"]
    result = sandbox.run(code, wants=wants)
    v = result.values
    assert torch.equal(v["f"].to_torch(), torch.arange(6, dtype=torch.float64).reshape(2, 3))  # type: ignore[union-attr]
    assert v["h"].to_torch().dtype == torch.bfloat16  # type: ignore[union-attr]
    assert v["i"].to_torch().tolist() == [[1, -2]]  # type: ignore[union-attr]
    assert v["flag"].to_torch().item() is True  # type: ignore[union-attr]
    assert v["empty"].to_torch().shape == (0, 4)  # type: ignore[union-attr]
    assert torch.equal(v["t"].to_torch(), torch.arange(6, dtype=torch.float64).reshape(2, 3).t())  # type: ignore[union-attr]
    assert (v["n"], v["x"], v["nothing"]) == (3, 0.5, None)
    assert result.missing == {"obj": "not a tensor or number (object)", "undefined": "not defined"}
    assert compare("f", v["f"], torch.arange(6.0).reshape(2, 3)).ok
    assert not compare("f", v["f"], torch.zeros(3, 2)).ok
    assert not compare("n", v["n"], torch.zeros(1)).ok
