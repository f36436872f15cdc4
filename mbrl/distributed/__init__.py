"""Self-play on Ray: the same actor as the embedded backend, in Ray actor processes on one
machine or a cluster, feeding the learner (``backend=ray``; the ``distributed`` extra).

- ``cluster``: starting or joining Ray, with a clear message when it is not installed;
- ``worker``: ``ActorWorker``, one self-play actor in its own process;
- ``ray_actors``: ``RayActors``, the learner's handle on them (weights out, episodes in, the
  weight-lag bound, restarts, back-pressure);
- ``reanalyze_worker``, ``ray_reanalyzers``: reanalysis (learned models) on Ray workers, for
  batches the learner samples ahead;
- ``evaluate_worker``, ``ray_evaluators``: evaluations on Ray workers while the learner trains.
"""

from mbrl.distributed.ray_actors import RayActors
from mbrl.distributed.ray_evaluators import RayEvaluators
from mbrl.distributed.ray_reanalyzers import RayReanalyzers

__all__ = ["RayActors", "RayEvaluators", "RayReanalyzers"]
