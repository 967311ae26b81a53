"""Training the ``dqn`` agent's net (papers/004 section 2.6 and section 3.1): ``python cli.py train-dqn``.

The agent (``search.dqn.DqnAgent``, the online net) plays whole games of the training ruleset
(:data:`train.learning.config.TRAIN_RULESET`: the battle ends after 300 plies (``battle_plies``),
adjudicated by stones)
against an opponent, White in even episodes and Black in odd ones, and learns from its own decisions:

- **Transitions.** Each decision ``s_t`` (layout or battle) gives the afterstate ``x_t`` of the chosen
  move (``nets.qnet``; ``Q(s_t, a_t) = q(x_t)``). Its transition ends at the agent's next decision
  ``s_{t+1}`` (after the opponent's reply) or at the end of the game: the reward is the game's result
  for the agent at the end (+1 / -1, 0 for a draw) plus the potential-based shaping
  ``gamma * Phi(s_{t+1}) - Phi(s_t)``, ``Phi(s) = shaping * (own stones - opponent stones) / 98`` in the
  battle, 0 in the layout and at the end (Ng et al. 1999: it leaves the optimal policy unchanged; the
  paper shapes its rewards too, with a heuristic term). Stored with the best ``next_top`` afterstates of
  ``s_{t+1}`` by the online net at that time (``train.learning.replay``).
- **Double DQN** (van Hasselt et al. 2016): ``y = r + gamma * (1 - done) * q_target(x*)`` with ``x*`` the
  online net's argmax among the stored next afterstates (:func:`double_dqn_targets`); the target net is
  a copy of the online net, synced every ``target_every`` updates. (The paper's formula takes the argmax
  with the target net; that is the target network of plain DQN, not double DQN.) The argmax is over the
  ``next_top`` moves the online net ranked best when it acted, not every legal move: scoring every move
  of every sampled next position (up to hundreds each) at every update is out of reach on a CPU.
- **Loss**: the Huber loss of ``q(x) - y`` weighted by the importance weights, Adam, gradient norm
  clipped to 1 (the paper's ``tau_clip``); one update of ``batch`` transitions every ``train_every``
  decisions once the buffer holds ``warmup``; new priorities ``|q(x) - y|``.
- **Prioritized replay**: proportional, ``alpha``; ``beta`` annealed linearly from its start to 1 over
  the run's episodes.
- **Epsilon-greedy**: a uniformly random candidate with probability ``eps``, per episode linear from
  ``eps_start`` to ``eps_end`` in phase 1 and from ``eps_phase2`` to ``eps_end`` in phase 2 (the paper:
  0.9 -> 0.02 and 0.5 -> 0.02).
- **Curriculum**: phase 1 (the first ``switch`` fraction of the episodes, the paper's 40%) against
  ``random``; phase 2 against the ``opponents`` in turn, agent specs or ``self`` (a frozen copy of the
  online net, taken at the switch and again at every checkpoint).

Run directory (locked by ``train.jobs.rundir.lock_dir``; every file written atomically):
``config.json`` (the run's :class:`DqnConfig`; a resume must give the same values), ``checkpoint.pt``
(online, target and frozen nets, optimizer, counters, the replay sampler's generator state; written
every ``checkpoint_every`` episodes and at the end), ``replay-eNNNNNN.npz`` (the replay buffer at that
checkpoint: a resumed run continues exactly where the checkpoint left, with the same buffer),
``dqn.safetensors`` (the online net, ``nets.io``: what ``dqn:model=DIR/dqn.safetensors`` plays) and
``metrics.jsonl`` (one row per episode). A run killed between checkpoints repeats the episodes since
the last one, the same way: episode ``e``'s generators derive from ``(seed, e)``.
"""

from __future__ import annotations

import copy
import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.atomic import atomic_write_bytes
from core.board import PHASE_BATTLE, STONES_PER_SIDE
from core.state import GameState
from train.jobs.rundir import MetricsLog, TrainError, atomic_write_json, json_text, lock_dir, read_metrics
from train.learning.config import TRAIN_RULESET
from train.learning.replay import PrioritizedReplay

