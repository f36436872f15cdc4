"""Runs untrusted Python (a model's completion) in a contained process and reads back, as
untrusted bytes, the values it computes for a list of call expressions.

``run_in_sandbox(program, calls, ...)`` starts `llm_bridge.sandbox_supervisor`, a trusted
``python -I -S`` process that forks the candidate: the program runs as ``__main__``, then each
call is evaluated in its namespace and its value sent back as a line of JSON on a pipe. Whoever
reads that reply must treat it as hostile data: the candidate can write anything there.

What is contained depends on the machine; `available_containment()` probes it once per
process and runs use the strongest `Containment` that works.

Always (Linux): the candidate has its own session; the supervisor is a child subreaper, so
what it starts (``setsid()`` and double forks included) stays a descendant, and all of it is
dead when `run_in_sandbox` returns. Limits: address space (``memory_mb``), CPU seconds
(``timeout_s`` + 1), 16 MiB per file, 256 open files, no core files. no_new_privs (setuid
binaries grant nothing) and, on x86_64 and arm64, a seccomp filter refusing unshare(2) and
namespace-creating clone(2). Environment: PATH, LANG, HOME and TMPDIR only; stdin, stdout and
stderr on /dev/null; a fresh working directory.

``own_user`` (root): a uid and gid of its own per run (``SANDBOX_UID_BASE`` + the supervisor's
pid), no groups: it cannot signal, ptrace, or read the memory or ``/proc/<pid>/environ`` of
the verifier's processes or of other runs; it reads only world-readable files; RLIMIT_NPROC
(32) bounds its processes, since the kernel counts them per uid; the end SIGKILLs its uid.

``namespaces`` (root, or unprivileged user namespaces): it is pid 2 of a pid namespace whose
trusted pid 1 exits when it does, and the kernel then kills everything left in it; pids and
kill(-1) reach nothing outside; its /proc shows its namespace only; a network namespace of its
own has no network (only a loopback, down); its own IPC namespace; in a mount namespace every
mount is read-only except its working directory, a fresh 16 MiB tmpfs. With ``own_user`` too,
a directory that hides the interpreter from other uids (``/root`` holding a pyenv install) is
covered by a tmpfs holding only the interpreter's entry: the rest of it is hidden as well.

Without ``own_user`` (not root) the candidate is the verifier's uid: it can read every file
that user can, and RLIMIT_NPROC is not set (it would count all of the user's processes), so
only the timeout bounds a fork bomb. Without ``namespaces`` it can use the network, sees every
process in /proc, and writes wherever its uid may (with ``own_user``: world-writable places
such as /tmp, where its files outlive the run). With neither (not root, no user namespaces) it
can also signal and ptrace the verifier's processes, hence read their memory (the expected
values included) and environment, and kill the supervisor, whose final cleanup (stopping then
killing every descendant found in /proc) then never runs: a guard against accidents, not a
sandbox against hostile code. ``own_user`` without ``namespaces`` works only where every uid
can read the interpreter's files. A root verifier never runs a program as root: without
``own_user`` the supervisor refuses, and every run is a setup failure. Never contained: CPU
time and kernel memory (pipe and socket buffers) shared with other runs, and the kernel's
attack surface beyond the seccomp filter.
"""

from __future__ import annotations

import functools
import json
import marshal
import os
import select
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

_SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sandbox_supervisor.py")
MAX_REPLY_BYTES = 1 << 20  # the trusted side reads no more of the candidate's reply than this
_MAX_FILE_BYTES = 16 << 20  # RLIMIT_FSIZE: the program's files stay small
_MAX_PROCESSES = 32  # RLIMIT_NPROC, with an own uid: the candidate and what it starts
_MAX_OPEN_FILES = 256
_STOP_GRACE_S = 2.0  # a supervisor asked to stop has this long before it is SIGKILLed


class Containment(NamedTuple):
    """Which protections a run gets; see the module docstring for what each one means.

    own_user: the candidate runs under a uid and gid of its own (needs root).
    namespaces: own pid, mount, network and IPC namespaces (root, or user namespaces)."""

    own_user: bool
    namespaces: bool


class SandboxRun(NamedTuple):
    """reply: what the candidate wrote on its reply channel (untrusted; at most
    ``MAX_REPLY_BYTES + 1`` bytes). timed_out: `run_in_sandbox`'s ``enough`` had not said
    stop when the time ran out. ended: how the candidate's process ended, in words ("exited
    with code 0", "killed by signal SIGKILL", "stopped by the verifier", "sandbox setup
    failed: ..."); "" if the supervisor said nothing."""

    reply: bytes
    timed_out: bool
    ended: str


