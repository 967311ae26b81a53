"""Self-play games of the JFA independent training (papers/000 sections 3.4 and 4.1.2), and the agents
the pipeline evaluates.

One game trains one net; the JFA auxiliary agent (``selfplay.aux_agent``, the ``expert`` by default)
plays everything else, so that the three nets learn independently:

- ``slm``: SLM-guided MCTS plays the **layout** for both sides (root Dirichlet noise, visit-count
  sampling with temperature for the first ``temperature_plies`` placements, then the most visited). At
  the end of the layout the reward plugin (``selfplay.reward``, ``reward.first_square`` by default: the
  auxiliary agent plays the battle for both sides and the first side to form a square gets +1, JFA 3.4)
  gives ``(r_white, r_black)``. Samples: (layout planes, visit policy over the 196 points, ``z`` = the
  reward of the side to move). The record continues the very battle that produced the reward: the
  moves the reward plugin's agent chose (its ``last_moves``; for ``reward.first_square`` up to and
  including the first square-forming move, for ``reward.outcome`` the whole game) are played first, and
  the auxiliary agent finishes the game from there, so the record is a whole game whose opening battle
  is the reward's (``metadata.reward.plies``).
- ``upper``: the auxiliary agent plays the layout; HBM-upper MCTS (upper net, no lower net: the square
  victims of a path are chosen by ``selfplay.search.victim_evaluator`` among the capture pruner's 8 best sets, as
  the shipped ``jfa``, or with ``None`` the pruner's best set, the expert's Eq. 9 choice) plays every
  **battle** move. Samples: (battle planes, visit policy over the 48,804 upper actions, ``z`` = game
  result for the side to move, or with ``selfplay.value_drift = K`` the change of ``selfplay.search.value_evaluator``'s
  margin over the game's next ``K`` plies, or with ``value_drift_mode = "value"`` that evaluator's value
  (``value_drift_evaluator`` when given), either blended with the result by ``value_result_mix``:
  ``train.learning.drift.drift_values``). With ``selfplay.teacher`` (a ``battle_prior`` plugin such as
  ``prior.expert``: the auxiliary agent's move scores) the policy target is ``(1 - teacher_mix)`` times
  the visit distribution plus ``teacher_mix`` times the teacher's prior over every legal path.
- ``lower``: the auxiliary agent chooses every placement and every battle **path**; when the path forms
  squares the lower DQN chooses the victims among the capture pruner's candidates (``prune.capture``),
  epsilon-greedy (``selfplay.lower_epsilon``: a uniformly random candidate, else the highest Q).
  Samples: (planes of the position after the capture, the path's upper action, ``z`` = the game result
  for the capturing side: the Monte Carlo return without discount). With ``selfplay.lower_eval`` (an
  ``evaluator`` plugin spec such as ``eval.expert:plies=2``) every candidate set of every capture gives
  a sample instead, ``z`` = its **advantage**: minus that plugin's value of the position after it (the
  opponent moves there), less the mean of that over the capture's candidates, divided by
  ``selfplay.lower_eval_scale`` and clipped to ``[-1, 1]``. Only the ranking within
  one capture matters for the choice (JFA Eq. 6), and those differences are far smaller than the
  differences between captures, which a regression on the plain values spends itself on. The samples
  of one capture share a ``group`` (``train.learning.samples``), which the within-capture ranking loss
  (``learner.dqn_loss = "group"``) trains on.

With ``selfplay.opponents = "population"`` (``train.learning.population``) a ``slm`` or ``upper`` game's
task names an opponent: a population member's net file and its side. That side is searched by its own
search (:class:`Opponent`: the member's evaluator, the same settings, a seed of its own) and gives no
sample; the record's ``metadata["population"]`` holds the learner, the opponent, the learner's side
and its score, which the Nash buffer reads.

Positions with a single candidate (one legal placement, or one path left by the expansion pruner) are
played without a search and give no sample. With playout-cap randomization (``selfplay.full_simulations``,
KataGo) a searched position gives a sample only when its search was a full one (drawn with the move
sampling's generator at ``selfplay.full_fraction``); the fast searches (``selfplay.search.simulations``) only play. The search does not reuse its tree between moves in
self-play when root noise is on, so every root gets fresh Dirichlet noise.

Game seeds: :func:`game_seed` derives the seed of game ``index`` of ``iteration`` from the run seed with
``numpy.random.SeedSequence``; the search, the move sampling and the auxiliary agents get seeds drawn from
it, and the record's ``metadata["selfplay"]`` stores all of them. :func:`selfplay_batch` plays a batch of
games and writes each one's shard **before** its record (both atomic): a game counts as done once its
record exists, so a run killed at any moment replays exactly the games without a record.

The pipeline evaluates a net with the search agents of ``search.agents``, given to the arena as
``search.agents.AgentRecipe`` objects (:func:`net_agent`): ``slm`` with ``slm=PATH`` (SLM search in the
layout, the ``expert`` in the battle), ``hbm`` with ``upper=PATH,lower=none`` (the ``expert`` in the
layout, upper-net search in the battle with the self-play search's victims) and ``hbm`` with
``battle=expert,lower=PATH,victim_candidates=0`` (the ``expert``'s moves with the victims chosen by the
lower net); the searching ones play ``selfplay.search`` (:func:`evaluation_search`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from core.board import NUM_POINTS, PHASE_LAYOUT
from core.notation import Move
from core.state import GameState
from search.agents import choose_victims_q, load_net  # also silences the SLM searches' no-upper-net warning

LAYOUT_PLIES = NUM_POINTS


def game_seed(run_seed: int, iteration: int, index: int) -> int:
    """The seed of self-play game ``index`` of ``iteration`` (31-bit), from (run seed, iteration, index)."""
    return int(np.random.SeedSequence([int(run_seed), int(iteration), int(index)]).generate_state(1)[0] % (2**31))


def sub_seeds(seed: int, n: int = 4) -> list[int]:
    """``n`` independent 31-bit seeds drawn from ``seed`` (search, sampling, auxiliary agents ...)."""
    return [int(x) for x in np.random.SeedSequence(int(seed)).generate_state(n) % (2**31)]


def record_name(iteration: int, index: int) -> str:
    return f"i{iteration:04d}/g{index:04d}.json"


# ============================================================================ search helpers
def search_config(cfg, seed: int):
    """The ``SearchConfig`` of a self-play game's search: ``selfplay.search`` with the game's ``seed``, and
    no tree reuse while Dirichlet root noise is on (a PUCT root with ``dirichlet_epsilon > 0`` needs a
    fresh root for its noise; the Gumbel root search draws its noise afresh for each search)."""
    sp = cfg.selfplay.search
    reuse = sp.reuse_tree and (sp.dirichlet_epsilon == 0 or sp.root_selection == "gumbel")
    return sp.model_copy(update={"seed": seed, "reuse_tree": reuse})


def _forced(search, state: GameState) -> Move | None:
    """The move when the search would have a single candidate (no search needed), else ``None``."""
    if state.phase == PHASE_LAYOUT:
        pts = state.placements()
        return Move((pts[0],)) if len(pts) == 1 else None
    ps = state.paths()
    keep = search.expansion_pruner.keep(state, ps) if search.expansion_pruner is not None else np.arange(ps.m)
    if len(keep) != 1:
        return None
    i = int(keep[0])
    path, jump, k = ps.path(i), bool(ps.jump[i]), int(ps.nsq[i])
    if k == 0:
        return Move(path, jump)
    from search.victims import after_path, choose_victims

    # the search's own victim choice (its capture pruner and victim scorer)
    choice = choose_victims(after_path(state, path, jump, k), path, jump, k, search.capture_pruner,
                            search.victim_scorer, search.config.victim_candidates)
    return Move(path, jump, choice.victims)


def _phase_ply(state: GameState) -> int:
    return state.ply if state.phase == PHASE_LAYOUT else state.ply - LAYOUT_PLIES


class _Game:
    """Moves, per-move search data and statistics of one game in progress."""

    def __init__(self, state: GameState):
        self.states = [state]  # every position, from the first (the drift value target replays none)
        self.moves: list[str] = []
        self.search: list[dict | None] = []
        self.searched = 0
        self.simulations = 0
        self.search_seconds = 0.0

    @property
    def state(self) -> GameState:
        """The position now (the last of ``states``)."""
        return self.states[-1]

    def play(self, move: Move, info: dict | None = None) -> None:
        self.states.append(self.state.apply(move))
        self.moves.append(str(move))
        self.search.append(info)

    def searched_move(self, search, rng: np.random.Generator, cfg, builder, teacher=None):
        """Search the position, add a sample to ``builder`` (``None``: no sample, a population opponent's
        move) and play the sampled move. ``teacher``: a
        ``battle_prior`` plugin blended into a battle sample's policy target (module docstring). With
        playout-cap randomization (``selfplay.full_simulations``) a fast search (``selfplay.search.simulations``)
        only plays; a full search, drawn with ``rng`` at ``selfplay.full_fraction``, also gives the sample.
        A generator: the search's leaf requests go to the caller (``search.batched.search_steps``)."""
        from nets.features import state_planes
        from search.batched import search_steps

        state = self.state
        forced = _forced(search, state)
        if forced is not None:
            self.play(forced, None)
            return
        sp = cfg.selfplay
        full = sp.full_simulations is None or rng.random() < sp.full_fraction
        result = yield from search_steps(search, state, sp.full_simulations if full and sp.full_simulations else None)
        self.searched += 1
        self.simulations += int(result.simulations)
        self.search_seconds += float(result.seconds)
        if full and builder is not None:
            target = (result.actions, result.target().astype(np.float64))  # visits, or the Gumbel improved policy
            if teacher is not None and state.phase != PHASE_LAYOUT and target[1].sum() > 0:
                from nets.encoding import encode_paths
                from train.learning.samples import blend_teacher

                ps = state.paths()
                target = blend_teacher(*target, encode_paths(ps.pts, ps.off, ps.jump, ps.m), teacher.prior(state, ps),
                                       sp.teacher_mix)
            builder.add_policy(state_planes(state), *target)
        temp = sp.temperature if _phase_ply(state) < sp.temperature_plies else 0.0
        self.play(result.sample(temp, rng), {"visits": int(result.visits.sum()), "value": round(float(result.value), 4),
                                             "simulations": int(result.simulations)})


