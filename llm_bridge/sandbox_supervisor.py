"""The trusted supervisor of one sandboxed run; `llm_bridge.sandbox` starts it as
``python -I -S sandbox_supervisor.py``; this file imports nothing but the standard library.

Why ``-S``: the site module (``.pth`` files, an editable install's import hooks)
costs more than the rest of a run; the job's ``site_paths`` are appended to the candidate's
``sys.path`` instead, so it can import installed packages but not editable ones.

Protocol. stdin: one JSON line, the job (see `llm_bridge.sandbox.run_in_sandbox`), then the
supervisor waits for EOF, the parent's "stop now". stdout: report lines, the first one counts:
``{"setup_error": text}`` or ``{"ended": text}``. The job's ``reply_fd`` (inherited) becomes the
candidate's fd 3; on it the candidate writes one JSON line for its program (``["ran"]``,
``["exited"]`` or ``["raised", type, message]``) then one per call (``["value", plain]``,
``["unplain", what]``, ``["raised", type, message]`` or ``["exited"]``). That channel is the
candidate's to write: the parent treats every byte on it as untrusted data.

Processes. The supervisor (root when the parent is) makes itself a child subreaper, so that
everything the candidate starts, ``setsid()`` or double fork included, stays its descendant.
With ``namespaces`` it unshares pid, mount, network and IPC namespaces (inside a fresh user
namespace when ``own_user`` is false) and forks a trusted *namespace init* (pid 1) that builds
the filesystem view and forks the candidate (pid 2); when pid 1 exits the kernel kills every
process left in the namespace. Without namespaces the candidate is the supervisor's child and
is killed with all its descendants by uid (``own_user``) or by walking ``/proc``.

The candidate is a fork of this interpreter (no second interpreter start, the main cost of a
run): it holds the program and the calls, never the expected values, which stay with the
parent. Limits and privileges are set in the forked child, never in a ``preexec_fn`` of the
threaded parent.
"""

import _signal as signal  # the C module: `signal` itself imports enum, slow to load
import builtins
import ctypes
import errno
import marshal
import os
import resource
import select
import sys

try:  # the C string escaper behind json, without json's imports (re, enum: slow to load)
    from _json import encode_basestring_ascii as _quote
except ImportError:  # not CPython
    from json.encoder import py_encode_basestring_ascii as _quote

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE = 1024, 2048, 4096, 16384, 1 << 18
MS_RELATIME, MS_STRICTATIME = 1 << 21, 1 << 24
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38

# Per-mount flags that must be kept when remounting (a user namespace locks them).
_MOUNT_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
# A fresh uid per run, base + the supervisor's pid (unique among live processes, pid_max is
# at most 2**22): concurrent candidates cannot signal each other, and RLIMIT_NPROC, which the
# kernel counts per uid, is theirs alone. Below 2**31 and above the ranges systemd hands out.
SANDBOX_UID_BASE = 2_000_000_000
# Inside its user namespace (no own uid) the candidate is this uid and gid: not 0, which would
# regain capabilities on exec.
USER_NAMESPACE_ID = 1000
SETUP_FAILED = 125  # exit code of a namespace init whose setup failed (already reported)
_REPLY_FD = 3
_SIGNAL_NAMES = {  # reversed: of two names for one number (SIGIOT, SIGABRT), the usual one
    getattr(signal, name): name
    for name in sorted(dir(signal), reverse=True)
    if name.startswith("SIG") and "_" not in name
}
_WORKDIR_TMPFS = "size=16m,nr_inodes=4096,mode=0700,uid={0},gid={0}"

_libc = ctypes.CDLL(None, use_errno=True)


def _call(function, *arguments):
    """``function(*arguments)`` from libc, raising OSError when it returns -1."""
    if function(*arguments) == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"{function.__name__}: {os.strerror(code)}")


def _mount(source, target, fstype, flags, data=None):
    encode = lambda text: None if text is None else os.fsencode(text)  # noqa: E731
    _call(_libc.mount, encode(source), encode(target), encode(fstype), flags, encode(data))


