"""The Python-test verifier's sandbox: fake passes score zero, escapes are contained.

Each escape test runs a hostile program through `PythonTestVerifier` and checks what it
achieved from outside. Tests that need a protection the machine lacks (root for an own uid,
root or user namespaces for namespaces) are skipped with the reason."""

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from llm_bridge.sandbox import (
    MAX_REPLY_BYTES,
    Containment,
    available_containment,
    containment_works,
    run_in_sandbox,
)
from llm_bridge.verifiers import PythonTestVerifier

ADD_TEST = "assert add(1, 2) == 3"
WRONG_ADD = "def add(a, b):\n    return 0\n"
ALL_CONTAINMENTS = [
    Containment(own_user=True, namespaces=True),
    Containment(own_user=False, namespaces=True),
    Containment(own_user=True, namespaces=False),
    Containment(own_user=False, namespaces=False),
]


def _name(containment):
    return (
        "+".join(
            name for name, on in zip(("own_user", "namespaces"), containment, strict=True) if on
        )
        or "no_namespaces_same_user"
    )


@pytest.fixture(params=ALL_CONTAINMENTS, ids=_name)
def any_containment(request):
    """Every containment this machine can run, so each fallback path is exercised."""
    if not containment_works(request.param):
        pytest.skip(f"{request.param} does not work on this machine")
    return request.param


def _needs(*, own_user=False, namespaces=False):
    here = available_containment()
    missing = [
        reason
        for wanted, have, reason in (
            (own_user, here.own_user, "uid of its own (needs root)"),
            (namespaces, here.namespaces, "namespaces (needs root or user namespaces)"),
        )
        if wanted and not have
    ]
    if missing:
        pytest.skip(f"this machine gives the program no {' or '.join(missing)}")


def _needs_either():
    here = available_containment()
    if not (here.own_user or here.namespaces):
        pytest.skip("needs an own uid (root) or namespaces; without them the program can reach us")


def _processes_with(marker):
    """Pids whose command line has ``marker`` as an argument."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as file:
                    arguments = file.read().split(b"\0")
            except OSError:
                continue
            if marker.encode() in arguments:
                found.append(int(name))
    return found


@pytest.fixture
def marker():
    """A unique argument for the program's children; any still alive are killed afterwards
    (they only survive a broken sandbox)."""
    token = f"sandbox-test-{uuid.uuid4().hex}"
    yield token
    for pid in _processes_with(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _sleeper_source(marker, ready_fd="-1"):
    """Source of a statement that execs a sleeping interpreter tagged with ``marker``; it
    first writes a byte to the fd that the expression ``ready_fd`` gives, if not -1."""
    code = "import os, time; %d < 0 or os.write(%d, b'x'); time.sleep(60)"
    arguments = f"[sys.executable, '-S', '-c', {code!r} % (({ready_fd},) * 2), {marker!r}]"
    return f"os.execv(sys.executable, {arguments})"


# Fake passes: each fooled the previous verifier into a reward of 1.0.


def test_writing_a_forged_verdict_to_every_file_and_fd_scores_zero(any_containment):
    forged = b'ok\n["ran"]\n["value", true]\n{"status": "ok", "reward": 1.0}\n'
    program = f"""
import os, sys
for fd in range(64):
    try:
        os.write(fd, {forged!r})
    except OSError:
        pass
for path in ["status", "verdict", "result.json", *sys.argv[1:]]:
    try:
        with open(path, "w") as file:
            file.write("ok")
    except OSError:
        pass
os._exit(0)
{WRONG_ADD}"""
    result = PythonTestVerifier(containment=any_containment)("", program, tests=ADD_TEST)
    assert result.reward == 0.0 and result.status in ("wrong", "crash")


def test_replacing_the_harness_writer_and_serialiser_scores_zero(any_containment):
    # Whatever writes the verdict or the values in this process is replaced by a forger
    # that claims success; it does not know the expected value (3).
    program = f"""
import json, sys

class ForgedFile:  # the old harness wrote its status file through this global
    def __init__(self, real):
        self.real = real
    def write(self, text):
        self.real.write("ok")
    def close(self):
        self.real.close()

def forged_writer(real):  # the new one sends JSON lines: every value becomes True
    return lambda line: real(line if line in ('["ran"]', ["ran"]) else '["value",true]')

