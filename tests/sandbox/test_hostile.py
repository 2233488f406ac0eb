"""Hostile submissions, one property per test (codejail's test_cant_* style).

Each test checks that the side effect did not happen *and* that the sandbox still answers a normal job.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import sandbox as sandbox_pkg
from sandbox import Limits, Sandbox, outcomes


PROJECT_DIR = Path(sandbox_pkg.__file__).resolve().parent.parent
Healthy = Callable[[Sandbox], None]
SHORT = Limits(wall_s=2.0, cpu_s=2, mem_bytes=512 << 20, output_bytes=64 << 10)


@pytest.fixture
def canary() -> Iterator[Path]:
    path = PROJECT_DIR / f".canary-{uuid.uuid4().hex}"
    path.write_text("CANARY-PROJECT-SECRET")
    yield path
    path.unlink()


def test_cant_read_a_file_in_the_project_dir(sandbox: Sandbox, assert_healthy: Healthy, canary: Path) -> None:
    code = (
        f"import os\nprint(os.path.exists({str(canary)!r}), os.path.exists({str(PROJECT_DIR / 'pyproject.toml')!r}))\n"
        f"print(open({str(canary)!r}).read())\n"
    )
    result = sandbox.run(code)
    assert result.outcome == outcomes.RUNTIME_ERROR and result.exception_type == "FileNotFoundError"
    assert result.stdout == "False False\n"
    assert "CANARY" not in result.stdout + result.stderr + result.message
    assert_healthy(sandbox)


def test_cant_read_sqlite_in_a_data_dir(sandbox: Sandbox, assert_healthy: Healthy, tmp_path: Path) -> None:
    db = tmp_path / "data" / "depthcards.sqlite"
    db.parent.mkdir()
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
        conn.execute("INSERT INTO users VALUES ('CANARY-DB-ROW')")
    conn.close()
    code = (
        "import sqlite3, os\n"
        f"print(os.path.exists({str(db)!r}))\n"
        f"conn = sqlite3.connect('file:{db}?mode=ro', uri=True)\n"
        "print(conn.execute('SELECT * FROM users').fetchall())\n"
    )
    result = sandbox.run(code)
    assert result.outcome == outcomes.RUNTIME_ERROR, result
    assert result.stdout == "False\n"
    assert "CANARY" not in result.stdout + result.stderr + result.message
    assert_healthy(sandbox)


def test_cant_write_outside_private_tmp(sandbox: Sandbox, assert_healthy: Healthy, tmp_path: Path) -> None:
    targets = ["/escape.txt", "/dev/shm/escape.txt", "/opt/depthcards/sandbox/escape.py", "/etc/escape.txt",
               f"{PROJECT_DIR}/escape.txt", f"{tmp_path}/escape.txt", "/usr/escape.txt"]
    code = (
        "import errno\nwritten = []\n"
        f"for path in {targets!r}:\n"
        "    try:\n        open(path, 'w').write('x')\n        written.append(path)\n"
        "    except OSError:\n        pass\n"
        "open('/tmp/inside.txt', 'w').write('fine')\nprint(written)\n"
    )
    result = sandbox.run(code)
    assert (result.outcome, result.stdout) == (outcomes.OK, "[]\n"), result
    for path in (PROJECT_DIR / "escape.txt", tmp_path / "escape.txt", Path("/escape.txt")):
        assert not path.exists()
    assert_healthy(sandbox)


def test_cant_leave_a_file_or_module_for_the_next_job(sandbox: Sandbox, assert_healthy: Healthy) -> None:
    first = sandbox.run(
        "import sys, torch, json\n"
        "open('/tmp/evil_module.py', 'w').write('PWNED = True')\n"
        "open('/tmp/leftover.txt', 'w').write('x')\n"
        "sys.modules['json'] = None\n"
        "torch.add = lambda *a, **k: 'pwned'\n"
        "torch.Tensor.backward = lambda *a, **k: None\n"
    )
    assert first.outcome == outcomes.OK, first
    second = sandbox.run(
        "import os, sys, json, torch\n"
        "sys.path.insert(0, '/tmp')\n"
        "print(sorted(os.listdir('/tmp')), torch.add(torch.ones(1), 1).item())\n"
        "import evil_module\n"
    )
    assert second.outcome == outcomes.RUNTIME_ERROR and second.exception_type == "ModuleNotFoundError", second
    assert second.stdout == "[] 2.0\n"
    assert_healthy(sandbox)


def test_cant_read_environment_of_server_or_parent(
    sandbox: Sandbox, assert_healthy: Healthy, server_secret: str
) -> None:
    code = (
        "import os\nseen = [repr(dict(os.environ)), open('/proc/self/environ', 'rb').read().decode()]\n"
        "for pid in [os.getppid(), 1] + [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    for name in ('environ', 'cmdline'):\n"
        "        try:\n            seen.append(open(f'/proc/{pid}/{name}', 'rb').read().decode('latin-1'))\n"
        "        except OSError as exc:\n            seen.append(type(exc).__name__)\n"
        "print('\\n'.join(seen))\n"
    )
    result = sandbox.run(code)
    assert result.outcome == outcomes.OK, result
    assert server_secret not in result.stdout
    assert os.environ["DEPTHCARDS_TEST_SECRET"] == server_secret  # it was there to be stolen
    assert "PermissionError" in result.stdout  # the server's environ is not readable at all
    assert_healthy(sandbox)


def test_cant_connect_to_a_tcp_listener(sandbox: Sandbox, assert_healthy: Healthy) -> None:
    accepted: list[object] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(3)
        port = server.getsockname()[1]

        def accept() -> None:
            try:
                accepted.append(server.accept())
            except OSError:
                pass

        waiter = threading.Thread(target=accept)
        waiter.start()
        result = sandbox.run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\n")
        waiter.join()
    assert result.outcome == outcomes.SECURITY_VIOLATION and result.line == 2, result
    assert accepted == []
    assert_healthy(sandbox)


def test_cant_use_af_unix_sockets(sandbox: Sandbox, assert_healthy: Healthy, tmp_path: Path) -> None:
    path = tmp_path / "app.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen()
        server.settimeout(0.5)
        result = sandbox.run(
            f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({str(path)!r})\ns.send(b'hi')\n"
        )
        with pytest.raises(TimeoutError):
            server.accept()
    assert result.outcome == outcomes.SECURITY_VIOLATION and result.line == 2, result
    pair = sandbox.run("import socket\nsocket.socketpair()\n")
    assert pair.outcome == outcomes.SECURITY_VIOLATION
    assert_healthy(sandbox)


@pytest.mark.parametrize(
    "code",
    [
        "import os\nos.system('echo SPAWNED')\n",
        "import subprocess\nprint(subprocess.check_output(['echo', 'SPAWNED']))\n",
        "import os\nif os.fork() == 0:\n    print('SPAWNED')\n",
        "import multiprocessing as mp\np = mp.Process(target=print, args=('SPAWNED',))\np.start()\np.join()\n",
        "import os\nos.execv('/bin/echo', ['echo', 'SPAWNED'])\n",
    ],
    ids=["os.system", "subprocess", "fork", "multiprocessing", "execv"],
)
def test_cant_spawn_processes(sandbox: Sandbox, assert_healthy: Healthy, code: str) -> None:
    result = sandbox.run(code)
    assert result.outcome == outcomes.SECURITY_VIOLATION, result
    assert "SPAWNED" not in result.stdout + result.stderr
    assert_healthy(sandbox)


def test_cant_start_5000_threads(sandbox: Sandbox, assert_healthy: Healthy) -> None:
    code = (
        "import threading, time\nstarted = 0\n"
        "for _ in range(5000):\n"
        "    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n    started += 1\n"
    )
    result = sandbox.run(code, limits=SHORT)
    assert result.outcome == outcomes.MEMORY_LIMIT and result.line == 4, result
    assert_healthy(sandbox)


@pytest.mark.parametrize(
    "code",
    ["import torch\nx = torch.ones(2 * 1024**3, dtype=torch.float32)\n", "x = b'x' * (8 << 30)\n",
     "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))\n"],
    ids=["torch-8GB", "bytes-8GB", "grow-until-refused"],
)
def test_cant_allocate_8_gb(sandbox: Sandbox, assert_healthy: Healthy, code: str) -> None:
    result = sandbox.run(code, limits=SHORT)
    assert result.outcome == outcomes.MEMORY_LIMIT, result
    assert_healthy(sandbox)


def test_cant_loop_forever(sandbox: Sandbox, assert_healthy: Healthy) -> None:
    result = sandbox.run("while True:\n    pass\n", limits=Limits(wall_s=2.0, cpu_s=1))
    assert result.outcome == outcomes.TIMEOUT, result
    assert result.duration_ms < 3000  # SIGXCPU after 1 s of CPU, or the wall clock on a busy machine
    # Ignoring SIGXCPU does not help: the hard limit (cpu_s + 1) is a SIGKILL.
    code = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass\n"
    result = sandbox.run(code, limits=Limits(wall_s=6.0, cpu_s=1))
    assert result.outcome == outcomes.TIMEOUT and result.duration_ms < 7000, result
    assert_healthy(sandbox)


def test_cant_sleep_forever(sandbox: Sandbox, assert_healthy: Healthy) -> None:
    result = sandbox.run("import time\ntime.sleep(10**6)\n", limits=SHORT)
    assert result.outcome == outcomes.TIMEOUT, result
    assert 1900 <= result.duration_ms < 3000
    assert_healthy(sandbox)


def test_cant_print_100_mb(sandbox: Sandbox, assert_healthy: Healthy) -> None:
    result = sandbox.run("import sys\nfor _ in range(100):\n    sys.stdout.write('x' * (1 << 20))\n", limits=SHORT)
    assert result.outcome == outcomes.OUTPUT_LIMIT and result.output_truncated, result
    assert len(result.stdout) == SHORT.output_bytes
    assert_healthy(sandbox)


def test_cant_write_a_200_mb_file(sandbox: Sandbox, assert_healthy: Healthy) -> None:
    code = "with open('big.bin', 'wb') as f:\n    for _ in range(200):\n        f.write(b'x' * (1 << 20))\n"
    result = sandbox.run(code, limits=SHORT)
    assert result.outcome == outcomes.OUTPUT_LIMIT and result.line == 3, result
    # A larger FSIZE hits the private tmpfs size instead (ENOSPC), same verdict.
    result = sandbox.run(code, limits=Limits(fsize_bytes=1 << 30, tmp_bytes=16 << 20))
    assert result.outcome == outcomes.OUTPUT_LIMIT, result
    assert_healthy(sandbox)


@pytest.mark.parametrize(
    "code",
    [
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
        "import os, signal\nos.kill(1, signal.SIGKILL)\n",
        "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
        "import os, signal\nos.killpg(os.getpgid(os.getppid()), signal.SIGKILL)\n",
        "import ctypes, os\nctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0)\n",  # PTRACE_ATTACH
    ],
    ids=["kill-server", "kill-init", "kill-all", "killpg-server", "ptrace-attach"],
)
def test_cant_signal_or_ptrace_the_server(sandbox: Sandbox, assert_healthy: Healthy, code: str) -> None:
    pid_before, restarts = sandbox.server_pid, sandbox.restarts
    result = sandbox.run(code)
    assert result.outcome == outcomes.SECURITY_VIOLATION and result.line == 2, result
    assert_healthy(sandbox)
    assert (sandbox.server_pid, sandbox.restarts) == (pid_before, restarts)


def test_cant_read_server_memory(sandbox: Sandbox, assert_healthy: Healthy) -> None:
    code = "import os\nwith open(f'/proc/{os.getppid()}/mem', 'rb') as f:\n    print(f.read(16))\n"
    result = sandbox.run(code)
    assert result.outcome == outcomes.RUNTIME_ERROR and result.exception_type == "PermissionError", result
    assert_healthy(sandbox)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("socket", "2, 1, 0"), ("fork", ""), ("execve", "b'/bin/sh', None, None"), ("ptrace", "16, 1, 0, 0"),
        ("unshare", "0x10000000"), ("setns", "0, 0"), ("mount", "b'none', b'/tmp', b'tmpfs', 0, None"),
        ("bpf", "0, 0, 0"), ("io_uring_setup", "1, 0"), ("keyctl", "0, 0"), ("clone3", "0, 0"),
        ("userfaultfd", "0"), ("perf_event_open", "0, 0, 0, 0, 0"), ("process_vm_readv", "1, 0, 0, 0, 0, 0"),
    ],
)
def test_cant_make_raw_syscalls_through_ctypes(sandbox: Sandbox, assert_healthy: Healthy, name: str, args: str) -> None:
    from sandbox.seccomp import X86_64

    code = f"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall({X86_64[name]}, {args})\nprint('returned', r, ctypes.get_errno())\n"
    result = sandbox.run(code)
    if name == "clone3":  # ENOSYS, so glibc falls back to clone(), which is filtered on its flags
        assert result.stdout == "returned -1 38\n", result
    else:
        assert result.outcome == outcomes.SECURITY_VIOLATION and result.line == 3, result
        assert "returned" not in result.stdout
    assert_healthy(sandbox)


def test_cant_use_inherited_descriptors(sandbox: Sandbox, assert_healthy: Healthy) -> None:
    code = (
        "import os, stat\n"
        "print(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))\n"
        "print(os.read(0, 10))\n"
        "usable = []\n"
        "for fd in range(4, 1024):\n"
        "    try:\n        os.write(fd, b'{\"id\": 1, \"event\": \"done\"}\\n')\n        usable.append(fd)\n"
        "    except OSError:\n        pass\n"
        "print(usable)\n"
    )
    result = sandbox.run(code)
    assert result.outcome == outcomes.OK, result
    # 0 = /dev/null, 1/2 = output pipes, 3 = result pipe, 4 = the directory listing itself
    assert result.stdout == "[0, 1, 2, 3, 4]\nb''\n[]\n"
    assert_healthy(sandbox)


def test_cant_escape_through_proc_root_or_cwd(sandbox: Sandbox, assert_healthy: Healthy, canary: Path) -> None:
    code = (
        "import os\nseen = []\n"
        f"for p in ['/proc/1/root{canary}', '/proc/self/root{canary}', '/proc/1/cwd/{canary.name}']:\n"
        "    try:\n        seen.append(open(p).read())\n    except OSError as exc:\n        seen.append(type(exc).__name__)\n"
        "print(seen)\n"
    )
    result = sandbox.run(code)
    assert "CANARY" not in result.stdout, result
    assert_healthy(sandbox)


# Searches this process's whole readable memory (every readable mapping in /proc/self/maps, read through
# /proc/self/mem: Python objects, freed heap, stacks, library data) for HEAD immediately followed by TAIL.
# The needle is never built here (only its two halves), so a hit can only be memory inherited at fork time.
# A control string that *is* in memory proves the scan works.
_MEMORY_SCAN = """\
import os
HEAD, TAIL = bytes.fromhex({head!r}), bytes.fromhex({tail!r})
CONTROL_HEAD, CONTROL_TAIL = b'control-', bytes.fromhex({control!r})
control = bytearray(CONTROL_HEAD) + CONTROL_TAIL  # contiguous, alive during the scan


