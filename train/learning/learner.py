"""The learner: gradient steps on sample batches, learning-rate schedules, checkpoints.

Losses (``nets.losses``): ``slm`` and ``upper`` minimise ``(z - v)^2 - pi^T log p + c ||theta||^2`` with the
softmax restricted to the sample's legal mask (the search's candidate actions); ``lower`` minimises the
DQN regression of Q on its Monte Carlo target (Huber by default; ``learner.dqn_loss = "group"``: the
within-capture ranking loss ``nets.losses.group_ranking_loss``, ``"choice"``: the within-capture choice
loss ``nets.losses.group_choice_loss``, both on batches of whole captures, up to :data:`GROUP_SETS`
victim sets of each) ``+ c ||theta||^2``, with ``c`` the config
field ``learner.l2_penalty`` and the term ``nets.losses.l2_penalty`` (every parameter except the lower
net's action embedding; no optimiser weight decay).

Optimisers: Adam, or SGD with Nesterov-free momentum. Schedules (:func:`learning_rate`, a pure function
of the global step, so that a resumed learner needs no scheduler state): ``constant``; ``cosine`` from
``lr`` down to ``lr_min`` over ``horizon`` steps (then ``lr_min``); ``step``: ``lr * gamma ** (step //
step_size)``.

Checkpoints: ``nets.io.save`` (safetensors + metadata, atomic) for the weights, with ``extra`` holding
``{"kind", "step", "iteration", ...}``; the optimiser state goes next to it as ``<name>.opt.pt``
(``torch.save`` to a temporary file, then ``os.replace``). :meth:`Learner.from_checkpoint` restores both
(a missing optimiser file starts a fresh optimiser).

``learner.trainable = "value"`` (``slm`` and ``upper``): the optimiser holds the value head's parameters
only, the others do not require gradients, and the trunk and the policy head stay in eval mode while
training, so their weights and BatchNorm statistics, and with them the net's policy, do not change;
its steps run the trunk and the value head only (the step's policy terms are reported as 0;
:meth:`Learner.validate` still scores both). ``learner.trainable = "policy"`` is its mirror: the
optimiser holds the policy head's parameters only, the trunk and the value head stay in eval mode and
run without gradients, so the net's value does not change (distilling a teacher's prior into the
policy alone, ``pretrain --teacher``); the value term is still reported.

Devices (``device``: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"auto"``; ``nets.inference.resolve_device``):
the net and the optimiser state live on the device, and each batch's arrays (planes, values, policy
targets, masks, actions, groups) are copied there (through pinned host memory on CUDA,
``nets.inference.to_device``). ``learner.precision`` is resolved for the device
(``nets.inference.resolve_precision``): bfloat16 runs the forward pass under ``torch.autocast`` (as on the
CPU); float16 (``"auto"`` on a CUDA device without bfloat16) also scales the loss with a
``torch.amp.GradScaler`` (not saved in checkpoints: a resumed learner starts a fresh scale). Checkpoints
are written from CPU copies of the tensors, so a net or optimiser saved on CUDA loads on the CPU (and
the other way round: :meth:`Learner.from_checkpoint` moves what it loads to its device).

Threads: the learner sets ``torch.set_num_threads(1)``: on a shared machine two intra-op threads
collapse throughput (``nets.evaluator``; docs/performance.md, "The nets: compiled, threads and batches").
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.atomic import atomic_write
from nets.config import NetConfig
from nets.inference import LOW_PRECISION_DTYPES, resolve_device, resolve_precision, to_device
from nets.losses import dqn_loss, group_choice_loss, group_ranking_loss, l2_penalty, policy_value_terms, value_mse
from train.learning.config import GROUP_DQN_LOSSES, LearnerConfig, check_trainable
from train.learning.samples import Batch, Samples, make_batch


def learning_rate(cfg: LearnerConfig, step: int, horizon: int, lr: float | None = None) -> float:
    """The learning rate at global ``step`` (0-based) under ``cfg.schedule`` (module docstring)."""
    peak = cfg.lr if lr is None else lr
    if cfg.schedule == "constant":
        return peak
    if cfg.schedule == "step":
        return peak * cfg.gamma ** (step // cfg.step_size)
    t = min(step / max(horizon, 1), 1.0)
    floor = min(cfg.lr_min, peak)
    return floor + (peak - floor) * 0.5 * (1.0 + math.cos(math.pi * t))


def target_entropy(pi: torch.Tensor) -> torch.Tensor:
    """Mean entropy (nats, a 0-d tensor without gradient) of the rows of ``pi`` ``(B, A)`` float32, each a
    distribution (``0 log 0 = 0``)."""
    with torch.no_grad():
        return -torch.where(pi > 0, pi * torch.log(pi.clamp_min(1e-30)), torch.zeros_like(pi)).sum(dim=1).mean()


def optimizer_path(checkpoint: str | os.PathLike) -> Path:
    p = Path(checkpoint)
    return p.with_name(p.name.removesuffix(".safetensors") + ".opt.pt")


def _atomic_torch_save(obj: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda f: torch.save(obj, f))


def _to_cpu(obj: Any) -> Any:
    """``obj`` (an optimiser ``state_dict``: nested dicts, lists, tuples) with every tensor on the CPU
    (CPU tensors are kept as they are)."""
    if isinstance(obj, torch.Tensor):
        return obj.cpu()
    if isinstance(obj, dict):
        return {k: _to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_cpu(v) for v in obj)
    return obj


def _optimizer_state_fits(state: dict[str, Any], optimizer: torch.optim.Optimizer) -> bool:
    """Whether an optimiser ``state_dict`` has a per-parameter tensor of each parameter's shape (a net
    widened since it was saved, e.g. by ``nets.io.load(tactics=True)``, has not)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    saved = [i for group in state.get("param_groups", []) for i in group["params"]]
    if len(saved) != len(params):
        return False
    per_param = state.get("state", {})
    for i, p in zip(saved, params):
        for t in per_param.get(i, {}).values():
            if isinstance(t, torch.Tensor) and t.dim() > 0 and t.shape != p.shape:
                return False
    return True


