"""Running untrusted PyTorch snippets and classifying what they do.

The app imports `Sandbox`, `Limits`, `RunResult`, `SandboxUnavailable` from here (cheap: no torch import);
`sandbox.grading` (imports torch) compares returned tensors with references on the trusted side.
"""

from sandbox.client import Sandbox, SandboxUnavailable, Status
from sandbox.limits import Limits
from sandbox.protocol import TensorData
from sandbox.verdict import RunResult

__all__ = ["Limits", "RunResult", "Sandbox", "SandboxUnavailable", "Status", "TensorData"]
