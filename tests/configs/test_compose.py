"""Every config composes into a valid TrainConfig; typos and unknown options fail at composition
with a message that names them."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from games import BoardGame
from llm_bridge.config import LM_ALGORITHMS
from llm_bridge.tasks.text_tasks import TASKS
from mbrl import registry
from mbrl.cli._schema import register, to_train_config
from mbrl.config import TrainConfig
from mbrl.environments import make_environment
from mbrl.train import validate
from search import SearchSettings

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml"))


@pytest.fixture(scope="module", autouse=True)
def hydra_context():
    register()
    with initialize_config_module(config_module="configs", version_base="1.3"):
        yield


def composed(*overrides: str) -> TrainConfig:
    return to_train_config(compose(config_name="train", overrides=list(overrides)))


@pytest.mark.parametrize("game", options("game"))
@pytest.mark.parametrize("algo", options("algo"))
def test_every_game_and_algo_composes(game, algo):
    cfg = composed(f"game={game}", f"algo={algo}")
    assert cfg.run_dir == f"runs/{cfg.game.name}_{algo}_seed0"
    assert isinstance(cfg.search, SearchSettings)  # the schema is the settings the code uses
    if (cfg.game.kind == "text") != (algo in LM_ALGORITHMS):
        if cfg.game.kind == "text":  # a game algorithm on a language-model task
            message = r"game\.kind=text \(language-model tasks\).*takes algo=lm_pretrain"
        else:  # a language-model algorithm on a game
            message = rf"algo={algo} does not train on game\.kind=.*trains on game\.kind=text"
        with pytest.raises(ValueError, match=message):
            validate(cfg)
        return
    if cfg.game.kind == "text":
        validate(cfg)
        assert cfg.game.name in TASKS
        return
    if cfg.game.kind not in registry.ALGORITHMS[algo].game_kinds:
        # e.g. AlphaZero on CartPole (no simulator), MuZero on chess tokens, labels on Go
        with pytest.raises(ValueError, match=rf"algo={algo} does not train on game\.kind="):
            validate(cfg)
        return
    if algo == "supervised":  # its label file is generated, not shipped
        with pytest.raises(ValueError, match=r"algo\.labels=data/chess_labels\.npz does not"):
            validate(cfg)
        return
    validate(cfg)
    assert make_environment(cfg.game, 1, seed=0).num_actions > 0


@pytest.mark.parametrize(
    "group", ["model", "replay", "optim", "trainer", "eval", "logger", "experiment", "debug"]
)
def test_every_option_composes(group):
    for option in options(group):
        cfg = composed(f"{group}={option}")
        if cfg.algo.name == "supervised":  # its label file is generated, not shipped
            with pytest.raises(ValueError, match=r"algo\.labels=.* does not exist"):
                validate(cfg)
            continue
        validate(cfg)


def test_gumbel_alphazero_sets_the_search():
    cfg = composed("algo=gumbel_alphazero", "search.num_simulations=8")
    assert cfg.search.policy == "gumbel" and cfg.search.num_simulations == 8


def test_a_game_sizes_the_model_an_experiment_picks():
    # countdown_general's completions need 96 tokens of context; the LM experiments pick the
    # 64-token tiny_lm, and the game must still win (it composes after the model group).
    general = composed("experiment=countdown_distill", "game=countdown_general")
    assert general.model.context == 96
    assert composed("experiment=countdown_distill").model.context == 64
    assert composed("game=countdown_general", "model.context=80").model.context == 80


def test_misspelt_key_fails_with_its_name():
    with pytest.raises(ConfigCompositionException, match="num_simulation"):
        composed("search.num_simulation=16")


def test_wrong_type_fails_with_its_name():
    with pytest.raises((ConfigCompositionException, ValidationError), match="num_games"):
        composed("trainer.num_games=many")


def test_unknown_option_lists_the_accepted_ones():
    with pytest.raises(ConfigCompositionException, match="gumbel_alphazero"):
        composed("algo=alphago")


def test_algo_and_search_policy_must_agree():
    cfg = composed("search.policy=gumbel")
    with pytest.raises(ValueError, match=r"search\.policy=puct"):
        validate(cfg)


def test_unknown_game_lists_the_tested_games():
    cfg = composed("game.name=tic_tac_tow")
    with pytest.raises(ValueError, match="tic_tac_toe"):
        BoardGame(cfg.game.name, cfg.game.params)


def test_a_misspelt_key_in_a_group_file_fails():
    """What composition does with every group file: merge it onto the typed schema."""
    with pytest.raises(ConfigKeyError, match="max_step"):
        OmegaConf.merge(OmegaConf.structured(TrainConfig), {"trainer": {"max_step": 10}})