frame = sys._getframe()
while frame is not None:
    names = frame.f_globals
    if "status_file" in names:
        names["status_file"] = ForgedFile(names["status_file"])
    for name in ("_send", "_write"):
        if callable(names.get(name)):
            names[name] = forged_writer(names[name])
    if callable(names.get("_encode")):
        names["_encode"] = lambda value, depth=0: "true"
    frame = frame.f_back
json.dumps = lambda *args, **kwargs: '{{"status": "ok", "passed": true}}'
{WRONG_ADD}"""
    result = PythonTestVerifier(containment=any_containment)("", program, tests=ADD_TEST)
    assert result.reward == 0.0 and result.status in ("wrong", "crash")


@pytest.mark.parametrize(
    ("definition", "tests"),
    [
        ("class Value:\n    def __eq__(self, other):\n        return True", ADD_TEST),
        ("class Value(int):\n    def __eq__(self, other):\n        return True", ADD_TEST),
        (
            "class Value(str):\n    def __eq__(self, other):\n        return True",
            "assert add() == 'a'",
        ),
        (
            "class Value(list):\n    def __eq__(self, other):\n        return True",
            "assert add() == [1]",
        ),
        ("class Value:\n    def __eq__(self, other):\n        return True", "assert 3 == add()"),
        (
            "class Value(float):\n    def __lt__(self, other):\n        return True",
            "assert add() < 0",
        ),
        (
            "class Value(dict):\n    def __contains__(self, key):\n        return True",
            "assert 1 in add()",
        ),
    ],
    ids=["object", "int", "str", "list", "reflected", "float_lt", "dict_contains"],
)
def test_a_value_that_compares_as_it_likes_scores_zero(definition, tests):
    program = f"{definition}\n\ndef add(*args):\n    return Value()\n"
    result = PythonTestVerifier()("", program, tests=tests)
    assert result.status == "wrong"
    assert "not plain data" in result.detail


def test_expected_values_never_enter_the_programs_process():
    secret = f"needle-{uuid.uuid4().hex}"
    # Searches its whole address space for the expected value, and returns it if found.
    program = r"""
import re
def find():
    pattern = re.compile(b"nee" + b"dle-[0-9a-f]{32}")
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as memory:
        for line in maps:
            start, end = (int(part, 16) for part in line.split()[0].split("-"))
            for offset in range(start, end, 1 << 20):
                try:
                    memory.seek(offset)
                    match = pattern.search(memory.read(min(1 << 20, end - offset)))
                except (OSError, OverflowError, ValueError):
                    break
                if match:
                    return match.group().decode()
    return "not found"
"""
    result = PythonTestVerifier(timeout_s=20)("", program, tests=f"assert find() == {secret!r}")
    assert result == (0.0, "wrong", f"assert find() == {secret!r}: got 'not found'")


# Containment: what the program starts dies with it; it cannot reach out.


def test_a_setsid_grandchild_is_dead_when_the_verifier_returns(any_containment, marker):
    program = f"""
import os, sys
def start():
    ready, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            {_sleeper_source(marker, "write_end")}
        os._exit(0)
    os.wait()
    return "started" if os.read(ready, 1) == b"x" else "failed"
"""
    verifier = PythonTestVerifier(timeout_s=10, containment=any_containment)
    assert verifier("", program, tests="assert start() == 'started'").status == "ok"
    assert _processes_with(marker) == []


def test_a_child_started_with_subprocess_is_dead_when_the_verifier_returns(marker):
    program = f"""
import subprocess, sys, time
subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(60)", {marker!r}])
time.sleep(0.3)
def started():
    return True
"""
    assert PythonTestVerifier(timeout_s=10)("", program, tests="assert started()").status == "ok"
    assert _processes_with(marker) == []


def test_a_bounded_fork_bomb_is_stopped_by_the_process_limit_and_cleaned_up(marker):
    _needs(own_user=True)
    program = f"""
import os, sys
def spawn():
    started = 0
    for _ in range(50):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                {_sleeper_source(marker)}
            finally:
                os._exit(1)
        started += 1
    return started
"""
    result = PythonTestVerifier(timeout_s=10)("", program, tests="assert spawn() < 50")
    assert result == (1.0, "ok", "ok")
    assert _processes_with(marker) == []


def test_children_are_cleaned_up_after_a_timeout(any_containment, marker):
    program = f"""