def _report(key, text):
    """A report line for the parent, ``{"setup_error": text}`` or ``{"ended": text}``."""
    os.write(1, f"{{{_quote(key)}: {_quote(text)}}}\n".encode())


def main():
    job = _read_job()
    if not job["own_user"] and os.geteuid() == 0:
        # Root must give the program a uid of its own: as root, nothing here would hold it.
        _report("setup_error", "refusing to run the program as root (ask for own_user)")
        sys.exit(1)
    _call(_libc.prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    uid = SANDBOX_UID_BASE + os.getpid() if job["own_user"] else None
    try:
        if job["namespaces"]:
            child = _start_namespace(job, uid)
        else:
            if uid is not None:
                os.chown(job["workdir"], uid, uid)
            child = _fork(lambda: _candidate(job, uid))
    except Exception as error:  # nothing of the candidate's has run yet
        _report("setup_error", f"{type(error).__name__}: {error}")
        sys.exit(1)
    status = _wait_for_end(child)
    _kill_everything(job, child if status is None else None, uid)
    _report("ended", _describe(status, job["namespaces"]))
    os._exit(0)  # nothing to flush or finalise


def _read_job():
    """The parent's job: an 8-byte length, then that many bytes of marshal (the parent is
    trusted, and marshal loads without json's imports)."""
    data = b""
    while len(data) < 8 or len(data) < 8 + int.from_bytes(data[:8], "big"):
        chunk = os.read(0, 1 << 20)
        if not chunk:
            sys.exit(0)  # the parent went away before sending a job
        data += chunk
    return marshal.loads(data[8:])


def _fork(body):
    """Forks; the child runs ``body`` and never returns from here."""
    pid = os.fork()
    if pid == 0:
        try:
            body()
        finally:
            os._exit(SETUP_FAILED)
    return pid


def _start_namespace(job, uid):
    """Unshares the namespaces and forks their init (pid 1); returns its pid."""
    reachable = unreachable_roots(required_paths(job["site_paths"])) if uid is not None else {}
    flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC
    if uid is None:  # no root: the namespaces live in an unprivileged user namespace
        outside_uid, outside_gid = os.geteuid(), os.getegid()
        _call(_libc.unshare, flags | CLONE_NEWUSER)
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{USER_NAMESPACE_ID} {outside_uid} 1"),
            ("gid_map", f"{USER_NAMESPACE_ID} {outside_gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as file:
                file.write(text)
    else:
        _call(_libc.unshare, flags)
    return _fork(lambda: _namespace_init(job, uid, reachable))


def _namespace_init(job, uid, reachable):
    """Pid 1 of the namespace: builds the filesystem view, runs the candidate, exits with its
    status (128 + n for signal n); its exit kills everything left in the namespace."""
    _call(_libc.prctl, PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        _isolate_filesystem(job["workdir"], USER_NAMESPACE_ID if uid is None else uid, reachable)
    except Exception as error:
        _report("setup_error", f"filesystem: {type(error).__name__}: {error}")
        os._exit(SETUP_FAILED)
    candidate = _fork(lambda: _candidate(job, uid))
    while True:  # as pid 1 it also reaps the orphans
        pid, status = os.wait()
        if pid == candidate:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


def required_paths(site_paths):
    """Paths the candidate's interpreter reads: its modules and its executable."""
    paths = [path for path in sys.path + site_paths if path and os.path.exists(path)]
    return [os.path.realpath(path) for path in [*paths, sys.executable]]


def unreachable_roots(paths):
    """``{directory: {entry, ...}}``: for each path, the first directory on it that others
    (a uid with no other rights) cannot search, and the entry below it the path goes through."""
    roots = {}
    for path in paths:
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            directory = "/" + "/".join(parts[:depth])
            if not os.stat(directory).st_mode & 0o001:
                roots.setdefault(directory, set()).add(parts[depth])
                break
    return roots


def _isolate_filesystem(workdir, owner, reachable):
    """Everything read-only but a fresh tmpfs at ``workdir``, owned by ``owner``; a /proc of the
    new pid namespace; the interpreter reachable (`make_reachable`)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing propagates back to the host
    make_reachable(reachable)
    os.makedirs(workdir, exist_ok=True)
    _mount("tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV, _WORKDIR_TMPFS.format(owner))
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for target, options in _mount_points():
        if target != workdir:
            flags = sum(flag for name, flag in _MOUNT_FLAGS.items() if name in options)
            try:
                _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
            except FileNotFoundError:  # under a directory replaced above: out of reach
                pass


def make_reachable(reachable):
    """Covers each directory of ``reachable`` (from `unreachable_roots`) with a tmpfs holding
    only the listed entries, bind-mounted from the originals: the interpreter becomes readable
    to other uids and the rest of the directory (``/root``'s secrets) stays hidden. Needs a
    private mount namespace."""
    for directory, entries in reachable.items():
        sources = {name: os.open(os.path.join(directory, name), os.O_PATH) for name in entries}
        _mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
        for name, source in sources.items():
            target = os.path.join(directory, name)
            if os.path.isdir(f"/proc/self/fd/{source}"):
                os.mkdir(target)
            else:
                open(target, "w").close()
            _mount(f"/proc/self/fd/{source}", target, None, MS_BIND | MS_REC)
            os.close(source)


def _mount_points():
    """``[(mount point, per-mount options)]`` from /proc/self/mountinfo, octal escapes decoded."""
    points = []
    with open("/proc/self/mountinfo", "rb") as file:
        for line in file:
            fields = line.split()
            target = fields[4].decode("unicode_escape").encode("latin-1")
            points.append((os.fsdecode(target), set(fields[5].decode().split(","))))
    return points


def _candidate(job, uid):
    """The candidate's process: its own session, limits, no privileges, a scrubbed
    environment, fds 0-2 on /dev/null and 3 the reply channel; then the program and calls."""
    try:
        os.setsid()
        _set_limits(job, own_user=uid is not None)
        _drop_privileges(uid)
        if 0 in os.getresuid():  # never, by the checks above; too costly to get wrong
            raise PermissionError("the program would run as root")
        os.chdir(job["workdir"])
        os.environ.clear()
        os.environ.update(
            PATH="/usr/local/bin:/usr/bin:/bin",
            LANG="C.UTF-8",
            HOME=job["workdir"],
            TMPDIR=job["workdir"],
        )
    except Exception as error:
        _report("setup_error", f"candidate: {type(error).__name__}: {error}")
        os._exit(SETUP_FAILED)
    os.dup2(job["reply_fd"], _REPLY_FD)  # first: /dev/null must not land on fd 3
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(_REPLY_FD + 1, 1 << 20)  # close_range(2): cheap whatever the limit
    sys.path.extend(job["site_paths"])
    _run_program(job["program"], job["calls"])
    os._exit(0)  # skips the program's atexit hooks and lingering threads


def _set_limits(job, *, own_user):
    """Address space, CPU seconds, file size, no core files, open files; processes when the
    candidate has its own uid (the kernel counts them per uid)."""
    limits = [
        (resource.RLIMIT_AS, job["memory_bytes"]),
        (resource.RLIMIT_CPU, job["cpu_seconds"]),
        (resource.RLIMIT_FSIZE, job["file_bytes"]),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, job["open_files"]),
    ]
    if own_user:
        limits.append((resource.RLIMIT_NPROC, job["processes"]))
    for which, value in limits:
        hard = resource.getrlimit(which)[1]  # without root a hard limit cannot be raised
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def _drop_privileges(uid):
    """Own uid: the run's uid and gid, no groups. Otherwise (same uid, maybe inside a user
    namespace): no capabilities. Always no_new_privs: setuid binaries grant nothing."""
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # also clears every capability
        # A uid change makes the process non-dumpable, which hides /proc/self/fd from it.
        _call(_libc.prctl, PR_SET_DUMPABLE, 1, 0, 0, 0)
    else:
        _drop_capabilities()
    _call(_libc.prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    _forbid_namespaces()


def _drop_capabilities():
    """capset(2) to empty sets: the namespace's creator holds every capability inside it."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inherit")]

    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3
    _call(_libc.capset, ctypes.byref(header), data)


# seccomp: (audit arch, unshare, clone, clone3, whether x32 syscalls must be refused).
_SYSCALLS = {
    "x86_64": (0xC000003E, 272, 56, 435, True),
    "aarch64": (0xC00000B7, 97, 220, 435, False),
}
_NAMESPACE_FLAGS = 0x7E020080  # CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME}
_SECCOMP_ALLOW, _SECCOMP_ERRNO = 0x7FFF0000, 0x00050000


def _forbid_namespaces():
    """A seccomp filter refusing unshare(2) and clone(2) with namespace flags (clone3, whose
    flags a filter cannot read, fails with ENOSYS and glibc falls back to clone): in a user
    namespace of its own the candidate could mount a tmpfs, memory that RLIMIT_AS does not
    count. Syscalls of another ABI (i386, x32) are refused. Skipped on other architectures."""
    machine = os.uname().machine
    if machine not in _SYSCALLS:
        return
    arch, unshare, clone, clone3, x32 = _SYSCALLS[machine]
    load, equal, any_bit, at_least, ret = 0x20, 0x15, 0x45, 0x35, 0x06
    deny, no_such = _SECCOMP_ERRNO | errno.EPERM, _SECCOMP_ERRNO | errno.ENOSYS
    # (code, jump if true, jump if false, k); jumps count instructions after the next one.
    program = [
        (load, 0, 0, 4),  # seccomp_data.arch
        (equal, 1, 0, arch),
        (ret, 0, 0, deny),
        (load, 0, 0, 0),  # seccomp_data.nr
        (at_least, 0, 1, 0x40000000 if x32 else 0xFFFFFFFF),
        (ret, 0, 0, deny),
        (equal, 0, 1, unshare),
        (ret, 0, 0, deny),
        (equal, 0, 1, clone3),
        (ret, 0, 0, no_such),
        (equal, 0, 3, clone),
        (load, 0, 0, 16),  # the low half of args[0]: clone's flags
        (any_bit, 0, 1, _NAMESPACE_FLAGS),
        (ret, 0, 0, deny),
        (ret, 0, 0, _SECCOMP_ALLOW),
    ]

    class Instruction(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint32),
        ]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Instruction))]

    instructions = (Instruction * len(program))(*program)
    filter_program = Program(len(program), instructions)
    _call(_libc.prctl, 22, 2, ctypes.byref(filter_program), 0, 0)  # PR_SET_SECCOMP, FILTER