def _close(*things) -> None:
    for t in things:
        if t is not None:
            try:
                t.close()
            except Exception:  # noqa: BLE001 - best effort cleanup
                pass


def open_search(cfg, seed: int, upper: bool, evaluator=None):
    """The self-play search of a ``TrainConfig`` (``search_config``) for :func:`search.batched.search_steps`
    (it has no evaluator of its own: the driver answers its leaves); with ``upper`` (a battle search of
    the upper net) the victims of square-forming paths are chosen by ``selfplay.search.victim_evaluator``
    among the capture pruner's sets (else the pruner's best set; no lower net). ``evaluator``: for
    ``Search.run`` instead (a ``nets.evaluator.Evaluator``). The caller closes it."""
    from search.mcts import Search

    scorer = None
    if upper and cfg.selfplay.search.victim_evaluator is not None:
        from knowledge.evaluation import EvaluatorVictimScorer

        scorer = EvaluatorVictimScorer.from_spec(cfg.selfplay.search.victim_evaluator)
    return Search(evaluator, search_config(cfg, seed), victim_scorer=scorer)


def selfplay_evaluator(cfg, slm_net=None, upper_net=None):
    """The ``nets.evaluator.NetEvaluator`` the self-play games of one worker share (``selfplay.max_batch``
    positions per forward pass at most, one torch thread, ``selfplay.precision``, on ``device``), running its nets in the
    thread that calls it (the driver's, ``search.batched.drive``). The caller closes it."""
    from nets.evaluator import NetEvaluator

    return NetEvaluator(slm_net, upper_net, max_batch=cfg.selfplay.max_batch, num_threads=1, inference_threads=0,
                        precision=cfg.selfplay.precision, device=cfg.device)


