"""``train_text(cfg)``: language-model training on a text task, on the core's loop: one
`System` and one Lightning ``Trainer`` for the whole run (`llm_bridge.text_loop`).

Round 0 pre-trains on solver solutions for ``llm.pretrain_fraction`` of the training prompts
(or loads ``llm.init_from``). Each later round builds data with the current model, by the
algorithm's method, and trains ``llm.round_steps`` gradient steps on it:

- ``lm_distill``: batched search decoding of the training prompts (``llm.searches_per_prompt``
  searches each: batched together, or with ``llm.distinct_solutions`` one after another, each
  after a solution the earlier ones did not find); cross-entropy to the search policy over
  candidate tokens on the decoded and every verified completion found + value to the
  verifier's outcome (`LMObjective`);
- ``lm_search_sft``: the same searches as ``lm_distill``, but SFT (next-token cross-entropy) on
  every distinct verified completion they found, the search as rejection sampling's sampler;
  the value head learns 1 on those and 0 on the searches' failed completions;
- ``lm_sft_verified``: ``llm.samples_per_prompt`` samples, SFT on the verified ones;
- ``lm_grpo``: the same samples, GRPO with group-relative advantages (`GRPOObjective`);
- ``lm_reinforce``: the same samples, REINFORCE with the value head (or the group mean) as
  baseline (`ReinforceObjective`);
- ``lm_opd``: on-policy distillation (`llm_bridge.on_policy`): the same samples, a teacher (a
  search at each of the student's decisions, or a stronger checkpoint) scores every decision,
  and the student minimises a divergence to it there (`OnPolicyDistillObjective`).

With ``llm.keep_data`` distillation and SFT train each round on the pre-training data plus every
round's data so far (a growing pool, expert iteration's replay), so a round adds to what the
model knows instead of replacing it; GRPO, REINFORCE and on-policy distillation stay on-policy.

After every round the model decodes the test prompts greedily; accuracy, forward passes spent on
data and the training solve rate go to TensorBoard (``rounds/*`` in run_dir/tb, beside the
training scalars) and run_dir/rounds.jsonl. ``checkpoints/last.ckpt`` (the core's format:
weights, optimizer, schedule, the data pool and the round in progress) is written atomically
after each round and when SIGTERM or Ctrl-C stops the run; re-running the same command resumes
from it, mid-round too.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path

import lightning as L
import numpy as np
from lightning.pytorch.callbacks import TQDMProgressBar
from lightning.pytorch.loggers import TensorBoardLogger

from llm_bridge.adapter import check_overflow
from llm_bridge.baseline_warmup import fit_value_head
from llm_bridge.config import TextTrainConfig, validate_text
from llm_bridge.decoding import (
    Decoded,
    TreeSearchSettings,
    decode,
    decode_distinct,
    sample_decisions,
)
from llm_bridge.lm_checkpoint import KIND as LM_KIND
from llm_bridge.lm_checkpoint import load_lm
from llm_bridge.models import TinyLM, TinyLMSettings
from llm_bridge.objectives import (
    GRPOObjective,
    LMObjective,
    OnPolicyDistillObjective,
    ReinforceObjective,
    RoundObjective,
)
from llm_bridge.on_policy import (
    SEARCH_TEACHER,
    checkpoint_teacher,
    on_policy_examples,
    search_teacher,
)
from llm_bridge.rounds import (
    distill_examples,
    grpo_examples,
    pretrain_examples,
    reinforce_examples,
    search_verified_examples,
    verified_examples,
)
from llm_bridge.tasks.text_tasks import task_from_spec
from llm_bridge.text_env import TextEnv
from llm_bridge.text_loop import RoundEnd, TextRounds
from llm_bridge.tokenizer import CharTokenizer
from llm_bridge.transformer_adapter import TransformerAdapter
from mbrl.checkpoint import LAST, AtomicCheckpointIO, resume_point
from mbrl.graceful_stop import GracefulStop
from mbrl.quiet import quiet_third_party
from mbrl.run_dir import check_run_dir, claim_run_dir
from mbrl.system import System
from mbrl.threads import configure_threads

ON_POLICY = ("lm_grpo", "lm_reinforce", "lm_opd")  # train on this round's samples only
SEARCH_ROUNDS = ("lm_distill", "lm_search_sft")  # build a round's data by search decoding


def task_spec(cfg: TextTrainConfig) -> dict:
    return {
        "name": cfg.game.name,
        "params": dict(cfg.game.params),
        "test_fraction": cfg.llm.test_fraction,
        "split_seed": cfg.llm.split_seed,
    }


def same_test_task(trained: dict, wanted: dict) -> bool:
    """Whether a checkpoint trained on task spec ``trained`` may start a run on ``wanted``: the
    same task, parameters and split, except for verifier-only extra training prompts, which
    change neither the pre-training data nor the test prompts."""

    def core(spec: dict) -> dict:
        return {**spec, "params": {k: v for k, v in spec["params"].items() if k != "extra_train"}}

    return core(trained) == core(wanted)


def build_env(
    model: TinyLM,
    tokenizer: CharTokenizer,
    task,
    *,
    candidates: int,
    max_new_tokens: int,
    overflow: str = "error",
    kv_cache: bool = False,
) -> TextEnv:
    adapter = TransformerAdapter(
        model, eos_id=tokenizer.eos_id, overflow=overflow, use_cache=kv_cache
    )
    return TextEnv(adapter, tokenizer, task, width=candidates, max_new_tokens=max_new_tokens)


def _pretrain_items(train: list, fraction: float, seed: int) -> list:
    if not 0 < fraction <= 1:
        raise ValueError(f"llm.pretrain_fraction must lie in (0, 1], got {fraction}")
    order = np.random.default_rng(seed).permutation(len(train))
    return [train[i] for i in order[: max(1, int(fraction * len(train)))]]


def _round_items(train: list, count: int, seed: int, round_index: int) -> list:
    if count <= 0 or count >= len(train):
        return list(train)
    order = np.random.default_rng([seed, round_index]).permutation(len(train))
    return [train[i] for i in order[:count]]


def round_data(
    cfg: TextTrainConfig,
    env: TextEnv,
    items: list,
    round_index: int,
    network,
    decoders=None,
    teacher=None,
):
    """``(examples, stats)`` of one round of the configured algorithm, with ``network`` as it
    is now (GRPO records its log-probs); ``decoders`` (`llm_bridge.ray_decoding.RayDecoders`)
    decode the round's prompts on Ray, or None: here. ``teacher``: on-policy distillation's
    teacher checkpoint as an `LMAdapter` (None: the search teaches)."""
    llm, seed = cfg.llm, cfg.seed * 1000 + round_index
    ray_before = (decoders.seconds, decoders.restarts) if decoders is not None else None

    def decode_items(per_item: int, distinct: bool = False, **kwargs) -> Decoded:
        if decoders is not None:
            return decoders.decode(network, items, per_item, distinct=distinct, **kwargs)
        if distinct:
            return decode_distinct(env, items, **kwargs)
        return decode(env, [item for item in items for _ in range(per_item)], **kwargs)

    if cfg.algo.name in SEARCH_ROUNDS:
        n, settings = llm.searches_per_prompt, distill_search_settings(cfg)
        method = "gumbel" if settings.policy == "gumbel" else "mcts"
        if llm.distinct_solutions:
            decoded = decode_items(
                1,
                distinct=True,
                method=method,
                searches=n,
                budget=settings.num_simulations,
                seed=seed,
                settings=settings,
                pass_budget=llm.search_pass_budget,
            )
            n = len(decoded.rewards) // len(items)  # the budget may have bought more searches
        else:
            decoded = decode_items(
                n, method=method, budget=settings.num_simulations, seed=seed, settings=settings
            )
        if cfg.algo.name == "lm_search_sft":
            examples = search_verified_examples(env, items, decoded, n)
        else:
            examples = distill_examples(
                env,
                items,
                decoded,
                n,
                solving_searches_only=llm.distinct_solutions,
                unsolved_targets=llm.unsolved_policy_targets,
                teacher_force_solutions=llm.teacher_force_solutions,
            )
    elif cfg.algo.name == "lm_opd":
        n = llm.samples_per_prompt
        decoded, examples, teacher_passes = _on_policy_round(cfg, env, items, seed, teacher)
    else:
        n = llm.samples_per_prompt
        decoded = decode_items(n, method="sample", seed=seed)
        if cfg.algo.name == "lm_sft_verified":
            examples = verified_examples(env, items, decoded, n)
        elif cfg.algo.name == "lm_reinforce":
            examples = reinforce_examples(env, items, decoded, n, llm.reinforce_baseline)
            warmup = fit_value_head(
                network,
                examples,
                steps=llm.baseline_warmup_steps,
                batch_size=cfg.trainer.batch_size,
                seed=seed,
            )
        else:
            examples = grpo_examples(env, items, decoded, n, network)
    stats = {
        "data_passes": decoded.forward_passes,
        "train_solve_rate": decoded.accuracy,  # per search or sample
        "train_solved_any": float((decoded.rewards.reshape(len(items), n).max(1) > 0).mean()),
        "examples": len(examples),
    }
    stats["completion_tokens"] = sum(  # sampled or decoded, the cost GRPO is measured in
        len(ids) - len(env.prompt_ids(items[k // n])) for k, ids in enumerate(decoded.ids)
    )
    if cfg.algo.name in SEARCH_ROUNDS:
        stats["searches_per_prompt"] = n
    if cfg.algo.name == "lm_opd":
        stats["teacher_passes"] = teacher_passes
    if cfg.algo.name == "lm_reinforce":
        stats.update(warmup)
    if decoders is not None:  # this round's
        stats["ray_decode_seconds"] = decoders.seconds - ray_before[0]
        stats["ray_decoder_restarts"] = decoders.restarts - ray_before[1]
    return examples, stats


def _on_policy_round(cfg: TextTrainConfig, env: TextEnv, items: list, seed: int, teacher):
    """On-policy distillation's data: the student's samples, each decision scored by the
    teacher; ``(decoded, examples, teacher passes)``, the teacher's passes included in
    ``decoded.forward_passes``."""
    n = cfg.llm.samples_per_prompt
    decoded, decisions = sample_decisions(env, [item for item in items for _ in range(n)], seed)
    flat = [node for path in decisions for node in path]
    if teacher is None:
        before = env.adapter.forward_passes
        policies = search_teacher(env, flat, distill_search_settings(cfg), seed)
        teacher_passes = env.adapter.forward_passes - before
    else:
        before = teacher.forward_passes
        policies = checkpoint_teacher(teacher, flat)
        teacher_passes = teacher.forward_passes - before
    decoded.forward_passes += teacher_passes
    examples = on_policy_examples(env, items, decoded, decisions, policies, n)
    return decoded, examples, teacher_passes


def opd_teacher(cfg: TextTrainConfig, tokenizer: CharTokenizer):
    """On-policy distillation's teacher checkpoint as an adapter, or None (the search)."""
    if cfg.algo.name != "lm_opd" or cfg.llm.opd_teacher == SEARCH_TEACHER:
        return None
    loaded = load_lm(cfg.llm.opd_teacher)
    if loaded.tokenizer.alphabet != tokenizer.alphabet:
        raise ValueError(
            f"llm.opd_teacher={cfg.llm.opd_teacher} has another tokenizer; the teacher scores "
            "the student's candidate tokens, so both must share one"
        )
    return TransformerAdapter(loaded.model, eos_id=tokenizer.eos_id, overflow=cfg.llm.overflow)


