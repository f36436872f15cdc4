"""mbrl-train on a text task: pre-training, a distillation / SFT / GRPO round, resume, and
mbrl-decode on the checkpoint. Tiny sizes: seconds each."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from hydra import compose, initialize_config_module

from llm_bridge import train_text as train_text_module
from llm_bridge.decode_command import DecodeCommandConfig, run_decode
from llm_bridge.decoding import MAX_SEARCHES_FACTOR
from llm_bridge.examples import collate, next_token_example
from llm_bridge.fitting import fit
from llm_bridge.lm_checkpoint import load_lm
from llm_bridge.objectives import GRPOObjective, LMObjective
from llm_bridge.tasks.text_tasks import task_from_spec
from llm_bridge.train_text import round_data, task_spec, train_text
from mbrl.checkpoint import load_checkpoint
from mbrl.cli._schema import register, to_train_config
from mbrl.config import OptimConfig
from mbrl.jsonl_log import append_records, read_records
from mbrl.system import System

TINY = [
    "model.layers=1",
    "model.width=16",
    "model.heads=2",
    "llm.pretrain_steps=30",
    "llm.round_steps=4",
    "llm.rounds=1",
    "llm.round_prompts=12",
    "llm.eval_prompts=12",
    "search.num_simulations=4",
    "llm.samples_per_prompt=4",
    "trainer.batch_size=16",
    "trainer.progress_bar=false",
    "logger.tensorboard=false",
]


def composed(*overrides):
    register()
    with initialize_config_module(config_module="configs", version_base="1.3"):
        return to_train_config(compose(config_name="train", overrides=list(overrides)))


@pytest.mark.parametrize("method", ["distill", "search_sft", "sft_verified", "grpo", "reinforce"])
def test_each_method_runs_a_round_after_pretraining(tmp_path, method):
    cfg = composed(f"experiment=countdown_{method}", f"run_dir={tmp_path}", *TINY)
    summary = train_text(cfg)
    assert [r["round"] for r in summary["rounds"]] == [0, 1]
    assert summary["rounds"][1]["data_passes"] > 0
    assert load_lm(tmp_path).state["round"] == 1


@pytest.mark.parametrize("method", ["distill", "sft_verified"])
def test_a_round_with_the_kv_cache_collects_what_recompute_collects(tmp_path, method):
    """``llm.kv_cache=true`` reaches the round's decoding: the same passes and solve rate (the
    numbers differ only by float rounding, far below any sampling or search decision here)."""
    records = {}
    for kv_cache in (False, True):
        run_dir = tmp_path / str(kv_cache)
        cfg = composed(
            f"experiment=countdown_{method}",
            f"run_dir={run_dir}",
            *TINY,
            f"llm.kv_cache={kv_cache}",
        )
        records[kv_cache] = train_text(cfg)["rounds"][1]
    for key in ("data_passes", "train_solve_rate", "examples"):
        assert records[True][key] == records[False][key]


def test_a_rerun_resumes_after_the_last_round_and_decode_reads_the_checkpoint(tmp_path):
    cfg = composed("experiment=countdown_distill", f"run_dir={tmp_path}", *TINY)
    train_text(cfg)
    cfg.llm.rounds = 2  # a longer run of the same experiment continues, not restarts
    with pytest.raises(ValueError, match="another experiment"):
        train_text(cfg)  # rounds is part of the experiment's identity
    cfg.llm.rounds = 1
    summary = train_text(cfg)  # nothing left to do: history is kept, no round re-run
    assert [r["round"] for r in summary["rounds"]] == [0, 1]
    cfg.overwrite = True  # starts afresh: resumes from nothing, not from the deleted checkpoint
    summary = train_text(cfg)
    assert summary["resumed_from"] is None and [r["round"] for r in summary["rounds"]] == [0, 1]
    cfg.overwrite = False
    for actions in ("tokens", "steps"):
        config = DecodeCommandConfig(
            checkpoint=str(tmp_path), method="mcts", budget=4, limit=5, actions=actions
        )
        result = run_decode(config)
        lines = (tmp_path / f"decode_test_{actions}_mcts_4.jsonl").read_text().splitlines()
        assert len(lines) == 5 and result["forward_passes"] > 5
        assert set(json.loads(lines[0])) == {"prompt", "completion", "correct"}
        assert result["actions"] == actions


def test_repeated_searches_per_prompt_run_and_identical_ones_fail_before_pretraining(tmp_path):
    cfg = composed(
        "experiment=countdown_distill",
        f"run_dir={tmp_path / 'twice'}",
        *TINY,
        "llm.searches_per_prompt=2",
    )
    record = train_text(cfg)["rounds"][1]
    assert record["examples"] > 0 and record["train_solved_any"] >= record["train_solve_rate"]
    identical = composed(
        "experiment=countdown_distill",
        f"run_dir={tmp_path / 'identical'}",
        *TINY,
        "llm.searches_per_prompt=2",
        "search.dirichlet_fraction=0",
        "llm.search_temperature=0",
    )
    with pytest.raises(ValueError, match="every search of a prompt builds the same tree"):
        train_text(identical)
    assert not (tmp_path / "identical" / "checkpoints").exists()


def test_distinct_plain_searches_per_prompt_run_a_round_and_a_pass_budget_adds_more(tmp_path):
    cfg = composed(
        "experiment=countdown_distill",
        f"run_dir={tmp_path / 'distinct'}",
        *TINY,
        "llm.searches_per_prompt=2",
        "search.dirichlet_fraction=0",
        "llm.search_temperature=0",
        "llm.distinct_solutions=true",
        "llm.search_pass_budget=1000000000",
    )
    record = train_text(cfg)["rounds"][1]
    assert record["examples"] > 0 and record["data_passes"] > 0
    assert record["searches_per_prompt"] == MAX_SEARCHES_FACTOR * 2


def test_init_from_accepts_extra_training_prompts_but_not_another_split(tmp_path, monkeypatch):
    pretrain = tmp_path / "pretrain"
    train_text(composed("experiment=countdown_pretrain", f"run_dir={pretrain}", *TINY))
    searched = []

    def last_prompts_only(cfg, env, items, round_index, network, **kwargs):  # all take minutes
        searched.extend(items)
        return round_data(cfg, env, items[-6:], round_index, network, **kwargs)

    monkeypatch.setattr(train_text_module, "round_data", last_prompts_only)
    extended = composed(
        "experiment=countdown_distill",
        f"run_dir={tmp_path / 'distill'}",
        f"llm.init_from={pretrain}",
        "+game.params.extra_train=40",
        *TINY,
        "llm.round_prompts=0",
    )
    summary = train_text(extended)
    assert [r["round"] for r in summary["rounds"]] == [1]  # from the pre-trained model
    split = task_from_spec(task_spec(extended))
    assert searched == split.train + split.extra and len(split.extra) > 20
    assert {p.target for p in searched[-6:]}.isdisjoint({24})
    other = composed(
        "experiment=countdown_distill",
        f"run_dir={tmp_path / 'other'}",
        f"llm.init_from={pretrain}",
        "llm.split_seed=1",
        *TINY,
    )
    with pytest.raises(ValueError, match="was trained on task"):
        train_text(other)


def test_a_language_model_checkpoint_is_refused_by_the_game_evaluation(tmp_path):
    from mbrl.loading import load_agent

    train_text(composed("experiment=countdown_pretrain", f"run_dir={tmp_path}", *TINY))
    with pytest.raises(ValueError, match=r"holds no game agent .*mbrl-decode"):
        load_agent(tmp_path)


def test_decode_names_an_unknown_method_and_a_missing_checkpoint(tmp_path):
    with pytest.raises(ValueError, match=r"method must be one of .*best_of_n.*'nucleus'"):
        run_decode(DecodeCommandConfig(checkpoint=str(tmp_path), method="nucleus"))
    with pytest.raises(FileNotFoundError, match="no LM checkpoint"):
        run_decode(DecodeCommandConfig(checkpoint=str(tmp_path / "nothing")))


def test_pretraining_loss_falls(env, countdown):
    from llm_bridge.rounds import pretrain_examples

    examples = pretrain_examples(env, countdown.train[:64], 2)
    system = System(env.adapter.model, LMObjective(), OptimConfig(lr=3e-3))
    before = LMObjective()(env.adapter.model, collate(examples)).loss.item()
    fit(system, examples, steps=40, batch_size=32, seed=0)
    after = LMObjective()(env.adapter.model, collate(examples)).loss.item()
    assert after < 0.7 * before


def test_sft_targets_make_lm_objective_the_token_cross_entropy(tiny_model):
    example = next_token_example([1, 5, 6, 7, 8, 2], prompt_length=3)
    batch = collate([example])
    loss = LMObjective(value_weight=0.0)(tiny_model, batch).loss
    logits = tiny_model(batch["ids"]).logits[0, 2:5]
    expected = torch.nn.functional.cross_entropy(logits, torch.tensor([7, 8, 2]))
    assert torch.isclose(loss, expected, atol=1e-5)


def test_grpo_without_advantage_has_no_gradient(tiny_model):
    example = next_token_example([1, 5, 6, 7, 2], prompt_length=2, advantage=0.0)
    example.old_log_prob = [0.0] * len(example.positions)
    loss = GRPOObjective()(tiny_model, collate([example])).loss
    loss.backward()
    assert all(p.grad is None or p.grad.abs().max() == 0 for p in tiny_model.parameters())


@pytest.mark.parametrize("advantage", [1.0, -1.0])
def test_grpo_moves_a_sequence_with_its_advantage(tiny_model, advantage):
    example = next_token_example([1, 5, 6, 7, 2], prompt_length=2, advantage=advantage)

    def log_prob() -> float:
        logits = tiny_model(torch.tensor([example.ids])).logits[0, :-1]
        targets = torch.tensor(example.ids[1:])
        picked = torch.log_softmax(logits, -1)[torch.arange(len(targets)), targets]
        return picked[example.positions[0] :].sum().item()

    with torch.no_grad():  # the sampling policy's log-probs: ratio 1 at the first step
        logits = tiny_model(torch.tensor([example.ids])).logits[0]
        example.old_log_prob = [
            torch.log_softmax(logits[t], -1)[example.ids[t + 1]].item() for t in example.positions
        ]
    before = log_prob()
    optimizer = torch.optim.SGD(tiny_model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        GRPOObjective()(tiny_model, collate([example])).loss.backward()
        optimizer.step()
    assert (log_prob() - before) * advantage > 0


def test_grpo_dual_clip_bounds_a_negative_advantage_whose_ratio_ran_away(tiny_model):
    example = next_token_example([1, 5, 6, 7, 2], prompt_length=2, advantage=-1.0)
    example.old_log_prob = [-30.0] * len(example.positions)  # sampled when far less likely
    batch = collate([example])
    unbounded = GRPOObjective()(tiny_model, batch).loss
    bounded = GRPOObjective(dual_clip=3.0)(tiny_model, batch).loss
    assert unbounded > 1e6 and torch.isclose(bounded, torch.tensor(3.0))
    example.advantage = 1.0  # a positive advantage is untouched: clipped at 1 + clip
    positive = collate([example])
    assert (
        GRPOObjective(dual_clip=3.0)(tiny_model, positive).loss
        == GRPOObjective()(tiny_model, positive).loss
    )


def _same_weights(a, b) -> bool:
    first, second = load_lm(a).model.state_dict(), load_lm(b).model.state_dict()
    return all(torch.equal(first[k], second[k]) for k in first)


def test_a_run_stopped_mid_round_resumes_to_the_weights_of_an_unbroken_run(tmp_path):
    """SIGTERM during round 1 writes last.ckpt with the round in progress (its data, how far
    its batches went, the optimizer); re-running the command ends where an unbroken run does."""
    overrides = [*TINY, "llm.round_steps=400", "trainer.torch_threads=1"]

    def command(run_dir):
        experiment = "experiment=countdown_sft_verified"
        return [
            sys.executable,
            "-m",
            "mbrl.cli.train",
            experiment,
            f"run_dir={run_dir}",
            *overrides,
        ]

    env = {**os.environ, "PYTHONHASHSEED": "0"}
    unbroken = subprocess.run(command(tmp_path / "a"), capture_output=True, text=True, env=env)
    assert unbroken.returncode == 0, unbroken.stderr[-2000:]
    process = subprocess.Popen(
        command(tmp_path / "b"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    rounds = tmp_path / "b" / "rounds.jsonl"
    deadline = time.monotonic() + 120
    while not rounds.exists():  # round 0 is done: round 1 runs now
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.02)
    time.sleep(0.5)  # past round 0's checkpoint: into round 1's data or its steps
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    stopped = load_checkpoint(tmp_path / "b")["TextRounds"]
    assert stopped["round"] == 1 and not stopped["round_finished"] and stopped["draws"] < 400
    # As if killed after round 1's record was appended but before its checkpoint was written.
    round_1 = read_records(tmp_path / "a" / "rounds.jsonl")[1]
    append_records(rounds, [round_1])
    resumed = subprocess.run(command(tmp_path / "b"), capture_output=True, text=True, env=env)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert _same_weights(tmp_path / "a", tmp_path / "b")
    assert [r["round"] for r in read_records(rounds)] == [0, 1]  # round 1 once


def test_keeping_the_optimizer_across_rounds_changes_the_weights(tmp_path):
    restart = composed("experiment=countdown_sft_verified", f"run_dir={tmp_path / 'a'}", *TINY)
    kept = composed(
        "experiment=countdown_sft_verified",
        f"run_dir={tmp_path / 'b'}",
        *TINY,
        "llm.keep_optimizer=true",
    )
    train_text(restart), train_text(kept)
    assert not _same_weights(tmp_path / "a", tmp_path / "b")