CHECKPOINT = "checkpoint.pt"
FORMAT = "jiu-dqn-run"
GRAD_CLIP = 1.0


class DqnConfig(BaseModel):
    """The options of a ``train-dqn`` run (module docstring); the CLI's flags are these names with
    ``-`` for ``_``. Validation errors name the field."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    episodes: int = Field(400, ge=1, le=1_000_000, description="episodes (games) of the run")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="run seed")
    switch: float = Field(0.4, ge=0, le=1, description="fraction of the episodes in phase 1 (against random)")
    opponents: tuple[str, ...] = Field(("greedy", "self"), min_length=1, max_length=16,
                                       description="phase 2 opponents in turn: agent specs or self")
    gamma: float = Field(0.99, gt=0, le=1, description="discount per agent decision")
    lr: float = Field(1e-3, gt=0, le=1, description="Adam learning rate")
    batch: int = Field(32, ge=1, le=4096, description="transitions per update")
    replay: int = Field(30_000, ge=1, le=10_000_000, description="replay capacity (transitions)")
    warmup: int = Field(1_000, ge=1, le=10_000_000, description="transitions stored before the first update")
    alpha: float = Field(0.6, ge=0, le=1, description="priority exponent")
    beta: float = Field(0.4, ge=0, le=1, description="importance-weight exponent at the start (annealed to 1)")
    target_every: int = Field(250, ge=1, le=10_000_000, description="updates between target-net syncs")
    train_every: int = Field(8, ge=1, le=10_000, description="agent decisions between updates")
    eps_start: float = Field(0.9, ge=0, le=1, description="epsilon at the start of phase 1")
    eps_phase2: float = Field(0.5, ge=0, le=1, description="epsilon at the start of phase 2")
    eps_end: float = Field(0.02, ge=0, le=1, description="epsilon at the end of each phase")
    next_top: int = Field(4, ge=1, le=64, description="next afterstates stored per transition for the target's argmax")
    shaping: float = Field(1.0, ge=0, le=10, description="weight of the material potential (0: results only)")
    victim_sets: int = Field(2, ge=1, le=64, description="victim sets of prune.capture per square-forming path")
    checkpoint_every: int = Field(10, ge=1, le=1_000_000, description="episodes between checkpoints")
    blocks: int = Field(2, ge=1, le=16, description="residual blocks of the q net")
    channels: int = Field(16, ge=1, le=256, description="channels of the q net")
    hidden: int = Field(32, ge=1, le=1024, description="hidden units of the q net's head")
    battle_plies: int = Field(TRAIN_RULESET.max_battle_plies, ge=1, le=10_000,
                              description="battle plies before the game is adjudicated by stones")

    @field_validator("opponents")
    @classmethod
    def _opponents(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        import catalog  # noqa: F401  every agent registered (the net agents too)
        from knowledge.agents import validate_agent_spec

        for spec in value:
            if spec != "self":
                validate_agent_spec(spec)  # SpecError: one line naming the agent and the option
        return value

    def ruleset(self):
        """The episodes' rules: the training ruleset with ``battle_plies``."""
        return TRAIN_RULESET.model_copy(update={"max_battle_plies": self.battle_plies})

    def phase1_episodes(self) -> int:
        return round(self.switch * self.episodes)


def config_error(exc: ValidationError) -> str:
    """One line for the first error of a :class:`DqnConfig` validation, naming the flag."""
    err = exc.errors()[0]
    flag = "--" + str(err["loc"][0]).replace("_", "-") if err["loc"] else "config"
    ctx = err.get("ctx") or {}
    reason = str(ctx["error"]) if "error" in ctx else err["msg"][:1].lower() + err["msg"][1:]
    if "input" not in err or "error" in ctx:  # a validator's own message (an agent spec's names its value)
        return f"{flag}: {reason}"
    return f"{flag}: {reason} (got {err['input']!r})"