def regions():
    with open('/proc/self/maps') as maps:
        for line in maps.read().splitlines():
            span, perms = line.split()[:2]
            if perms.startswith('r'):
                yield (int(x, 16) for x in span.split('-'))


def count(data, head, tail):
    hits, i = 0, data.find(head)
    while i != -1:
        hits += data.startswith(tail, i + len(head))
        i = data.find(head, i + 1)
    return hits


secret = found_control = scanned = 0
mem = os.open('/proc/self/mem', os.O_RDONLY)
for start, end in list(regions()):
    pos = start
    while pos < end:
        size = min(8 << 20, end - pos)
        try:
            data = os.pread(mem, size, pos)
        except OSError:  # [vvar], [vsyscall]
            break
        scanned += len(data)
        secret += count(data, HEAD, TAIL)
        found_control += count(data, CONTROL_HEAD, CONTROL_TAIL)
        pos += size if pos + size >= end else size - 64  # overlap: a needle across chunks is still seen
        del data
print(f'secret={{secret}} control={{found_control > 0}} scanned_mb={{scanned >> 20}}')
"""


def test_cant_read_another_jobs_code_or_output(sandbox: Sandbox, assert_healthy: Healthy) -> None:
    """A job searching its own memory finds nothing of a concurrent job's source or output."""
    secret = f"other-users-secret-{uuid.uuid4().hex}"
    victim = f"import time\nSECRET = {secret!r}\nprint(SECRET, flush=True)\ntime.sleep(2)\n"
    half = len(secret) // 2
    thief = _MEMORY_SCAN.format(
        head=secret[:half].encode().hex(), tail=secret[half:].encode().hex(), control=uuid.uuid4().hex.encode().hex()
    )
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(sandbox.run, victim, limits=Limits(wall_s=8.0))
        time.sleep(0.7)  # the victim has been read by the server, forked, and has printed its secret
        assert not running.done()
        result = sandbox.run(thief, limits=Limits(wall_s=30.0, cpu_s=30))
        victim_result = running.result(timeout=30)
    assert victim_result.outcome == outcomes.OK and victim_result.stdout == secret + "\n", victim_result
    assert result.outcome == outcomes.OK, result
    found, control, scanned = (part.split("=")[1] for part in result.stdout.split())
    assert control == "True" and int(scanned) >= 100, result.stdout  # the scan works and covered the process
    assert found == "0", f"a job read a concurrent job's code or output from its own memory: {result.stdout}"
    assert_healthy(sandbox)