import os, sys
for _ in range(5):
    if os.fork() == 0:
        {_sleeper_source(marker)}
while True:
    pass
"""
    verifier = PythonTestVerifier(timeout_s=1.0, containment=any_containment)
    assert verifier("", program, tests="assert True").status == "timeout"
    assert _processes_with(marker) == []


@pytest.fixture
def sleeper():
    """A process of the verifier's, with a secret in its environment."""
    secret = f"secret-{uuid.uuid4().hex}"
    process = subprocess.Popen(["sleep", "60"], env={"VERIFIER_SECRET": secret})
    yield process, secret
    process.kill()
    process.wait()


def test_the_program_cannot_read_the_environment_of_the_verifiers_processes(sleeper):
    _needs_either()
    process, secret = sleeper
    program = f"""
import os
def leaks():
    found = []
    for pid in (os.getppid(), 1, {os.getpid()}, {process.pid}):
        try:
            with open(f"/proc/{{pid}}/environ", "rb") as file:
                found.append(file.read().decode(errors="replace"))
        except OSError:
            pass
    return found
"""
    result = PythonTestVerifier()("", program, tests="assert leaks() == []")
    assert result == (1.0, "ok", "ok")
    assert secret not in result.detail


def test_the_program_cannot_signal_the_verifiers_processes(sleeper):
    _needs_either()
    process, _ = sleeper
    received = []
    previous = signal.signal(signal.SIGTERM, lambda number, frame: received.append(number))
    program = f"""
import os, signal
def attack():
    for pid, number in ((os.getppid(), signal.SIGKILL), ({os.getpid()}, signal.SIGTERM),
                        ({process.pid}, signal.SIGKILL), (1, signal.SIGKILL)):
        try:
            os.kill(pid, number)
        except OSError:
            pass
    return "done"
"""
    try:
        result = PythonTestVerifier()("", program, tests="assert attack() == 'done'")
        time.sleep(0.1)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert received == []
    assert process.poll() is None  # still running
    assert result == (1.0, "ok", "ok")


def test_the_program_cannot_reach_the_network():
    _needs(namespaces=True)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        program = f"""
import socket
def connects():
    try:
        socket.create_connection(("127.0.0.1", {server.getsockname()[1]}), timeout=1).close()
        return True
    except OSError:
        return False
"""
        result = PythonTestVerifier()("", program, tests="assert connects() == False")
        assert result == (1.0, "ok", "ok")
        with pytest.raises(BlockingIOError):
            server.accept()


def test_the_program_cannot_write_outside_its_directory():
    _needs(namespaces=True)
    shared = tempfile.mkdtemp(prefix="sandbox_test_")  # writable by anyone, to test the mount
    os.chmod(shared, 0o777)
    targets = [os.path.join(shared, "escaped"), f"/tmp/sandbox-escape-{uuid.uuid4().hex}"]
    program = f"""
import os
def escapes():
    written = []
    for path in {targets!r}:
        try:
            with open(path, "w") as file:
                file.write("escaped")
            written.append(path)
        except OSError:
            pass
    return written
def writes_here():
    with open("mine.txt", "w") as file:
        file.write("fine")
    return sorted(os.listdir("."))
"""
    try:
        result = PythonTestVerifier()(
            "", program, tests="assert escapes() == []\nassert writes_here() == ['mine.txt']"
        )
        assert result == (1.0, "ok", "ok")
        assert not any(os.path.exists(path) for path in targets)
    finally:
        for path in targets:
            if os.path.exists(path):
                os.remove(path)
        os.rmdir(shared)


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"), reason="seccomp: x86_64/arm64")
def test_the_program_cannot_make_namespaces_of_its_own_but_can_use_threads(any_containment):
    # In a user namespace of its own it could mount a tmpfs: memory outside its limit.
    program = """
import ctypes, threading
libc = ctypes.CDLL(None, use_errno=True)
def unshare_user():
    return libc.unshare(0x10000000)  # CLONE_NEWUSER
def in_thread():
    out = []
    thread = threading.Thread(target=out.append, args=(1,))
    thread.start()
    thread.join()
    return out
"""
    tests = "assert unshare_user() == -1\nassert in_thread() == [1]"
    result = PythonTestVerifier(containment=any_containment)("", program, tests=tests)
    assert result == (1.0, "ok", "ok")


