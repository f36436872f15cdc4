"""Start or join Ray for ``backend=ray``."""

from __future__ import annotations

import os

INSTALL = 'pip install -e ".[distributed]"  (or: pip install "ray>=2.30")'


def import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError(f"backend=ray needs Ray, which is not installed: {INSTALL}") from None
    return ray


def connect(backend) -> tuple[object, bool]:
    """``(ray, started)``: Ray, initialised as ``backend.address`` says; ``started`` is true
    when this call started it (and the caller shuts it down). A Ray already initialised in this
    process (a test's, a notebook's) is used as it is."""
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    quiet = dict(include_dashboard=False, log_to_driver=True, configure_logging=False)
    if backend.address == "local":
        # Ray 2.5x+ wants a token unless told otherwise; a local, private instance needs none.
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        ray.init(num_cpus=backend.num_cpus or None, **quiet)
    else:
        ray.init(address=backend.address, **quiet)
    return ray, True
