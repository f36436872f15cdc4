"""backend=ray on a local Ray with 2 CPUs: one actor at weight lag 0 trains exactly the embedded
run; a killed actor is restarted and loses nothing; a killed driver resumes from the learner's
checkpoint; asynchronous actors keep the lag and the replay ratio within their bounds."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import lightning as L
import pytest
import torch

from mbrl.checkpoint import load_checkpoint
from mbrl.config import BackendConfig
from mbrl.distributed.cluster import connect, disconnect
from mbrl.train import train

ray = pytest.importorskip("ray", reason="backend=ray needs the `distributed` extra")

# A learned model (MuZero) on tic-tac-toe: it exercises the target network and the unroll
# targets as well as the actor; AlphaZero's path is the same actor with the true game.
MUZERO = ("algo=muzero", "trainer.torch_threads=1", "backend.actor_cpus=1")


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray for the module (starting one takes seconds); runs use it as it is. Ending
    it gives back the signal handlers that ray.init replaced (later tests rely on them)."""
    before = signal.getsignal(signal.SIGTERM)
    started_ray, started = connect(BackendConfig(name="ray", num_cpus=2))
    assert started and signal.getsignal(signal.SIGTERM) is not before  # Ray's driver handler
    yield started_ray
    disconnect(started_ray)
    assert signal.getsignal(signal.SIGTERM) is before


def weights(run_dir: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(run_dir)["state_dict"]


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)


class KillActor(L.Callback):
    """Kills self-play actor 0's process (SIGKILL) after one gradient step."""

    def __init__(self, at_step: int):
        self.at_step, self.killed = at_step, None

    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step == self.at_step:
            worker = trainer.datamodule.actors.workers[0]
            self.killed = ray.get(worker.pid.remote())
            os.kill(self.killed, signal.SIGKILL)


