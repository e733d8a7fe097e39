"""Ranking losses over groups of programs of one task: only their order matters to a tuner."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def lambdarank(scores: torch.Tensor, labels: torch.Tensor, sharpness: float = 1.0) -> torch.Tensor:
    """LambdaRank loss of one group (Burges 2010): a pairwise logistic loss, each pair weighted
    by how much swapping it would change the NDCG of the predicted order.

    Parameters
    ----------
    scores : (n,) predicted scores, larger = faster
    labels : (n,) relevance in [0, 1]: the task's best cost over this program's cost
    sharpness : the gain of a program is ``2 ** (sharpness * label) - 1``: above 1, swaps among
        the near-best programs weigh more than swaps among slow ones
    """
    n = scores.shape[0]
    if n < 2:
        return scores.sum() * 0.0
    gains = torch.pow(2.0, sharpness * labels) - 1.0
    order = torch.argsort(scores.detach(), descending=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(n, device=scores.device)
    discount = 1.0 / torch.log2(rank.to(scores.dtype) + 2.0)
    ideal = (
        torch.sort(gains, descending=True).values
        / torch.log2(torch.arange(n, device=scores.device) + 2.0)
    ).sum()
    better = labels[:, None] > labels[None, :]
    delta = (gains[:, None] - gains[None, :]).abs() * (discount[:, None] - discount[None, :]).abs()
    weight = torch.where(better, delta / ideal.clamp(min=1e-12), torch.zeros_like(delta))
    pairwise = F.softplus(-(scores[:, None] - scores[None, :]))
    return (weight * pairwise).sum() / better.sum().clamp(min=1)


def mse(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Regression on the normalized throughput (TenSet-MLP's objective)."""
    return F.mse_loss(scores, labels)


def lambdarank_top(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """LambdaRank with gains ``16 ** label - 1``: ranking among a task's near-best programs
    (what a tuner's search proposes) weighs most."""
    return lambdarank(scores, labels, sharpness=4.0)


LOSSES = {"lambdarank": lambdarank, "lambdarank-top": lambdarank_top, "mse": mse}
