"""Pure pieces: limits, the tensor wire format, the seccomp program, the jail command line."""

from __future__ import annotations

import struct

import pytest
import torch

from sandbox import Limits, TensorData, jail, seccomp
from sandbox.protocol import ProtocolError, check_want


def test_limits_are_validated_and_round_trip() -> None:
    limits = Limits(wall_s=1.5, mem_bytes=1 << 28)
    assert Limits.from_json(limits.to_json()) == limits
    with pytest.raises(ValueError):
        Limits(cpu_s=0)
    rlimits = dict(limits.to_rlimits(1000))
    import resource

    assert rlimits[resource.RLIMIT_AS] == (1000 + (1 << 28),) * 2
    assert rlimits[resource.RLIMIT_CORE] == (0, 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.bool, torch.complex64])
def test_tensor_data_round_trip(dtype: torch.dtype) -> None:
    tensor = (torch.arange(6) % 2 == 0 if dtype == torch.bool else torch.arange(6).to(dtype)).reshape(3, 2)
    back = TensorData.from_json(TensorData.from_torch(tensor.t()).to_json()).to_torch()
    assert back.dtype == dtype and torch.equal(back, tensor.t())


@pytest.mark.parametrize(
    "obj",
    [
        {"dtype": "float32", "shape": [2], "data": "AAAA"},  # 3 bytes for 8
        {"dtype": "object", "shape": [1], "data": "AAAAAA=="},
        {"dtype": "float32", "shape": [-1], "data": ""},
        {"dtype": "float32", "shape": [True], "data": "AAAAAA=="},
        {"dtype": "float32", "shape": [1], "data": "not base64!"},
        {"dtype": "float32", "shape": [1] * 17, "data": "AAAAAA=="},
        "tensor",
    ],
)
def test_tensor_data_rejects_malformed(obj: object) -> None:
    with pytest.raises(ProtocolError):
        TensorData.from_json(obj)


@pytest.mark.parametrize("name", ["a", "a.grad", "model.fc.weight.grad"])
def test_wants_accept_dotted_names(name: str) -> None:
    assert check_want(name) == name


@pytest.mark.parametrize("name", ["", "a..b", "__import__('os')", "a[0]", "a.b()", "1a"])
def test_wants_reject_expressions(name: str) -> None:
    with pytest.raises(ValueError):
        check_want(name)


def test_seccomp_program_is_well_formed() -> None:
    program = seccomp.build(4242)
    assert len(program) % 8 == 0 and len(program) // 8 < 4096
    instructions = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    assert instructions[0] == (0x20, 0, 0, 4)  # load arch first
    assert (0x15, 1, 0, seccomp.AUDIT_ARCH_X86_64) == instructions[1]
    assert any(k == 4242 for _, _, _, k in instructions)  # the pid is embedded for kill/tgkill
    assert {"fork", "execve", "socket", "ptrace", "mount", "unshare", "setns", "bpf", "io_uring_setup", "keyctl"} <= set(
        seccomp.DENIED
    )


def test_jail_sees_no_project_or_secrets() -> None:
    import sys
    from pathlib import Path

    cmd = jail.bwrap_command(
        "/usr/bin/bwrap", ["python"], jail.server_env({"AWS_SECRET": "x", "OPENBLAS_CORETYPE": "Haswell"})
    )
    host_paths = [Path(cmd[i + 1]) for i, arg in enumerate(cmd) if arg == "--ro-bind"]
    project = Path(jail.host_package_root())
    allowed_inside_project = {project / "sandbox", Path(sys.prefix).resolve()}
    for path in host_paths:
        assert path not in (Path("/"), Path("/etc"), Path("/home"), Path("/root"), project)
        assert project not in path.parents or path in allowed_inside_project, path
    for flag in ("--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--clearenv"):
        assert flag in cmd
    assert cmd[cmd.index("--cap-drop") + 1] == "ALL"
    assert "AWS_SECRET" not in cmd and "Haswell" in cmd
