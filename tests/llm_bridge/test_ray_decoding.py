"""backend=ray for language models: a round's prompts sharded over Ray actors decode as the
whole batch would (searches keyed by row), a killed actor's shard is decoded again, and a
training run decodes its rounds on Ray."""

import dataclasses
import os
import signal

import numpy as np
import pytest

from llm_bridge.decoding import TreeSearchSettings, decode, decode_distinct
from mbrl.config import BackendConfig
from mbrl.distributed.cluster import connect, disconnect
from tests.llm_bridge.test_train_text import TINY, composed

ray = pytest.importorskip("ray", reason="backend=ray needs the `distributed` extra")

TASK = {"name": "countdown24", "params": {}, "test_fraction": 0.2, "split_seed": 0}
DECODING = {"candidates": 8, "max_new_tokens": 40, "overflow": "error"}
# Noise and a sampled played action: a search whose keys were another row's would differ.
EXPLORING = TreeSearchSettings(dirichlet_fraction=0.25, temperature=1.0)


@pytest.fixture(scope="module")
def local_ray():
    started_ray, _ = connect(BackendConfig(name="ray", num_cpus=2))
    yield started_ray
    disconnect(started_ray)


@pytest.fixture
def decoders(local_ray, tiny_model):
    from llm_bridge.ray_decoding import RayDecoders

    settings = dataclasses.asdict(tiny_model.settings)
    workers = RayDecoders(BackendConfig(name="ray", actors=2), settings, TASK, DECODING)
    yield workers
    workers.close()


def assert_same_decodes(a, b):
    assert a.ids == b.ids and a.completions == b.completions
    np.testing.assert_array_equal(a.rewards, b.rewards)
    assert a.forward_passes == b.forward_passes
    assert a.solutions == b.solutions
    assert len(a.targets) == len(b.targets)
    for ours, theirs in zip(a.targets, b.targets, strict=True):
        assert [t.ids for t in ours] == [t.ids for t in theirs]
        for t, u in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(t.policy, u.policy, atol=1e-6)


def test_sharded_searches_decode_what_the_whole_batch_would(decoders, env, tiny_model, countdown):
    items = countdown.test[:5]
    search = dict(method="mcts", budget=4, seed=3, settings=EXPLORING)
    whole = decode(env, [item for item in items for _ in range(2)], **search)
    sharded = decoders.decode(tiny_model, items, 2, distinct=False, **search)
    assert_same_decodes(sharded, whole)

    distinct = dict(method="mcts", searches=2, budget=4, seed=3, settings=EXPLORING)
    whole = decode_distinct(env, items, **distinct)
    assert_same_decodes(decoders.decode(tiny_model, items, 1, distinct=True, **distinct), whole)


def test_samples_shard_reproducibly(decoders, tiny_model, countdown):
    items = countdown.test[:4]
    first = decoders.decode(tiny_model, items, 3, distinct=False, method="sample", seed=5)
    again = decoders.decode(tiny_model, items, 3, distinct=False, method="sample", seed=5)
    assert len(first.ids) == 12 and first.ids == again.ids


def test_a_killed_decode_actor_is_restarted_and_its_shard_decoded_again(
    decoders, tiny_model, countdown
):
    items = countdown.test[:4]
    search = dict(method="gumbel", budget=4, seed=1, settings=EXPLORING)
    before = decoders.decode(tiny_model, items, 1, distinct=False, **search)
    os.kill(ray.get(decoders.workers[0].pid.remote()), signal.SIGKILL)
    after = decoders.decode(tiny_model, items, 1, distinct=False, **search)
    assert decoders.restarts == 1
    assert_same_decodes(after, before)


def test_a_distillation_run_decodes_its_rounds_on_ray(local_ray, tmp_path):
    from llm_bridge.train_text import train_text

    cfg = composed("experiment=countdown_distill", f"run_dir={tmp_path}", "backend=ray", *TINY)
    summary = train_text(cfg)
    last = summary["rounds"][-1]
    assert last["round"] == 1 and last["data_passes"] > 0 and last["examples"] > 0
    assert last["ray_decode_seconds"] > 0 and last["ray_decoder_restarts"] == 0


def test_ray_settings_that_language_models_cannot_use_are_refused(tmp_path):
    from llm_bridge.train_text import train_text

    base = ("experiment=countdown_distill", f"run_dir={tmp_path}", "backend=ray", *TINY)
    with pytest.raises(ValueError, match=r"backend\.max_weight_lag=2: a language model"):
        train_text(composed(*base, "backend.max_weight_lag=2"))
    budget = ("llm.distinct_solutions=true", "llm.search_pass_budget=500")
    with pytest.raises(ValueError, match=r"llm\.search_pass_budget=500 .* backend=embedded"):
        train_text(composed(*base, *budget))