def distill_search_settings(cfg: TextTrainConfig) -> TreeSearchSettings:
    """The ``search`` group as distillation searches: one plain search per prompt, or
    ``llm.searches_per_prompt`` exploring ones (noise and a sampled played action)."""
    llm, settings = cfg.llm, cfg.search
    if llm.searches_per_prompt < 1:
        raise ValueError(f"llm.searches_per_prompt must be >= 1, got {llm.searches_per_prompt}")
    if llm.search_pass_budget < 0 or (llm.search_pass_budget and not llm.distinct_solutions):
        raise ValueError(
            f"llm.search_pass_budget={llm.search_pass_budget}: must be 0 (off), or > 0 "
            "with llm.distinct_solutions=true, whose searches it extends"
        )
    repeated = llm.searches_per_prompt > 1
    plain = settings.dirichlet_fraction <= 0 and llm.search_temperature <= 0
    if repeated and settings.policy == "puct" and plain and not llm.distinct_solutions:
        raise ValueError(
            f"llm.searches_per_prompt={llm.searches_per_prompt} with search.policy=puct needs "
            "search.dirichlet_fraction > 0, llm.search_temperature > 0 or "
            "llm.distinct_solutions=true: without any, every search of a prompt builds the same "
            "tree"
        )
    return TreeSearchSettings(
        **{
            **dataclasses.asdict(settings),
            "dirichlet_fraction": settings.dirichlet_fraction if repeated else 0.0,
            "temperature": llm.search_temperature if repeated else 0.0,
            "tree_target_visits": llm.tree_target_visits,
        }
    )


