"""Find the lines behind an in-place version error (runs inside the child, after the first run failed).

Anomaly mode names the backward node and the *forward* line that saved the tensor, but not the in-place op that
overwrote it. For that, VersionTracker (a TorchDispatchMode, below autograd) logs every mutating aten op with the
user line and the tensor's version *before* the bump (the bump happens in the ADInplaceOrView layer above us).
The culprit is the first write that found the tensor at the version autograd expected: version_before == expected.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

USER_FILE = "<submission>"
_MAX_LOG = 200_000

_VERSION_MESSAGE = re.compile(
    r"\[torch\.(?P<type>\w+) \[(?P<shape>[\d, ]*)\]\]"
    r"(?:, which is output (?P<output>\d+) of (?P<producer>\w+),)?"
    r" is at version (?P<found>\d+); expected version (?P<expected>\d+) instead"
)
_ANOMALY_NODE = re.compile(r"Error detected in (\w+)\.")
_USER_FRAME = re.compile(r'File "' + re.escape(USER_FILE) + r'", line (\d+)')

# Legacy tensor type names in the error message -> dtype names.
_TYPE_DTYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16", "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16", "CharTensor": "int8",
    "ByteTensor": "uint8", "BoolTensor": "bool", "ComplexFloatTensor": "complex64",
    "ComplexDoubleTensor": "complex128",
}


def user_line(frame: Any) -> int | None:
    """Innermost frame of the submission on the current stack."""
    while frame is not None:
        if frame.f_code.co_filename == USER_FILE:
            return int(frame.f_lineno)
        frame = frame.f_back
    return None


@dataclass
class _OpRecord:
    op: str
    line: int | None
    storages: frozenset[int]


@dataclass
class _Mutation:
    index: int
    op: str
    line: int | None
    version_before: int
    storage: int
    shape: tuple[int, ...]
    dtype: str


def _storage_key(tensor: torch.Tensor) -> int:
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return 0


class VersionTracker(TorchDispatchMode):
    """Logs which user line ran each op and each in-place write, with tensor versions."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[_OpRecord] = []
        self.mutations: list[_Mutation] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        schema = func._schema
        written: list[torch.Tensor] = []
        if schema.is_mutable:
            for i, argument in enumerate(schema.arguments):
                if argument.alias_info is not None and argument.alias_info.is_write:
                    value = args[i] if i < len(args) else kwargs.get(argument.name)
                    if isinstance(value, torch.Tensor):
                        written.append(value)
        before = [t._version for t in written]
        out = func(*args, **kwargs)
        if len(self.ops) < _MAX_LOG:
            line = user_line(sys._getframe(1))
            name = func.overloadpacket.__name__
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            tensors += [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, torch.Tensor)]
            self.ops.append(_OpRecord(name, line, frozenset(_storage_key(t) for t in tensors)))
            for tensor, version in zip(written, before):
                self.mutations.append(
                    _Mutation(
                        len(self.ops) - 1, name, line, version, _storage_key(tensor),
                        tuple(tensor.shape), str(tensor.dtype).removeprefix("torch."),
                    )
                )
        return out


def parse_version_message(message: str) -> dict[str, Any]:
    """Tensor shape/dtype, producing op and versions from torch's in-place version error."""
    match = _VERSION_MESSAGE.search(message)
    if not match:
        return {}
    shape = [int(s) for s in match["shape"].replace(" ", "").split(",") if s]
    return {
        "tensor_shape": shape,
        "tensor_dtype": _TYPE_DTYPES.get(match["type"], match["type"]),
        "output_of": match["producer"],
        "found_version": int(match["found"]),
        "expected_version": int(match["expected"]),
    }


def _pick_culprit(tracker: VersionTracker, info: dict[str, Any], saved_by_line: int | None) -> _Mutation | None:
    expected = info.get("expected_version")
    dtype = info.get("tensor_dtype")
    candidates = [
        m for m in tracker.mutations
        if m.version_before == expected and (dtype is None or m.dtype == dtype) and m.line is not None
    ]
    if not candidates:
        return None
    if saved_by_line is not None:
        saved_ops = [i for i, op in enumerate(tracker.ops) if op.line == saved_by_line]
        if saved_ops:
            first_save = saved_ops[0]
            touched = frozenset().union(*(tracker.ops[i].storages for i in saved_ops))
            linked = [m for m in candidates if m.storage in touched and m.index > first_save]
            if linked:
                return linked[0]
    shape = tuple(info.get("tensor_shape") or ())
    same_shape = [m for m in candidates if m.shape == shape]
    return (same_shape or candidates)[0]


def diagnose_version_error(rerun: Callable[[], None], message: str) -> dict[str, Any]:
    """Re-run the failing snippet under anomaly mode + VersionTracker and explain the version error.

    `rerun` executes the submission again from scratch (fresh globals, same seed, output discarded).
    """
    info = parse_version_message(message)
    tracker = VersionTracker()
    backward_op: str | None = None
    saved_by_line: int | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.autograd.detect_anomaly(check_nan=False), tracker:
                rerun()
        except Exception as exc:  # noqa: BLE001 - the snippet's own error is expected here
            rerun_message = str(exc)
            if not info:
                info = parse_version_message(rerun_message)
    for warning in caught:
        text = str(warning.message)
        node = _ANOMALY_NODE.search(text)
        if node and "Traceback of forward call" in text:
            backward_op = node.group(1)
            lines = _USER_FRAME.findall(text)
            if lines:
                saved_by_line = int(lines[-1])  # "most recent call last": the innermost user frame
    culprit = _pick_culprit(tracker, info, saved_by_line)
    saved_op = None
    if saved_by_line is not None:
        names = [op.op for op in tracker.ops if op.line == saved_by_line]
        # SigmoidBackward0 -> sigmoid: prefer the op on that line that the backward node belongs to.
        stem = re.sub(r"Backward\d*$", "", backward_op or "").lower()
        matching = [n for n in names if n.rstrip("_").replace("_", "") == stem]
        saved_op = (matching or names or [None])[0]
    return {
        **info,
        "backward_op": backward_op,
        "saved_by_line": saved_by_line,
        "saved_by_op": saved_op,
        "modified_at_line": culprit.line if culprit else None,
        "inplace_op": culprit.op if culprit else None,
    }

