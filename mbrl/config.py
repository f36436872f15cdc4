"""The typed shape of every config group: plain dataclasses, declared once.

These are both the Hydra schema (the entry points register them as structured configs, so a
misspelt key or a value of the wrong type fails at composition, naming the key) and what the code
consumes: parts take their group (``cfg.optim``, ``cfg.trainer``, ``cfg.algo``, ``cfg.search``)
as composed, never a copy field by field. A group's own value checks live in its
``__post_init__``; checks across groups and the lower bounds of counts in `mbrl.validation`.
This module imports neither Hydra nor omegaconf. Packages built on the core extend
``TrainConfig`` with their own groups (``llm_bridge.config.TextTrainConfig`` adds ``llm``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from games.atari_protocol import AtariProtocol
from search.settings import SearchSettings

# plan in a learned model
LATENT_ALGORITHMS = ("muzero", "gumbel_muzero", "efficientzero", "stochastic_muzero")


@dataclass
class GameConfig:
    # a registered game kind (mbrl.registry): openspiel | chess | chance | classic | atari | text
    kind: str = "openspiel"
    name: str = "tic_tac_toe"
    params: dict[str, Any] = field(default_factory=dict)  # OpenSpiel game parameters
    max_moves: int = 0  # games longer than this end as draws; 0 = the game's own limit
    atari: AtariProtocol = field(default_factory=AtariProtocol)  # Atari only


@dataclass
class AlgoConfig:
    name: str = "alphazero"  # a registered algorithm (mbrl.registry)
    # Learned-model algorithms only (muzero, gumbel_muzero, efficientzero, stochastic_muzero):
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
    # The true-chance AlphaZero mixes its n-step target the same way (its Q is exact in chance).
    search_value_weight: float = 0.0
    # The true-chance AlphaZero: the weight of a second value loss on every position its
    # searches have found (mbrl.selfplay.tree_values), each equally often, toward the
    # expectimax value of its latest tree node with at least tree_value_min_visits visits and
    # every legal move tried; and how
    # many of those positions the learner searches again per gradient step (drawn equally
    # often, so the table spreads to positions self-play seldom plays). 0 = off.
    tree_value_weight: float = 0.0
    tree_value_min_visits: int = 2
    tree_value_searches: int = 0
    segment_length: int = 0  # long episodes enter replay in blocks (EfficientZero: 400)
    # Stochastic MuZero only: the learned chance codebook's size C, the weight of sigma's
    # cross-entropy to the encoder's codes and of the encoder's commitment to its code.
    chance_codes: int = 32
    chance_weight: float = 1.0
    commitment_weight: float = 0.02  # 0.25 freezes the codes (see the net's test)
    # n of the afterstate Q's target (<= td_steps); 0 = td_steps, the state's own value target
    # (the paper). 1 is TD(0) on the afterstate: the move's reward plus the next position's
    # value, free of the later moves' and tiles' noise.
    q_td_steps: int = 0
    labels: str = ""  # algo=supervised: a teacher's label file (python -m games.chess_labels)
    # [fraction of trainer.max_steps, visit-count temperature] pairs (MuZero's schedule)
    temperature_schedule: list[list[float]] = field(
        default_factory=lambda: [[0.0, 1.0], [0.5, 0.5], [0.75, 0.25]]
    )


TORSO_CHOICES = ("auto", "mlp", "lines", "conv")  # downsample is chosen by `downsample`
ACTION_ENCODINGS = ("auto", "onehot", "scalar")


@dataclass
class ModelConfig:
    """The network: AlphaZero's residual tower (channels, blocks, value_hidden), the chess
    transformer (channels, blocks, heads, value_bins) and the learned-model networks of
    `mbrl.networks.muzero` (the rest)."""

    channels: int = 64  # the chess transformer: its width
    blocks: int = 4  # the chess transformer: its layers
    value_hidden: int = 64  # AlphaZero's value head
    heads: int = 4  # the chess transformer's attention heads
    value_bins: int = 32  # the chess transformer's value head: win-probability bins
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
    # learned models: auto (mlp for vectors, conv for boards) | mlp | lines (square boards read
    # line by line, then mlp: 2048) | conv
    torso: str = "auto"

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
    sync_every: int = 1  # gradient steps between refreshes of the actor's network
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
    # The learner on several devices of one node (Lightning's DDP): rank 0 plays and keeps the
    # replay, every rank trains on a slice of the global batch (mbrl/selfplay/data_parallel.py).
    devices: int = 1
    strategy: str = "auto"  # auto (DDP when devices > 1) | ddp
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
class LoggerConfig:
    tensorboard: bool = True


@dataclass
class BackendConfig:
    """Where self-play runs. ``embedded``: in the learner's process, one actor, exactly
    reproducible (the default, what CI runs). ``ray``: ``actors`` Ray actors, each the same
    self-play actor (``trainer.num_games`` games in lockstep), feeding the learner, which keeps
    the replay and the checkpoint, ``reanalyzers`` Ray workers refreshing its targets and
    ``evaluators`` Ray workers evaluating copies of its weights (``mbrl.distributed``)."""

    name: str = "embedded"  # embedded | ray
    # ray: "local" starts Ray in this process; "auto" joins the cluster of `ray start`; or an
    # address such as ray://head:10001
    address: str = "local"
    actors: int = 1
    actor_cpus: float = 1.0  # Ray resources per actor (its torch threads: max(1, cpus))
    actor_gpus: float = 0.0  # > 0: the actor's network runs on a GPU
    # Publications of the learner's weights an actor's moves may lag behind when they reach the
    # replay. 0: actors play only when the learner needs moves, with its newest weights; one
    # actor then plays exactly the embedded run. > 0: actors play ahead, asynchronously.
    max_weight_lag: int = 0
    steps_per_request: int = 1  # lockstep steps (num_games moves each) per call to an actor
    # Learned models: Ray workers that reanalyse (target network values, search policies) the
    # next batches while the learner trains on this one; 0 = in the learner, in turn.
    reanalyzers: int = 0
    reanalyzer_cpus: float = 1.0
    # Ray workers that play the evaluations on a copy of the weights while the learner trains
    # on; 0 = the learner evaluates, in turn (its training clock stops meanwhile).
    evaluators: int = 0
    evaluator_cpus: float = 1.0
    num_cpus: int = 0  # address=local: the CPUs Ray may schedule on; 0 = all

    def __post_init__(self):
        if self.name not in ("embedded", "ray"):
            raise ValueError(f"backend must be embedded or ray, got {self.name!r}")
        for key in ("actors", "steps_per_request"):
            if getattr(self, key) < 1:
                raise ValueError(f"backend.{key} must be >= 1, got {getattr(self, key)}")
        for key in (
            "max_weight_lag",
            "num_cpus",
            "actor_cpus",
            "actor_gpus",
            "reanalyzers",
            "reanalyzer_cpus",
            "evaluators",
            "evaluator_cpus",
        ):
            if getattr(self, key) < 0:
                raise ValueError(f"backend.{key} must be >= 0, got {getattr(self, key)}")


@dataclass
class TrainConfig:
    seed: int = 0
    run_dir: str = "runs/default"
    resume: bool = True  # continue from run_dir's last checkpoint when there is one
    overwrite: bool = False  # delete run_dir's checkpoints, logs and evaluations; start afresh
    # A fresh run starts from this checkpoint's network (a run directory or .ckpt file, for the
    # same game and network), e.g. self-play after algo=supervised; a resumed run ignores it.
    init_from: str = ""
    game: GameConfig = field(default_factory=GameConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    search: SearchSettings = field(default_factory=SearchSettings)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    backend: BackendConfig = field(default_factory=BackendConfig)


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
    "trainer.devices",  # the gradient steps are the same on any number of devices
    "trainer.strategy",
    "eval",
    "logger",
    "backend",  # where self-play runs, not what it plays: a run may move between backends
    "resume",
    "overwrite",
    "run_dir",
)
