"""The typed shape of every config group: plain dataclasses.

The Hydra entry points register these as structured-config schemas, so a misspelt key or a value
of the wrong type fails when the config is composed, with the key's name; this module itself
imports neither Hydra nor omegaconf. Value checks that types cannot express (a known algorithm, a
positive count) live in the settings records each part is built from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from search.settings import SearchSettings

# Language-model training (llm_bridge, game.kind=text): pre-training on solver solutions, then
# rounds of search distillation, or the baselines SFT on verified samples and GRPO.
LM_ALGORITHMS = ("lm_pretrain", "lm_distill", "lm_sft_verified", "lm_grpo")
ALGORITHMS = (
    "alphazero",
    "gumbel_alphazero",
    "muzero",
    "gumbel_muzero",
    "efficientzero",
    *LM_ALGORITHMS,
)
LATENT_ALGORITHMS = ("muzero", "gumbel_muzero", "efficientzero")  # plan in a learned model
GUMBEL_ALGORITHMS = ("gumbel_alphazero", "gumbel_muzero")
GAME_KINDS = ("openspiel", "classic", "atari", "text")


@dataclass
class AtariGameConfig:
    """EfficientZero's Atari-100k protocol (see ``games.atari.AtariSettings``)."""

    frame_skip: int = 4
    repeat_action_probability: float = 0.0  # sticky actions; 0.25 in the sticky preset
    noop_max: int = 30
    resolution: int = 96
    grayscale: bool = False
    frame_stack: int = 4
    terminal_on_life_loss: bool = True  # training only
    clip_rewards: bool = True  # training only
    max_episode_frames: int = 108_000
    full_action_space: bool = False


@dataclass
class GameConfig:
    kind: str = "openspiel"  # openspiel | classic (Gymnasium control) | atari | text (LLM tasks)
    name: str = "tic_tac_toe"
    params: dict[str, Any] = field(default_factory=dict)  # OpenSpiel game parameters
    max_moves: int = 0  # games longer than this end as draws; 0 = the game's own limit
    atari: AtariGameConfig = field(default_factory=AtariGameConfig)


@dataclass
class AlgoConfig:
    name: str = "alphazero"  # one of ALGORITHMS
    # Learned-model algorithms only (muzero, gumbel_muzero, efficientzero):
    unroll_steps: int = 5  # K
    td_steps: int = 10  # n of the n-step value target
    dynamic_td_every: int = 0  # EfficientZero: n shrinks by 1 per this many env steps of age
    discount: float = 0.997
    policy_weight: float = 1.0
    value_weight: float = 0.25
    reward_weight: float = 1.0
    consistency_weight: float = 0.0  # EfficientZero: 2.0
    value_prefix_horizon: int = 0  # EfficientZero: 5; 0 = per-step rewards
    target_update_every: int = 200  # gradient steps
    reanalyze_value: bool = True  # n-step bootstrap values from the target network
    reanalyze_policy: float = 0.0  # fraction of samples whose policy targets are re-searched
    # AlphaZero: value target = (1 - w) * game outcome + w * the search's Q of the move played;
    # 0 = the outcome only (the paper). Mixing in the search value lowers the target's variance.
    search_value_weight: float = 0.0
    segment_length: int = 0  # long episodes enter replay in blocks (EfficientZero: 400)
    # [fraction of trainer.max_steps, visit-count temperature] pairs (MuZero's schedule)
    temperature_schedule: list[list[float]] = field(
        default_factory=lambda: [[0.0, 1.0], [0.5, 0.5], [0.75, 0.25]]
    )


TORSO_CHOICES = ("auto", "mlp", "conv")  # downsample is chosen by `downsample`
ACTION_ENCODINGS = ("auto", "onehot", "scalar")


