"""mbrl-export: board-game networks (the residual tower with batch norm, the chess transformer)
as ONNX graphs that onnxruntime runs as torch does, with the JSON a client needs."""

import json
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("onnxruntime", reason="mbrl-export needs the `export` extra")

from mbrl.export import ExportCommandConfig, export, sample_observations
from mbrl.loading import load_agent


def test_a_tic_tac_toe_network_exports_and_runs_as_in_torch(trained_run, tmp_path):
    run_dir, _ = trained_run
    out = tmp_path / "ttt.onnx"
    info = export(ExportCommandConfig(checkpoint=str(run_dir), out=str(out), check_positions=16))
    assert out.is_file() and info["outputs"] == ["logits", "value"]
    assert max(info["max_abs_difference"].values()) <= 1e-4
    assert json.loads(out.with_suffix(".json").read_text())["game"]["name"] == "tic_tac_toe"
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, nothing left behind


def test_a_chess_network_exports_with_its_move_vocabulary(tiny_config, tmp_path):
    import onnxruntime

    from mbrl.train import train

    train(
        tiny_config(
            "game=chess_tokens",
            "game.max_moves=8",
            "algo=gumbel_alphazero",
            "eval.opponents=[random]",
            "eval.games=2",
            "model.channels=32",
            "model.blocks=1",
            "trainer.max_steps=2",
            f"run_dir={tmp_path / 'run'}",
        )
    )
    info = export(ExportCommandConfig(checkpoint=str(tmp_path / "run"), check_positions=8))
    assert info["outputs"] == ["logits", "value", "value_logits"] and len(info["moves"]) == 1968
    loaded = load_agent(tmp_path / "run")
    obs = sample_observations(loaded.game, 3, seed=5)
    session = onnxruntime.InferenceSession(info["onnx"])
    logits = session.run(None, {"observations": obs})[0]
    expected = loaded.network(torch.from_numpy(obs)).logits.detach().numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-4)


def test_a_missing_extra_is_refused_naming_the_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # as if not installed
    with pytest.raises(ValueError, match=r"mbrl-export needs onnxscript: pip install"):
        export(ExportCommandConfig(checkpoint=str(tmp_path)))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("model.json", r"must name a \.onnx file"),
        ("taken.onnx", r"taken\.onnx is a directory, not a file"),
        ("m.onnx", r"m\.json is a directory, not a file"),  # where its description goes
    ],
)
def test_an_out_path_the_export_cannot_write_is_refused_before_it_runs(
    trained_run, tmp_path, name, message
):
    run_dir, _ = trained_run
    (tmp_path / "taken.onnx").mkdir()
    (tmp_path / "m.json").mkdir()
    before = sorted(tmp_path.iterdir())
    with pytest.raises(OSError if "directory" in message else ValueError, match=message):
        export(ExportCommandConfig(checkpoint=str(run_dir), out=str(tmp_path / name)))
    assert sorted(tmp_path.iterdir()) == before  # nothing written, no model left behind