class Opponent(NamedTuple):
    """The population member that plays one side of a game (``train.learning.population``): its
    ``evaluator`` (a ``nets.evaluator.NetEvaluator`` of its net), its ``side`` (``WHITE``/``BLACK``) and
    the seed of its search."""

    evaluator: Any
    side: int
    seed: int


def _searched_moves(cfg, game, rng, builder, seed: int, upper: bool, until, opponent: Opponent | None = None):
    """Play searched moves (``open_search``) while ``until(game.state)``; a generator of the searches' leaf
    requests, returning the side to move and the position's index in the game (plies from the start) of
    each recorded sample. With an ``opponent`` its side is searched with its own net (its own search,
    the same settings) and gives no sample."""
    sp = cfg.selfplay
    search = open_search(cfg, seed, upper)
    other = open_search(cfg, opponent.seed, upper, opponent.evaluator) if opponent is not None else None
    teacher = None
    if upper and sp.teacher is not None and sp.teacher_mix > 0:
        from knowledge.plugins import REGISTRY

        teacher = REGISTRY.create(sp.teacher, "battle_prior")
    sides: list[int] = []
    plies: list[int] = []
    try:
        while until(game.state):
            n = len(builder)
            side, ply = game.state.side, len(game.moves)
            if other is not None and side == opponent.side:
                yield from game.searched_move(other, rng, cfg, None)
                continue
            yield from game.searched_move(search, rng, cfg, builder, teacher)
            if len(builder) > n:
                sides.append(side)
                plies.append(ply)
    finally:
        _close(search, other)
    return sides, plies