def run_in_sandbox(
    program: str,
    calls: Sequence[str],
    *,
    timeout_s: float,
    memory_mb: int,
    containment: Containment | None = None,
    enough: Callable[[bytes], bool] = lambda reply: False,
) -> SandboxRun:
    """Runs ``program`` then evaluates each of ``calls`` (expression source) in its namespace.

    timeout_s: wall clock from the start, interpreter start included. memory_mb: address space.
    containment: None for `available_containment()`; a weaker one may be asked for, a
    stronger one than the machine allows makes every run a setup failure. enough: called with
    the reply so far whenever it grows; True stops the run (e.g. once a value fails its test).
    Threads may call this concurrently: nothing here runs between fork and exec."""
    containment = available_containment() if containment is None else containment
    with tempfile.TemporaryDirectory(prefix="sandbox_", ignore_cleanup_errors=True) as workdir:
        reply_read, reply_write = os.pipe()
        try:
            supervisor = subprocess.Popen(
                [sys.executable, "-I", "-S", _SUPERVISOR],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                pass_fds=(reply_write,),
                cwd="/",
                env={"PATH": os.defpath},
                start_new_session=True,  # never in the caller's process group
            )
        except BaseException:
            os.close(reply_read)
            raise
        finally:
            os.close(reply_write)  # the candidate's copy is the only writer left
        job = {
            "program": program,
            "calls": list(calls),
            "workdir": os.path.realpath(workdir),
            "reply_fd": reply_write,
            "memory_bytes": memory_mb << 20,
            "cpu_seconds": max(1, int(timeout_s) + 1),
            "file_bytes": _MAX_FILE_BYTES,
            "open_files": _MAX_OPEN_FILES,
            "processes": _MAX_PROCESSES,
            "site_paths": _site_paths(),
            "own_user": containment.own_user,
            "namespaces": containment.namespaces,
        }
        deadline = time.monotonic() + timeout_s
        try:
            data = marshal.dumps(job)
            supervisor.stdin.write(len(data).to_bytes(8, "big") + data)
            supervisor.stdin.flush()
            return _collect(supervisor, reply_read, deadline, enough)
        except BrokenPipeError:
            return SandboxRun(b"", False, "sandbox setup failed: the supervisor did not start")
        finally:
            _stop(supervisor)
            os.close(reply_read)


@functools.cache
def _site_paths() -> list[str]:
    """This interpreter's site-packages directories (the supervisor runs without ``site``)."""
    return [path for path in site.getsitepackages() if os.path.isdir(path)]


def _collect(
    supervisor: subprocess.Popen, reply_fd: int, deadline: float, enough: Callable[[bytes], bool]
) -> SandboxRun:
    """Reads the reply and the supervisor's report until ``enough``, the end of the run (the
    supervisor has killed everything and exited), the reply's size cap, or the deadline."""
    reply, report = bytearray(), bytearray()
    report_fd = supervisor.stdout.fileno()
    open_fds = {reply_fd, report_fd}
    while True:
        if enough(bytes(reply)) or len(reply) > MAX_REPLY_BYTES:
            break
        if report_fd not in open_fds:  # every writer of the reply is dead: drain it
            if reply_fd not in open_fds:
                break
            wait_s = max(0.0, min(deadline - time.monotonic(), 0.5))
        else:
            wait_s = deadline - time.monotonic()
            if wait_s <= 0:
                return SandboxRun(bytes(reply), True, _first_line(report))
        ready, _, _ = select.select(list(open_fds), [], [], wait_s)
        if not ready and report_fd not in open_fds:
            break
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.discard(fd)
            (reply if fd == reply_fd else report).extend(chunk)
    return SandboxRun(bytes(reply[: MAX_REPLY_BYTES + 1]), False, _first_line(report))


def _first_line(report: bytes) -> str:
    """The supervisor's first report line, in words."""
    try:
        fields = json.loads(report.split(b"\n", 1)[0])
    except ValueError:
        return ""
    if "setup_error" in fields:
        return f"sandbox setup failed: {fields['setup_error']}"
    return str(fields.get("ended", ""))


def _stop(supervisor: subprocess.Popen) -> None:
    """Closing its stdin tells the supervisor to kill the run; it exits once all is dead."""
    try:
        supervisor.stdin.close()
    except BrokenPipeError:
        pass
    try:
        supervisor.wait(timeout=_STOP_GRACE_S)
    except subprocess.TimeoutExpired:  # never expected; its namespace init dies with it
        supervisor.kill()
        supervisor.wait()
    supervisor.stdout.close()


_PROBE_PROGRAM = """
import os, sys
def probe():
    import decimal, fractions  # modules read from disk now, as the candidate
    paths = [path for path in sys.path if os.path.exists(path)]
    return all(os.access(path, os.R_OK) for path in paths) and os.access(sys.executable, os.X_OK)
"""
_PROBE_ORDER = (  # strongest first
    Containment(own_user=True, namespaces=True),
    Containment(own_user=False, namespaces=True),
    Containment(own_user=True, namespaces=False),
    Containment(own_user=False, namespaces=False),
)
_probe_lock = threading.Lock()
_probed: dict[Containment, bool] = {}


def available_containment() -> Containment:
    """The strongest containment that works on this machine (the weakest if none does)."""
    return next((option for option in _PROBE_ORDER if containment_works(option)), _PROBE_ORDER[-1])


def containment_works(containment: Containment) -> bool:
    """Whether runs with ``containment`` work here: a trial run (a tenth of a second or so)
    the first time, remembered for the life of the process. A run fails closed: where a step
    is refused (no root, no user namespaces, a container's seccomp filter), where a mount
    cannot be made read-only, or where the candidate's uid cannot read the interpreter's files
    and no mount namespace can make them readable."""
    with _probe_lock:
        if containment not in _probed:
            run = run_in_sandbox(
                _PROBE_PROGRAM, ["probe()"], timeout_s=10.0, memory_mb=256, containment=containment
            )
            try:
                lines = [json.loads(line) for line in run.reply.splitlines()]
            except ValueError:
                lines = []
            _probed[containment] = lines == [["ran"], ["value", True]]
        return _probed[containment]
