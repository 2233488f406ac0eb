"""Per-job isolation, run in the freshly forked child before any submitted code.

Order matters: descriptors first (nothing of the server's leaks into the rest), then rlimits, then fresh
user/mount/network/IPC namespaces with a private tmpfs as the working directory, capabilities dropped, and the
seccomp filter last (it forbids the mount/unshare calls made just before it).
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import resource
import signal
import struct

from sandbox import seccomp
from sandbox.limits import Limits

STDIN, STDOUT, STDERR, RESULT = 0, 1, 2, 3

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_PR_SET_PDEATHSIG = 1
_SYS_CAPSET = 126
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

WORKDIR = "/tmp"

_libc = ctypes.CDLL(None, use_errno=True)


class ConfineError(RuntimeError):
    """A confinement step failed: the job must not run."""


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise ConfineError(f"{what}: {os.strerror(err)}")


def address_space_bytes() -> int:
    """Current virtual size of this process (RLIMIT_AS is set relative to it)."""
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def setup_descriptors(out_fd: int, err_fd: int, result_fd: int) -> None:
    """Leave exactly stdin=/dev/null, stdout, stderr and the result pipe open."""
    devnull = os.open("/dev/null", os.O_RDONLY)
    # Move the job pipes above 3 first so the dup2 sequence cannot clobber one of them.
    moved = [os.dup(fd) for fd in (devnull, out_fd, err_fd, result_fd)]
    for target, fd in zip((STDIN, STDOUT, STDERR, RESULT), moved):
        os.dup2(fd, target)
    # close_range(2) under the hood: the server's control pipe, other jobs' pipes, pidfds, the selector.
    os.closerange(RESULT + 1, 1 << 20)


def set_rlimits(limits: Limits) -> None:
    for which, pair in limits.to_rlimits(address_space_bytes()):
        resource.setrlimit(which, pair)


def _write_proc(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter_namespaces(tmp_bytes: int) -> None:
    """Fresh user, mount, network and IPC namespaces; a private tmpfs mounted on /tmp and made the cwd."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWIPC), "unshare")
    # Keep the same (unprivileged, non-root) ids: mapping the parent's root would need CAP_SETFCAP there.
    _write_proc("/proc/self/setgroups", "deny")
    _write_proc("/proc/self/uid_map", f"{uid} {uid} 1\n")
    _write_proc("/proc/self/gid_map", f"{gid} {gid} 1\n")
    _check(_libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")
    options = f"size={tmp_bytes},nr_inodes=4096,mode=0700".encode()
    _check(
        _libc.mount(b"tmpfs", WORKDIR.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, options),
        "mount tmpfs",
    )
    os.chdir(WORKDIR)


def drop_capabilities() -> None:
    """The new user namespace granted a full set; the snippet needs none of them."""
    header = struct.pack("=Ii", _LINUX_CAPABILITY_VERSION_3, 0)
    data = bytes(24)  # two zeroed __user_cap_data_struct: effective, permitted, inheritable
    _check(_libc.syscall(_SYS_CAPSET, header, data), "capset")


def report_fatal_signals() -> None:
    """Crashes and denied syscalls write the Python stack to the result pipe, then die by their signal."""
    faulthandler.enable(file=RESULT, all_threads=False)
    faulthandler.register(signal.SIGSYS, file=RESULT, all_threads=False, chain=True)


def enter(
    *, out_fd: int, err_fd: int, result_fd: int, limits: Limits, isolated: bool, server_pid: int, workdir: str
) -> None:
    """Confine the calling (forked, single-threaded) process; raises ConfineError if a layer cannot be set.

    `workdir` is only used unisolated (isolated runs get their own tmpfs instead).
    """
    os.setsid()
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != server_pid:  # the server died before PDEATHSIG was armed
        os._exit(1)
    setup_descriptors(out_fd, err_fd, result_fd)
    set_rlimits(limits)
    if isolated:
        enter_namespaces(limits.tmp_bytes)
        drop_capabilities()
    else:
        os.chdir(workdir)
    report_fatal_signals()
    if isolated:
        seccomp.install(seccomp.build(os.getpid()))
