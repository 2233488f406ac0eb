"""A seccomp-bpf deny-list, assembled here and loaded with prctl/seccomp through ctypes.

Why hand-assembled rather than libseccomp/pyseccomp: no dependency (pyseccomp needs ld.so.cache and /sbin inside
the jail; python3-seccomp is invisible to the venv), the filter can embed the child's own pid (so it may signal
itself but nothing else), and building it costs ~50 µs in the child instead of ~1-2 ms.

Denied calls return SECCOMP_RET_TRAP: the kernel sends SIGSYS, faulthandler (registered by confine.py) writes the
Python stack to the result pipe and re-raises, so the run dies by SIGSYS and the parent reports
`security_violation` with the user's line, whether or not the snippet wraps the call in try/except. (A snippet
that installs its own SIGSYS handler only changes the verdict: the call itself stays blocked. rt_sigaction is
not filtered because faulthandler's chaining needs it to restore SIG_DFL.)
Numbers are x86_64 (asm/unistd_64.h); other architectures are refused rather than guessed.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000

_RET_KILL_PROCESS = 0x80000000
_RET_TRAP = 0x00030000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000

_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06

_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LO = 16  # seccomp_data.args[0], low 32 bits on little-endian

CLONE_THREAD = 0x00010000
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_CLONE_NAMESPACE_FLAGS = 0x7E020000

X86_64 = {
    "clone": 56, "clone3": 435, "kill": 62, "tgkill": 234,
    # processes
    "fork": 57, "vfork": 58, "execve": 59, "execveat": 322,
    # network (socket() is enough; the rest cover descriptors that might somehow exist)
    "socket": 41, "socketpair": 53, "connect": 42, "bind": 49, "listen": 50, "accept": 43, "accept4": 288,
    # other processes
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "tkill": 200,
    "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "pidfd_send_signal": 424, "pidfd_open": 434,
    "pidfd_getfd": 438, "move_pages": 279, "migrate_pages": 256, "process_madvise": 440, "process_mrelease": 448,
    # namespaces and mounts
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442, "name_to_handle_at": 303, "open_by_handle_at": 304,
    # kernel attack surface with a history of leaks or escapes
    "bpf": 321, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "keyctl": 250, "add_key": 248, "request_key": 249, "userfaultfd": 323, "perf_event_open": 298,
    "personality": 135, "fanotify_init": 300, "lookup_dcookie": 212, "uselib": 134, "ustat": 136, "sysfs": 139,
    # administration (already needs privileges we do not have; denied so the verdict is explicit)
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "reboot": 169, "swapon": 167, "swapoff": 168, "syslog": 103, "acct": 163, "quotactl": 179, "quotactl_fd": 443,
    "iopl": 172, "ioperm": 173, "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
    "sethostname": 170, "setdomainname": 171, "vhangup": 153,
}

# Calls with their own rule below; everything else in X86_64 is trapped outright.
_SPECIAL = ("clone", "clone3", "kill", "tgkill")
DENIED = tuple(sorted(name for name in X86_64 if name not in _SPECIAL))


def unsupported_reason() -> str | None:
    """Why this machine cannot load the filter, or None."""
    machine = platform.machine()
    if machine not in ("x86_64", "AMD64"):
        return f"the seccomp filter has no syscall table for {machine} (only x86_64)"
    return None


def build(pid: int) -> bytes:
    """The filter for a process whose pid (as seen by itself) is `pid`, as packed `struct sock_filter`s."""
    table = X86_64
    prog: list[tuple[int, int | str, int | str, int]] = []

    def ld(offset: int) -> None:
        prog.append((_LD_W_ABS, 0, 0, offset))

    def jump(op: int, k: int, jt: int | str, jf: int | str) -> None:
        prog.append((op, jt, jf, k))

    def ret(value: int) -> None:
        prog.append((_RET, 0, 0, value))

    labels: dict[str, int] = {}

    def label(name: str) -> None:
        labels[name] = len(prog)

    # A foreign ABI (i386 via int 0x80, x32) would reinterpret every number below: kill the process.
    ld(_OFF_ARCH)
    jump(_JEQ, AUDIT_ARCH_X86_64, 1, 0)
    ret(_RET_KILL_PROCESS)
    ld(_OFF_NR)
    jump(_JGE, _X32_SYSCALL_BIT, 0, 1)
    ret(_RET_KILL_PROCESS)
    jump(_JEQ, table["clone"], "clone", 0)
    jump(_JEQ, table["kill"], "self_only", 0)
    jump(_JEQ, table["tgkill"], "self_only", 0)
    # glibc falls back from clone3 to clone on ENOSYS; clone3's flags live in memory that BPF cannot read.
    jump(_JEQ, table["clone3"], "enosys", 0)
    for name in DENIED:
        jump(_JEQ, table[name], "trap", 0)
    ret(_RET_ALLOW)
    # Classic BPF only jumps forward, so the argument checks sit between the dispatch and the shared returns.
    # Threads (torch's OpenMP pool) are clone(CLONE_THREAD); a new process or namespace is not.
    label("clone")
    ld(_OFF_ARG0_LO)
    jump(_JSET, _CLONE_NAMESPACE_FLAGS, "trap", 0)
    jump(_JSET, CLONE_THREAD, "allow", "trap")
    # kill(self) / tgkill(self, tid) keep os.kill(os.getpid()) and abort() working; any other target is denied.
    label("self_only")
    ld(_OFF_ARG0_LO)
    jump(_JEQ, pid & 0xFFFFFFFF, "allow", "trap")
    label("allow")
    ret(_RET_ALLOW)
    label("trap")
    ret(_RET_TRAP)
    label("enosys")
    ret(_RET_ERRNO | errno.ENOSYS)

    out = bytearray()
    for index, (code, jt, jf, k) in enumerate(prog):
        jt_off = _offset(labels, jt, index)
        jf_off = _offset(labels, jf, index)
        out += struct.pack("=HBBI", code, jt_off, jf_off, k)
    return bytes(out)


def _offset(labels: dict[str, int], target: int | str, index: int) -> int:
    if isinstance(target, int):
        return target
    offset = labels[target] - index - 1
    if not 0 <= offset <= 255:
        raise AssertionError(f"BPF jump to {target} out of range: {offset}")
    return offset


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_PR_SET_NO_NEW_PRIVS = 38
_SYS_SECCOMP = 317
_SECCOMP_SET_MODE_FILTER = 1


def install(program: bytes) -> None:
    """Load `program` for the calling thread (the child is single-threaded here, so: the whole process)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.syscall(_SYS_SECCOMP, _SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(fprog)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_SET_MODE_FILTER) failed")