@dataclass
class ModelConfig:
    """The network: AlphaZero's residual tower (channels, blocks, value_hidden) and the
    learned-model networks of `mbrl.networks.muzero` (the rest)."""

    channels: int = 64
    blocks: int = 4
    value_hidden: int = 64  # AlphaZero's value head
    # Learned-model networks (mbrl.networks.muzero):
    latent_dim: int = 64  # vector observations: the latent's size
    head_hidden: int = 64
    support_size: int = 300  # value atoms -S..S after MuZero's transform
    reward_support_size: int = 300
    lstm_hidden: int = 64  # EfficientZero's value-prefix LSTM
    projection_dim: int = 256  # SimSiam consistency projection
    projection_hidden: int = 256
    downsample: bool = False  # images: EfficientZero's 96x96 -> 6x6 encoder
    action_encoding: str = "auto"  # auto | onehot | scalar
    torso: str = "auto"  # learned models: auto (mlp for vectors, conv for boards) | mlp | conv

    def __post_init__(self):
        if self.torso not in TORSO_CHOICES:
            raise ValueError(f"model.torso must be one of {TORSO_CHOICES}, got {self.torso!r}")
        if self.action_encoding not in ACTION_ENCODINGS:
            raise ValueError(
                f"model.action_encoding must be one of {ACTION_ENCODINGS}, got "
                f"{self.action_encoding!r}"
            )
        for name in ("channels", "latent_dim", "head_hidden", "support_size", "lstm_hidden"):
            if getattr(self, name) < 1:
                raise ValueError(f"model.{name} must be >= 1, got {getattr(self, name)}")
        if self.blocks < 0:
            raise ValueError(f"model.blocks must be >= 0, got {self.blocks}")


@dataclass
class ReplayConfig:
    capacity: int = 100_000
    prioritized: bool = False
    alpha: float = 0.6
    beta: float = 0.4
    # Board games: train each sample under a random board symmetry (games/symmetry.py lists
    # each game's); an error for a game that declares none.
    augment_symmetries: bool = False


OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("constant", "cosine", "step")


@dataclass
class OptimConfig:
    """The learner's optimizer and learning-rate schedule (`mbrl.system.System`)."""

    optimizer: str = "adamw"  # adam | adamw | sgd
    lr: float = 1e-3
    weight_decay: float = 1e-4
    momentum: float = 0.9  # sgd only
    schedule: str = "constant"  # constant | cosine | step
    warmup_steps: int = 0
    total_steps: int = 1000  # cosine: decays to lr * min_lr_ratio by then
    min_lr_ratio: float = 0.1
    step_every: int = 1000  # step: multiply by gamma every so many steps
    gamma: float = 0.1
    grad_clip: float = 5.0
    loss_limit: float = 1e6  # a loss above this (or NaN/inf) stops the run; 0 = no limit

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optim.optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"optim.schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if not self.lr > 0:
            raise ValueError(f"optim.lr must be > 0, got {self.lr}")
        if self.step_every < 1 or self.total_steps < 1 or self.warmup_steps < 0:
            raise ValueError(
                "optim.step_every and optim.total_steps must be >= 1 and optim.warmup_steps "
                f">= 0, got {self.step_every}, {self.total_steps}, {self.warmup_steps}"
            )
        if not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError(f"optim.min_lr_ratio must lie in [0, 1], got {self.min_lr_ratio}")


@dataclass
class TrainerConfig:
    max_steps: int = 2000  # gradient steps
    max_minutes: float = 0.0  # wall-clock limit, evaluations included; 0 = none
    max_train_minutes: float = 0.0  # training-time limit, evaluations excluded; 0 = none
    batch_size: int = 256
    replay_ratio: float = 0.1  # gradient steps per environment move, enforced exactly
    warmup_moves: int = 1000
    sync_every: int = 1
    num_games: int = 64  # self-play games in lockstep
    temperature_moves: int = 4
    resign_threshold: float = -1.0  # resign below this search value; -1 = off (the default)
    # Opening diversity: each self-play game first plays 0..N (uniform) random legal moves that
    # are not recorded, so every target still comes from the agent's own play. Self-play alone
    # keeps replaying the few openings it prefers; an opponent that opens otherwise finds
    # positions the agent has never seen (a learned model of tic-tac-toe: 79 distinct games in
    # 2,226, no corner opening but one).
    random_opening_moves: int = 0
    checkpoint_every: int = 200
    log_every: int = 20
    # Threads: torch's (the network; 0 = one per core) and numba's (the search kernels; 0 = all
    # cores). One numba thread by default: a parallel region stalls whenever another process
    # holds a core (mbrl/threads.py; python -m benchmarks.contention measures it).
    torch_threads: int = 0
    numba_threads: int = 1
    accelerator: str = "cpu"
    progress_bar: bool = True


@dataclass
class EvalConfig:
    every: int = 200  # gradient steps between evaluations; 0 = only at the end
    games: int = 100  # per opponent, half in each seat
    opponents: list[str] = field(default_factory=lambda: ["random"])
    simulations: int = 32  # search simulations per move in evaluation (0 = raw policy)
    elo_pool: int = 4  # earlier checkpoints kept as Elo anchors (0 = no Elo)
    elo_games: int = 20
    optimality: bool = False  # score the raw policy against exact minimax (small games)
    # Small games (tic-tac-toe): play the agent against every opponent move at every turn, in
    # both seats, and count the lines it loses (mbrl.evaluation.exhaustive); 0 = perfect play.
    exhaustive: bool = False
    # Stop once play is perfect: no losing line (with exhaustive), else no loss to minimax.
    stop_when_perfect: bool = False
    target_return: float | None = None  # single-agent games: stop once the mean return reaches it