def _play_out(game, agents, until) -> None:
    """Let ``agents`` (one per side) play ``game`` while ``until(game.state)``."""
    while until(game.state):
        game.play(agents[game.state.side].select(game.state))


def _drift_z(target, game, plies: list[int]) -> list[float]:
    """The value targets of ``target`` (``cfg.drift_target("upper")``, a ``train.learning.drift.DriftTarget``;
    ``train.learning.drift.drift_values``) at the game's positions ``plies``; the game has ended, so each is
    defined, except within ``K`` plies of its end with ``selfplay.value_drift_ends = "drop"`` (NaN: no
    value target, ``nets.losses.value_mse``)."""
    from train.learning.drift import drift_values

    drifts = drift_values(game.states, target)
    return [float(drifts[i]) for i in plies]


def _outcome_z(final: GameState, sides: list[int]) -> list[float]:
    r = final.returns()
    return [r[s] for s in sides]


# ============================================================================ the three games
# ``slm_game`` and ``upper_game`` are jobs of ``search.batched.drive``: generators of their searches' leaf
# requests (and ``Offload`` calls for the auxiliary agent's moves and the reward), returning
# ``(game, samples, info)``; ``play_slm_game`` / ``play_upper_game`` play one alone.
def slm_game(cfg, seed: int, opponent: Opponent | None = None):
    """One ``slm`` self-play game (module docstring), as a ``search.batched`` job."""
    from knowledge.agents import make_agent
    from knowledge.plugins import REGISTRY
    from search.batched import Offload
    from train.learning.samples import SampleBuilder

    s_search, s_sample, s_aux, s_reward = sub_seeds(seed)
    rng = np.random.default_rng(s_sample)
    game = _Game(GameState.initial(cfg.ruleset))
    builder = SampleBuilder("slm")
    sides, _ = yield from _searched_moves(cfg, game, rng, builder, s_search, False, lambda st: st.phase == PHASE_LAYOUT,
                                          opponent)
    layout_end = game.state
    reward = REGISTRY.create(cfg.selfplay.reward, "reward")
    t0 = time.perf_counter()
    rewards = yield Offload(lambda: reward.rewards(layout_end, seed=s_reward))
    reward_seconds = time.perf_counter() - t0
    builder.set_values([rewards[s] for s in sides])
    reward_moves = list(getattr(reward, "last_moves", None) or ())
    for move in reward_moves:  # the reward's own battle (module docstring)
        if game.state.is_terminal():
            break
        game.play(move, {"reward": True})
    agents = (make_agent(cfg.selfplay.aux_agent, seed=s_aux), make_agent(cfg.selfplay.aux_agent, seed=s_aux + 1))
    yield Offload(lambda: _play_out(game, agents, lambda st: not st.is_terminal()))
    info = {"reward": {"plugin": cfg.selfplay.reward, "white": rewards[0], "black": rewards[1],
                       "seconds": round(reward_seconds, 3), "plies": len(reward_moves)},
            "seeds": {"search": s_search, "sample": s_sample, "aux": s_aux, "reward": s_reward},
            "players": f"slm-mcts:sims={cfg.selfplay.search.simulations}+{cfg.selfplay.aux_agent}"}
    return game, builder, info


