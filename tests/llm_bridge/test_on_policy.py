"""On-policy distillation: the divergences over a candidate set, the student's decisions and
their teachers (a search at the student's states, a stronger checkpoint), and a round of
``algo=lm_opd`` end to end."""

import numpy as np
import pytest
import torch

from llm_bridge.decoding import TreeSearchSettings, sample_decisions
from llm_bridge.examples import collate
from llm_bridge.objectives import OnPolicyDistillObjective, candidate_divergence
from llm_bridge.on_policy import checkpoint_teacher, on_policy_examples, search_teacher
from llm_bridge.train_text import train_text
from tests.llm_bridge.test_train_text import TINY, composed


def test_divergences_over_a_candidate_set_match_their_definitions():
    torch.manual_seed(0)
    logits = torch.randn(5, 4)
    valid = torch.tensor([[1, 1, 1, 0]] * 5, dtype=torch.bool)
    teacher = torch.softmax(torch.randn(5, 4).masked_fill(~valid, -torch.inf), -1)
    q = torch.softmax(logits.masked_fill(~valid, -torch.inf), -1)[:, :3]
    p = (1 - 1e-3) * teacher[:, :3] + 1e-3 / 3
    reverse = (q * (q.log() - p.log())).sum(-1)
    forward = (p * (p.log() - q.log())).sum(-1)
    m = 0.3 * p + 0.7 * q
    jsd = 0.3 * (p * (p.log() - m.log())).sum(-1) + 0.7 * (q * (q.log() - m.log())).sum(-1)
    for kind, expected in (("reverse_kl", reverse), ("forward_kl", forward), ("jsd", jsd)):
        measured = candidate_divergence(logits, teacher, valid, kind, beta=0.3)
        torch.testing.assert_close(measured, expected, rtol=1e-5, atol=1e-6)
    same = candidate_divergence(teacher.clamp_min(1e-9).log(), teacher, valid, "reverse_kl")
    assert same.abs().max() < 1e-2  # zero up to the teacher's floor


def test_a_search_teacher_that_never_visited_a_candidate_keeps_reverse_kl_finite():
    logits = torch.zeros(1, 3, requires_grad=True)
    teacher = torch.tensor([[1.0, 0.0, 0.0]])  # PUCT's visits: the others never tried
    valid = torch.ones(1, 3, dtype=torch.bool)
    loss = candidate_divergence(logits, teacher, valid, "reverse_kl").sum()
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(logits.grad).all()
    assert logits.grad[0, 0] < 0  # the step raises the teacher's choice


@pytest.mark.parametrize("divergence", ["reverse_kl", "forward_kl", "jsd"])
def test_the_objective_pulls_the_student_towards_the_teacher(env, countdown, divergence):
    items = countdown.train[:3]
    decoded, decisions = sample_decisions(env, [i for i in items for _ in range(2)], seed=0)
    flat = [node for path in decisions for node in path]
    # a teacher sure of the student's least likely candidate at every decision
    teacher = [np.eye(len(n.legal), dtype=np.float32)[np.flatnonzero(n.legal)[-1]] for n in flat]
    examples = on_policy_examples(env, items, decoded, decisions, teacher, 2)
    assert [len(e.positions) for e in examples] == [len(path) for path in decisions]
    batch = collate(examples)
    model = env.adapter.model
    objective = OnPolicyDistillObjective(divergence, value_weight=0.0)
    before = objective(model, batch).loss.item()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(20):
        optimizer.zero_grad()
        objective(model, batch).loss.backward()
        optimizer.step()
    assert objective(model, batch).loss.item() < 0.5 * before


def test_teachers_score_the_student_s_own_decisions(env, countdown, tiny_model):
    items = countdown.train[:2]
    _, decisions = sample_decisions(env, items, seed=1)
    flat = [node for path in decisions for node in path]
    settings = TreeSearchSettings(num_simulations=4, policy="gumbel")
    searched = search_teacher(env, flat, settings, seed=0)
    assert len(searched) == len(flat)
    for policy, node in zip(searched, flat, strict=True):
        assert policy.shape == node.candidates.shape and np.isclose(policy.sum(), 1)
        assert (policy[~node.legal] == 0).all()
    adapter = env.adapter
    before = adapter.forward_passes
    scored = checkpoint_teacher(adapter, flat)  # the student as its own teacher
    assert adapter.forward_passes - before == len(flat)
    for policy, node in zip(scored, flat, strict=True):
        logits = node.prior_logits[node.legal]
        expected = np.exp(logits - logits.max())
        np.testing.assert_allclose(policy[node.legal], expected / expected.sum(), rtol=1e-4)


@pytest.mark.parametrize("teacher", ["search", "checkpoint"])
def test_a_round_of_on_policy_distillation_runs_after_pretraining(tmp_path, teacher):
    source = tmp_path / "teacher"
    if teacher == "checkpoint":
        train_text(composed("experiment=countdown_pretrain", f"run_dir={source}", *TINY))
    cfg = composed(
        "experiment=countdown_opd_search",
        f"run_dir={tmp_path / 'student'}",
        *TINY,
        f"llm.opd_teacher={'search' if teacher == 'search' else source}",
        "llm.opd_divergence=jsd",
    )
    record = train_text(cfg)["rounds"][1]
    assert record["examples"] > 0 and record["teacher_passes"] > 0
    assert record["data_passes"] > record["teacher_passes"]  # the student's samples too
    assert record["completion_tokens"] > 0


def test_a_teacher_checkpoint_that_is_missing_fails_before_anything_is_written(tmp_path):
    cfg = composed(
        "experiment=countdown_opd_teacher",
        f"run_dir={tmp_path / 'student'}",
        *TINY,
        f"llm.opd_teacher={tmp_path / 'nowhere'}",
    )
    with pytest.raises((ValueError, FileNotFoundError), match="nowhere"):
        train_text(cfg)
    assert not (tmp_path / "student").exists()
