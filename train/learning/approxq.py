"""Approximate Q-learning of the ``approxq`` agent's weights (``python cli.py train-approxq``).

The learner is ``knowledge.approxq``'s linear ``Q(s, a) = w . phi(s, a)``, trained as in papers/004
section 2.5.3 ("Learning Algorithm") by semi-gradient Q-learning,

    w <- w + eta_t * (huber'(delta_t) * phi(s_t, a_t) - l2 * w),
    delta_t = r_t + gamma_t * max_a' Q(s_{t+1}, a') - Q(s_t, a_t),

with ``huber'(delta) = clip(delta, -1, 1)`` (the gradient of the paper's Huber loss), its adaptive
learning rate ``eta_t = eta_0 / (1 + t)^0.25`` and L2 term, epsilon-greedy play with the paper's
performance-aware decay ``epsilon <- max(epsilon_min, epsilon * lambda(w))`` after each episode,
``lambda`` 0.999 while the learner's win rate over the last 20 episodes is below 0.3, 0.95 above
0.6, else 0.995. The paper's replay buffer is not used: every transition is learned once, online.

**Dynamic discount factor** (papers/004 section 2.5.3, "The Dynamic Discount Factor is updated
as"): ``gamma_t = min(gamma_max, gamma_0 + alpha_gamma * min(1, t / 100))``. The paper gives neither
the unit of ``t`` nor the constants; here ``t`` is the episode index (0-based) and ``gamma_0 = 0.9``,
``alpha_gamma = 0.09``, ``gamma_max = 0.99``: the discount rises linearly from 0.9 to 0.99 over the
first 100 episodes and stays there, so early targets look less far ahead while the weights are
still poor. ``--gamma FLOAT`` fixes it instead (the discount-factor ablation).

Transitions are between consecutive decisions of one learning side (the opponent's reply is part of
the environment). Reward: ``REWARD_PER_STONE`` (0.1) per stone of change in (own stones - opponent
stones) between the two decisions, plus +1 / -1 / 0 when the game ends won / lost / drawn (a
terminal transition has no bootstrap term). Placements change no stone difference, so the layout
learns only through the bootstrap from the first battle decisions.

Episodes: games under ``train.learning.config.TRAIN_RULESET`` (300 battle plies, adjudicated by
stones) against a curriculum: ``opponents`` (agent specs, or ``self`` for the learner's own current
weights, epsilon-greedy too, learning from both sides) split into consecutive equal blocks of the
run's episodes. The learner plays White in even episodes and Black in odd ones. Episode ``t`` draws
its randomness from ``SeedSequence([seed, t])`` only, so a run resumed from a checkpoint plays and
learns exactly what an uninterrupted run does.

Run directory: ``config.json`` (the settings; a resumed run must give the same), ``state.json`` (the
checkpoint: next episode, weights, epsilon, every finished episode's row), ``weights.json`` (the
latest weights, a ``knowledge.approxq`` weights file); written atomically every ``checkpoint_every``
episodes and at the end, under the directory lock of ``train.jobs.rundir``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.board import DRAW
from core.rules import Ruleset
from core.state import GameState
from knowledge.approxq import FEATURE_NAMES, N_FEATURES, action_move, initial_weights, save_weights, state_features
from train.jobs.rundir import TrainError, atomic_write_json, lock_dir
from train.learning.config import TRAIN_RULESET

SELF = "self"
REWARD_PER_STONE = 0.1
WIN_WINDOW = 20  # episodes of the win rate that drives epsilon's decay
GAMMA_0, GAMMA_STEP, GAMMA_MAX, GAMMA_EPISODES = 0.9, 0.09, 0.99, 100
EPISODES_MAX = 100_000
STATE_FORMAT = "jiu-approxq-run"


class ApproxQConfig(BaseModel):
    """The settings of a training run (``config.json``); bounds checked, errors name the field."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    episodes: int = Field(ge=1, le=EPISODES_MAX, description="episodes of the run")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="base seed; episode t uses SeedSequence([seed, t])")
    gamma: Literal["dynamic"] | float = Field("dynamic", description="'dynamic' (module docstring) or a fixed discount in [0, 1]")
    opponents: tuple[str, ...] = Field(("random", "greedy", SELF), min_length=1, max_length=16,
                                       description="curriculum: agent specs or 'self', equal consecutive blocks")
    alpha: float = Field(0.01, gt=0, le=1, description="eta_0, the learning rate at episode 0")
    l2: float = Field(1e-4, ge=0, le=1, description="L2 weight decay")
    epsilon: float = Field(0.3, ge=0, le=1, description="exploration rate at episode 0")
    epsilon_min: float = Field(0.02, ge=0, le=1, description="floor of the exploration rate")
    checkpoint_every: int = Field(10, ge=1, le=EPISODES_MAX, description="episodes between checkpoints")
    rules: tuple[str, ...] = Field(default_factory=lambda: _rule_items(TRAIN_RULESET), description="ruleset KEY=VALUE")

    @field_validator("gamma", mode="before")
    @classmethod
    def _gamma(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == "dynamic":
            return "dynamic"
        try:
            g = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"expected 'dynamic' or a number in [0, 1], got {value!r}") from None
        if not 0.0 <= g <= 1.0:
            raise ValueError(f"expected 'dynamic' or a number in [0, 1], got {value!r}")
        return g

    @property
    def ruleset(self) -> Ruleset:
        return Ruleset.from_options(list(self.rules))

    def gamma_at(self, episode: int) -> float:
        """The discount of episode ``episode`` (0-based): fixed, or the dynamic schedule."""
        if self.gamma != "dynamic":
            return float(self.gamma)
        return min(GAMMA_MAX, GAMMA_0 + GAMMA_STEP * min(1.0, episode / GAMMA_EPISODES))

    def opponent_at(self, episode: int) -> str:
        """The curriculum's opponent of episode ``episode``."""
        return self.opponents[min(len(self.opponents) - 1, episode * len(self.opponents) // self.episodes)]


def _rule_items(ruleset: Ruleset) -> tuple[str, ...]:
    return tuple(f"{k}={v}" for k, v in ruleset.model_dump().items())


def make_config(**fields: Any) -> ApproxQConfig:
    """An :class:`ApproxQConfig`; ``ValueError`` with one line naming the field for a bad value, and
    for an opponent that is neither ``self`` nor a known agent spec."""
    try:
        config = ApproxQConfig(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "config"
        msg = str(err.get("ctx", {}).get("error", err["msg"]))
        raise ValueError(f"{field}: {msg}") from None
    import catalog  # noqa: F401  every registered agent, the search agents too
    from knowledge.agents import validate_agent_spec
    from knowledge.registry import SpecError

    for spec in config.opponents:
        if spec != SELF:
            try:
                validate_agent_spec(spec)
            except (SpecError, KeyError) as exc:
                raise ValueError(f"opponents: {exc.args[0] if exc.args else exc}") from None
    try:
        _ = config.ruleset
    except ValueError as exc:
        raise ValueError(f"rules: {exc}") from None
    return config


# ============================================================================ one episode
def _epsilon_greedy(q: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
    if rng.random() < epsilon:
        return int(rng.integers(len(q)))
    best = np.flatnonzero(q >= q.max() - 1e-9)
    return int(best[int(rng.integers(len(best)))]) if len(best) > 1 else int(best[0])


def _diff(state: GameState, side: int) -> int:
    return state.counts[side] - state.counts[1 - side]


def play_episode(w: np.ndarray, config: ApproxQConfig, episode: int, epsilon: float, make_opponent) -> dict[str, Any]:
    """Play and learn episode ``episode`` (0-based), updating ``w`` (``float64[N_FEATURES]``) in place;
    ``make_opponent(spec, seed)`` builds an agent for an opponent spec. Returns the episode's row:
    ``episode``, ``opponent``, ``colour`` (the learner's, 0 White), ``result`` (1 won, 0.5 drawn, 0
    lost, for the learner), ``reason``, ``plies``, ``stones`` (own - opponent at the end), ``updates``,
    ``mean_abs_delta``, ``epsilon``, ``gamma``, ``eta``."""
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, episode]))
    spec = config.opponent_at(episode)
    colour = episode % 2
    learning = (0, 1) if spec == SELF else (colour,)
    opponent = None if spec == SELF else make_opponent(spec, int(rng.integers(2**31)))
    gamma = config.gamma_at(episode)
    eta = config.alpha / (1.0 + episode) ** 0.25
    pending: dict[int, tuple[np.ndarray, int]] = {}
    deltas: list[float] = []

    def update(side: int, target_future: float, state: GameState, terminal_reward: float) -> None:
        phi, diff0 = pending.pop(side)
        r = REWARD_PER_STONE * (_diff(state, side) - diff0) + terminal_reward
        delta = r + target_future - float(phi @ w)
        deltas.append(abs(delta))
        w[:] += eta * (np.clip(delta, -1.0, 1.0) * phi - config.l2 * w)

    state = GameState.initial(config.ruleset)
    while not state.is_terminal():
        side = state.side
        if side in learning:
            phi, actions, victims = state_features(state)
            q = phi @ w
            if side in pending:
                update(side, gamma * float(q.max()), state, 0.0)
                q = phi @ w
            i = _epsilon_greedy(q, epsilon, rng)
            pending[side] = (phi[i].copy(), _diff(state, side))
            move = action_move(state, actions, victims, i)
        else:
            move = opponent.select(state)
        state = state._play(move)
    winner = state.winner()
    for side in list(pending):
        outcome = 0.0 if winner in (None, DRAW) else (1.0 if winner == side else -1.0)
        update(side, 0.0, state, outcome)
    close = getattr(opponent, "close", None)
    if callable(close):
        close()
    result = 0.5 if winner in (None, DRAW) else float(winner == colour)
    return {"episode": episode, "opponent": spec, "colour": colour, "result": result, "reason": state.outcome().reason,
            "plies": state.ply, "stones": _diff(state, colour), "updates": len(deltas),
            "mean_abs_delta": round(float(np.mean(deltas)) if deltas else 0.0, 6), "epsilon": round(epsilon, 6),
            "gamma": round(gamma, 6), "eta": round(eta, 8)}


def next_epsilon(epsilon: float, rows: list[dict[str, Any]], config: ApproxQConfig) -> float:
    """papers/004's performance-aware decay (module docstring) after the episodes ``rows``."""
    recent = [r["result"] == 1.0 for r in rows[-WIN_WINDOW:]]
    rate = sum(recent) / len(recent) if recent else 0.0
    factor = 0.999 if rate < 0.3 else 0.95 if rate > 0.6 else 0.995
    return max(config.epsilon_min, epsilon * factor)


# ============================================================================ the run
def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TrainError(f"{path}: unreadable ({exc})") from None


def _check_resume(out: Path, config: ApproxQConfig) -> dict[str, Any] | None:
    """The checkpoint of the run in ``out`` (``None`` for a new run); ``TrainError`` naming the first
    setting that differs from the stored run's, or a bad state file."""
    stored_path, state_path = out / "config.json", out / "state.json"
    if not stored_path.exists():
        return None
    stored = _read_json(stored_path)
    mine = config.model_dump(mode="json")
    for key in mine:
        if stored.get(key) != mine[key]:
            raise TrainError(f"{out}: {key} {mine[key]!r} differs from the run's {stored.get(key)!r} "
                             "(give the run's settings to resume it, or use another --out)")
    if not state_path.exists():
        return None
    state = _read_json(state_path)
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
        raise TrainError(f"{state_path}: not an approxq run state (field 'format')")
    if state.get("features") != list(FEATURE_NAMES) or len(state.get("weights", ())) != N_FEATURES:
        raise TrainError(f"{state_path}: field 'features': the run's features differ from this version's")
    return state


def train(out: str | Path, config: ApproxQConfig, progress: Callable[[dict[str, Any]], None] | None = None,
          stop_after: int | None = None) -> dict[str, Any]:
    """Run (or resume) the training run in ``out`` (module docstring) to ``config.episodes`` episodes;
    ``progress(row)`` is called after every episode with its row plus ``done`` and ``total``;
    ``stop_after``: return after that many episodes of this session (a test's interruption; the
    checkpoint is where the last checkpoint left it). Returns the final state (``episode`` the next
    episode, ``weights``, ``epsilon``, ``rows``, ``seconds``). Raises ``TrainError`` for a directory
    that holds another run, ``DirectoryInUse`` while another process trains in it."""
    from catalog import REGISTRY  # noqa: F401  every agent spec an opponent may name
    from knowledge.agents import make_agent

    out = Path(out)
    with lock_dir(out):
        state = _check_resume(out, config)
        if state is None:
            atomic_write_json(out / "config.json", config.model_dump(mode="json"))
            state = {"format": STATE_FORMAT, "episode": 0, "features": list(FEATURE_NAMES),
                     "weights": initial_weights().tolist(), "epsilon": config.epsilon, "rows": [], "seconds": 0.0}
        w = np.array(state["weights"], np.float64)
        epsilon = float(state["epsilon"])
        rows = list(state["rows"])
        t0 = time.time()
        seconds0 = float(state["seconds"])
        played = 0

        def checkpoint(episode: int) -> None:
            data = {**state, "episode": episode, "weights": w.tolist(), "epsilon": epsilon, "rows": rows,
                    "seconds": round(seconds0 + time.time() - t0, 3)}
            atomic_write_json(out / "state.json", data)
            save_weights(out / "weights.json", w, {"episodes": episode, "gamma": config.gamma,
                                                   "opponents": list(config.opponents), "seed": config.seed})
            state.update(data)

        for episode in range(int(state["episode"]), config.episodes):
            if stop_after is not None and played >= stop_after:
                return state
            row = play_episode(w, config, episode, epsilon, lambda spec, seed: make_agent(spec, seed=seed))
            rows.append(row)
            epsilon = next_epsilon(epsilon, rows, config)
            played += 1
            if (episode + 1) % config.checkpoint_every == 0 or episode + 1 == config.episodes:
                checkpoint(episode + 1)
            if progress is not None:
                progress({**row, "done": episode + 1, "total": config.episodes})
        if int(state["episode"]) < config.episodes or not (out / "weights.json").exists():
            checkpoint(config.episodes)
        return state


def win_rate(rows: list[dict[str, Any]], last: int = WIN_WINDOW) -> float:
    """The learner's score (win 1, draw 0.5) over the last ``last`` rows."""
    recent = rows[-last:]
    return sum(r["result"] for r in recent) / len(recent) if recent else 0.0
