"""Errors a person can act on: unknown keys, bad values and files refused in one line."""

import os
import signal
import subprocess
import sys
import time

import pytest
from hydra import compose, initialize_config_module

from llm_bridge.decode_command import DecodeCommandConfig, check, read_prompts, run_decode
from mbrl.cli._command import (
    CompositionError,
    UnknownKeyError,
    check_composition,
    check_keys,
    check_overrides,
    config_groups,
)
from mbrl.cli._schema import TrainCommandConfig, register, to_train_config
from mbrl.config import TrainConfig
from mbrl.evaluate import EvalCommandConfig, evaluate
from mbrl.play import PlayConfig, play
from mbrl.train import train


def run_cli(module: str, *arguments: str, env: dict | None = None, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", module, *arguments],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
        **kwargs,
    )


def one_line_error(result, app: str) -> str:
    """The single stderr line of a refused command, after checking its form."""
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{app}: error: "), result.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize("prefix", ["+", "++", ""])
def test_an_unknown_key_is_refused_with_its_close_matches(prefix):
    with pytest.raises(UnknownKeyError, match=r"'trainer\.max_stepz'.*'trainer\.max_steps'"):
        check_overrides([f"{prefix}trainer.max_stepz=5"], TrainConfig, config_groups())
    with pytest.raises(UnknownKeyError, match=r"'budgett'; did you mean 'budget'"):
        check_overrides([f"{prefix}budgett=64"], DecodeCommandConfig)


def test_groups_hydra_keys_and_game_parameters_are_not_unknown_keys():
    check_overrides(
        ["experiment=tictactoe", "+debug=tiny", "hydra.verbose=true", "game.params.rows=5"],
        TrainConfig,
        config_groups(),
    )


@pytest.mark.parametrize(
    ("config_name", "override", "message"),
    [
        (
            "train",
            "game=nope",
            r"Could not find 'game/nope'; the options in 'game' are .*tic_tac_toe",
        ),
        (
            "train",
            "trainer.max_steps=1.5",
            r"^trainer\.max_steps=1\.5: Value '1\.5' of type 'float'",
        ),
        ("train", "trainer.batch_size=[1,2]", r"trainer\.batch_size=\[1,2\]: .*'list'"),
        ("train", "+seed=3", r"seed"),
        ("train", "run_dir=it's", r"cannot parse the override run_dir=it's"),
    ],
)
def test_an_override_hydra_cannot_apply_is_one_line(config_name, override, message):
    register()
    with pytest.raises(CompositionError, match=message) as raised:
        check_composition(config_name, [override])
    assert "\n" not in str(raised.value)


def test_hydras_composition_errors_are_one_line_from_the_console(tmp_path):
    line = one_line_error(run_cli("mbrl.cli.eval", "games=abc"), "mbrl-eval")
    assert "games=abc: Value 'abc'" in line
    line = one_line_error(run_cli("mbrl.cli.train", "algo=nope"), "mbrl-train")
    assert "Could not find 'algo/nope'" in line


def test_a_composed_config_with_an_added_key_is_refused():
    register()
    with initialize_config_module(config_module="configs", version_base="1.3"):
        cfg = compose(config_name="train", overrides=["+trainer.max_stepz=5"])
    with pytest.raises(UnknownKeyError, match="max_stepz"):
        check_keys(cfg, TrainCommandConfig)


def test_mbrl_train_refuses_a_key_added_with_plus_in_one_line():
    line = one_line_error(run_cli("mbrl.cli.train", "+trainer.max_stepz=5"), "mbrl-train")
    assert "'trainer.max_stepz'" in line and "'trainer.max_steps'" in line


def test_mbrl_decode_refuses_a_key_added_with_plus_in_one_line():
    line = one_line_error(
        run_cli("llm_bridge.cli.decode", "checkpoint=x", "+budgett=64"), "mbrl-decode"
    )
    assert "'budgett'" in line and "'budget'" in line


@pytest.mark.parametrize(
    "override",
    ["game.params={board_size:5}", "game.params.board_size=5", "+game.params.board_size=5"],
)
def test_the_documented_game_parameter_forms_compose(override):
    register()
    with initialize_config_module(config_module="configs", version_base="1.3"):
        cfg = to_train_config(compose(config_name="train", overrides=["game=hex", override]))
    assert cfg.game.params == {"board_size": 5}


def test_a_user_error_is_one_line_and_the_traceback_needs_the_switch(tmp_path):
    missing = tmp_path / "missing.ckpt"
    line = one_line_error(run_cli("mbrl.cli.eval", f"checkpoint={missing}"), "mbrl-eval")
    assert str(missing) in line
    full = run_cli("mbrl.cli.eval", f"checkpoint={missing}", env={"HYDRA_FULL_ERROR": "1"})
    assert full.returncode != 0 and "Traceback" in full.stderr


def test_a_missing_checkpoint_key_is_one_line():
    line = one_line_error(run_cli("mbrl.cli.play"), "mbrl-play")
    assert "checkpoint is required" in line