@pytest.fixture(scope="module")
def embedded_weights(tiny_config, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("embedded")
    train(tiny_config(f"run_dir={run_dir}", *MUZERO))
    return weights(run_dir), load_checkpoint(run_dir)["SelfPlayDataModule"]


def test_one_actor_at_lag_zero_trains_exactly_the_embedded_run(
    local_ray, tiny_config, tmp_path, embedded_weights
):
    expected, embedded = embedded_weights
    summary = train(tiny_config(f"run_dir={tmp_path}", "backend=ray", "backend.actors=1", *MUZERO))
    assert summary["steps"] == 20 and summary["selfplay"]["ray/weight_lag_max"] == 0
    assert_same_weights(expected, weights(tmp_path))
    data = load_checkpoint(tmp_path)["SelfPlayDataModule"]
    assert data["more_actors"] == []
    assert data["actor"]["moves_played"] == embedded["actor"]["moves_played"]


def test_a_killed_actor_is_restarted_from_its_last_state_and_nothing_is_lost(
    local_ray, tiny_config, tmp_path, embedded_weights
):
    kill = KillActor(at_step=6)  # between two collections (one every 4 steps)
    overrides = ("backend=ray", "backend.actors=1", *MUZERO)
    summary = train(tiny_config(f"run_dir={tmp_path}", *overrides), callbacks=[kill])
    assert kill.killed is not None and summary["selfplay"]["ray/actor_restarts"] == 1
    # The restarted actor went on with its games in progress: the run is the embedded one.
    assert_same_weights(embedded_weights[0], weights(tmp_path))


def test_asynchronous_actors_keep_the_weight_lag_and_the_replay_ratio(
    local_ray, tiny_config, tmp_path
):
    overrides = ("backend=ray", "backend.actors=2", "backend.max_weight_lag=2")
    summary = train(tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=40", *overrides))
    stats = summary["selfplay"]
    assert summary["steps"] == 40 and stats["ray/weight_lag_max"] <= 2
    data = load_checkpoint(tmp_path)["SelfPlayDataModule"]
    moves = [data["actor"]["moves_played"], data["more_actors"][0]["moves_played"]]
    assert min(moves) > 0  # both actors played
    # tiny: warmup 32 moves, replay_ratio 0.5; tolerance: one request (8 games) per actor
    needed = 32 + 40 / 0.5
    assert needed <= sum(moves) <= needed + 2 * 8 + 2 * 8, moves


def test_a_killed_driver_resumes_from_the_learners_checkpoint(tmp_path):
    command = [
        sys.executable,
        "-m",
        "mbrl.cli.train",
        "debug=tiny",
        f"run_dir={tmp_path}",
        "trainer.max_steps=40",
        "backend=ray",
        "backend.actors=1",
        "backend.num_cpus=2",
        # a learned model with a reanalyze worker: both roles end with the Ray the run started
        "algo=muzero",
        "backend.reanalyzers=1",
    ]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    # Its own session: killing it kills the local Ray it started too, leaving nothing behind.
    driver = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    # Lightning writes step000010.ckpt, then last.ckpt: killed between the two, there is no
    # last.ckpt yet (a re-run would start from the step checkpoint, without replay). Wait for both.
    written = [tmp_path / "checkpoints" / name for name in ("step000010.ckpt", "last.ckpt")]
    try:
        deadline = time.monotonic() + 120
        while not all(p.exists() for p in written) and driver.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert all(p.exists() for p in written), (
            driver.stderr.read().decode()[-2000:] if driver.poll() else ""
        )
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # no chance to write anything more
        driver.wait()
    killed_at = load_checkpoint(tmp_path)["global_step"]
    assert 10 <= killed_at < 40
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f'"resumed_from": "{tmp_path / "checkpoints" / "last.ckpt"}"' in rerun.stdout
    assert load_checkpoint(tmp_path)["global_step"] == 40


def test_roles_that_need_more_cpus_than_a_local_ray_has_are_refused(local_ray, tiny_config):
    from mbrl.distributed import RayActors

    cfg = tiny_config("backend=ray", "backend.actors=2", "backend.reanalyzers=1", *MUZERO)
    with pytest.raises(ValueError, match=r"needs 3 CPUs .* the Ray cluster has 2"):
        RayActors(cfg, torch.nn.Linear(1, 1))


def test_backend_ray_without_ray_says_how_to_install_it(monkeypatch):
    from mbrl.distributed.cluster import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as if not installed
    with pytest.raises(ValueError, match=r"pip install -e \"\.\[distributed\]\""):
        import_ray()


def test_remote_reanalysis_computes_what_the_learner_would(local_ray, tiny_config):
    import numpy as np

    from mbrl.distributed import RayReanalyzers
    from mbrl.parts import game_parts
    from mbrl.selfplay.reanalyze import Job, reanalyze

    cfg = tiny_config(*MUZERO, "backend=ray", "backend.actors=1", "backend.reanalyzers=1")
    parts = game_parts(cfg, seed=0, batch_size=1)
    network = parts.network.eval()
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 2, (6, *parts.environment.obs_shape)).astype(np.float32)
    legal = rng.random((6, parts.environment.num_actions)) < 0.7
    legal[:, 0] = True
    job = Job(obs[:4], obs, legal, np.arange(6, dtype=np.uint64))
    remote = RayReanalyzers(cfg)
    try:
        fresh = remote.result(remote.submit(job, network, version=0))
    finally:
        remote.close()
    here = reanalyze(parts.make_model(network), cfg.search, job)
    np.testing.assert_array_equal(fresh.values, here.values)
    np.testing.assert_array_equal(fresh.policies, here.policies)


def test_reanalyzers_on_ray_train_and_survive_a_killed_worker(local_ray, tiny_config, tmp_path):
    class KillReanalyzer(L.Callback):
        killed = None

        def on_train_batch_end(self, trainer, *args):
            if trainer.global_step == 8:
                worker = trainer.datamodule.reanalyzer.remote.workers[0]
                self.killed = ray.get(worker.pid.remote())
                os.kill(self.killed, signal.SIGKILL)

    kill = KillReanalyzer()
    overrides = ("backend=ray", "backend.actors=1", "backend.reanalyzers=1", *MUZERO)
    overrides += ("algo.reanalyze_policy=0.5",)
    summary = train(tiny_config(f"run_dir={tmp_path}", *overrides), callbacks=[kill])
    assert summary["steps"] == 20 and kill.killed is not None
    assert summary["selfplay"]["ray/reanalyzer_restarts"] == 1
    assert summary["selfplay"]["selfplay/reanalyze_seconds"] > 0


def eval_records(run_dir: Path) -> list[dict]:
    """``eval.jsonl`` without the clocks (the learner's, which differ between runs)."""
    records = [json.loads(line) for line in (run_dir / "eval.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.endswith("_seconds")} for r in records]


def test_evaluators_on_ray_measure_what_the_learner_would_and_survive_a_kill(
    local_ray, tiny_config, tmp_path
):
    class KillEvaluator(L.Callback):  # just before step 10's evaluation is handed over
        killed = None

        def on_train_batch_end(self, trainer, *args):
            evaluation = next(c for c in trainer.callbacks if hasattr(c, "remote"))
            if trainer.global_step == 9:
                self.killed = ray.get(evaluation.remote.workers[0].pid.remote())
                os.kill(self.killed, signal.SIGKILL)

    # Elo against the pool too, so the pool's weights travel and come back
    evaluated = ("eval.every=10", "eval.elo_pool=2", "eval.elo_games=2", *MUZERO)
    train(tiny_config(f"run_dir={tmp_path / 'here'}", *evaluated))
    kill = KillEvaluator()
    overrides = ("backend=ray", "backend.actors=1", "backend.evaluators=1", *evaluated)
    summary = train(tiny_config(f"run_dir={tmp_path / 'ray'}", *overrides), callbacks=[kill])
    assert summary["steps"] == 20 and kill.killed is not None
    expected = eval_records(tmp_path / "here")
    assert [r["step"] for r in expected] == [10, 20] and "elo" in expected[1]
    assert eval_records(tmp_path / "ray") == expected
    pool = load_checkpoint(tmp_path / "ray")["callbacks"]
    assert any("pool" in state and len(state["pool"]) == 2 for state in pool.values())
