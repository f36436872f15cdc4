"""The embedded training loop end to end on tiny configs: it learns, checkpoints, resumes."""

import json
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from mbrl.atomic_file import TEMPORARY_PATTERN
from mbrl.checkpoint import load_checkpoint
from mbrl.loading import load_agent
from mbrl.train import train


def scalars(run_dir: Path, tag: str) -> list[float]:
    events = EventAccumulator(str(run_dir / "tb"))
    events.Reload()
    return [event.value for event in events.Scalars(tag)]


def test_loss_falls(tiny_config, tmp_path):
    cfg = tiny_config(
        f"run_dir={tmp_path}", "trainer.max_steps=80", "optim.lr=0.01", "trainer.log_every=4"
    )
    train(cfg)
    losses = scalars(tmp_path, "train/loss")
    assert len(losses) >= 10
    assert sum(losses[-4:]) / 4 < 0.8 * sum(losses[:4]) / 4, losses
    assert scalars(tmp_path, "replay/size")[-1] > 0
    assert scalars(tmp_path, "selfplay/simulations_per_s")[-1] > 0


def test_same_seed_same_weights(tiny_config, tmp_path):
    weights = []
    for name in ("a", "b"):
        run_dir = tmp_path / name
        train(tiny_config(f"run_dir={run_dir}", "trainer.max_steps=8"))
        weights.append(load_checkpoint(run_dir)["state_dict"])
    for key in weights[0]:
        torch.testing.assert_close(weights[0][key], weights[1][key], rtol=0, atol=0)


def test_checkpoint_holds_everything_to_resume(trained_run):
    run_dir, summary = trained_run
    checkpoint = load_checkpoint(run_dir)
    assert checkpoint["global_step"] == summary["steps"] == 20
    assert checkpoint["optimizer_states"] and checkpoint["lr_schedulers"]
    data = checkpoint["SelfPlayDataModule"]
    # Exactly: no batch was fetched ahead of the step being checkpointed.
    assert data["replay"]["total_added"] > 0 and data["gradient_steps"] == 20
    step = load_checkpoint(run_dir / "checkpoints" / "step000010.ckpt")
    assert step["SelfPlayDataModule"]["replay"] is None  # only last.ckpt carries replay
    assert step["SelfPlayDataModule"]["gradient_steps"] == 10
    assert data["actor"]["moves_played"] >= 32 and "rng" in data
    loaded = load_agent(run_dir)
    for key, value in loaded.network.state_dict().items():
        torch.testing.assert_close(value, checkpoint["state_dict"][f"network.{key}"])
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("*.ckpt")) == [
        "last.ckpt",
        "step000010.ckpt",
        "step000020.ckpt",
    ]
    assert not list((run_dir / "checkpoints").glob(TEMPORARY_PATTERN))


def test_rerunning_a_finished_run_resumes_without_training_again(tiny_config, trained_run):
    run_dir, _ = trained_run
    summary = train(tiny_config(f"run_dir={run_dir}", "eval.opponents=[random]"))
    assert summary["resumed_from"] and summary["steps"] == 20


def test_a_run_dir_holding_another_experiment_is_refused(tiny_config, trained_run):
    run_dir, _ = trained_run
    with pytest.raises(ValueError, match=r"another experiment \(model.channels: 8 -> 16"):
        train(tiny_config(f"run_dir={run_dir}", "model.channels=16"))


def test_a_run_dir_whose_start_failed_before_any_work_takes_the_corrected_command(
    tiny_config, tmp_path
):
    from mbrl.run_dir import claim_run_dir

    failed = tiny_config(f"run_dir={tmp_path}", "model.channels=16")
    claim_run_dir(failed)  # as a start that failed after its claim, before any checkpoint
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events.out.tfevents.1").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("mine")
    summary = train(tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=2"))
    assert summary["steps"] == 2 and (tmp_path / "notes.txt").read_text() == "mine"
    assert not (tmp_path / "tb" / "events.out.tfevents.1").exists()
    assert '"model.channels": 8' in (tmp_path / "experiment.json").read_text()


def test_the_training_time_limit_leaves_evaluations_out(tiny_config, tmp_path):
    cfg = tiny_config(
        f"run_dir={tmp_path}",
        "trainer.max_steps=100000",
        # 6 s of training: the first step alone (start-up, compilation) takes 1-5 s on a busy
        # 2-core machine, so a shorter limit may leave a single evaluation.
        "trainer.max_train_minutes=0.1",
        "eval.every=2",
        "eval.games=40",
        "eval.opponents=[minimax]",
    )
    summary = train(cfg)
    assert summary["steps"] < 100000
    records = [json.loads(line) for line in (tmp_path / "eval.jsonl").read_text().splitlines()]
    assert len(records) >= 2
    assert 6.0 <= records[-1]["train_seconds"] < 12.0, records[-1]
    assert records[-1]["wall_seconds"] > records[-1]["train_seconds"] + 0.5, records[-1]


def test_a_negative_time_limit_is_refused(tiny_config, tmp_path):
    with pytest.raises(ValueError, match=r"trainer.max_train_minutes must be >= 0"):
        train(tiny_config(f"run_dir={tmp_path}", "trainer.max_train_minutes=-1"))


def test_a_search_value_weight_outside_zero_to_one_is_refused(tiny_config, tmp_path):
    with pytest.raises(ValueError, match=r"algo.search_value_weight must be in \[0, 1\].*1.5"):
        train(tiny_config(f"run_dir={tmp_path}", "algo.search_value_weight=1.5"))


def test_overwrite_starts_afresh(tiny_config, tmp_path):
    train(tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=4"))
    summary = train(
        tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=4", "seed=1", "overwrite=true")
    )
    assert summary["resumed_from"] is None
    assert json.loads((tmp_path / "experiment.json").read_text())["seed"] == 1


def test_a_run_made_before_a_config_key_existed_still_resumes(tiny_config, tmp_path):
    from mbrl.run_dir import EXPERIMENT_FILE, claim_run_dir

    cfg = tiny_config(f"run_dir={tmp_path}")
    claim_run_dir(cfg)
    (tmp_path / "eval.jsonl").write_text("")  # work a resume would continue from
    marker = tmp_path / EXPERIMENT_FILE
    saved = json.loads(marker.read_text())
    del saved["game.kind"], saved["algo.td_steps"]  # keys newer than the run, at their defaults
    marker.write_text(json.dumps(saved))
    claim_run_dir(cfg)  # not refused
    saved["model.channels"] = 99
    marker.write_text(json.dumps(saved))
    with pytest.raises(ValueError, match=r"model\.channels: 99 -> 8"):
        claim_run_dir(cfg)