# ============================================================================ pieces
def double_dqn_targets(q_online_next, q_target_next, mask, reward, done, gamma: float):
    """Double-DQN targets ``y_b = r_b + gamma (1 - done_b) q_target_next[b, argmax_j q_online_next[b, j]]``
    with the argmax over ``mask[b]`` (torch tensors ``[B, K]``, ``mask`` bool, ``reward``/``done``
    ``[B]``); a row without next afterstates (``done``) is ``r_b``."""
    import torch

    masked = torch.where(mask, q_online_next, torch.full_like(q_online_next, -torch.inf))
    best = masked.argmax(dim=1)
    value = q_target_next.gather(1, best[:, None]).squeeze(1)
    value = torch.where(mask.any(dim=1), value, torch.zeros_like(value))
    return reward + gamma * (1.0 - done) * value


def potential(state: GameState, player: int, weight: float) -> float:
    """The shaping potential ``Phi`` of ``state`` for ``player`` (module docstring)."""
    if state.phase != PHASE_BATTLE or state.is_terminal():
        return 0.0
    return weight * (state.counts[player] - state.counts[1 - player]) / STONES_PER_SIDE


def epsilon(config: DqnConfig, episode: int) -> float:
    """Epsilon of 0-based ``episode`` (linear per phase, module docstring)."""
    n1 = config.phase1_episodes()
    if episode < n1:
        start, k, n = config.eps_start, episode, n1
    else:
        start, k, n = config.eps_phase2, episode - n1, config.episodes - n1
    return start + (config.eps_end - start) * (k / max(n - 1, 1))


def _seed(config: DqnConfig, episode: int, what: int) -> int:
    return int(np.random.SeedSequence([config.seed, episode, what]).generate_state(1)[0])