def evaluate_greedy(env: TextEnv, test: list, limit: int) -> dict:
    items = test if limit <= 0 else test[:limit]
    decoded = decode(env, items, "greedy")
    return {"test_greedy_accuracy": decoded.accuracy, "test_prompts": len(items)}


def train_text(cfg: TextTrainConfig) -> dict:
    """Train; returns a summary (every round's record, the checkpoint, the signal that stopped
    it). Nothing is written to ``cfg.run_dir`` until every part was built."""
    validate_text(cfg)
    llm = cfg.llm
    if llm.backend != "tiny":
        raise ValueError(f"llm.backend must be 'tiny' for training, got {llm.backend!r}")
    check_overflow(llm.overflow, "llm.overflow")
    if cfg.algo.name in (*SEARCH_ROUNDS, "lm_opd"):
        distill_search_settings(cfg)  # bad search settings fail before pre-training
    run_dir = check_run_dir(cfg)
    quiet_third_party()
    configure_threads(
        torch_threads=cfg.trainer.torch_threads, numba_threads=cfg.trainer.numba_threads
    )
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    split = task_from_spec(task_spec(cfg))
    tokenizer = CharTokenizer()
    teacher = opd_teacher(cfg, tokenizer)  # a missing or mismatched teacher fails here
    model, first_round = _initial_model(cfg, tokenizer)
    env = build_env(
        model,
        tokenizer,
        split.task,
        candidates=llm.candidates,
        max_new_tokens=llm.max_new_tokens,
        overflow=llm.overflow,
        kv_cache=llm.kv_cache,
    )
    pretraining = pretrain_examples(
        env,
        _pretrain_items(split.train, llm.pretrain_fraction, cfg.seed),
        llm.solutions_per_prompt,
    )

    decoders = None
    if cfg.backend.name == "ray":
        from llm_bridge.ray_decoding import RayDecoders  # Ray is an extra

        decoding = {
            k: getattr(llm, k) for k in ("candidates", "max_new_tokens", "overflow", "kv_cache")
        }
        settings = dataclasses.asdict(model.settings)
        decoders = RayDecoders(cfg.backend, settings, task_spec(cfg), decoding)

    def collect(round_index: int) -> tuple[list, dict]:
        items = _round_items(split.round_prompts(), llm.round_prompts, cfg.seed, round_index)
        return round_data(cfg, env, items, round_index, model, decoders=decoders, teacher=teacher)

    data = TextRounds(
        collect,
        lambda: evaluate_greedy(env, split.test, llm.eval_prompts),
        pretraining=pretraining,
        first_round=first_round,
        rounds=0 if cfg.algo.name == "lm_pretrain" else llm.rounds,
        round_steps=lambda r: llm.pretrain_steps if r == 0 else llm.round_steps,
        keep_data=llm.keep_data and cfg.algo.name not in ON_POLICY,
        batch_size=cfg.trainer.batch_size,
        seed=cfg.seed * 1000,  # round r draws its batches with seed * 1000 + r
        keep_optimizer=llm.keep_optimizer,
    )
    metadata = {
        "kind": LM_KIND,
        "settings": dataclasses.asdict(model.settings),
        "alphabet": tokenizer.alphabet,
        "task": task_spec(cfg),
        "decoding": {"candidates": llm.candidates, "max_new_tokens": llm.max_new_tokens},
        "algo": cfg.algo.name,
        "config": dataclasses.asdict(cfg),
    }
    system = System(model, RoundObjective(_objective(cfg)), cfg.optim, metadata=metadata)
    last = run_dir / "checkpoints" / LAST
    claim_run_dir(cfg)  # first: overwrite=true deletes the checkpoint a resume would read
    resume = _resume_point(cfg, last.parent)
    stop = GracefulStop()
    callbacks = [RoundEnd(data, run_dir, tensorboard=cfg.logger.tensorboard, last=last), stop]
    if cfg.trainer.progress_bar:
        callbacks.append(TQDMProgressBar(refresh_rate=max(1, cfg.trainer.log_every)))
    logger = TensorBoardLogger(run_dir, name="tb", version="") if cfg.logger.tensorboard else False
    trainer = L.Trainer(
        max_steps=max(1, data.total_steps),
        accelerator=cfg.trainer.accelerator,
        devices=1,
        logger=logger,
        callbacks=callbacks,
        plugins=[AtomicCheckpointIO()],
        enable_checkpointing=False,  # last.ckpt after every round (RoundEnd) and on a stop
        gradient_clip_val=cfg.optim.grad_clip or None,
        log_every_n_steps=max(1, cfg.trainer.log_every),
        enable_progress_bar=cfg.trainer.progress_bar,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    try:
        if data.total_steps > 0:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="You're resuming from a checkpoint")
                trainer.fit(system, datamodule=data, ckpt_path=resume, weights_only=True)
            if stop.received is not None:  # mid-round: everything, to resume from this step
                trainer.save_checkpoint(last, weights_only=False)
    finally:
        if decoders is not None:
            decoders.close()
    return {
        "run_dir": str(run_dir),
        "rounds": data.history,
        "checkpoint": str(last),
        "resumed_from": None if resume is None else str(resume),
        "interrupted": stop.signal_name,
    }