def upper_game(cfg, seed: int, opponent: Opponent | None = None):
    """One ``upper`` self-play game (module docstring), as a ``search.batched`` job."""
    from knowledge.agents import make_agent
    from search.batched import Offload
    from train.learning.samples import SampleBuilder

    s_search, s_sample, s_aux, _ = sub_seeds(seed)
    rng = np.random.default_rng(s_sample)
    game = _Game(GameState.initial(cfg.ruleset))
    agents = (make_agent(cfg.selfplay.aux_agent, seed=s_aux), make_agent(cfg.selfplay.aux_agent, seed=s_aux + 1))
    yield Offload(lambda: _play_out(game, agents, lambda st: st.phase == PHASE_LAYOUT))
    builder = SampleBuilder("upper")
    sides, plies = yield from _searched_moves(cfg, game, rng, builder, s_search, True, lambda st: not st.is_terminal(),
                                              opponent)
    target = cfg.drift_target("upper")
    if target is not None:
        z = yield Offload(lambda: _drift_z(target, game, plies))
    else:
        z = _outcome_z(game.state, sides)
    builder.set_values(z)
    info = {"seeds": {"search": s_search, "sample": s_sample, "aux": s_aux},
            "players": f"{cfg.selfplay.aux_agent}+upper-mcts:sims={cfg.selfplay.search.simulations}"}
    return game, builder, info


def _play_alone(job, cfg, slm_net=None, upper_net=None):
    from search.batched import run_alone

    evaluator = selfplay_evaluator(cfg, slm_net, upper_net)
    try:
        return run_alone(job, evaluator)
    finally:
        _close(evaluator)


def play_slm_game(cfg, slm_net, seed: int) -> tuple[_Game, Any, dict]:
    """One ``slm`` self-play game played alone (:func:`slm_game`): ``(game, samples, info)``."""
    return _play_alone(slm_game(cfg, seed), cfg, slm_net=slm_net)


def play_upper_game(cfg, upper_net, seed: int) -> tuple[_Game, Any, dict]:
    """One ``upper`` self-play game played alone (:func:`upper_game`): ``(game, samples, info)``."""
    return _play_alone(upper_game(cfg, seed), cfg, upper_net=upper_net)