@dataclass
class LLMConfig:
    """The LLM bridge (game.kind=text): language model, decoding and training rounds.
    game.name is the task (countdown24 | countdown_general); game.params its parameters."""

    backend: str = "tiny"  # tiny: the project's TinyLM, trained from scratch
    layers: int = 4
    heads: int = 4
    width: int = 128
    context: int = 64  # tokens; longer prompts follow `overflow`
    overflow: str = "error"  # error | truncate_left
    test_fraction: float = 0.2  # of the task's prompts, split by multiset
    split_seed: int = 0  # fixed apart from `seed`, so runs of every seed share one test set
    pretrain_fraction: float = 0.3  # of the training prompts that get solver solutions
    solutions_per_prompt: int = 4  # distinct solver solutions per pre-training prompt
    pretrain_steps: int = 800
    init_from: str = ""  # a pre-trained checkpoint to start from instead of pre-training
    candidates: int = 8  # action width: the top-k grammar-allowed next tokens
    max_new_tokens: int = 40
    search: str = "mcts"  # distillation's search: mcts | gumbel
    simulations: int = 32  # per decision
    # Distillation's searches of each training prompt per round. Above 1, every search explores
    # with root Dirichlet noise and a sampled played action (PUCT; Gumbel draws its own noise),
    # so the searches find different solutions; every verified one is distilled.
    searches_per_prompt: int = 1
    search_noise: float = 0.25  # Dirichlet fraction of repeated searches (PUCT)
    search_temperature: float = 1.0  # their played action ~ visits ** (1 / temperature) (PUCT)
    # Run a prompt's searches one after another, each counting the solutions found before it as
    # unsolved, so that a search that solves finds a new solution (llm_bridge.decode_distinct);
    # a solved prompt then takes decision targets from its solving searches only.
    distinct_solutions: bool = False
    # With distinct_solutions: a round's forward-pass budget for its searches; 0 = off. Past
    # searches_per_prompt, further searches run while the next fits in it (decode_distinct), so
    # later rounds, whose confident model reuses more of its trees, spend what the first did.
    search_pass_budget: int = 0
    # Distill the searches' policy on prompts no search solved (false: those train the value
    # head only, since their targets rest on the untrained value's guesses).
    unsolved_policy_targets: bool = True
    # On verified completions, also train the next token where no decision was searched (the
    # tokens the grammar forced, i.e. the arithmetic), as pre-training and SFT do.
    teacher_force_solutions: bool = False
    # Distill also the visit counts of interior nodes visited this often; 0 = off. Measured at 4
    # (benchmarks.countdown_distill): worse, the targets teach the untrained value's guesses.
    tree_target_visits: int = 0
    rounds: int = 3  # distillation / SFT / GRPO rounds after pre-training
    round_steps: int = 300  # gradient steps per round
    round_prompts: int = 0  # training prompts decoded per round; 0 = all
    keep_data: bool = True  # distill / SFT: train on pre-training data + all rounds' data so far
    samples_per_prompt: int = 8  # lm_sft_verified and lm_grpo: samples per prompt per round
    grpo_clip: float = 0.2
    grpo_dual_clip: float = 0.0  # > 1 bounds the negative-advantage term (dual-clip PPO); 0 = off
    eval_prompts: int = 0  # test prompts in each greedy evaluation; 0 = all


@dataclass
class LoggerConfig:
    tensorboard: bool = True


@dataclass
class TrainConfig:
    seed: int = 0
    run_dir: str = "runs/default"
    resume: bool = True  # continue from run_dir's last checkpoint when there is one
    overwrite: bool = False  # delete run_dir's checkpoints, logs and evaluations; start afresh
    game: GameConfig = field(default_factory=GameConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    search: SearchSettings = field(default_factory=SearchSettings)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)


# Keys that may change when a run is resumed (how long, how it is watched); any other difference
# means run_dir holds another experiment.
RESUMABLE_CHANGES = (
    "trainer.max_steps",
    "trainer.max_minutes",
    "trainer.max_train_minutes",
    "trainer.progress_bar",
    "trainer.checkpoint_every",
    "trainer.log_every",
    "trainer.torch_threads",
    "trainer.numba_threads",
    "eval",
    "logger",
    "resume",
    "overwrite",
    "run_dir",
)
