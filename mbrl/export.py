"""``mbrl-export``: a board-game checkpoint's policy-value network as an ONNX file, checked
against torch with onnxruntime, so it can run without Python (onnxruntime-web in a browser).

The graph takes ``board_tokens`` / observations ``[batch, *obs_shape]`` (float32; a dynamic
batch) and returns ``logits [batch, actions]``, ``value [batch]`` (for the player to move, in
[-1, 1]) and, for a value head over win-probability bins, ``value_logits``. A JSON file beside
it records the game, the shapes and (chess) the move vocabulary's order, which is what a client
needs to encode positions and read moves. The ``export`` extra installs onnx, onnxruntime and
onnxscript (torch's exporter).
"""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mbrl.atomic_file import check_file_target, write_atomically
from mbrl.loading import load_agent

TOLERANCE = 1e-4  # onnxruntime against torch, largest absolute difference of any output
INSTALL = 'pip install -e ".[export]"  (onnx, onnxruntime, onnxscript)'


@dataclass
class ExportCommandConfig:
    checkpoint: str = "???"  # a .ckpt file or a run directory (board games)
    out: str = ""  # the .onnx file; default <run dir>/model.onnx
    check_positions: int = 64  # positions of random games to compare ONNX and torch on
    seed: int = 0


def _modules():
    try:
        import onnxruntime
        import onnxscript  # noqa: F401
    except ImportError as error:
        raise ValueError(f"mbrl-export needs {error.name}: {INSTALL}") from None
    import onnxruntime

    return onnxruntime


def sample_observations(game, count: int, seed: int) -> np.ndarray:
    """Observations of positions from random games (the start position first)."""
    rng = np.random.default_rng(seed)
    observations, state = [], game.new_state()
    while len(observations) < count:
        observations.append(game.observation(state))
        legal = np.flatnonzero(game.legal_mask(state))
        if len(legal) == 0:
            state = game.new_state()
            continue
        state = game.apply(state, int(rng.choice(legal))).state
        if state.is_terminal():
            state = game.new_state()
    return np.stack(observations).astype(np.float32)


def export(cfg: ExportCommandConfig) -> dict:
    onnxruntime = _modules()
    loaded = load_agent(cfg.checkpoint)
    if loaded.game is None or loaded.latent:
        raise ValueError(
            f"mbrl-export exports AlphaZero's networks for board games; {cfg.checkpoint} holds "
            f"{'a learned model' if loaded.latent else 'a single-agent agent'}"
        )
    if cfg.check_positions < 1:
        raise ValueError(f"check_positions must be >= 1, got {cfg.check_positions}")
    out = _check_out(Path(cfg.out) if cfg.out else _run_dir(Path(cfg.checkpoint)) / "model.onnx")
    network = loaded.network.eval()
    observations = sample_observations(loaded.game, cfg.check_positions, cfg.seed)
    example = torch.from_numpy(observations[:2])
    names = [
        "logits",
        "value",
        *(["value_logits"] if network(example).value_logits is not None else []),
    ]
    program = _export(network, example, names)
    write_atomically(out, program.save)
    session = onnxruntime.InferenceSession(str(out))
    got = session.run(None, {"observations": observations})
    with torch.inference_mode():
        expected = network(torch.from_numpy(observations))
    errors = {
        name: float(np.abs(value - expected[i].numpy()).max())
        for i, (name, value) in enumerate(zip(names, got, strict=True))
    }
    worst = max(errors.values())
    if worst > TOLERANCE:
        out.unlink()
        raise RuntimeError(f"the ONNX graph differs from torch by {worst:.3g} ({errors}); not kept")
    info = {
        "onnx": str(out),
        "game": loaded.game.spec,
        "inputs": {"observations": ["batch", *loaded.game.obs_shape]},
        "outputs": names,
        "checked_positions": len(observations),
        "max_abs_difference": errors,
    }
    if loaded.game.name == "chess_tokens":
        from games.chess_tokens import move_vocabulary

        info["moves"] = list(move_vocabulary())  # logits[i] is the move moves[i] (UCI)
    try:
        write_atomically(
            out.with_suffix(".json"),
            lambda path: Path(path).write_text(json.dumps(info, indent=1)),
        )
    except BaseException:
        out.unlink(missing_ok=True)  # a model without its description is not an export
        raise
    print(
        f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) and {out.with_suffix('.json').name}; "
        f"onnxruntime matches torch on {len(observations)} positions within {worst:.2g}"
    )
    return info


def _check_out(out: Path) -> Path:
    """``out``, after refusing what the export could not write (checked before it runs)."""
    if out.suffix != ".onnx":
        raise ValueError(
            f"out={out} must name a .onnx file (its description goes beside it, .json)"
        )
    for path in (out, out.with_suffix(".json")):
        check_file_target(path, f"out={out}: {path}")
    return out


def _export(network: torch.nn.Module, example: torch.Tensor, names: list[str]):
    # The exporter and its graph optimizer log every step (and a warning per optional
    # torchvision operator); torch's pytree warns about itself. None of it is the user's.
    for name in ("torch.onnx", "onnxscript", "onnx_ir"):
        logging.getLogger(name).setLevel(logging.ERROR)
    batch = torch.export.Dim("batch", min=1)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        return torch.onnx.export(
            network,
            (example,),
            input_names=["observations"],
            output_names=names,
            dynamic_shapes=({0: batch},),
            dynamo=True,
            verbose=False,
        )


def _run_dir(path: Path) -> Path:
    return path if path.is_dir() else path.parent.parent
