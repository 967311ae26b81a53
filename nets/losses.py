"""Training losses of the JFA nets.

- :func:`policy_value_loss`: the AlphaZero / JFA loss ``(z - v)^2 - pi^T log p`` (batch mean) for the SLM
  and the upper net, with ``p = softmax(logits)`` restricted to the legal actions when a mask is given.
  A NaN ``z`` is a sample without a value target (:func:`value_mse`: the value term is the mean over the
  samples that have one; such a sample trains the policy only).
- :func:`l2_penalty`: **the one L2 regularisation of the project**, an explicit loss term
  ``c * ||theta||^2`` (the JFA/AlphaZero loss's ``c``; config field ``learner.l2_penalty``), added to the
  loss so that it is logged and means the same with Adam and SGD; no optimiser ``weight_decay`` is used.
- :func:`dqn_loss`: the lower net's regression of Q on its target; **Huber** (smooth L1, ``delta = 1``)
  by default, as in the DQN paper (robust to the occasional large TD error); ``kind="mse"`` for squared
  error. Targets are in [-1, 1] (the lower net's Q is a ``tanh``), so the two only differ for errors
  above ``delta``.
- :func:`group_ranking_loss` and :func:`group_choice_loss`: the lower net's losses over whole captures
  (every candidate victim set of a capture a sample, ``selfplay.lower_eval``): the ranking of the sets
  (``learner.dqn_loss = "group"``), or the choice among them (``"choice"``: a softmax over the sets).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F


class PolicyValueTerms(NamedTuple):
    """The batch-mean terms of :func:`policy_value_terms` (scalar tensors)."""

    total: torch.Tensor
    value: torch.Tensor  # mean (z - v)^2
    policy: torch.Tensor  # mean -pi^T log p


def policy_value_terms(
    logits: torch.Tensor,
    value: torch.Tensor,
    target_pi: torch.Tensor,
    target_z: torch.Tensor,
    legal_mask: torch.Tensor | None = None,
) -> PolicyValueTerms:
    """Value, policy and total loss. ``logits`` ``(B, A)``, ``value`` ``(B,)``, ``target_pi`` ``(B, A)``
    (rows sum to 1; visit distributions), ``target_z`` ``(B,)`` in [-1, 1] or NaN (no value target,
    :func:`value_mse`), ``legal_mask`` optional
    ``bool (B, A)`` (True = legal; every row needs one legal action). Masked actions get no probability
    and contribute nothing to the cross-entropy, whatever ``target_pi`` says there."""
    if logits.shape != target_pi.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and target_pi {tuple(target_pi.shape)} differ in shape")
    if legal_mask is not None:
        if legal_mask.shape != logits.shape:
            raise ValueError(f"legal_mask {tuple(legal_mask.shape)} does not match logits {tuple(logits.shape)}")
        legal_mask = legal_mask.to(torch.bool)
        logits = logits.masked_fill(~legal_mask, torch.finfo(logits.dtype).min)
    logp = F.log_softmax(logits, dim=1)
    cross = target_pi * logp
    if legal_mask is not None:
        cross = torch.where(legal_mask, cross, torch.zeros_like(cross))
    policy = -cross.sum(dim=1).mean()
    value_loss = value_mse(value, target_z)
    return PolicyValueTerms(value_loss + policy, value_loss, policy)


def value_mse(value: torch.Tensor, target_z: torch.Tensor) -> torch.Tensor:
    """Mean ``(z - v)^2`` over the samples with a value target: ``value`` and ``target_z`` ``(B,)`` (any
    shape with ``B`` elements), a NaN ``target_z`` meaning none (0 when no sample has one)."""
    value = value.reshape(-1)
    target_z = target_z.reshape(-1).to(value.dtype)
    known = ~torch.isnan(target_z)
    err = torch.where(known, target_z - value, torch.zeros_like(value))
    return err.pow(2).sum() / known.sum().clamp(min=1)


def policy_value_loss(
    logits: torch.Tensor,
    value: torch.Tensor,
    target_pi: torch.Tensor,
    target_z: torch.Tensor,
    legal_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """``mean((z - v)^2 - pi^T log softmax(logits))`` over the batch (see :func:`policy_value_terms`)."""
    return policy_value_terms(logits, value, target_pi, target_z, legal_mask).total


def l2_penalty(model: nn.Module, c: float) -> torch.Tensor:
    """``c * ||theta||^2`` (scalar tensor) over the parameters of ``model`` except an ``embedding``.

    The lower net's upper-action embedding is left out: its 781k entries (tiny preset, N(0, 1)
    initialisation) would make the term about 78 at ``c = 1e-4``, dwarf the Q loss (< 1), and decay the
    rows of actions no sample has shown yet (only rows of actions seen in a batch get a data gradient)."""
    if c == 0:
        return torch.zeros(())
    return c * sum(p.pow(2).sum() for name, p in model.named_parameters() if not name.startswith("embedding."))


def dqn_loss(q: torch.Tensor, target: torch.Tensor, kind: str = "huber", delta: float = 1.0) -> torch.Tensor:
    """Mean Huber (``kind="huber"``, threshold ``delta``) or squared (``kind="mse"``) error between the
    lower net's ``q`` ``(B,)`` and its ``target`` ``(B,)`` (the target is treated as a constant)."""
    q = q.reshape(-1)
    target = target.reshape(-1).to(q.dtype).detach()
    if kind == "huber":
        return F.huber_loss(q, target, delta=delta)
    if kind == "mse":
        return F.mse_loss(q, target)
    raise ValueError(f"dqn_loss: unknown kind {kind!r} (huber or mse)")


