"""Hypothesis settings for the search tests: deterministic, modest, no deadline.

``derandomize=True`` makes every run draw the same examples (a failure reproduces on rerun, and
CI never flakes on a rare example); ``deadline=None`` because the first example of a test may
pay for numba's compilation. Set ``HYPOTHESIS_PROFILE=search-thorough`` for a longer local hunt.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "search",
    derandomize=True,
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "search-thorough",
    derandomize=False,
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "search"))