class Trainer:
    """The online, target and frozen nets, the optimizer, the replay and the counters of one run."""

    def __init__(self, config: DqnConfig):
        import torch

        from nets.config import NetConfig
        from nets.model import build

        self.config = config
        torch.manual_seed(config.seed)
        self.net_config = NetConfig(kind="q", blocks=config.blocks, channels=config.channels,
                                    value_hidden=config.hidden)
        self.online = build(self.net_config).eval()
        self.target = copy.deepcopy(self.online).eval()
        self.frozen = copy.deepcopy(self.online).eval()
        self.optimizer = torch.optim.Adam(self.online.parameters(), lr=config.lr)
        self.replay = PrioritizedReplay(config.replay, config.next_top, config.alpha)
        self.rng = np.random.default_rng(config.seed)  # replay sampling
        self.episode = 0  # episodes finished
        self.updates = 0
        self.decisions = 0
        self.losses: list[float] = []

    # ------------------------------------------------------------------ learning
    def update(self, beta: float) -> None:
        import torch
        from torch.nn import functional as F

        c = self.config
        idx, w, x, r, done, nxt, mask = self.replay.sample(c.batch, beta, self.rng)
        b, k = mask.shape
        flat = torch.from_numpy(nxt.reshape(b * k, *nxt.shape[2:]))
        with torch.no_grad():
            q_on = self.online(flat).reshape(b, k)
            q_tg = self.target(flat).reshape(b, k)
            y = double_dqn_targets(q_on, q_tg, torch.from_numpy(mask), torch.from_numpy(r), torch.from_numpy(done),
                                   c.gamma)
        self.online.train()
        q = self.online(torch.from_numpy(x))
        loss = (torch.from_numpy(w) * F.huber_loss(q, y, reduction="none")).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.online.parameters(), GRAD_CLIP)
        self.optimizer.step()
        self.online.eval()
        self.replay.update(idx, (q.detach() - y).abs().numpy())
        self.updates += 1
        self.losses.append(float(loss.detach()))
        if self.updates % c.target_every == 0:
            self.target.load_state_dict(self.online.state_dict())

    # ------------------------------------------------------------------ playing
    def opponent(self, episode: int):
        """The opponent of 0-based ``episode`` and its name."""
        from knowledge.agents import make_agent
        from search.dqn import DqnAgent

        c = self.config
        n1 = c.phase1_episodes()
        spec = "random" if episode < n1 else c.opponents[(episode - n1) % len(c.opponents)]
        if spec == "self":
            return DqnAgent(self.frozen, c.victim_sets, seed=_seed(c, episode, 2)), spec
        return make_agent(spec, seed=_seed(c, episode, 2)), spec

    def play_episode(self, episode: int) -> dict[str, Any]:
        """Play 0-based ``episode``, storing its transitions and updating the net; returns its metrics."""
        from nets.qnet import pack_planes
        from search.dqn import DqnAgent

        c = self.config
        me = episode % 2
        eps = epsilon(c, episode)
        beta = c.beta + (1.0 - c.beta) * episode / c.episodes
        explore = np.random.default_rng(_seed(c, episode, 1))
        agent = DqnAgent(self.online, c.victim_sets, seed=_seed(c, episode, 3))
        opponent, name = self.opponent(episode)
        state = GameState.initial(c.ruleset())
        pending = None  # (packed afterstate, Phi at its decision)
        updates0, losses0 = self.updates, len(self.losses)
        while not state.is_terminal():
            if state.side != me:
                state = state._play(opponent.select(state))
                continue
            cands, planes, q = agent.evaluate(state)
            phi = potential(state, me, c.shaping)
            if pending is not None:
                top = np.argsort(-q, kind="stable")[:c.next_top]
                self.replay.add(pending[0], c.gamma * phi - pending[1], False, pack_planes(planes[top]))
            i = int(explore.integers(cands.n)) if explore.random() < eps else agent.greedy(q)
            pending = (pack_planes(planes[i]), phi)
            self.decisions += 1
            if self.decisions % c.train_every == 0 and len(self.replay) >= max(c.warmup, c.batch):
                self.update(beta)
            state = state._play(cands.move(i))
        result = state.returns()[me]
        if pending is not None:
            self.replay.add(pending[0], result - pending[1], True, None)
        self.episode = episode + 1
        losses = self.losses[losses0:]
        return {"episode": episode + 1, "phase": 1 if episode < c.phase1_episodes() else 2, "opponent": name,
                "colour": "wb"[me], "result": result, "plies": state.ply, "reason": state.outcome().reason,
                "stones": [state.counts[me], state.counts[1 - me]], "eps": round(eps, 4),
                "updates": self.updates - updates0, "loss": round(float(np.mean(losses)), 6) if losses else None,
                "replay": len(self.replay)}

    # ------------------------------------------------------------------ files
    def checkpoint(self, out: Path) -> None:
        """Write the replay, then ``checkpoint.pt`` naming it, then ``dqn.safetensors``; remove older
        replay files (module docstring)."""
        import torch

        from nets.io import save

        replay_name = f"replay-e{self.episode:06d}.npz"
        atomic_write_bytes(out / replay_name, self.replay.to_bytes(episode=self.episode))
        state = {"format": FORMAT, "episode": self.episode, "updates": self.updates, "decisions": self.decisions,
                 "replay_file": replay_name, "rng": json.dumps(self.rng.bit_generator.state),
                 "online": self.online.state_dict(), "target": self.target.state_dict(),
                 "frozen": self.frozen.state_dict(), "optimizer": self.optimizer.state_dict()}
        buf = io.BytesIO()
        torch.save(state, buf)
        atomic_write_bytes(out / CHECKPOINT, buf.getvalue())
        save(self.online, self.net_config, out / "dqn.safetensors",
             extra={"trained_by": "train-dqn", "episodes": self.episode, "updates": self.updates,
                    "seed": self.config.seed})
        for old in out.glob("replay-e*.npz"):
            if old.name != replay_name:
                old.unlink(missing_ok=True)

    def restore(self, out: Path) -> None:
        """Load ``checkpoint.pt`` and its replay file; :class:`TrainError` naming the file otherwise."""
        import torch

        path = out / CHECKPOINT
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            if state.get("format") != FORMAT:
                raise ValueError("not a train-dqn checkpoint")
            for name in ("online", "target", "frozen"):
                getattr(self, name).load_state_dict(state[name])
            self.optimizer.load_state_dict(state["optimizer"])
            meta = self.replay.load_bytes((out / state["replay_file"]).read_bytes())
            if meta.get("episode") != state["episode"]:
                raise ValueError(f"{state['replay_file']} is from episode {meta.get('episode')}")
        except (OSError, RuntimeError, ValueError, KeyError, TypeError) as exc:
            raise TrainError(f"{path}: cannot resume ({' '.join(str(exc).split())[:300]})") from None
        self.episode, self.updates, self.decisions = int(state["episode"]), int(state["updates"]), int(state["decisions"])
        self.rng.bit_generator.state = json.loads(state["rng"])


