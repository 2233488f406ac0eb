"""Every verdict from real snippets, with the line where the exception surfaced."""

from __future__ import annotations

import pytest

from sandbox import Limits, Sandbox, outcomes

T = "import torch\n"
LEAF = T + "a = torch.ones(3, requires_grad=True)\n"

# (id, code, expected outcome, expected line or None to skip the check)
CASES = [
    ("ok-plain", "x = 1 + 1\n", outcomes.OK, None),
    ("ok-grad", LEAF + "(a * a).sum().backward()\n", outcomes.OK, None),
    ("ok-print", "print('hello')\n", outcomes.OK, None),
    ("ok-sys-exit-0", "import sys\nsys.exit(0)\n", outcomes.OK, None),
    ("ok-no-grad-inplace", LEAF + "with torch.no_grad():\n    a.add_(1)\n", outcomes.OK, None),
    ("ok-catches-own-error", "try:\n    1 / 0\nexcept ZeroDivisionError:\n    pass\n", outcomes.OK, None),
    ("version-sigmoid", LEAF + "b = a.sigmoid()\nb.mul_(2)\nb.sum().backward()\n", outcomes.INPLACE_VERSION_ERROR, 5),
    ("version-exp", LEAF + "b = a.exp()\nb.add_(1)\nb.sum().backward()\n", outcomes.INPLACE_VERSION_ERROR, 5),
    ("version-mul-input", LEAF + "b = a * 2\nc = a * b\nb.add_(1)\nc.sum().backward()\n",
     outcomes.INPLACE_VERSION_ERROR, 6),
    ("version-tanh-relu", LEAF + "y = a.tanh()\ny.relu_()\ny.sum().backward()\n", outcomes.INPLACE_VERSION_ERROR, 5),
    ("version-in-function", LEAF + "def f(t):\n    u = t.sigmoid()\n    u += 1\n    return u\nf(a).sum().backward()\n",
     outcomes.INPLACE_VERSION_ERROR, 7),
    ("leaf-add", LEAF + "a.add_(1)\n", outcomes.LEAF_INPLACE_ERROR, 3),
    ("leaf-iadd", LEAF + "a += 1\n", outcomes.LEAF_INPLACE_ERROR, 3),
    ("view-of-leaf-setitem", LEAF + "a[0] = 5\n", outcomes.VIEW_INPLACE_ERROR, 3),
    ("view-no-grad-mode", LEAF + "with torch.no_grad():\n    v = a.view(3)\nv.mul_(2)\n", outcomes.VIEW_INPLACE_ERROR, 5),
    ("view-multi-output", T + "a = torch.ones(3, 2, requires_grad=True)\nx, y, z = (a * 1).unbind()\nx.mul_(2)\n",
     outcomes.VIEW_INPLACE_ERROR, 4),
    ("overlap-expand", T + "torch.zeros(1).expand(3).add_(1)\n", outcomes.MEMORY_OVERLAP_ERROR, 2),
    ("overlap-partial", T + "x = torch.arange(4.)\ntorch.add(x[:3], 1, out=x[1:])\n", outcomes.MEMORY_OVERLAP_ERROR, 3),
    ("rt-zero-division", "x = 1\ny = x / 0\n", outcomes.RUNTIME_ERROR, 2),
    ("rt-recursion", "def f(n):\n    return f(n + 1)\nf(0)\n", outcomes.RUNTIME_ERROR, 2),
    ("rt-shape", T + "torch.ones(2) @ torch.ones(3)\n", outcomes.RUNTIME_ERROR, 2),
    ("rt-syntax", "x = (1,\n", outcomes.RUNTIME_ERROR, 1),
    ("rt-name", "print(undefined_name)\n", outcomes.RUNTIME_ERROR, 1),
    ("rt-backward-twice", LEAF + "b = a.exp().sum()\nb.backward()\nb.backward()\n", outcomes.RUNTIME_ERROR, 5),
    ("rt-sys-exit-3", "raise SystemExit(3)\n", outcomes.RUNTIME_ERROR, 1),
    ("rt-os-exit", "import os\nos._exit(3)\n", outcomes.RUNTIME_ERROR, None),
    ("rt-segfault", "import ctypes\n\nctypes.string_at(0)\n", outcomes.RUNTIME_ERROR, 3),
    ("rt-input", "input()\n", outcomes.RUNTIME_ERROR, 1),
    ("rt-not-implemented", "raise NotImplementedError('todo')\n", outcomes.RUNTIME_ERROR, 1),
    ("rt-file-missing", "open('/nope.txt').read()\n", outcomes.RUNTIME_ERROR, 1),
    ("mem-torch", T + "x = torch.empty(4 * 10**9)\n", outcomes.MEMORY_LIMIT, 2),
    ("mem-bytearray", "x = bytearray(8 << 30)\n", outcomes.MEMORY_LIMIT, 1),
    ("mem-list", "x = [0] * (10**10)\n", outcomes.MEMORY_LIMIT, 1),
    ("mem-threads", "import threading, time\nfor _ in range(5000):\n"
     "    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n", outcomes.MEMORY_LIMIT, 3),
    ("timeout-cpu", "while True:\n    pass\n", outcomes.TIMEOUT, None),
    ("timeout-sleep", "import time\ntime.sleep(1000)\n", outcomes.TIMEOUT, None),
    ("output-print", "while True:\n    print('x' * 1000)\n", outcomes.OUTPUT_LIMIT, None),
    ("output-file", "with open('big', 'wb') as f:\n    f.write(b'x' * (20 << 20))\n", outcomes.OUTPUT_LIMIT, 2),
    ("security-socket", "import socket\n\nsocket.socket()\n", outcomes.SECURITY_VIOLATION, 3),
    ("security-fork", "import os\nos.fork()\n", outcomes.SECURITY_VIOLATION, 2),
    # subprocess blocks all signals around vfork, so the kernel kills it by SIGSYS without a Python stack.
    ("security-subprocess", "import subprocess\nsubprocess.run(['true'])\n", outcomes.SECURITY_VIOLATION, None),
    ("security-caught", "import socket\ntry:\n    socket.socket()\nexcept Exception:\n    pass\n",
     outcomes.SECURITY_VIOLATION, 3),
    ("internal-confine-claim", "import os\nos.write(3, b'{\"confine_error\": \"x\"}\\n')\nos._exit(70)\n",
     outcomes.INTERNAL_ERROR, None),
]