class _NotPlain(Exception):
    """A value with no plain JSON form; its message says what it is."""


_INFINITY = float("inf")


def _encode(value, depth=0):
    """JSON text of ``value`` if it is plain data (tuples become lists), else _NotPlain.
    Types are checked exactly and the base types' methods used, so no ``__eq__``, ``__repr__``
    or ``__iter__`` of a subclass ever runs. NaN and infinities are written as JSON's common
    extension (NaN, Infinity), which the parent reads back."""
    kind = type(value)
    if value is None or kind is bool:
        return "null" if value is None else "true" if value else "false"
    if kind is int:
        return int.__repr__(value)  # ValueError past sys.get_int_max_str_digits()
    if kind is float:
        if value != value or value in (_INFINITY, -_INFINITY):
            return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    if kind is str:
        return _quote(value)
    if depth >= 100:
        raise _NotPlain("a value nested deeper than 100")
    if kind is list or kind is tuple:
        return "[" + ",".join([_encode(item, depth + 1) for item in value]) + "]"
    if kind is dict:
        if any(type(key) is not str for key in value):
            raise _NotPlain("a dict with a key that is not a str")
        items = [_quote(key) + ":" + _encode(item, depth + 1) for key, item in value.items()]
        return "{" + ",".join(items) + "}"
    raise _NotPlain(f"a {kind.__module__}.{kind.__qualname__}")


