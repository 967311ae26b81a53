"""Population self-play: JiangJun's *Populationer* (papers/002 section 5 and Alg. 2).

With ``selfplay.opponents = "population"`` (``[population]`` config section) the self-play games are no
longer the current net against itself: the **learner** side plays the current best net and the
**opponent** side a member of a population of earlier best nets, sampled from the maximum-entropy Nash
equilibrium (``train.matches.nash.max_entropy_nash``, JiangJun Eq. 2) of the population's payoff matrix
restricted to the ``top_n`` members by Nash weight (renormalised). The learner plays White in the
even-numbered games of an iteration and Black in the odd ones; only the learner's moves give training
samples (``train.learning.selfplay``). When the sampled member is the learner's own net the game is plain
self-play (both sides give samples, no result is recorded).

- **Members**: each best net of the run joins when it becomes the best (at the start of the run the
  start net ``<kind>@i0000``; then every accepted gate candidate, i.e. every iteration with
  ``gate.max_games = 0``), labelled like the learning curve's players (``upper@i0004``), with a copy of
  its net file under ``RUN/population/``. With ``population.size`` members, the member with the lowest
  Nash weight (the oldest among equals) leaves for the newcomer, its results with it.
- **Nash buffer**: the result of each game between the learner and a member, ``(learner, opponent,
  score)`` with the learner's score ``+1``/``0``/``-1`` (JiangJun's ``(n0, n1, n2)`` tuples), taken from the
  game records of the iteration (so a killed run counts each game once); the newest ``population.buffer``
  per pair of members are kept.
- **Payoff matrix** ``M[i, j]``: member ``i``'s mean score against ``j`` over the buffer (antisymmetric;
  0 for pairs without a result, JiangJun's zero start), and the Nash weights ``p`` solved from it
  (uniform while the buffer is empty).
- **RP-ELO** (relative population Elo, papers/002 section 5.2): the Bradley-Terry fit
  (``train.matches.stats.bradley_terry``) of the learner's buffer results against each member, with the
  learner held at 0; the RP-ELO is ``1500`` plus the learner's Elo above the mean of the members it
  played, with a 95% interval from the fit's covariance.

Run directory: ``RUN/population/population.json`` (written atomically after every change; ``--resume``
reads it) holds the members, the buffer, the payoff matrix and the last Nash weights; the members' nets
are ``RUN/population/<kind>-iNNNN.safetensors``. Events in ``metrics.jsonl``: ``population`` (after each
self-play phase: members, weights, top-n distribution, RP-ELO, Nash clusters) and ``population_join``.

The pipeline calls :func:`prepare_selfplay`, :func:`after_selfplay` and :func:`after_gate`.
:func:`lineage_players` names a run's population (or lineage) for ``python cli.py population``, which
plays it as a ``train.matches.tournament`` (Nash clustering included); the exploitability measure is
``train.learning.exploitability``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from train.jobs.rundir import atomic_copy, atomic_write_json, json_safe
from train.matches.stats import Z95, PairResult, bradley_terry

POPULATION_DIR = "population"
STATE_FILE = "population.json"
FORMAT = "jiu-population"
RP_ELO_BASE = 1500.0  # JiangJun's initial rating of every agent
OPPONENT_STREAM = 63  # the seed stream of the opponent draws (SeedSequence([seed, iteration, game, 63]))


def member_label(kind: str, iteration: int) -> str:
    """The label of the best ``kind`` net made in ``iteration`` (``upper@i0004``, as the learning curve's)."""
    from train.learning.curve import player_label

    return player_label(kind, iteration)


def net_file(label: str) -> str:
    """The file name of a member's net under ``RUN/population/`` (``upper@i0004`` -> ``upper-i0004.safetensors``)."""
    return label.replace("@", "-") + ".safetensors"


class Population:
    """A population of nets with its Nash buffer (module docstring).

    ``members``: ``[{"label", "iteration", "net" (path relative to the run directory), "joined" (the
    iteration it joined in)}]`` in the order they joined; ``results``: ``[{"a" (learner), "b" (opponent),
    "score" (a's: +1, 0, -1), "iteration", "game"}]`` oldest first; ``results_through``: the last iteration
    whose records were added; ``weights``: ``float64[len(members)]``, the last Nash weights."""

    def __init__(self, kind: str, size: int, buffer: int, top_n: int):
        if not 1 <= top_n <= size:
            raise ValueError(f"top_n: must lie in [1, size={size}], got {top_n}")
        if buffer < 1:
            raise ValueError(f"buffer: must be >= 1, got {buffer}")
        self.kind, self.size, self.buffer, self.top_n = kind, int(size), int(buffer), int(top_n)
        self.members: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []
        self.results_through = 0
        self.weights = np.zeros(0)

    # ------------------------------------------------------------------ the payoff and the Nash weights
    @property
    def labels(self) -> list[str]:
        return [m["label"] for m in self.members]

    def payoff(self) -> tuple[np.ndarray, np.ndarray]:
        """``(M, games)``, both ``float64[n, n]`` over the members: ``M[i, j]`` member ``i``'s mean score
        (``-1..1``) against ``j`` over the buffer (``M = -M^T``, 0 where they have no result) and the
        number of those results."""
        idx = {label: i for i, label in enumerate(self.labels)}
        n = len(idx)
        total, games = np.zeros((n, n)), np.zeros((n, n))
        for r in self.results:
            i, j = idx.get(r["a"]), idx.get(r["b"])
            if i is None or j is None or i == j:
                continue
            total[i, j] += r["score"]
            total[j, i] -= r["score"]
            games[i, j] += 1
            games[j, i] += 1
        return np.where(games > 0, total / np.maximum(games, 1), 0.0), games

    def solve(self) -> np.ndarray:
        """Solve and store the members' maximum-entropy Nash weights (uniform while the buffer holds no
        result between two members); returns them."""
        from train.matches.nash import max_entropy_nash

        n = len(self.members)
        m, games = self.payoff()
        if n == 0:
            self.weights = np.zeros(0)
        elif not games.any():
            self.weights = np.full(n, 1.0 / n)
        else:
            self.weights = max_entropy_nash(m)
        return self.weights

    def opponents(self) -> tuple[list[str], np.ndarray]:
        """``(labels, probabilities)``: the ``top_n`` members by Nash weight (the newer first among equal
        weights) and their weights renormalised (uniform if they are all 0)."""
        if not self.members:
            raise ValueError("population: no members to sample an opponent from")
        w = self.weights if len(self.weights) == len(self.members) else self.solve()
        order = sorted(range(len(self.members)), key=lambda i: (-w[i], -self.members[i]["iteration"]))[: self.top_n]
        p = np.array([w[i] for i in order], float)
        p = p / p.sum() if p.sum() > 0 else np.full(len(order), 1.0 / len(order))
        return [self.members[i]["label"] for i in order], p

    def sample(self, rng: np.random.Generator) -> dict[str, Any]:
        """A member drawn from :meth:`opponents`' distribution with ``rng``."""
        labels, p = self.opponents()
        return self.member(labels[int(rng.choice(len(labels), p=p))])

    def member(self, label: str) -> dict[str, Any]:
        for m in self.members:
            if m["label"] == label:
                return m
        raise KeyError(f"population: no member {label!r} (members: {self.labels})")

    # ------------------------------------------------------------------ changes
    def add_results(self, iteration: int, results: list[dict[str, Any]]) -> bool:
        """Add the results of ``iteration``'s games (once: ``False`` when that iteration's were added
        already) and keep the newest ``buffer`` of each pair."""
        if iteration <= self.results_through:
            return False
        self.results.extend({"a": r["a"], "b": r["b"], "score": float(r["score"]), "iteration": int(iteration),
                             "game": int(r.get("game", -1))} for r in results)
        kept: dict[tuple[str, str], int] = {}
        out = []
        for r in reversed(self.results):
            pair = tuple(sorted((r["a"], r["b"])))
            if kept.get(pair, 0) < self.buffer:
                kept[pair] = kept.get(pair, 0) + 1
                out.append(r)
        self.results = out[::-1]
        self.results_through = int(iteration)
        return True

    def join(self, label: str, iteration: int, net: str | Path, root: str | Path) -> str | None:
        """Admit the net file ``net`` as member ``label`` (a copy under ``root/population/``); with ``size``
        members already, the lowest-weight one (oldest among equals) leaves first, with its results and
        net file. Returns the label that left, or ``None``. A member already present changes nothing."""
        if label in self.labels:
            return None
        root = Path(root)
        gone = None
        if len(self.members) >= self.size:
            w = self.weights if len(self.weights) == len(self.members) else self.solve()
            i = min(range(len(self.members)), key=lambda k: (w[k], self.members[k]["iteration"]))
            out = self.members.pop(i)
            gone = out["label"]
            self.results = [r for r in self.results if gone not in (r["a"], r["b"])]
            (root / out["net"]).unlink(missing_ok=True)
        rel = f"{POPULATION_DIR}/{net_file(label)}"
        atomic_copy(net, root / rel)
        self.members.append({"label": label, "iteration": int(iteration), "net": rel, "joined": int(iteration)})
        self.solve()
        return gone

    # ------------------------------------------------------------------ measures
    def rp_elo(self, label: str) -> dict[str, Any] | None:
        """The RP-ELO of ``label`` (module docstring; :func:`rp_elo`) from its buffer results against the
        other members, or ``None`` without any."""
        others = [m for m in self.labels if m != label]
        pairs: dict[str, list[float]] = {}
        for r in self.results:
            if r["a"] == label and r["b"] in others:
                pairs.setdefault(r["b"], []).append(r["score"])
            elif r["b"] == label and r["a"] in others:
                pairs.setdefault(r["a"], []).append(-r["score"])
        return rp_elo(label, [PairResult(label, b, sum(s > 0 for s in v), sum(s == 0 for s in v),
                                         sum(s < 0 for s in v)) for b, v in pairs.items()])

    def clusters(self) -> list[list[str]]:
        """The Nash clusters of the members (``train.matches.nash.nash_clusters`` of :meth:`payoff`)."""
        from train.matches.nash import nash_clusters

        if not self.members:
            return []
        return [[self.labels[i] for i in c] for c in nash_clusters(self.payoff()[0])]

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        m, games = self.payoff()
        return json_safe({"format": FORMAT, "version": 1, "kind": self.kind, "size": self.size, "buffer": self.buffer,
                          "top_n": self.top_n, "members": self.members, "weights": list(self.weights),
                          "payoff": m, "payoff_games": games, "results_through": self.results_through,
                          "results": self.results})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Population:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a population file (format {FORMAT!r})")
        pop = cls(data["kind"], data["size"], data["buffer"], data["top_n"])
        pop.members = [dict(m) for m in data["members"]]
        pop.results = [dict(r) for r in data["results"]]
        pop.results_through = int(data["results_through"])
        pop.weights = np.asarray(data["weights"], float)
        return pop

    def save(self, root: str | Path) -> None:
        """Write ``root/population/population.json`` atomically."""
        atomic_write_json(Path(root) / POPULATION_DIR / STATE_FILE, self.to_dict())


def results_of(pairs: list[dict[str, Any]], player: str, members: list[str]) -> list[PairResult]:
    """``PairResult(player, member, wins, draws, losses)`` from ``player``'s side, for each pair row of a
    tournament result (``train.matches.tournament``: ``{"a", "b", "wins", "draws", "losses"}``) between
    ``player`` and one of ``members``: the input of :func:`rp_elo`."""
    out = []
    for p in pairs:
        if p["a"] == player and p["b"] in members:
            out.append(PairResult(player, p["b"], p["wins"], p["draws"], p["losses"]))
        elif p["b"] == player and p["a"] in members:
            out.append(PairResult(player, p["a"], p["losses"], p["draws"], p["wins"]))
    return out


def rp_elo(player: str, results: list[PairResult]) -> dict[str, Any] | None:
    """The relative population Elo (RP-ELO, papers/002 section 5.2) of ``player`` from its results against
    the members of a population (``PairResult(player, member, wins, draws, losses)``, one per member
    played): ``{"player", "rp_elo", "se", "ci95", "opponents", "games", "prior_draws"}``, the Bradley-Terry
    fit (``train.matches.stats.bradley_terry``) with ``player`` held at 0, ``1500`` plus its Elo above the
    mean of the members, with a 95% interval from the fit's covariance; ``None`` without results."""
    results = [r for r in results if r.wins + r.draws + r.losses > 0]
    if not results:
        return None
    agents = [player, *(r.b for r in results)]
    fit = bradley_terry(results, agents, anchor=player)
    k = len(results)
    diff = -float(np.mean(fit.elo[1:]))
    se = math.sqrt(max(float(fit.cov[1:, 1:].sum()), 0.0)) / k
    elo = RP_ELO_BASE + diff
    return {"player": player, "rp_elo": elo, "se": se, "ci95": [elo - Z95 * se, elo + Z95 * se], "opponents": k,
            "games": int(sum(r.wins + r.draws + r.losses for r in results)), "prior_draws": fit.prior_draws}


def load_population(root: str | Path, kind: str | None = None, cfg=None) -> Population | None:
    """The population of the run directory ``root`` (``None`` without one; with ``cfg`` a new empty one
    of its ``[population]`` settings). Raises ``ValueError`` naming the file when it is unreadable."""
    path = Path(root) / POPULATION_DIR / STATE_FILE
    if not path.exists():
        if cfg is None:
            return None
        p = cfg.population
        return Population(kind or cfg.model, p.size, p.buffer, p.top_n)
    try:
        return Population.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: {exc}") from None


def plan_opponents(pop: Population, seed: int, iteration: int, games: list[int], learner: str,
                   root: str | Path) -> dict[int, dict[str, Any] | None]:
    """The opponent of each self-play game index of ``games``: ``{"label", "net" (absolute path), "side"
    (the opponent's colour: 1 in even games, 0 in odd), "learner"}``, or ``None`` (the learner's own net:
    plain self-play). Each draw has its own generator (run ``seed``, ``iteration``, game index), so a
    resumed iteration plays the same opponents."""
    out: dict[int, dict[str, Any] | None] = {}
    for g in games:
        m = pop.sample(np.random.default_rng([int(seed), int(iteration), int(g), OPPONENT_STREAM]))
        if m["label"] == learner:
            out[g] = None
        else:
            out[g] = {"label": m["label"], "net": str((Path(root) / m["net"]).resolve()), "side": 1 - g % 2,
                      "learner": learner}
    return out


def iteration_results(records_dir: str | Path) -> list[dict[str, Any]]:
    """The population results of one iteration's self-play records (``metadata.population``):
    ``[{"a" (learner), "b" (opponent), "score" (the learner's), "game"}]`` by game index."""
    from core.records import read_json

    out = []
    for f in sorted(Path(records_dir).glob("g*.json")):
        meta = read_json(f).metadata
        pop = meta.get("population")
        if pop:
            out.append({"a": pop["learner"], "b": pop["opponent"], "score": float(pop["learner_score"]),
                        "game": int(meta.get("selfplay", {}).get("game", -1))})
    return out


# ============================================================================ the pipeline's hooks
def _best_label(pipe, kind: str) -> tuple[str, int, Path]:
    best = pipe.state.best[kind]
    return member_label(kind, best.iteration), best.iteration, pipe.paths.root / best.checkpoint


FIXED = "fixed"  # the label of population.fixed's net


def prepare_selfplay(pipe, it: int, kind: str, games: list[int]) -> dict[int, dict[str, Any] | None]:
    """Before iteration ``it``'s self-play: the best net joins the population if it is not a member yet (the
    start net; a run killed between its gate and the population's save), then each of ``games`` gets its
    opponent (:func:`plan_opponents`). With ``population.fixed`` the population is that net alone
    (label ``fixed``) and admits no member."""
    from train.jobs.rundir import TrainError

    root = pipe.paths.root
    pop = load_population(root, kind, pipe.config)
    label, best_it, net = _best_label(pipe, kind)
    fixed = pipe.config.population.fixed
    if fixed is not None and not pop.members:
        if not Path(fixed).is_file():
            raise TrainError(f"population.fixed: {fixed}: no such net file")
        _join(pipe, pop, it, FIXED, -1, Path(fixed))
    elif fixed is None and label not in pop.labels:
        _join(pipe, pop, it, label, best_it, net)
    return plan_opponents(pop, pipe.config.seed, it, games, label, root)


def _join(pipe, pop: Population, it: int, label: str, best_it: int, net: Path) -> None:
    gone = pop.join(label, best_it, net, pipe.paths.root)
    pop.save(pipe.paths.root)
    pipe.log("population_join", iteration=it, kind=pop.kind, member=label, replaced=gone, members=pop.labels,
             weights=[round(float(w), 6) for w in pop.weights])


def after_selfplay(pipe, it: int, kind: str) -> None:
    """After iteration ``it``'s self-play: its games' results go into the buffer, the Nash weights are
    solved again, and the ``population`` event (and TensorBoard ``population/<kind>/...``) records the
    weights, the opponents' distribution, the learner's RP-ELO and the Nash clusters."""
    root = pipe.paths.root
    pop = load_population(root, kind, pipe.config)
    pop.add_results(it, iteration_results(pipe.paths.records / f"i{it:04d}"))
    pop.solve()
    pop.save(root)
    label = _best_label(pipe, kind)[0]
    rp = pop.rp_elo(label)
    top, p = pop.opponents()
    clusters = pop.clusters()
    pipe.log("population", iteration=it, kind=kind, learner=label, members=pop.labels,
             weights={m: round(float(w), 6) for m, w in zip(pop.labels, pop.weights)},
             opponents={m: round(float(q), 6) for m, q in zip(top, p)}, rp_elo=rp and rp["rp_elo"],
             rp_elo_ci95=rp and rp["ci95"], rp_elo_games=rp["games"] if rp else 0,
             clusters=[len(c) for c in clusters], results=len(pop.results))
    if pipe.tb:
        pipe.tb.scalars(it, **{f"population/{kind}/rp_elo": rp and rp["rp_elo"],
                               f"population/{kind}/members": float(len(pop.labels)),
                               f"population/{kind}/clusters": float(len(clusters)),
                               f"population/{kind}/learner_weight": float(pop.weights[pop.labels.index(label)])
                               if label in pop.labels else None})
        for m, w in zip(pop.labels, pop.weights):
            pipe.tb.scalars(it, **{f"population/{kind}/nash/{m}": float(w)})


def after_gate(pipe, it: int, kind: str, accepted: bool) -> None:
    """After iteration ``it``'s gate: an accepted candidate (the new best net) joins the population."""
    if accepted and pipe.config.population.fixed is None:
        pop = load_population(pipe.paths.root, kind, pipe.config)
        label, best_it, net = _best_label(pipe, kind)
        if label not in pop.labels:
            _join(pipe, pop, it, label, best_it, net)


# ============================================================================ analysis commands
def lineage_players(run_dir: str | Path, source: str = "population") -> list[tuple[str, Any]]:
    """``[(label, agent)]`` of a run: ``source = "population"`` its population's members (their net files,
    ``selfplay.net_agent`` of the run's config), ``"curve"`` its learning-curve players (the best net of
    each curve point, ``train.learning.curve``, and the run's newest best net of each kind). Raises
    ``ValueError`` when the run has none."""
    from train.learning.curve import read_points
    from train.learning.modeldir import load_run_config
    from train.learning.selfplay import net_agent

    root = Path(run_dir)
    cfg = load_run_config(root, device="cpu")
    if source == "population":
        pop = load_population(root)
        if pop is None:
            raise ValueError(f"{root}: no population ({POPULATION_DIR}/{STATE_FILE}); run selfplay with "
                             "--set selfplay.opponents=population, or use the curve's players")
        return [(m["label"], net_agent(pop.kind, root / m["net"], cfg)) for m in pop.members]
    if source == "curve":
        from search.agents import AgentRecipe
        from train.jobs.rundir import RunPaths, read_state
        from train.learning.curve import player_label

        out: dict[str, Any] = {}
        for p in read_points(root / "curve"):
            out.setdefault(p["player"], AgentRecipe.from_dict(p["recipe"]) if isinstance(p.get("recipe"), dict)
                           else p["spec"])
        state = read_state(RunPaths(root))
        for kind, best in state.best.items():  # the newest best net, when no curve point has played it yet
            out.setdefault(player_label(kind, best.iteration), net_agent(kind, root / best.checkpoint, cfg))
        return list(out.items())
    raise ValueError(f"source: expected population or curve, got {source!r}")
