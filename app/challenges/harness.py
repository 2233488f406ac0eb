"""How a challenge is run in the sandbox: the trusted checker code that follows a submission, its inputs and
the values it sends back.

A fix challenge's submission defines a function (`call`, usually `forward`). The checker, run in the same child
right after the submission, calls it on fresh copies of random inputs made here from the submission's seed,
calls `.backward()`, and sends back the result and the inputs' gradients as raw tensors, which
app/challenges/grading.py compares with the reference solution's on this side. With a memory budget it then runs
the forward once more under `saved_tensors_hooks` and counts the distinct storages saved for backward,
leaving out the inputs (and any leaf that requires grad: parameters are resident anyway).

The checker runs inside the child, after the submission, so a submission that sets out to fool the byte count
(by patching torch.autograd.graph) can; the probe below catches the simple ways, and the rest only deceives the
person who wrote it. Gradients cannot be faked that way: they are compared on the trusted side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.challenges.model import Challenge, InputSpec

if TYPE_CHECKING:
    import torch

PREFIX = "_dc_"
OUTPUT = f"{PREFIX}out"
SAVED_BYTES = f"{PREFIX}saved_bytes"
PROBE_OK = f"{PREFIX}probe_ok"


def input_name(spec: InputSpec) -> str:
    return f"{PREFIX}in_{spec.name}"


def grad_name(spec: InputSpec) -> str:
    return f"{PREFIX}grad_{spec.name}"


def make_inputs(challenge: Challenge, seed: int) -> dict[str, torch.Tensor]:
    """The fix challenge's inputs for this seed: the same seed gives the same tensors, here and after a restart."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for spec in challenge.inputs:
        dtype = getattr(torch, spec.dtype)
        if spec.init == "ones":
            value = torch.ones(spec.shape, dtype=dtype)
        elif spec.init == "rand":
            value = torch.rand(spec.shape, generator=generator, dtype=dtype)
        else:
            value = torch.randn(spec.shape, generator=generator, dtype=dtype)
        tensors[input_name(spec)] = value
    return tensors


def wants(challenge: Challenge) -> list[str]:
    """The names the checker leaves behind for grading, in the order checks are reported."""
    names = [OUTPUT]
    if challenge.backward:
        names += [grad_name(s) for s in challenge.inputs if s.requires_grad]
    if challenge.budget_bytes is not None:
        names += [SAVED_BYTES, PROBE_OK]
    return names


def epilogue(challenge: Challenge) -> str:
    """The checker source for a fix challenge (shown to people as <check> in tracebacks)."""
    call = challenge.call
    args = ", ".join(f"{input_name(s)}.detach().clone().requires_grad_({s.requires_grad})" for s in challenge.inputs)
    lines = [
        "# The checker: runs after your code, with fresh copies of the inputs.",
        f"import torch as {PREFIX}torch",
        f"{PREFIX}args = [{args}]",
        f"{OUTPUT} = {call}(*{PREFIX}args)",
        f"if not isinstance({OUTPUT}, {PREFIX}torch.Tensor):",
        f"    raise TypeError('{call}() must return a tensor, not ' + type({OUTPUT}).__name__)",
    ]
    if challenge.backward:
        lines += [
            f"if {OUTPUT}.numel() != 1:",
            f"    raise ValueError('{call}() must return one number (the loss), not a tensor of shape ' + str(list({OUTPUT}.shape)))",
            f"{OUTPUT}.backward()",
        ]
        lines += [
            f"{grad_name(s)} = {PREFIX}args[{i}].grad" for i, s in enumerate(challenge.inputs) if s.requires_grad
        ]
    if challenge.budget_bytes is not None:
        lines += [
            "# Bytes saved for backward: distinct storages, inputs and parameters left out.",
            f"{PREFIX}again = [a.detach().clone().requires_grad_(a.requires_grad) for a in {PREFIX}args]",
            f"{PREFIX}skip = {{a.untyped_storage().data_ptr() for a in {PREFIX}again}}",
            f"{PREFIX}seen = {{}}",
            f"def {PREFIX}pack(t):",
            "    s = t.untyped_storage()",
            f"    if s.data_ptr() not in {PREFIX}skip and not (t.is_leaf and t.requires_grad):",
            f"        {PREFIX}seen[s.data_ptr()] = s.nbytes()",
            "    return t.detach()",
            f"with {PREFIX}torch.autograd.graph.saved_tensors_hooks({PREFIX}pack, lambda t: t):",
            f"    {PREFIX}torch.ones(1, requires_grad=True).exp()  # probe: the hooks must see this save",
            f"    {PROBE_OK} = len({PREFIX}seen) == 1",
            f"    {PREFIX}seen.clear()",
            f"    {PREFIX}kept = {call}(*{PREFIX}again)  # keeps the graph (and its storages) alive while counting",
            f"{SAVED_BYTES} = sum({PREFIX}seen.values())",
        ]
    return "\n".join(lines) + "\n"


def labels(challenge: Challenge) -> dict[str, tuple[str, str, str]]:
    """want name -> (check name, zh label, en label) for the verdict's checks."""
    call = challenge.call
    result = {OUTPUT: ("output", f"{call}() 的返回值", f"{call}() return value")}
    for spec in challenge.inputs:
        result[grad_name(spec)] = (f"grad:{spec.name}", f"{spec.name}.grad ", f"{spec.name}.grad")
    return result
