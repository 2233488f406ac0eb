"""The bubblewrap command line for the fork server's jail. Nothing else in the project knows bwrap flags.

The jail sees, read-only: /usr (and the /lib* symlinks), the Python installation, the virtualenv (at
/opt/depthcards/venv) and this package (at /opt/depthcards/sandbox). Not the project directory, the data directory, home directories or
/etc. It runs as uid 1000 without capabilities, with a cleared environment, in new user, PID, network, IPC, UTS
and cgroup namespaces; it dies with its parent and runs in a new session (no TIOCSTI into our terminal).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

JAIL_PACKAGE_ROOT = "/opt/depthcards"
JAIL_VENV = "/opt/depthcards/venv"
JAIL_UID = 1000
# Variables that change numerics or threads, never secrets (OPENBLAS_CORETYPE guards old OpenBLAS on some CPUs).
PASSTHROUGH_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def server_env(host_env: dict[str, str] | None = None) -> dict[str, str]:
    """The fork server's whole environment: threads pinned to 1, nothing inherited but numeric tuning."""
    host_env = dict(os.environ) if host_env is None else host_env
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
    }
    env.update({k: host_env[k] for k in PASSTHROUGH_ENV if k in host_env})
    return env


def find_bwrap() -> str | None:
    return shutil.which("bwrap") or ("/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None)


def userns_problem() -> str | None:
    """Why unprivileged user namespaces (needed by bwrap and by each job) are off, or None."""
    checks = (
        ("/proc/sys/kernel/unprivileged_userns_clone", "kernel.unprivileged_userns_clone=0"),
        ("/proc/sys/user/max_user_namespaces", "user.max_user_namespaces=0"),
        ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", None),
    )
    for path, what in checks:
        try:
            value = Path(path).read_text().strip()
        except OSError:
            continue
        if what and value == "0":
            return f"user namespaces are disabled ({what}); enable them with sysctl -w {what[:-2]}=1"
        if what is None and value == "1":
            return (
                "AppArmor restricts unprivileged user namespaces "
                "(kernel.apparmor_restrict_unprivileged_userns=1)"
            )
    return None


def _ro_binds() -> list[tuple[str, str]]:
    """(host path, jail path) pairs: the interpreter, its libraries and packages, and this package.

    The virtualenv goes to a fixed path (JAIL_VENV) so that a checkout under /tmp (CI clones anywhere) is
    not hidden by the jail's own /tmp; the base interpreter keeps its path because the venv's
    bin/python symlink and pyvenv.cfg point at it.
    """
    package_dir = Path(__file__).resolve().parent
    binds: list[tuple[str, str]] = [("/usr", "/usr")]
    for prefix in {sys.base_prefix, sys.base_exec_prefix}:
        real = os.path.realpath(prefix)
        if not real.startswith("/usr/"):
            binds.append((real, real))
            if real != prefix:
                binds.append((real, prefix))
    if in_virtualenv():
        binds.append((os.path.realpath(sys.prefix), JAIL_VENV))
    binds.append((str(package_dir), f"{JAIL_PACKAGE_ROOT}/sandbox"))
    if os.path.exists("/etc/ld.so.cache"):
        binds.append(("/etc/ld.so.cache", "/etc/ld.so.cache"))
    return sorted(set(binds), key=lambda pair: pair[1])


def in_virtualenv() -> bool:
    return sys.prefix != sys.base_prefix


def jail_python(python: str) -> str:
    """The interpreter's path as seen inside the jail."""
    if in_virtualenv():
        prefix = os.path.realpath(sys.prefix)
        real_parent = os.path.realpath(os.path.dirname(python))
        if real_parent == prefix or real_parent.startswith(prefix + os.sep):
            return os.path.join(JAIL_VENV, os.path.relpath(real_parent, prefix), os.path.basename(python))
    return python


def _root_links() -> list[str]:
    """Recreate /lib, /lib64, /bin, /sbin as on the host (merged /usr: symlinks; otherwise binds)."""
    args: list[str] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = f"/{name}"
        if os.path.islink(host):
            args += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            args += ["--ro-bind", host, host]
    return args


def bwrap_command(bwrap: str, argv: Sequence[str], env: dict[str, str]) -> list[str]:
    """`bwrap ... -- argv`: the jail around the fork server."""
    cmd = [
        bwrap,
        "--unshare-all",  # ipc, pid, net (loopback only), uts, cgroup
        "--unshare-user",  # explicit: --unshare-all only *tries* it
        "--uid", str(JAIL_UID), "--gid", str(JAIL_UID),
        "--cap-drop", "ALL",
        "--die-with-parent",
        "--new-session",
        "--hostname", "sandbox",
        "--clearenv",
    ]
    for key, value in sorted(env.items()):
        cmd += ["--setenv", key, value]
    cmd += ["--tmpfs", "/tmp"]  # first, so a bind that lives under /tmp lands on top of it
    for host, inside in _ro_binds():
        cmd += ["--ro-bind", host, inside]
    cmd += _root_links()
    cmd += [
        "--dev", "/dev",
        "--proc", "/proc",
        "--remount-ro", "/dev",
        "--remount-ro", "/",  # the jail's root is a tmpfs; without this jobs could leave files for later jobs
        "--chdir", "/tmp",
        "--",
        *argv,
    ]
    return cmd


def server_argv(python: str, *, isolated: bool, package_root: str) -> list[str]:
    """The interpreter command that starts sandbox.forkserver with `package_root` first on sys.path."""
    boot = (
        "import sys; sys.path.insert(0, sys.argv.pop(1)); "
        "from sandbox.forkserver import main; main()"
    )
    config = '{"isolated": true}' if isolated else '{"isolated": false}'
    # -I: ignore PYTHON* variables, the user site and the cwd; -B: the jail is read-only anyway.
    return [python, "-I", "-B", "-c", boot, package_root, config]


def host_package_root() -> str:
    return str(Path(__file__).resolve().parent.parent)
