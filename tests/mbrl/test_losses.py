import torch

from mbrl import losses


def test_policy_cross_entropy_matches_the_definition_and_ignores_illegal_logits():
    logits = torch.tensor([[1.0, 2.0, 50.0], [0.0, 0.0, 0.0]])
    legal = torch.tensor([[True, True, False], [True, True, True]])
    target = torch.tensor([[0.25, 0.75, 0.0], [1.0, 0.0, 0.0]])
    out = losses.policy_cross_entropy(logits, target, legal)
    log_p0 = torch.log_softmax(torch.tensor([1.0, 2.0]), 0)
    expected0 = -(0.25 * log_p0[0] + 0.75 * log_p0[1])
    expected1 = torch.log(torch.tensor(3.0))
    torch.testing.assert_close(out.per_sample, torch.stack([expected0, expected1]))
    torch.testing.assert_close(out.loss, out.per_sample.mean())
    assert out.metrics["policy_kl"] >= 0


def test_importance_weights_scale_the_loss():
    value, target = torch.tensor([0.0, 0.0]), torch.tensor([1.0, -1.0])
    weights = torch.tensor([1.0, 0.0])
    out = losses.value_mse(value, target, weights)
    torch.testing.assert_close(out.loss, torch.tensor(0.5))
    torch.testing.assert_close(out.per_sample, torch.tensor([1.0, 1.0]))


def test_sparse_policy_target_over_candidate_ids():
    logits = torch.randn(2, 50)
    ids = torch.tensor([[3, 7], [0, 49]])
    target = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    out = losses.sparse_policy_cross_entropy(logits, ids, target)
    dense = torch.zeros(2, 50).scatter(1, ids, target)
    expected = -(dense * torch.log_softmax(logits, -1)).sum(-1)
    torch.testing.assert_close(out.per_sample, expected)
