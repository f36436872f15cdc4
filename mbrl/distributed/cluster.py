"""Start, join and leave Ray for ``backend=ray``, and what every role's handle shares:
weights for the object store, the retry of a failed request, closing its workers."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

INSTALL = 'pip install -e ".[distributed]"  (or: pip install "ray>=2.30")'


def import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError(f"backend=ray needs Ray, which is not installed: {INSTALL}") from None
    return ray


SIGNALS = (signal.SIGINT, signal.SIGTERM)
# The handlers ray.init replaced (its driver installs one for SIGTERM), given back by `disconnect`.
_handlers_before_ray: dict[int, object] = {}


def connect(backend) -> tuple[object, bool]:
    """``(ray, started)``: Ray, initialised as ``backend.address`` says; ``started`` is true
    when this call started it (and the caller ends it with `disconnect`). A Ray already
    initialised in this process (a test's, a notebook's) is used as it is."""
    ray = import_ray()
    if ray.is_initialized():
        check_resources(ray, backend)
        return ray, False
    if threading.current_thread() is threading.main_thread():
        _handlers_before_ray.update({number: signal.getsignal(number) for number in SIGNALS})
    quiet = dict(include_dashboard=False, log_to_driver=True, configure_logging=False)
    if backend.address == "local":
        # Ray 2.5x+ wants a token unless told otherwise; a local, private instance needs none.
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        ray.init(num_cpus=backend.num_cpus or None, **quiet)
    else:
        ray.init(address=backend.address, **quiet)
    try:
        check_resources(ray, backend)
    except ValueError:
        disconnect(ray)
        raise
    return ray, True


def check_resources(ray, backend) -> None:
    """Refuse a run whose roles need more CPUs or GPUs than the cluster has: Ray would wait
    for them without a word (an autoscaling cluster grows first, so it is only told)."""
    roles = (
        ("actors", backend.actors, backend.actor_cpus, backend.actor_gpus),
        ("reanalyzers", backend.reanalyzers, backend.reanalyzer_cpus, 0.0),
        ("evaluators", backend.evaluators, backend.evaluator_cpus, 0.0),
    )
    for resource in ("CPU", "GPU"):
        column = 2 if resource == "CPU" else 3
        needed = sum(role[1] * role[column] for role in roles)
        there = ray.cluster_resources().get(resource, 0.0)
        if needed <= there:
            continue
        terms = " + ".join(
            f"backend.{role[0]}={role[1]} x {role[column]:g}" for role in roles if role[1]
        )
        message = (
            f"backend=ray needs {needed:g} {resource}s ({terms}) but the Ray cluster has "
            f"{there:g}: lower the role counts or the per-role resources, or add nodes"
        )
        if backend.address == "local":
            raise ValueError(message)
        print(f"warning: {message}; waiting for the cluster to grow", file=sys.stderr)


def disconnect(ray) -> None:
    """Shut down the Ray that `connect` started and give back the signal handlers it replaced,
    so that a process that goes on (a test session, a notebook) stops as it did before."""
    ray.shutdown()
    for number, handler in _handlers_before_ray.items():
        if handler is not None:  # None: set outside Python, nothing to give back
            signal.signal(number, handler)
    _handlers_before_ray.clear()


# Failed tries of one request before the run gives up. The waits between them double from 0.1 s
# up to `MAX_BACK_OFF_SECONDS`: about 30 s in all, so that a worker restarting on a loaded
# machine (a new process importing torch can take 10 s when other jobs share the cores) is
# waited for, and a worker that dies on every start still fails the run in half a minute.
MAX_FAILURES = 20
MAX_BACK_OFF_SECONDS = 2.0


def back_off_seconds(failures: int) -> float:
    """The wait before the retry that follows ``failures + 1`` failed tries in a row."""
    return min(0.1 * 2**failures, MAX_BACK_OFF_SECONDS)


def back_off(role: str, failures: int, error) -> None:
    """Wait before retrying a request of ``role`` (``"decode worker 1"``) that failed
    ``failures + 1`` times in a row; past `MAX_FAILURES`, give up naming the role."""
    if failures + 1 >= MAX_FAILURES:
        waited = sum(back_off_seconds(n) for n in range(MAX_FAILURES - 1))
        raise RuntimeError(
            f"{role} failed {MAX_FAILURES} tries in a row over {waited:.0f} s; Ray's worker "
            f"logs (/tmp/ray/session_latest/logs) say why: {error}"
        ) from None
    time.sleep(back_off_seconds(failures))


def cpu_weights(network) -> dict:
    """A copy of ``network``'s weights on the CPU, to send to workers."""
    return {name: value.detach().cpu().clone() for name, value in network.state_dict().items()}


def close_workers(ray, workers: list, started_ray: bool) -> None:
    """Kill ``workers`` and, when this role started Ray (`connect`), shut it down."""
    for worker in workers if ray.is_initialized() else ():  # not shut down yet
        ray.kill(worker)
    workers.clear()
    if started_ray:
        disconnect(ray)
