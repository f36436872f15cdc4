"""backend=ray on a local Ray with 2 CPUs: one actor at weight lag 0 trains exactly the embedded
run; a killed actor is restarted and loses nothing; a killed driver resumes from the learner's
checkpoint; asynchronous actors keep the lag and the replay ratio within their bounds."""

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
from mbrl.train import train

ray = pytest.importorskip("ray", reason="backend=ray needs the `distributed` extra")

# A learned model (MuZero) on tic-tac-toe: it exercises the target network and the unroll
# targets as well as the actor; AlphaZero's path is the same actor with the true game.
MUZERO = ("algo=muzero", "trainer.torch_threads=1", "backend.actor_cpus=1")


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray for the module (starting one takes seconds); runs use it as it is."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, configure_logging=False)
    yield ray
    ray.shutdown()


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
    ]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    # Its own session: killing it kills the local Ray it started too, leaving nothing behind.
    driver = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    step = tmp_path / "checkpoints" / "step000010.ckpt"
    try:
        deadline = time.monotonic() + 120
        while not step.exists() and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert step.exists(), driver.stderr.read().decode()[-2000:] if driver.poll() else ""
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # no chance to write anything more
        driver.wait()
    killed_at = load_checkpoint(tmp_path)["global_step"]
    assert 10 <= killed_at < 40
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f'"resumed_from": "{tmp_path / "checkpoints" / "last.ckpt"}"' in rerun.stdout
    assert load_checkpoint(tmp_path)["global_step"] == 40


def test_backend_ray_without_ray_says_how_to_install_it(monkeypatch):
    from mbrl.distributed.cluster import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as if not installed
    with pytest.raises(ValueError, match=r"pip install -e \"\.\[distributed\]\""):
        import_ray()
