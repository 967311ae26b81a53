"""Prioritized experience replay (proportional; Schaul et al. 2016, as papers/004 section 2.6 uses it)
for ``train.learning.dqn``.

A transition is ``(x, r, done, next)``: ``x`` the afterstate the agent chose (``nets.qnet``: its planes,
packed), ``r`` the reward until the agent's next decision, ``done`` whether the game ended first, and
``next`` the afterstates of the agent's next decision's best ``next_top`` candidates by the online net
when it acted (packed planes, fewer when it had fewer moves; none when ``done``): the double-DQN target
picks among them (``train.learning.dqn.double_dqn_targets``).

Sampling is proportional to the priorities ``p_i = (|delta_i| + PRIORITY_EPS) ** alpha`` through a sum
tree (:class:`SumTree`, flat ``float64`` arrays, Numba kernels), stratified over ``batch`` equal
segments of the total; a new transition gets the largest priority so far; importance weights
``w_i = (N * P(i)) ** -beta / max_j w_j``. The paper raises ``|delta| + eps`` to ``alpha`` twice (its
``p_i`` and ``P(i)``); here once, as in Schaul et al.
"""

from __future__ import annotations

import io

import numpy as np

from core.jit import kernel
from nets.qnet import PACKED_BYTES, PACKED_SCALARS, unpack_planes

PRIORITY_EPS = 1e-3


# ============================================================================ sum tree
@kernel
def tree_set(tree, leaves, values):
    """Set leaf ``leaves[i]`` (0-based) of the sum tree ``tree`` (``float64[2 * width]``, ``width`` a power
    of two so that the leaves are in order from left to right; node 1 the root, node ``j``'s children
    ``2j`` and ``2j + 1``, leaf ``i`` at node ``width + i``) to ``values[i]`` and update every sum above it."""
    cap = tree.shape[0] // 2
    for i in range(leaves.shape[0]):
        j = cap + leaves[i]
        tree[j] = values[i]
        j //= 2
        while j >= 1:
            tree[j] = tree[2 * j] + tree[2 * j + 1]
            j //= 2


@kernel
def tree_find(tree, mass, out):
    """For each ``mass[i]`` in ``[0, total)`` the leaf whose prefix-sum interval holds it, into ``out``
    (``int64``): leaf ``i`` is found with probability ``value_i / total`` for a uniform mass. Rounding
    never leads into an empty subtree (a zero sum)."""
    cap = tree.shape[0] // 2
    for i in range(mass.shape[0]):
        u = mass[i]
        j = 1
        while j < cap:
            left = 2 * j
            if u < tree[left] or tree[left + 1] <= 0.0:
                j = left
            else:
                u -= tree[left]
                j = left + 1
        out[i] = j - cap