def _send(entry):
    _write(_encode(entry))


def _write(line):
    data = (line + "\n").encode()
    while data:
        data = data[os.write(_REPLY_FD, data) :]


def _failure(error):
    """The reply entry for an exception raised by the program or a call."""
    if isinstance(error, SystemExit):
        return ["exited"]
    try:  # exact strs: the entry must encode whatever the exception's methods return
        return ["raised", str.__str__(type(error).__name__), str.__str__(str(error))[:300]]
    except BaseException:
        return ["raised", "Exception", "(unprintable)"]


def _run_program(program, calls):
    """Runs the program as ``__main__``, then evaluates each call in its namespace and sends
    the value; stops at the first call that raises or returns something not plain."""
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(program, "<program>", "exec"), namespace)
    except BaseException as error:
        return _send(_failure(error))
    _send(["ran"])
    for call in calls:
        try:
            value = eval(compile(call, "<test>", "eval"), namespace)
        except BaseException as error:
            return _send(_failure(error))
        try:
            text = _encode(value)
        except (_NotPlain, ValueError, RecursionError, MemoryError) as error:
            return _send(["unplain", str(error) if isinstance(error, _NotPlain) else repr(error)])
        _write(f'["value",{text}]')


def _wait_for_end(child):
    """The child's wait status once it exits, or None when the parent says stop (stdin EOF)."""
    try:
        pidfd = os.pidfd_open(child)
    except (AttributeError, OSError):  # before Linux 5.3: poll
        pidfd = None
    watched = [0] if pidfd is None else [0, pidfd]
    while True:
        ready, _, _ = select.select(watched, [], [], 0.005 if pidfd is None else None)
        if 0 in ready and not os.read(0, 1 << 16):
            return None
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            return status


