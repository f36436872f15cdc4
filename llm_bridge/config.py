"""The LLM bridge's settings: the ``llm`` config group, and ``TextTrainConfig``, the core's
``TrainConfig`` with that group added (the schema ``mbrl-train`` composes).

Registering the ``text`` game kind and the LM algorithms with the core happens in
``llm_bridge/__init__.py``, so importing any part of the bridge makes them known.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_bridge.objectives import DIVERGENCES, REINFORCE_BASELINES
from mbrl.config import ModelConfig, TrainConfig
from mbrl.validation import check_at_least, validate

# Pre-training on solver solutions, then rounds of search distillation, SFT on the searches'
# verified solutions, on-policy distillation, or the baselines SFT on verified samples, GRPO and
# REINFORCE.
LM_ALGORITHMS = (
    "lm_pretrain",
    "lm_distill",
    "lm_search_sft",
    "lm_opd",
    "lm_sft_verified",
    "lm_grpo",
    "lm_reinforce",
)


@dataclass
class LLMConfig:
    """The LLM bridge (game.kind=text): the task's data, decoding and training rounds.
    game.name is the task (countdown24 | countdown_general), game.params its parameters; the
    language model is the ``model`` group (`LMModelConfig`), distillation's search the ``search``
    group, as for games."""

    backend: str = "tiny"  # tiny: the project's TinyLM, trained from scratch
    overflow: str = "error"  # error | truncate_left
    # Keep each decoding state's keys and values and run only new tokens (TransformerAdapter's
    # use_cache): several times faster rounds, numbers equal to recompute's to float rounding
    # (not bit for bit, so the recorded runs, made with recompute, reproduce only without it).
    kv_cache: bool = False
    test_fraction: float = 0.2  # of the task's prompts, split by multiset
    split_seed: int = 0  # fixed apart from `seed`, so runs of every seed share one test set
    pretrain_fraction: float = 0.3  # of the training prompts that get solver solutions
    solutions_per_prompt: int = 4  # distinct solver solutions per pre-training prompt
    pretrain_steps: int = 800
    init_from: str = ""  # a pre-trained checkpoint to start from instead of pre-training
    candidates: int = 8  # action width: the top-k grammar-allowed next tokens
    max_new_tokens: int = 40
    # Distillation's searches of each training prompt per round (search.policy: puct | gumbel,
    # search.num_simulations per decision). Above 1, every search explores with root Dirichlet
    # noise (search.dirichlet_fraction; one search per prompt uses none: decoding explores
    # through the tree) and a sampled played action (PUCT; Gumbel draws its own noise), so the
    # searches find different solutions; every verified one is distilled.
    searches_per_prompt: int = 1
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
    # One optimizer for the whole run: keep AdamW's moments and the learning-rate schedule
    # across rounds (true), or restart both at every round (false), as separate fits did.
    keep_optimizer: bool = False
    keep_data: bool = True  # distill / SFT: train on pre-training data + all rounds' data so far
    samples_per_prompt: int = 8  # lm_sft_verified, lm_grpo, lm_reinforce: samples per prompt
    grpo_clip: float = 0.2
    grpo_dual_clip: float = 0.0  # > 1 bounds the negative-advantage term (dual-clip PPO); 0 = off
    # lm_reinforce's baseline: value (the value head, per token) | group_mean | none
    reinforce_baseline: str = "value"
    # With the value baseline: updates of the value head alone (a linear probe on the frozen
    # network) on each round's samples before its first policy update, so that the baseline
    # starts the round at the current policy's success rate (llm_bridge/baseline_warmup.py).
    baseline_warmup_steps: int = 0
    # lm_opd (llm_bridge/on_policy.py): the teacher scoring the student's samples, "search"
    # (a search at each of the student's decisions, the search group's settings) or a stronger
    # LM checkpoint (a run directory or .ckpt with the same tokenizer); the divergence
    # reverse_kl | forward_kl | jsd, and the JSD's beta (GKD)
    opd_teacher: str = "search"
    opd_divergence: str = "reverse_kl"
    opd_beta: float = 0.5
    eval_prompts: int = 0  # test prompts in each greedy evaluation; 0 = all


@dataclass
class LMModelConfig(ModelConfig):
    """The ``model`` group with the language model's sizes (``model=tiny_lm``); the game
    networks' fields are unused by text tasks."""

    layers: int = 4
    heads: int = 4
    width: int = 128
    context: int = 64  # tokens; longer prompts follow llm.overflow


@dataclass
class TextTrainConfig(TrainConfig):
    model: LMModelConfig = field(default_factory=LMModelConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)


# Lower bounds of the language model's and the llm group's counts, keys as users type them.
AT_LEAST = {
    "model.layers": 1,
    "model.heads": 1,
    "model.width": 1,
    "model.context": 1,
    "llm.solutions_per_prompt": 1,
    "llm.pretrain_steps": 0,
    "llm.candidates": 1,
    "llm.max_new_tokens": 1,
    "llm.searches_per_prompt": 1,
    "llm.rounds": 0,
    "llm.round_steps": 0,
    "llm.round_prompts": 0,
    "llm.samples_per_prompt": 1,
    "llm.baseline_warmup_steps": 0,
    "llm.eval_prompts": 0,
}


def validate_text(cfg: TextTrainConfig) -> None:
    """The core's checks, then the llm group's."""
    validate(cfg)
    check_at_least(cfg, AT_LEAST)
    if cfg.llm.opd_divergence not in DIVERGENCES:
        raise ValueError(
            f"llm.opd_divergence must be one of {DIVERGENCES}, got {cfg.llm.opd_divergence!r}"
        )
    if not 0 < cfg.llm.opd_beta < 1:
        raise ValueError(f"llm.opd_beta must be in (0, 1), got {cfg.llm.opd_beta}")
    if cfg.algo.name == "lm_opd" and cfg.backend.name == "ray":
        raise ValueError("algo=lm_opd decodes and scores in this process: use backend=embedded")
    if cfg.llm.reinforce_baseline not in REINFORCE_BASELINES:
        raise ValueError(
            f"llm.reinforce_baseline must be one of {REINFORCE_BASELINES}, got "
            f"{cfg.llm.reinforce_baseline!r}"
        )
    if cfg.llm.baseline_warmup_steps and (
        cfg.algo.name != "lm_reinforce" or cfg.llm.reinforce_baseline != "value"
    ):
        raise ValueError(
            f"llm.baseline_warmup_steps={cfg.llm.baseline_warmup_steps} fits REINFORCE's value "
            "baseline before each round (algo=lm_reinforce with llm.reinforce_baseline=value); "
            f"got algo={cfg.algo.name}, llm.reinforce_baseline={cfg.llm.reinforce_baseline}"
        )
    if cfg.backend.name == "ray" and cfg.llm.search_pass_budget:
        raise ValueError(
            f"llm.search_pass_budget={cfg.llm.search_pass_budget} buys each prompt as many "
            "searches as the round's budget allows, which shards on Ray cannot agree on; use "
            "backend=embedded or llm.search_pass_budget=0"
        )
