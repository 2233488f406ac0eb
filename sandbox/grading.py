"""Compare what a run sent back with reference tensors, on the trusted side with the trusted torch.

The child's own torch (and anything it monkeypatched, like torch.allclose) plays no part here: values arrive as
raw bytes + dtype/shape (sandbox.protocol.TensorData) and are rebuilt and compared in this process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from sandbox.protocol import TensorData, Value


@dataclass(frozen=True)
class TensorCheck:
    name: str
    ok: bool
    max_abs_err: float | None = None
    reason: str | None = None


def compare(name: str, got: Value, expected: torch.Tensor, *, rtol: float = 1e-5, atol: float = 1e-6) -> TensorCheck:
    """Is the value the run sent back for `name` close to `expected` (same shape, finite, allclose)?"""
    if not isinstance(got, TensorData):
        return TensorCheck(name, False, reason="missing" if got is None else f"not a tensor ({type(got).__name__})")
    actual = got.to_torch().detach()
    expected = expected.detach()
    if tuple(actual.shape) != tuple(expected.shape):
        return TensorCheck(name, False, reason=f"shape {list(actual.shape)} != expected {list(expected.shape)}")
    if not (actual.is_floating_point() or actual.is_complex()) and expected.is_floating_point():
        return TensorCheck(name, False, reason=f"dtype {got.dtype} is not floating point")
    actual = actual.to(torch.float64 if not actual.is_complex() else torch.complex128)
    reference = expected.to(actual.dtype)
    if actual.numel() == 0:
        return TensorCheck(name, True, 0.0)
    if not torch.isfinite(actual).all():
        return TensorCheck(name, False, reason="contains NaN or inf")
    err = float((actual - reference).abs().max())
    ok = bool(torch.allclose(actual, reference, rtol=rtol, atol=atol))
    return TensorCheck(name, ok, err, None if ok else f"max abs error {err:.3g}")


def compare_all(
    values: Mapping[str, Value], expected: Mapping[str, torch.Tensor], *, rtol: float = 1e-5, atol: float = 1e-6
) -> list[TensorCheck]:
    """One check per expected name, in the order given."""
    return [compare(name, values.get(name), ref, rtol=rtol, atol=atol) for name, ref in expected.items()]