GROUP_Q_SCALE = 10.0  # Q differences of 0.1 (tanh units) match one unit of the (standardised) target
GROUP_Z_CLIP = 3.0    # standardised targets beyond 3 standard deviations are clipped (unit = 0 only)
GROUP_MIN_SD = 1e-4   # a capture whose targets differ by less carries no ranking and is left out


class _Groups(NamedTuple):
    """The captures of a grouped DQN loss: ``index`` int64 ``(B,)`` (each sample's capture,
    ``0..n-1``), ``n`` captures, ``count`` ``(n,)`` float (samples per capture)."""

    index: torch.Tensor
    n: int
    count: torch.Tensor

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        """``(n,)``: the sum of ``x`` ``(B,)`` over each capture's samples."""
        return torch.zeros(self.n, dtype=x.dtype).index_add_(0, self.index, x)

    def mean(self, x: torch.Tensor) -> torch.Tensor:
        """``(n,)``: the mean of ``x`` ``(B,)`` over each capture's samples (0 for an empty one)."""
        return self.sum(x) / self.count.clamp_min(1)


def _group_index(q: torch.Tensor, target: torch.Tensor, group: torch.Tensor):
    """``(q, z, groups)``: flat float ``q``, detached ``z`` of ``q``'s dtype and the :class:`_Groups` of
    ``group`` (the captures of a grouped DQN loss)."""
    q = q.reshape(-1).float()
    z = target.reshape(-1).to(q.dtype).detach()
    g = group.reshape(-1).long()
    n_groups = int(g.max()) + 1 if g.numel() else 0
    count = torch.zeros(n_groups, dtype=q.dtype).index_add_(0, g, torch.ones_like(q))
    return q, z, _Groups(g, n_groups, count)