def _kill_everything(job, unreaped_child, uid):
    """Kills every process of the run, then reaps all children (orphans come to us).
    unreaped_child: the child's pid while it is still ours to signal, else None."""
    if job["namespaces"]:
        if unreaped_child is not None:  # pid 1 dies, and with it the whole namespace
            os.kill(unreaped_child, signal.SIGKILL)
    elif uid is not None:
        killer = _fork(lambda: _kill_uid(uid))
        os.waitpid(killer, 0)
    else:
        _kill_descendants()
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def _signal(pid, number):
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


def _kill_uid(uid):
    """As the run's uid, SIGKILL every process it may signal: all of that uid. kill(-1) walks
    the process list under the lock that fork takes to add a process, and a fork that finds a
    fatal signal pending fails, so no process slips through. (Killed processes stay zombies,
    which kill(-1) still finds, until reaped: no loop until ESRCH.)"""
    os.setresuid(uid, uid, uid)
    for _ in range(3):  # once is enough (see above); the others cost a few microseconds
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            break
    os._exit(0)


def _kill_descendants():
    """Without namespaces or an own uid: stop every descendant (a stopped process cannot fork)
    until a scan finds no new one, then kill them all."""
    stopped = set()
    while True:
        found = _descendants(os.getpid()) - stopped
        if not found:
            break
        for pid in found:
            _signal(pid, signal.SIGSTOP)
        stopped |= found
    for pid in stopped:
        _signal(pid, signal.SIGKILL)


def _descendants(root):
    """Pids below ``root``, from one scan of /proc."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as file:
                    stat = file.read()
            except OSError:
                continue
            parent = int(stat[stat.rindex(b")") + 2 :].split()[1])
            children.setdefault(parent, []).append(int(name))
    found, frontier = set(), [root]
    while frontier:
        for pid in children.get(frontier.pop(), ()):
            if pid not in found:
                found.add(pid)
                frontier.append(pid)
    return found


def _describe(status, namespaces):
    """How the candidate ended, in words."""
    if status is None:
        return "stopped by the verifier"
    code = os.waitstatus_to_exitcode(status)
    if namespaces and 128 < code < 128 + signal.NSIG:  # the namespace init's encoding
        code = 128 - code
    if code < 0:
        try:
            return f"killed by signal {_SIGNAL_NAMES[-code]}"
        except KeyError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


if __name__ == "__main__":
    try:
        main()
    except OSError as error:
        if error.errno != errno.EPIPE:  # the parent stopped listening: nothing to say
            raise
