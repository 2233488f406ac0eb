"""Per-run resource limits: a frozen value passed with every call, never a global (unlike codejail's LIMITS)."""

from __future__ import annotations

import dataclasses
import resource
from dataclasses import dataclass
from typing import Any

_MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """What one run may use. Every field is enforced by the kernel or by the fork server, not by the snippet."""

    # Wall clock from fork to verdict; a hang (sleep, deadlock, a wedged OpenMP pool) becomes `timeout`.
    wall_s: float = 5.0
    # RLIMIT_CPU; SIGXCPU at the soft limit, SIGKILL one second later.
    cpu_s: int = 5
    # Address space on top of what the warm server already maps (~0.7 GB of torch). RLIMIT_AS is the only
    # memory cap that works per process without cgroups; it also bounds thread stacks (8 MiB each).
    mem_bytes: int = 1024 * _MiB
    # RLIMIT_FSIZE: largest file a run may write (Python ignores SIGXFSZ, so writes fail with EFBIG).
    fsize_bytes: int = 8 * _MiB
    # Size of the private tmpfs that is the run's working directory.
    tmp_bytes: int = 16 * _MiB
    # RLIMIT_NOFILE.
    nofile: int = 64
    # stdout + stderr together; past this the run is killed with `output_limit`.
    output_bytes: int = 64 * 1024
    # Tensors and values sent back for grading (raw bytes, before base64).
    result_bytes: int = 8 * _MiB

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"Limits.{field.name} must be a positive number, got {value!r}")

    def to_rlimits(self, base_address_space: int) -> list[tuple[int, tuple[int, int]]]:
        """The setrlimit calls for a child whose address space is already `base_address_space` bytes."""
        cpu = max(1, int(self.cpu_s))
        return [
            (resource.RLIMIT_CPU, (cpu, cpu + 1)),
            (resource.RLIMIT_AS, (base_address_space + self.mem_bytes,) * 2),
            (resource.RLIMIT_FSIZE, (self.fsize_bytes,) * 2),
            (resource.RLIMIT_NOFILE, (self.nofile,) * 2),
            (resource.RLIMIT_CORE, (0, 0)),
            # Not enforced for uid 0 (the kernel exempts root); seccomp is what stops fork. Kept for non-root hosts.
            (resource.RLIMIT_NPROC, (256, 256)),
        ]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Limits:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