def group_ranking_loss(q: torch.Tensor, target: torch.Tensor, group: torch.Tensor, unit: float = 0.0) -> torch.Tensor:
    """The lower net's within-capture loss (``learner.dqn_loss = "group"``): scalar tensor.

    ``q`` ``(B,)`` float, ``target`` ``(B,)`` float, ``group`` ``int64 (B,)``: the batch's capture of each
    sample, ``0..G-1``. Within each capture ``g`` the target is centred and then, with ``unit = 0``,
    divided by its standard deviation (population; clipped to ``[-GROUP_Z_CLIP, GROUP_Z_CLIP]``: only
    the ranking is learnt, every capture weighs the same), or with ``unit > 0`` divided by ``unit`` (in
    the target's units; ``learner.group_unit``): a capture whose victim sets differ more weighs more,
    as the regret of a wrong choice there is larger. Q is centred and multiplied by
    :data:`GROUP_Q_SCALE`; the capture's loss is the mean squared difference plus the squared
    difference of the capture's mean Q and mean target (only differences are constrained otherwise,
    and a drifting mean saturates the tanh head). The result is the mean over the captures with at
    least two samples and a target standard deviation of at least :data:`GROUP_MIN_SD` (0 when there
    is none). Adding one constant to a capture's Q and targets leaves it unchanged. Raises
    ``ValueError`` for a negative ``unit``. The per-sample regression (``huber``, ``mse``) must instead
    fit values whose spread between captures dwarfs the spread within one, and does not learn the
    ranking (docs/training.md, "The lower DQN's own self-play")."""
    if not unit >= 0.0:
        raise ValueError(f"group_ranking_loss: unit must be >= 0, got {unit!r}")
    q, z, groups = _group_index(q, target, group)
    g, count, group_mean = groups.index, groups.count, groups.mean
    z_mean, q_mean = group_mean(z), group_mean(q)
    zc = z - z_mean[g]
    z_sd = group_mean(zc * zc).sqrt()
    if unit > 0.0:
        zz = zc / unit
    else:
        zz = (zc / z_sd[g].clamp_min(GROUP_MIN_SD)).clamp(-GROUP_Z_CLIP, GROUP_Z_CLIP)
    per_group = group_mean((GROUP_Q_SCALE * (q - q_mean[g]) - zz) ** 2) + (q_mean - z_mean) ** 2
    used = (count >= 2) & (z_sd >= GROUP_MIN_SD)
    if not bool(used.any()):
        return q.sum() * 0.0
    return per_group[used].mean()


def group_choice_loss(q: torch.Tensor, target: torch.Tensor, group: torch.Tensor, temperature: float) -> torch.Tensor:
    """The lower net's within-capture choice loss (``learner.dqn_loss = "choice"``): scalar tensor.

    ``q`` ``(B,)`` float, ``target`` ``(B,)`` float, ``group`` ``int64 (B,)`` as for
    :func:`group_ranking_loss`. Within each capture ``g`` the target choice is ``p = softmax(z /
    temperature)`` over its sets and the net's is ``softmax(GROUP_Q_SCALE * q / temperature)``; the
    capture's loss is the KL divergence ``KL(p || softmax(...))`` (0 when the net's centred Q times
    :data:`GROUP_Q_SCALE` equals the centred target) plus the squared difference of its mean Q and
    mean target, as in :func:`group_ranking_loss`. ``temperature`` is in the target's units: a small one
    puts the target's mass on the best set and on the sets within about ``temperature`` of it, so the
    loss is spent on the choice the lower net makes (the best set and the regret of missing it), not on
    ordering the sets it never takes, which the ranking loss weighs as much. The result is the mean over
    the captures with at least two samples and a target spread (max - min) of at least
    :data:`GROUP_MIN_SD` (0 when there is none). Adding one constant to a capture's Q and targets leaves
    it unchanged. Raises ``ValueError`` unless ``temperature > 0``."""
    if not temperature > 0.0:
        raise ValueError(f"group_choice_loss: temperature must be > 0, got {temperature!r}")
    q, z, groups = _group_index(q, target, group)
    g, n_groups, count, group_sum = groups.index, groups.n, groups.count, groups.sum
    if n_groups == 0:
        return q.sum() * 0.0
    neg = torch.full((n_groups,), -torch.inf, dtype=q.dtype)
    z_max = neg.scatter_reduce(0, g, z, reduce="amax")
    z_min = (-neg).scatter_reduce(0, g, z, reduce="amin")
    a = GROUP_Q_SCALE * q / temperature
    a_max = neg.scatter_reduce(0, g, a.detach(), reduce="amax")
    zt = (z - z_max[g]) / temperature                     # <= 0; the best set 0
    log_zn = torch.log(group_sum(torch.exp(zt)))          # log-partition of the target choice
    log_p = zt - log_zn[g]
    ea = torch.exp(a - a_max[g])
    log_qn = a - a_max[g] - torch.log(group_sum(ea))[g]   # log-softmax of the net's choice
    kl = group_sum(torch.exp(log_p) * (log_p - log_qn))
    z_mean, q_mean = groups.mean(z), groups.mean(q)
    per_group = kl + (q_mean - z_mean) ** 2
    used = (count >= 2) & (z_max - z_min >= GROUP_MIN_SD)
    if not bool(used.any()):
        return q.sum() * 0.0
    return per_group[used].mean()
