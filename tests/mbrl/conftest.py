import pytest
from hydra import compose, initialize_config_module

from mbrl.cli._schema import register, to_train_config


@pytest.fixture(scope="session")
def tiny_config():
    """``tiny_config(*overrides)``: the debug=tiny TrainConfig with overrides applied."""
    register()

    def make(*overrides):
        with initialize_config_module(config_module="configs", version_base="1.3"):
            return to_train_config(
                compose(config_name="train", overrides=["debug=tiny", *overrides])
            )

    return make


@pytest.fixture(scope="session")
def trained_run(tiny_config, tmp_path_factory):
    """One tiny tic-tac-toe run shared by the checkpoint, eval and play tests."""
    from mbrl.train import train

    run_dir = tmp_path_factory.mktemp("runs") / "ttt"
    summary = train(tiny_config(f"run_dir={run_dir}", "eval.opponents=[random]"))
    return run_dir, summary
