"""A normal mbrl-train prints each line once: no advertising, no third-party deprecations."""

import subprocess
import sys
from collections import Counter


def test_a_normal_run_prints_each_line_once_and_nothing_it_cannot_act_on(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mbrl.cli.train", "debug=tiny", f"run_dir={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line.strip() for line in (result.stdout + result.stderr).splitlines()]
    repeated = [line for line, count in Counter(lines).items() if count > 1 and len(line) > 20]
    assert not repeated, repeated
    text = result.stdout + result.stderr
    for noise in (
        "Tip:",
        "Warning",
        "deprecated",
        "weights_only",
        "TPU available",
        "GPU available: False",
    ):
        assert noise not in text, noise
    assert "`Trainer.fit` stopped" in text  # Lightning's own lines still print, once
    assert not (tmp_path / "train.log").exists()  # nor an empty log of Hydra's