def test_table_covers_every_outcome() -> None:
    assert {case[2] for case in CASES} == set(outcomes.ALL_OUTCOMES)
    assert len(CASES) >= 30


@pytest.mark.parametrize(("code", "outcome", "line"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_outcome(sandbox: Sandbox, code: str, outcome: str, line: int | None) -> None:
    result = sandbox.run(code, limits=Limits(wall_s=1.5, cpu_s=1, mem_bytes=512 << 20, output_bytes=32 << 10))
    assert result.outcome == outcome, result
    if line is not None:
        assert result.line == line, result
    if outcome != outcomes.OK:
        assert result.diagnosis and result.diagnosis["en"] and result.diagnosis["zh"]
    else:
        assert result.diagnosis is None and result.exception_type is None


def test_runtime_error_names_exception(sandbox: Sandbox) -> None:
    result = sandbox.run("x = 1\nraise ValueError('bad value')\n")
    assert (result.exception_type, result.message, result.line) == ("ValueError", "bad value", 2)
    assert 'File "<submission>", line 2' in result.traceback
    assert "ValueError was raised on line 2: bad value" == result.diagnosis["en"]  # type: ignore[index]


def test_output_is_captured_and_capped(sandbox: Sandbox) -> None:
    result = sandbox.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    assert (result.stdout, result.stderr) == ("out\n", "err\n")
    flood = sandbox.run("print('y' * 100_000)\n", limits=Limits(output_bytes=1000))
    assert flood.outcome == outcomes.OUTPUT_LIMIT and flood.output_truncated
    assert len(flood.stdout) == 1000


def test_output_before_a_timeout_is_kept(sandbox: Sandbox) -> None:
    result = sandbox.run("import time\nprint('before')\ntime.sleep(100)\n", limits=Limits(wall_s=1))
    assert result.outcome == outcomes.TIMEOUT
    assert result.stdout == "before\n"
    assert 900 <= result.duration_ms < 3000