class Learner:
    """Trains one net (``kind`` from its config). ``model`` defaults to a fresh net (``torch.manual_seed(seed)``
    first, built on the CPU, so the same weights on every device); ``step`` is the global step the
    schedule starts from. ``device`` (module docstring): where ``model`` is moved (in place) and trained;
    ``ValueError`` starting ``device:`` for a bad or missing device."""

    def __init__(self, net_config: NetConfig, cfg: LearnerConfig, model: torch.nn.Module | None = None,
                 step: int = 0, horizon: int = 10_000, seed: int = 0, lr: float | None = None,
                 device: str | torch.device = "cpu"):
        from nets.model import build

        torch.set_num_threads(1)
        self.kind = net_config.kind
        self.net_config = net_config
        self.cfg = cfg
        self.device = resolve_device(device)
        self.precision = resolve_precision(cfg.precision, self.device)  # "auto" on the CPU: only with native bfloat16
        self.autocast = self.precision != "float32"
        self.amp_dtype = LOW_PRECISION_DTYPES.get(self.precision, torch.bfloat16)
        # float16 gradients underflow without loss scaling; bfloat16 has float32's range and needs none
        self.scaler = torch.amp.GradScaler(self.device.type) if self.precision == "float16" else None
        self.horizon = horizon
        self.peak_lr = cfg.lr if lr is None else lr
        if model is None:
            torch.manual_seed(seed)
            model = build(net_config)
        self.model = model.to(self.device)
        self.step = int(step)
        params = self.model.parameters()
        check_trainable(self.kind, cfg.trainable)
        if cfg.trainable in ("value", "policy"):
            for p in self.model.parameters():
                p.requires_grad_(False)
            params = list(getattr(self.model, cfg.trainable).parameters())  # the value or the policy head
            for p in params:
                p.requires_grad_(True)
        if cfg.optimizer == "adam":
            self.optimizer = torch.optim.Adam(params, lr=self.peak_lr)
        else:
            self.optimizer = torch.optim.SGD(params, lr=self.peak_lr, momentum=cfg.momentum)

    # ------------------------------------------------------------------ checkpoints
    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, cfg: LearnerConfig, horizon: int = 10_000,
                        lr: float | None = None, kind: str | None = None, tactics: bool = False,
                        device: str | torch.device = "cpu") -> "Learner":
        """A learner on ``device`` continuing the net (and optimiser, when its file exists) saved at
        ``path``, whichever device wrote it;
        ``kind`` (``"slm"``, ``"upper"``, ``"lower"``): the net must be of that kind (``ValueError``
        naming the file and both kinds otherwise). ``tactics``: a net without the tactical planes is
        widened first (``nets.io.load``); its optimiser state no longer fits and is not loaded."""
        from nets.io import load

        model, config, extra = load(path, expected_kind=kind, tactics=tactics)
        learner = cls(config, cfg, model=model, step=int(extra.get("step", 0)), horizon=horizon, lr=lr,
                      device=device)
        opt = optimizer_path(path)
        if opt.exists() and extra.get("optimizer") == cfg.optimizer:
            try:  # loaded on the CPU; load_state_dict moves the state to the parameters' device
                state = torch.load(opt, weights_only=True, map_location="cpu")
                if _optimizer_state_fits(state, learner.optimizer):  # not for a widened net
                    learner.optimizer.load_state_dict(state)
            except Exception:  # noqa: BLE001 - a stale or corrupt optimiser file: start a fresh optimiser
                pass
        return learner

    def save(self, path: str | os.PathLike, extra: dict[str, Any] | None = None, optimizer: bool = True) -> Path:
        """Weights via ``nets.io.save`` (atomic) and, with ``optimizer``, the optimiser state next to them,
        both from CPU copies of the tensors (loadable on any device)."""
        from nets.io import save

        path = Path(path)
        info = {"kind": self.kind, "step": self.step, "optimizer": self.cfg.optimizer, **(extra or {})}
        if optimizer:
            _atomic_torch_save(_to_cpu(self.optimizer.state_dict()), optimizer_path(path))
        self.model.eval()
        return save(self.model, self.net_config, path, extra=info)

    # ------------------------------------------------------------------ training
    def lr(self) -> float:
        return learning_rate(self.cfg, self.step, self.horizon, self.peak_lr)

    def losses(self, batch: Batch, policy: bool = True) -> dict[str, torch.Tensor]:
        """The loss terms of ``batch`` (tensors; ``total`` = ``value`` + ``policy`` + ``l2``), and
        ``target_entropy``, the policy targets' mean entropy (nats; 0 for ``lower``): the floor of the
        policy cross-entropy, which ``policy - target_entropy`` (the KL divergence) is measured from.
        ``policy=False`` (``slm``/``upper``): the value head alone is run, and the policy terms are 0."""
        x = self._tensor(batch.planes)
        z = self._tensor(batch.z)
        zero = torch.zeros((), device=self.device)
        if self.kind != "lower" and not policy:
            v = self.model.value(self.model.trunk(x)).reshape(-1)
            terms = {"value": value_mse(v, z), "policy": zero, "target_entropy": zero}
        elif self.kind == "lower":
            q = self.model(x, self._tensor(batch.action))
            if self.cfg.dqn_loss in GROUP_DQN_LOSSES:
                if batch.group is None:
                    raise ValueError(_NEEDS_GROUPS)
                group = self._tensor(batch.group)
                value = (group_ranking_loss(q, z, group, unit=self.cfg.group_unit) if self.cfg.dqn_loss == "group"
                         else group_choice_loss(q, z, group, self.cfg.choice_temperature))
            else:
                value = dqn_loss(q, z, kind=self.cfg.dqn_loss)
            terms = {"value": value, "policy": zero, "target_entropy": zero}
        else:
            # the softmax over each sample's listed actions: only their logits, the padding masked out
            actions = self._tensor(batch.pi_idx)
            if self.cfg.trainable == "policy":  # a frozen trunk and value head need no graph
                with torch.no_grad():
                    h = self.model.trunk(x)
                    v = self.model.value(h)
                listed = self.model.policy.listed(h, actions)
            else:
                listed, v = self.model.forward_listed(x, actions)
            pi = self._tensor(batch.pi_val)
            t = policy_value_terms(listed, v, pi, z, self._tensor(batch.legal))
            terms = {"value": t.value, "policy": t.policy, "target_entropy": target_entropy(pi)}
        l2 = l2_penalty(self.model, self.cfg.l2_penalty)
        terms["l2"] = l2
        terms["total"] = terms["value"] + terms["policy"] + l2
        return terms

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        """A batch array as a tensor on the learner's device (the same dtype; shares memory on the CPU)."""
        return to_device(torch.from_numpy(array), self.device)

    def train_step(self, batch: Batch) -> dict[str, float]:
        """One optimiser step on ``batch``; returns the loss terms (before the step) and ``lr``."""
        self.model.train()
        if self.cfg.trainable in ("value", "policy"):  # the frozen parts keep their BatchNorm statistics
            self.model.trunk.eval()
            (self.model.policy if self.cfg.trainable == "value" else self.model.value).eval()
        lr = self.lr()
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        with torch.autocast(self.device.type, dtype=self.amp_dtype, enabled=self.autocast):
            terms = self.losses(batch, policy=self.cfg.trainable != "value")  # a frozen policy needs no loss
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler is None:
            terms["total"].backward()
            if self.cfg.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
            self.optimizer.step()
        else:  # float16: scaled loss; the step is skipped when the scaled gradients overflowed
            self.scaler.scale(terms["total"]).backward()
            if self.cfg.grad_clip is not None:
                self.scaler.unscale_(self.optimizer)
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        self.step += 1
        out = {k: float(v.detach()) for k, v in terms.items()}
        out["lr"] = lr
        return out

    def evaluate(self, batch: Batch) -> dict[str, float]:
        """Loss terms of ``batch`` without a step (eval mode)."""
        self.model.eval()
        with torch.no_grad():
            return {k: float(v) for k, v in self.losses(batch).items()}

    def validate(self, samples: Samples, batch_size: int = 128) -> dict[str, float]:
        """Mean loss terms (:meth:`losses`: ``value``, ``policy``, ``target_entropy``, ``l2``, ``total``) over
        every sample of ``samples``, unaugmented, without a step: on samples the net was not trained on
        (a self-play iteration's new ones, before training on them) a validation loss, where a net that
        stopped learning what generalises shows up even while its training loss still falls. Each term is
        weighted by its batch's size; ``{}`` for no samples. ``lower`` samples with capture groups are
        scored by whole captures in order; under a grouped loss (``learner.dqn_loss`` ``"group"`` or
        ``"choice"``) only the samples of a capture count (``{}`` when there is none), since the loss is not
        defined without one."""
        if self.kind == "lower" and self.cfg.dqn_loss in GROUP_DQN_LOSSES:
            if samples.group is None:
                return {}
            keep = np.flatnonzero(samples.group >= 0)
            if len(keep) < len(samples):
                samples = Samples(samples.kind, samples.planes[keep], samples.z[keep], action=samples.action[keep],
                                  meta=samples.meta, group=samples.group[keep])
        n = len(samples)
        if n == 0:
            return {}
        sums: dict[str, float] = {}
        start = 0
        while start < n:
            end = min(n, start + batch_size)
            if samples.group is not None:  # a capture's sets stay in one batch (they are written together)
                while end < n and samples.group[end] == samples.group[end - 1]:
                    end += 1
            terms = self.evaluate(make_batch(samples, np.arange(start, end)))
            for k, v in terms.items():
                sums[k] = sums.get(k, 0.0) + v * (end - start)
            start = end
        return {k: v / n for k, v in sums.items()}

    def train(self, samples: Samples, steps: int, batch_size: int, rng: np.random.Generator,
              symmetries=(0,), callback=None) -> dict[str, float]:
        """``steps`` steps on batches drawn uniformly (with replacement between steps) from ``samples``
        (with a grouped ``dqn_loss``: whole captures, :func:`_capture_batches`), augmented with
        ``symmetries``. ``callback(step_index, losses)`` after each step. Returns the mean
        losses and ``seconds``, ``steps``, ``samples``, ``lr`` (last)."""
        if len(samples) == 0:
            raise ValueError(f"no {self.kind} samples to train on")
        draw = (_capture_batches(samples, batch_size) if self.kind == "lower" and self.cfg.dqn_loss in GROUP_DQN_LOSSES
                else lambda r: r.integers(len(samples), size=min(batch_size, len(samples))))
        sums: dict[str, float] = {}
        t0 = time.perf_counter()
        last: dict[str, float] = {}
        for i in range(steps):
            idx = draw(rng)
            last = self.train_step(make_batch(samples, idx, rng, symmetries))
            for k, v in last.items():
                sums[k] = sums.get(k, 0.0) + v
            if callback is not None:
                callback(i, last)
        out = {k: v / max(steps, 1) for k, v in sums.items()}
        out.update(seconds=time.perf_counter() - t0, steps=steps, samples=len(samples), lr=last.get("lr", self.lr()),
                   step=self.step)
        return out