def train(config: DqnConfig, out: str | Path, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run (or resume) the ``train-dqn`` run of ``config`` in directory ``out`` (module docstring);
    ``progress`` receives one line per episode. Returns a summary (episodes, updates, seconds, the
    results of the last 50 episodes). Raises :class:`TrainError` for a directory whose run has other
    options or an unreadable checkpoint, ``DirectoryInUse`` when another process holds it."""
    import torch

    torch.set_num_threads(1)
    out = Path(out)
    say = progress or (lambda text: None)
    from knowledge.agents import make_agent

    for spec in config.opponents:  # an opponent that cannot be built (a missing weights file) fails now
        if spec != "self":
            close = getattr(make_agent(spec), "close", None)
            if callable(close):
                close()
    with lock_dir(out):
        config_file = out / "config.json"
        saved = None
        if config_file.exists():
            try:
                saved = json.loads(config_file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise TrainError(f"{config_file}: unreadable ({exc})") from None
            mine = json.loads(json_text(config.model_dump(mode="json")))
            for key, value in mine.items():
                if saved.get(key) != value:
                    flag = "--" + key.replace("_", "-")
                    raise TrainError(f"{flag}: the run in {out} was started with {saved.get(key)!r}, not {value!r} "
                                     f"(resume with the same options, or use another --out)")
        else:
            atomic_write_json(config_file, config.model_dump(mode="json"))
        trainer = Trainer(config)
        metrics = MetricsLog(out / "metrics.jsonl")
        if (out / CHECKPOINT).exists():
            trainer.restore(out)
            say(f"resumed at episode {trainer.episode}/{config.episodes} ({trainer.updates} updates)")
        kept = [row for row in read_metrics(metrics.path) if row.get("episode", 0) <= trainer.episode]
        atomic_write_bytes(metrics.path, "".join(json_text(row, indent=None) + "\n" for row in kept).encode())
        t0 = time.perf_counter()
        n1 = config.phase1_episodes()
        while trainer.episode < config.episodes:
            if trainer.episode == n1 and n1 > 0:
                trainer.frozen.load_state_dict(trainer.online.state_dict())
            row = trainer.play_episode(trainer.episode)
            metrics.log("episode", **row)
            loss = f", loss {row['loss']:.4f}" if row["loss"] is not None else ""
            say(f"episode {row['episode']}/{config.episodes}, phase {row['phase']}, eps {row['eps']:.2f}, "
                f"{row['opponent']}: {'win' if row['result'] > 0 else 'loss' if row['result'] < 0 else 'draw'} "
                f"{row['stones'][0]}-{row['stones'][1]}, {trainer.updates} updates{loss}")
            if trainer.episode % config.checkpoint_every == 0 or trainer.episode == config.episodes:
                if trainer.episode >= n1:
                    trainer.frozen.load_state_dict(trainer.online.state_dict())
                trainer.checkpoint(out)
        rows = [r for r in read_metrics(metrics.path) if r.get("event") == "episode"][-50:]
        return {"episodes": trainer.episode, "updates": trainer.updates, "decisions": trainer.decisions,
                "seconds": round(time.perf_counter() - t0, 1), "out": str(out),
                "last50": {"wins": sum(r["result"] > 0 for r in rows), "draws": sum(r["result"] == 0 for r in rows),
                           "losses": sum(r["result"] < 0 for r in rows)}}
