"""Wire formats: JSON lines between client and fork server, and tensors as raw bytes + dtype/shape.

Tensors never travel as pickles: the trusted side rebuilds them with torch.frombuffer from bytes whose length
it has checked against dtype and shape, so a hostile child can send wrong numbers but never code.
This module imports torch only inside the functions that need it, so the web app can import the client cheaply.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    import torch

# dtype name -> bytes per element. Nothing else is accepted from the child.
DTYPES: dict[str, int] = {
    "float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "complex64": 8, "complex128": 16,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
}
MAX_DIMS = 16
WANT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,7}")


class ProtocolError(ValueError):
    """Data from the other side does not have the agreed shape."""


@dataclass(frozen=True)
class TensorData:
    """A dense CPU tensor as plain data: what the child sends back and what inputs are sent in as."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes
    requires_grad: bool = False

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def to_torch(self) -> torch.Tensor:
        """A fresh tensor owning its memory (built on the trusted side with the trusted torch)."""
        import torch

        dtype = getattr(torch, self.dtype)
        if self.numel == 0:
            tensor = torch.empty(self.shape, dtype=dtype)
        else:
            tensor = torch.frombuffer(bytearray(self.data), dtype=dtype).reshape(self.shape).clone()
        return tensor.requires_grad_(self.requires_grad) if tensor.is_floating_point() else tensor

    @classmethod
    def from_torch(cls, tensor: torch.Tensor) -> TensorData:
        import torch

        dtype = str(tensor.dtype).removeprefix("torch.")
        if dtype not in DTYPES:
            raise ProtocolError(f"unsupported dtype {tensor.dtype}")
        if tensor.layout != torch.strided:
            raise ProtocolError(f"unsupported layout {tensor.layout}")
        flat = tensor.detach().to("cpu").contiguous().reshape(-1)
        raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
        return cls(dtype, tuple(int(d) for d in tensor.shape), raw, bool(tensor.requires_grad))

    def to_json(self) -> dict[str, Any]:
        return {
            "tensor": True,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "requires_grad": self.requires_grad,
            "data": base64.b64encode(self.data).decode("ascii"),
        }

    @classmethod
    def from_json(cls, obj: object) -> TensorData:
        """Validate untrusted JSON: known dtype, small non-negative shape, byte length that matches."""
        if not isinstance(obj, dict):
            raise ProtocolError("tensor is not an object")
        dtype, shape, data = obj.get("dtype"), obj.get("shape"), obj.get("data")
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise ProtocolError(f"bad dtype {dtype!r}")
        if (
            not isinstance(shape, list)
            or len(shape) > MAX_DIMS
            or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in shape)
        ):
            raise ProtocolError("bad shape")
        if not isinstance(data, str):
            raise ProtocolError("bad data")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ProtocolError("data is not base64") from exc
        if len(raw) != math.prod(shape) * DTYPES[dtype]:
            raise ProtocolError("data length does not match dtype and shape")
        return cls(dtype, tuple(shape), raw, obj.get("requires_grad") is True)


# What a named value can be once it is back on the trusted side.
Value = Union[TensorData, bool, int, float, None]


def value_from_json(obj: object) -> Value:
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, dict) and obj.get("tensor") is True:
        return TensorData.from_json(obj)
    raise ProtocolError("value is neither a tensor nor a number")


def check_want(name: str) -> str:
    if not isinstance(name, str) or not WANT_NAME.fullmatch(name):
        raise ValueError(f"not a dotted name: {name!r}")
    return name
