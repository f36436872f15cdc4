"""A failed request to a Ray worker is retried with waits that double up to a cap, long enough
for a worker to restart on a loaded machine; past the last try the run stops, naming the worker."""

import pytest

from mbrl.distributed import cluster


def test_waits_double_to_a_cap_and_the_last_try_gives_up_naming_the_worker(monkeypatch):
    waits = []
    monkeypatch.setattr(cluster.time, "sleep", waits.append)
    for failures in range(cluster.MAX_FAILURES - 1):
        cluster.back_off("self-play actor 3", failures, "it died")
    assert waits[:4] == pytest.approx([0.1, 0.2, 0.4, 0.8])
    assert max(waits) == cluster.MAX_BACK_OFF_SECONDS == waits[-1]
    assert 20 <= sum(waits) <= 60  # a restart under load takes seconds, a dead worker ends it
    with pytest.raises(
        RuntimeError, match=r"^self-play actor 3 failed 20 tries in a row over 31 s"
    ):
        cluster.back_off("self-play actor 3", cluster.MAX_FAILURES - 1, "it died")
    assert len(waits) == cluster.MAX_FAILURES - 1  # no wait before giving up