def _objective(cfg: TextTrainConfig):
    """The algorithm's objective for the rounds after pre-training."""
    if cfg.algo.name == "lm_grpo":
        return GRPOObjective(clip=cfg.llm.grpo_clip, dual_clip=cfg.llm.grpo_dual_clip)
    if cfg.algo.name == "lm_reinforce":
        return ReinforceObjective(baseline=cfg.llm.reinforce_baseline)
    if cfg.algo.name == "lm_opd":
        return OnPolicyDistillObjective(cfg.llm.opd_divergence, cfg.llm.opd_beta)
    return LMObjective()


def _resume_point(cfg: TextTrainConfig, checkpoints: Path) -> Path | None:
    """``last.ckpt`` when the run is resumed (temporaries of a killed write removed first)."""
    path = resume_point(checkpoints, resume=cfg.resume, say=_say)
    if path is not None:
        print(f"resuming {cfg.run_dir} from {path}", file=sys.stderr)
    return path


def _initial_model(cfg: TextTrainConfig, tokenizer: CharTokenizer) -> tuple[TinyLM, int]:
    """``(model, first round)``: loaded from ``llm.init_from`` (round 1 comes next), or fresh
    (round 0 pre-trains it). A resumed run loads its weights from its checkpoint."""
    llm = cfg.llm
    if llm.init_from:
        loaded = load_lm(llm.init_from)
        if not same_test_task(loaded.task, task_spec(cfg)):
            raise ValueError(
                f"llm.init_from={llm.init_from} was trained on task {loaded.task}, not "
                f"{task_spec(cfg)}"
            )
        return loaded.model, 1
    settings = TinyLMSettings(
        tokenizer.vocab_size,
        context=cfg.model.context,
        layers=cfg.model.layers,
        heads=cfg.model.heads,
        width=cfg.model.width,
    )
    return TinyLM(settings), 0


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