def play_lower_game(cfg, lower_net, seed: int) -> tuple[_Game, Any, dict]:
    """One ``lower`` self-play game (module docstring)."""
    from knowledge.agents import make_agent
    from knowledge.evaluation import EvaluatorVictimScorer
    from knowledge.plugins import REGISTRY
    from nets.evaluator import NetVictimScorer
    from nets.features import state_planes
    from train.learning.samples import SampleBuilder

    _, s_sample, s_aux, _ = sub_seeds(seed)
    rng = np.random.default_rng(s_sample)
    game = _Game(GameState.initial(cfg.ruleset))
    agents = (make_agent(cfg.selfplay.aux_agent, seed=s_aux), make_agent(cfg.selfplay.aux_agent, seed=s_aux + 1))
    pruner = REGISTRY.create(cfg.selfplay.search.capture_pruner, "capture_pruner")
    scorer = NetVictimScorer(lower_net, precision=cfg.selfplay.precision, device=cfg.device)
    judge = EvaluatorVictimScorer.from_spec(cfg.selfplay.lower_eval) if cfg.selfplay.lower_eval else None
    builder = SampleBuilder("lower")
    sides: list[int] = []
    choices = 0
    while not game.state.is_terminal():
        state = game.state
        move = agents[state.side].select(state)
        if state.phase == PHASE_LAYOUT or not move.victims:
            game.play(move)
            continue
        choice, action = choose_victims_q(state, move, pruner, scorer, rng, cfg.selfplay.lower_epsilon)
        choices += 1
        if judge is None:
            builder.add_lower(state_planes(choice.after), action)
            sides.append(state.side)
        else:  # every candidate: its advantage for the capturing side (the opponent moves after the capture)
            values = judge.q_values(choice.afters, [action] * len(choice.afters)).astype(np.float64)
            scaled = np.clip((values - values.mean()) / cfg.selfplay.lower_eval_scale, -1.0, 1.0)
            for after, z in zip(choice.afters, scaled):
                builder.add_lower(state_planes(after), action, float(z), group=choices - 1)
        game.play(Move(move.path, move.jump, choice.victims), {"candidates": choice.n_candidates})
        game.searched += 1
    if judge is None:
        builder.set_values(_outcome_z(game.state, sides))
    target = cfg.selfplay.lower_eval or "outcome"
    info = {"seeds": {"sample": s_sample, "aux": s_aux}, "captures": choices, "lower_target": target,
            "players": f"{cfg.selfplay.aux_agent}+lower-dqn:epsilon={cfg.selfplay.lower_epsilon}"}
    return game, builder, info


def _lower_job(cfg, lower_net, seed: int):
    """A ``lower`` game as a ``search.batched`` job: it searches nothing, so it runs off the driver."""
    from search.batched import Offload

    return (yield Offload(lambda: play_lower_game(cfg, lower_net, seed)))


JOBS = {"slm": lambda cfg, net, seed, opponent=None: slm_game(cfg, seed, opponent),
        "upper": lambda cfg, net, seed, opponent=None: upper_game(cfg, seed, opponent),
        "lower": lambda cfg, net, seed, opponent=None: _lower_job(cfg, net, seed)}


# ============================================================================ the worker task
GAMES_IN_FLIGHT_CPU = 16  # selfplay.games_in_flight's default on CPU (docs/performance.md, "Self-play engine")
GAMES_IN_FLIGHT_CUDA = 128  # ... and on a CUDA device (not measured: no GPU here)


def games_in_flight(cfg) -> int:
    """The games a self-play worker plays at once: ``selfplay.games_in_flight``, or when it is not given
    :data:`GAMES_IN_FLIGHT_CUDA` when ``device`` resolves to CUDA and :data:`GAMES_IN_FLIGHT_CPU` otherwise."""
    if cfg.selfplay.games_in_flight is not None:
        return int(cfg.selfplay.games_in_flight)
    from nets.inference import resolve_device

    return GAMES_IN_FLIGHT_CUDA if resolve_device(cfg.device).type == "cuda" else GAMES_IN_FLIGHT_CPU


def plan_batches(tasks: list[dict[str, Any]], cfg) -> list[dict[str, Any]]:
    """The :func:`selfplay_batch` tasks of a worker pool for the game ``tasks``: the games shared out
    round-robin over ``workers`` (at least one batch), at most ``2 * games_in_flight`` games a batch (so
    that a worker picks up a newer net between batches), each batch with ``games_in_flight`` (no more than
    its games) and ``threads``: the cores this process may use divided among the workers, at least 1."""
    from train.jobs.workers import cores_per_worker, worker_batches

    in_flight = games_in_flight(cfg)
    threads = cores_per_worker(cfg.workers)
    return [{"tasks": batch, "games_in_flight": min(in_flight, len(batch)), "threads": threads}
            for batch in worker_batches(tasks, cfg.workers, 2 * in_flight)]