def test_an_impossible_board_size_is_refused_naming_the_parameter(tiny_config, tmp_path):
    cfg = tiny_config(f"run_dir={tmp_path}", "game=hex", "game.params.board_size=-5")
    with pytest.raises(ValueError, match=r"'hex' with parameters \{'board_size': -5\}"):
        train(cfg)
    with pytest.raises(ValueError, match="'tic_tac_toe' has no parameter 'board_size'"):
        train(tiny_config(f"run_dir={tmp_path}", "game.params.board_size=5"))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("trainer.num_games=0", "trainer.num_games must be >= 1, got 0"),
        ("search.eval_simulations=-5", "search.eval_simulations must be >= 0, got -5"),
        ("eval.opponents=[]", "eval.opponents=[] names no opponent"),
        ("trainer.max_steps=-5", "trainer.max_steps must be >= 1, got -5"),
        ("seed=-1", "seed must be >= 0, got -1"),
        ("trainer.replay_ratio=inf", "trainer.replay_ratio must be a finite number > 0, got inf"),
        ("search.dirichlet_alpha=-1", "search.dirichlet_alpha must be a finite number > 0"),
        ("search.dirichlet_fraction=2", "search.dirichlet_fraction must be a finite number in"),
    ],
)
def test_training_settings_are_refused_by_the_key_the_user_typed(tiny_config, override, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        train(tiny_config("run_dir=unused", override))


def test_decode_settings_and_prompt_files_are_refused_naming_the_value(tmp_path):
    with pytest.raises(
        ValueError, match=r"overflow must be one of error \| truncate_left, got 'foo'"
    ):
        check(DecodeCommandConfig(checkpoint="x", overflow="foo"))
    with pytest.raises(ValueError, match="budget must be >= 1, got -3"):
        check(DecodeCommandConfig(checkpoint="x", method="mcts", budget=-3))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(ValueError, match=r"empty\.txt holds no prompts"):
        read_prompts(empty)
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(ValueError, match=r"model\.bin is not UTF-8 text"):
        read_prompts(binary)


def test_eval_and_play_refuse_bad_counts_naming_the_key(trained_run):
    run_dir, _ = trained_run
    with pytest.raises(ValueError, match=r"opponents=\[\] names no opponent"):
        evaluate(EvalCommandConfig(checkpoint=str(run_dir), opponents=[]))
    with pytest.raises(ValueError, match="games must be >= 1, got 0"):
        evaluate(EvalCommandConfig(checkpoint=str(run_dir), games=0))
    with pytest.raises(ValueError, match=r"simulations must be >= 0 .* or -1 .*got -5"):
        evaluate(EvalCommandConfig(checkpoint=str(run_dir), simulations=-5))
    with pytest.raises(ValueError, match=r"simulations must be >= 0 .* or -1 .*got -2"):
        play(PlayConfig(checkpoint=str(run_dir), simulations=-2), input, print)


def test_decode_and_checkpoint_paths_are_refused_saying_what_they_hold(trained_run, tmp_path):
    run_dir, _ = trained_run
    with pytest.raises(ValueError, match=r"holds an agent for the game 'tic_tac_toe', not a "):
        run_decode(DecodeCommandConfig(checkpoint=str(run_dir)))
    with pytest.raises(IsADirectoryError, match=r"output=.* is a directory; name a \.json file"):
        evaluate(EvalCommandConfig(checkpoint=str(run_dir), output=str(tmp_path), games=400))
    for video, refusal in ((tmp_path, ValueError), (tmp_path / "clip.mp4", IsADirectoryError)):
        (tmp_path / "clip.mp4").mkdir(exist_ok=True)
        with pytest.raises(refusal, match="video path"):  # before any episode is played
            evaluate(EvalCommandConfig(checkpoint=str(run_dir), video=str(video)))
    loop = tmp_path / "loop.ckpt"
    loop.symlink_to(loop)
    with pytest.raises(FileNotFoundError, match=r"loop\.ckpt is a symbolic link to nothing"):
        evaluate(EvalCommandConfig(checkpoint=str(loop)))


def test_play_reasks_every_odd_input(trained_run):
    run_dir, _ = trained_run
    said = []
    answers = iter(["--4", "²", "-1", "4.0", "x(9,9)", "quit"])
    outcomes = play(PlayConfig(checkpoint=str(run_dir)), lambda _: next(answers), said.append)
    assert outcomes == [] and said[-1] == "bye"
    for text in ("--4", "²", "-1", "4.0", "x(9,9)"):
        assert any(f"{text!r} is not a legal move" in line for line in said), text


@pytest.mark.parametrize("when", ["at the prompt", "during the search"])
def test_ctrl_c_in_play_exits_with_one_line(trained_run, when):
    run_dir, _ = trained_run
    seat = ["seat=first"] if when == "at the prompt" else ["seat=second", "simulations=100000"]
    process = subprocess.Popen(
        [sys.executable, "-m", "mbrl.cli.play", f"checkpoint={run_dir}", *seat],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the signal goes to this process alone
        # A shell's background job (`make test &`) ignores SIGINT, and children inherit that:
        # restore the default so that Python installs its KeyboardInterrupt handler.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        expected = "your move" if when == "at the prompt" else "you play second"
        seen = ""
        deadline = time.monotonic() + 120
        while expected not in seen and time.monotonic() < deadline:
            seen += os.read(process.stdout.fileno(), 4096).decode()
        assert expected in seen, seen
        time.sleep(0.5)  # into input() or into the search
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines() == ["mbrl-play: interrupted"], stderr


def test_a_run_dir_that_is_a_file_or_a_failed_start_leaves_the_disk_alone(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    line = one_line_error(run_cli("mbrl.cli.train", f"run_dir={a_file}"), "mbrl-train")
    assert "is a file, not a directory" in line and a_file.read_text() == "mine"
    never = tmp_path / "never"
    one_line_error(run_cli("mbrl.cli.train", f"run_dir={never}", "game.name=nope"), "mbrl-train")
    assert not never.exists()  # not even Hydra's .hydra/ record