def test_the_program_gets_an_empty_directory_and_a_scrubbed_environment(monkeypatch):
    monkeypatch.setenv("VERIFIER_SECRET", "do not leak")
    program = "import os\ndef state():\n    return [sorted(os.environ), os.listdir('.')]"
    tests = "assert state() == [['HOME', 'LANG', 'PATH', 'TMPDIR'], []]"
    assert PythonTestVerifier()("", program, tests=tests) == (1.0, "ok", "ok")


# The reply channel is untrusted input.


def test_a_malformed_or_oversized_reply_is_a_crash():
    garbage = "import os\nos.write(3, b'[\"ran\"]\\n{not json\\n')\nos._exit(0)\n" + WRONG_ADD
    result = PythonTestVerifier()("", garbage, tests=ADD_TEST)
    assert result.status == "crash" and "malformed" in result.detail
    huge = f"def add(a, b):\n    return 'x' * {MAX_REPLY_BYTES + 10}"
    result = PythonTestVerifier()("", huge, tests=ADD_TEST)
    assert result.status == "crash" and "more than" in result.detail


def test_run_in_sandbox_returns_the_calls_values_as_json_lines():
    run = run_in_sandbox("x = 2", ["x * 3", "[x, (x,)]"], timeout_s=5.0, memory_mb=256)
    assert [json.loads(line) for line in run.reply.splitlines()] == [
        ["ran"],
        ["value", 6],
        ["value", [2, [2]]],
    ]
    assert run.timed_out is False and run.ended == "exited with code 0"


def test_the_strongest_available_containment_is_used_by_default():
    here = available_containment()
    assert containment_works(here)
    if here.own_user:  # then root: the program's uid is not ours
        program = "import os\ndef uid():\n    return os.getuid()"
        result = PythonTestVerifier()("", program, tests=f"assert uid() != {os.getuid()}")
        assert result == (1.0, "ok", "ok")


# The fallbacks for machines without root, exercised on root machines (CI) too.

_AS_UNPRIVILEGED = "LLM_BRIDGE_SANDBOX_TESTS_UNPRIVILEGED"
_BECOME_UNPRIVILEGED = """
import os, sys
from llm_bridge import sandbox_supervisor as supervisor
from llm_bridge.sandbox import _site_paths
# In a mount namespace of its own, make the interpreter readable to other uids (as runs do).
supervisor._call(supervisor._libc.unshare, supervisor.CLONE_NEWNS)
supervisor._mount(None, "/", None, supervisor.MS_REC | supervisor.MS_PRIVATE)
paths = supervisor.required_paths(_site_paths())
supervisor.make_reachable(supervisor.unreachable_roots(paths))
os.setgroups([])
os.setresgid(65534, 65534, 65534)
os.setresuid(65534, 65534, 65534)
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


def _readable_by_anyone(path: str) -> bool:
    """Whether any user can reach and read ``path``: uid 65534 must read this test file."""
    path = os.path.abspath(path)
    if not os.stat(path).st_mode & stat.S_IROTH:
        return False
    parent = os.path.dirname(path)
    while True:
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return False
        if parent == os.path.dirname(parent):
            return True
        parent = os.path.dirname(parent)


@pytest.mark.skipif(os.environ.get(_AS_UNPRIVILEGED) == "1", reason="already unprivileged")
def test_this_file_passes_as_an_unprivileged_user_with_the_fallback_containments():
    """Root machines run everything with an own uid; this reruns the file as uid 65534, where
    runs fall back to user namespaces and to no namespaces at all."""
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user; without root this file ran as such")
    if not available_containment().namespaces:
        pytest.skip("needs a mount namespace to make the interpreter readable to uid 65534")
    if not _readable_by_anyone(__file__):
        pytest.skip(f"{__file__} is not readable by other users (a 0700 directory above it)")
    base = tempfile.mkdtemp(prefix="sandbox_unprivileged_")
    os.chown(base, 65534, 65534)
    command = [
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest", "-rs"),
        *(f"--basetemp={base}/pytest", "-k", "not test_this_file_passes", __file__),
    ]
    env = {"PATH": os.defpath, "HOME": base, _AS_UNPRIVILEGED: "1", "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        process = subprocess.run(
            [sys.executable, "-c", _BECOME_UNPRIVILEGED, *command],
            env=env,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        subprocess.run(["rm", "-rf", base], check=False)
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-2000:]
    print(process.stdout[-2000:])