def selfplay_batch(batch: dict[str, Any]) -> list[dict[str, Any]]:
    """Play the self-play games ``batch["tasks"]`` together and write each one's shard and record as it ends.

    ``batch``: ``tasks`` (one dict a game, all of one run, kind, iteration and net: ``run_dir``,
    ``config`` (``TrainConfig`` as a dict), ``kind``, ``iteration``, ``index``, ``net`` (path of the net
    that plays)), ``games_in_flight`` (games played at once, >= 1) and ``threads`` (>= 1: the knowledge pool's
    threads, ``search.batched.drive``). The games share one evaluator of the net ``task["net"]``, loaded
    once per batch (so a batch picks up the newest net at its start), and their searches' leaves are
    evaluated together; a game whose record exists is skipped, so a batch run again (a killed worker)
    plays only the games without one. Returns the statistics of each game played, in the order they
    ended: ``index``, ``seed``, ``plies``, ``searched`` (positions searched or decided by the net),
    ``simulations``, ``samples``, ``seconds``, ``search_seconds``, ``result``, ``reason``, ``z_mean``,
    ``pid``; the last one also holds the batch's ``drive`` summary (``search.batched.DriveStats``) under
    ``"batch"``."""
    import torch

    import catalog  # noqa: F401 - the auxiliary agent may be any registered agent (Ray tasks skip init_worker)
    from search.batched import DriveStats, drive
    from train.learning.config import validate_config

    torch.set_num_threads(1)
    tasks = [t for t in batch["tasks"] if not _record_path(t).exists()]
    if not tasks:
        return []
    cfg = validate_config(tasks[0]["config"])
    kind = tasks[0]["kind"]
    net = load_net(tasks[0]["net"], kind)
    evaluator = selfplay_evaluator(cfg, net if kind == "slm" else None, net if kind == "upper" else None)
    opponents: dict[str, Any] = {}  # a population member's net file -> its evaluator, one per batch
    starts: dict[int, tuple[float, str]] = {}

    def opponent(t: dict[str, Any], seed: int) -> Opponent | None:
        o = t.get("opponent")
        if not o:
            return None
        if o["net"] not in opponents:
            member = load_net(o["net"], kind)
            opponents[o["net"]] = selfplay_evaluator(cfg, member if kind == "slm" else None,
                                                     member if kind == "upper" else None)
        return Opponent(opponents[o["net"]], int(o["side"]), sub_seeds(seed)[3])

    def jobs():
        for t in tasks:
            index = int(t["index"])
            starts[index] = (time.perf_counter(), time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            seed = game_seed(cfg.seed, int(t["iteration"]), index)
            yield index, JOBS[kind](cfg, net, seed, opponent(t, seed))

    by_index = {int(t["index"]): t for t in tasks}
    stats = DriveStats()
    results = []
    try:
        for index, (game, builder, info) in drive(jobs(), evaluator, int(batch["games_in_flight"]),
                                                  int(batch.get("threads", 1)), stats):
            results.append(_write_game(by_index[index], cfg, game, builder, info, *starts[index]))
    finally:
        _close(evaluator, *opponents.values())
    if results:
        results[-1]["batch"] = stats.summary()
    return results


def _record_path(task: dict[str, Any]) -> Path:
    """Where the record of the game of ``task`` is written (a game is done once it exists)."""
    return Path(task["run_dir"]) / "records" / record_name(int(task["iteration"]), int(task["index"]))


def _write_game(task: dict[str, Any], cfg, game, builder, info: dict, t0: float, started: str) -> dict[str, Any]:
    """Write the shard, then the record, of a finished game (both atomic); returns its statistics."""
    from core.records import GameRecord, write_json
    from train.learning.samples import shard_name, write_shard

    kind, iteration, index = task["kind"], int(task["iteration"]), int(task["index"])
    seed = game_seed(cfg.seed, iteration, index)
    outcome = game.state.outcome()
    meta = {"selfplay": {"kind": kind, "iteration": iteration, "game": index, "run_seed": cfg.seed,
                         "game_seed": seed, "seeds": info.pop("seeds"), "worker_pid": os.getpid(),
                         "net": str(task["net"])}}
    players = info.pop("players")
    white = black = players
    opp = task.get("opponent")
    if opp:  # a population game (train.learning.population): the learner's score goes to the Nash buffer
        side = 1 - int(opp["side"])
        meta["population"] = {"learner": opp["learner"], "opponent": opp["label"], "learner_side": side,
                              "learner_score": game.state.returns()[side]}
        white, black = (f"{players} {opp['learner']}", f"{players} {opp['label']}")[::1 - 2 * side]
    meta.update(info)
    samples = builder.build({"kind": kind, "iteration": iteration, "game": index, "game_seed": seed})
    run = Path(task["run_dir"])
    write_shard(run / "shards" / kind / shard_name(iteration, index), samples)
    seconds = time.perf_counter() - t0
    meta["duration_seconds"] = round(seconds, 3)
    record = GameRecord(ruleset=cfg.ruleset, white=white, black=black,
                        result=outcome.winner_code, reason=outcome.reason if outcome.terminal else "unfinished",
                        start_time=_iso(started), moves=tuple(game.moves), search=tuple(game.search), metadata=meta)
    path = _record_path(task)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(record, path)
    return {"index": index, "seed": seed, "kind": kind, "iteration": iteration, "plies": len(game.moves),
            "searched": game.searched, "simulations": game.simulations, "samples": len(samples),
            "seconds": seconds, "search_seconds": game.search_seconds, "result": outcome.winner_code,
            "reason": outcome.reason, "z_mean": float(np.nanmean(samples.z)) if np.isfinite(samples.z).any() else 0.0,
            "pid": os.getpid()}


def _iso(text: str) -> str | None:
    from datetime import datetime

    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z").isoformat()
    except ValueError:
        return None


# ============================================================================ evaluation agents
def evaluation_search(cfg):
    """The ``SearchConfig`` the gate and curve agents play with: ``selfplay.search`` (the search that made
    the games) with ``gate.simulations`` and ``gate.search_threads`` when given, and no exploration noise
    (``dirichlet_epsilon`` and ``gumbel_scale`` 0: they play their best move)."""
    sp = cfg.selfplay.search
    return sp.model_copy(update={"simulations": cfg.gate.simulations or sp.simulations,
                                 "threads": cfg.gate.search_threads or sp.threads,
                                 "dirichlet_epsilon": 0.0, "gumbel_scale": 0.0})


def net_agent(kind: str, path: str | os.PathLike, cfg):
    """The evaluation agent playing with the ``kind`` net at ``path``, as a ``search.agents.AgentRecipe``
    that the arena's workers build (greedy: temperature 0; one inference and one torch thread per agent,
    as the self-play searches): ``slm`` (SLM search, expert battle), ``hbm`` with ``lower=none`` (upper-net
    search, expert layout) or ``hbm`` with ``battle=expert`` (the expert's moves, victims by the lower net
    among all the pruner's sets). The searching agents play :func:`evaluation_search`, so that the gate and
    the curve measure the search that made the games; the ``slm`` agent keeps its own battle victims."""
    import catalog  # noqa: F401 - registers the net agents
    from search.agents import AgentRecipe

    p = str(Path(path).resolve())
    if kind == "lower":
        return AgentRecipe.of("hbm", battle="expert", lower=p, victim_candidates=0, precision=cfg.selfplay.precision)
    search = evaluation_search(cfg).model_dump(exclude={"seed"})
    nets = {"batch": cfg.selfplay.max_batch, "inference_threads": 1, "torch_threads": 1,
            "precision": cfg.selfplay.precision}
    if kind == "slm":
        search.pop("victim_evaluator")  # the searched layout has no captures; the expert battle chooses its own
        return AgentRecipe.of("slm", slm=p, **search, **nets)
    return AgentRecipe.of("hbm", upper=p, lower="none", **search, **nets)