class SumTree:
    """A sum tree over ``capacity`` leaves (all 0 at first): :meth:`set`, :meth:`find`, :attr:`total`.
    The tree has ``width`` leaves, ``capacity`` rounded up to a power of two; the others stay 0."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"sum tree capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self.width = 1 << (self.capacity - 1).bit_length()
        self.tree = np.zeros(2 * self.width, np.float64)

    @property
    def total(self) -> float:
        return float(self.tree[1])

    def leaf(self, i) -> np.ndarray:
        return self.tree[self.width + np.asarray(i, np.int64)]

    def set(self, leaves, values) -> None:
        """Leaves ``leaves`` (ints in ``[0, capacity)``) get ``values`` (non-negative floats)."""
        values = np.asarray(values, np.float64)
        leaves = np.asarray(leaves, np.int64)
        if leaves.size and (leaves.min() < 0 or leaves.max() >= self.capacity):
            raise IndexError(f"sum tree leaves must be in [0, {self.capacity})")
        if np.any(values < 0) or not np.all(np.isfinite(values)):
            raise ValueError("sum tree values must be finite and >= 0")
        tree_set(self.tree, leaves, values)

    def find(self, mass) -> np.ndarray:
        """The leaves holding the masses ``mass`` (floats in ``[0, total)``)."""
        mass = np.asarray(mass, np.float64)
        out = np.empty(len(mass), np.int64)
        tree_find(self.tree, mass, out)
        return out


# ============================================================================ replay
class PrioritizedReplay:
    """A ring buffer of ``capacity`` transitions (module docstring) with ``next_top`` next afterstates
    each, sampled by priority. Arrays: ``x_bits uint8[C, PACKED_BYTES]``, ``x_scalars float32[C, 4]``,
    ``reward float32[C]``, ``done uint8[C]``, ``next_bits uint8[C, K, PACKED_BYTES]``,
    ``next_scalars float32[C, K, 4]``, ``next_count int16[C]``."""

    def __init__(self, capacity: int, next_top: int, alpha: float = 0.6):
        self.capacity, self.next_top, self.alpha = int(capacity), int(next_top), float(alpha)
        c, k = self.capacity, self.next_top
        self.x_bits = np.zeros((c, PACKED_BYTES), np.uint8)
        self.x_scalars = np.zeros((c, PACKED_SCALARS), np.float32)
        self.reward = np.zeros(c, np.float32)
        self.done = np.zeros(c, np.uint8)
        self.next_bits = np.zeros((c, k, PACKED_BYTES), np.uint8)
        self.next_scalars = np.zeros((c, k, PACKED_SCALARS), np.float32)
        self.next_count = np.zeros(c, np.int16)
        self.tree = SumTree(c)
        self.size = 0
        self.pos = 0
        self.max_priority = 1.0

    def __len__(self) -> int:
        return self.size

    def add(self, x: tuple[np.ndarray, np.ndarray], reward: float, done: bool,
            nxt: tuple[np.ndarray, np.ndarray] | None) -> None:
        """Store one transition: ``x`` packed planes ``(bits, scalars)`` (``nets.qnet.pack_planes``),
        ``nxt`` the packed next afterstates (``(bits[k, ...], scalars[k, ...])``, ``k <= next_top``;
        ``None`` or ``k = 0`` when ``done``). It gets the largest priority so far."""
        i = self.pos
        self.x_bits[i], self.x_scalars[i] = x
        self.reward[i], self.done[i] = reward, bool(done)
        k = 0 if nxt is None or done else min(len(nxt[0]), self.next_top)
        self.next_count[i] = k
        if k:
            self.next_bits[i, :k], self.next_scalars[i, :k] = nxt[0][:k], nxt[1][:k]
        self.tree.set([i], [self.max_priority])
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch: int, beta: float, rng: np.random.Generator):
        """``(idx int64[B], weights float32[B], x float32[B, 14, 14, 14], reward float32[B], done
        float32[B], nxt float32[B, K, 14, 14, 14], mask bool[B, K])``: ``batch`` transitions drawn
        proportionally to their priorities (one per equal segment of the total), their importance
        weights for ``beta``, unpacked planes; ``mask[b, j]`` marks the next afterstates that exist."""
        if self.size == 0:
            raise ValueError("replay: sample from an empty buffer")
        total = self.tree.total
        mass = (np.arange(batch) + rng.random(batch)) * (total / batch)
        idx = np.minimum(self.tree.find(np.minimum(mass, np.nextafter(total, 0.0))), self.size - 1)
        prob = self.tree.leaf(idx) / total
        w = (self.size * np.maximum(prob, 1e-12)) ** -float(beta)
        weights = (w / w.max()).astype(np.float32)
        x = unpack_planes(self.x_bits[idx], self.x_scalars[idx])
        nxt = unpack_planes(self.next_bits[idx], self.next_scalars[idx])
        mask = np.arange(self.next_top)[None, :] < self.next_count[idx][:, None]
        return idx, weights, x, self.reward[idx], self.done[idx].astype(np.float32), nxt, mask

    def update(self, idx: np.ndarray, td_abs: np.ndarray) -> None:
        """New priorities ``(|delta| + PRIORITY_EPS) ** alpha`` for the sampled ``idx``."""
        p = (np.abs(np.asarray(td_abs, np.float64)) + PRIORITY_EPS) ** self.alpha
        self.tree.set(idx, p)
        self.max_priority = max(self.max_priority, float(p.max()))

    # ------------------------------------------------------------------ files
    _ARRAYS = ("x_bits", "x_scalars", "reward", "done", "next_bits", "next_scalars", "next_count")

    def to_bytes(self, **meta: int) -> bytes:
        """The buffer (its filled part, priorities, position) and ``meta`` integers as ``.npz`` bytes."""
        n = self.size
        arrays = {name: getattr(self, name)[:n] for name in self._ARRAYS}
        arrays["priority"] = self.tree.leaf(np.arange(n))
        scalars = {"capacity": self.capacity, "next_top": self.next_top, "size": n, "pos": self.pos, **meta}
        buf = io.BytesIO()
        np.savez(buf, **arrays, max_priority=np.float64(self.max_priority),
                 **{k: np.int64(v) for k, v in scalars.items()})
        return buf.getvalue()

    def load_bytes(self, data: bytes) -> dict[str, int]:
        """Restore what :meth:`to_bytes` wrote into this (empty, same-sized) buffer; returns its ``meta``.
        ``ValueError`` when the file is not one or its sizes differ from this buffer's."""
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                f = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError) as exc:
            raise ValueError(f"not a replay file ({exc})") from None
        if int(f.get("capacity", -1)) != self.capacity or int(f.get("next_top", -1)) != self.next_top:
            raise ValueError(f"replay file for capacity {f.get('capacity')}, next_top {f.get('next_top')}; "
                             f"expected {self.capacity}, {self.next_top}")
        n = int(f["size"])
        for name in self._ARRAYS:
            getattr(self, name)[:n] = f[name]
        self.tree.set(np.arange(n), f["priority"])
        self.size, self.pos, self.max_priority = n, int(f["pos"]), float(f["max_priority"])
        fixed = {"capacity", "next_top", "size", "pos", "max_priority", "priority", *self._ARRAYS}
        return {k: int(v) for k, v in f.items() if k not in fixed}