GROUP_SETS = 16  # victim sets of one capture in a group-loss batch (a capture's sets are drawn without replacement)
_NEEDS_GROUPS = "learner.dqn_loss 'group' or 'choice' needs lower samples grouped by capture (selfplay.lower_eval)"


def _capture_batches(samples: Samples, batch_size: int):
    """A function ``rng -> indices`` for a grouped loss (``group``, ``choice``): ``max(1, batch_size //
    GROUP_SETS)`` distinct captures drawn uniformly among those with at least two samples (all of them
    if fewer), and up to
    :data:`GROUP_SETS` of each capture's samples drawn without replacement. Raises ``ValueError`` when
    ``samples`` have no such capture."""
    group = samples.group
    if group is None or not len(group) or group.max() < 0:
        raise ValueError(_NEEDS_GROUPS)
    order = np.argsort(group, kind="stable")
    ids, starts, counts = np.unique(group[order], return_index=True, return_counts=True)
    keep = (ids >= 0) & (counts >= 2)
    members = [order[a:a + c] for a, c in zip(starts[keep], counts[keep])]
    if not members:
        raise ValueError("a grouped learner.dqn_loss needs captures with at least two victim sets")
    n = min(len(members), max(1, batch_size // GROUP_SETS))

    def draw(rng: np.random.Generator) -> np.ndarray:
        picked = rng.choice(len(members), n, replace=False)
        return np.concatenate([rng.choice(members[k], min(GROUP_SETS, len(members[k])), replace=False)
                               for k in picked])
    return draw
