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
  margin over the game's next ``K`` plies, ``train.learning.supervised.drift_values``). With ``selfplay.teacher`` (a ``battle_prior`` plugin such as
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

Positions with a single candidate (one legal placement, or one path left by the expansion pruner) are
played without a search and give no sample. With playout-cap randomization (``selfplay.full_simulations``,
KataGo) a searched position gives a sample only when its search was a full one (drawn with the move
sampling's generator at ``selfplay.full_fraction``); the fast searches (``selfplay.search.simulations``) only play. The search does not reuse its tree between moves in
self-play when root noise is on, so every root gets fresh Dirichlet noise.

Game seeds: :func:`game_seed` derives the seed of game ``index`` of ``iteration`` from the run seed with
``numpy.random.SeedSequence``; the search, the move sampling and the auxiliary agents get seeds drawn from
it, and the record's ``metadata["selfplay"]`` stores all of them. :func:`selfplay_task` plays one game
and writes its shard **before** its record (both atomic): a game counts as done once its record exists,
so a run killed at any moment replays exactly the games without a record.

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
from typing import Any

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


def shard_name(iteration: int, index: int) -> str:
    return f"i{iteration:04d}-g{index:04d}.npz"


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

    def searched_move(self, search, rng: np.random.Generator, cfg, builder, teacher=None) -> None:
        """Search the position, add a sample to ``builder`` and play the sampled move. ``teacher``: a
        ``battle_prior`` plugin blended into a battle sample's policy target (module docstring). With
        playout-cap randomization (``selfplay.full_simulations``) a fast search (``selfplay.search.simulations``)
        only plays; a full search, drawn with ``rng`` at ``selfplay.full_fraction``, also gives the sample."""
        from nets.features import state_planes

        state = self.state
        forced = _forced(search, state)
        if forced is not None:
            self.play(forced, None)
            return
        sp = cfg.selfplay
        full = sp.full_simulations is None or rng.random() < sp.full_fraction
        result = search.run(state, simulations=sp.full_simulations if full and sp.full_simulations else None)
        self.searched += 1
        self.simulations += int(result.simulations)
        self.search_seconds += float(result.seconds)
        if full:
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


def open_search(cfg, seed: int, slm_net, upper_net):
    """``(search, evaluator)``: the self-play search of a ``TrainConfig`` (``search_config``) over a
    ``nets.evaluator.NetEvaluator`` of the given nets (either may be ``None``), the victims of
    square-forming paths chosen by ``selfplay.search.victim_evaluator`` among the capture pruner's sets when there is
    an upper net (else the pruner's best set; no lower net). The caller closes both (``_close``)."""
    from nets.evaluator import NetEvaluator
    from search.mcts import Search

    sp = cfg.selfplay
    evaluator = NetEvaluator(slm_net, upper_net, max_batch=sp.max_batch, num_threads=1, clients=sp.search.threads,
                             precision=sp.precision, device=cfg.device)
    scorer = None
    if upper_net is not None and sp.search.victim_evaluator is not None:
        from knowledge.evaluation import EvaluatorVictimScorer

        scorer = EvaluatorVictimScorer.from_spec(sp.search.victim_evaluator)
    return Search(evaluator, search_config(cfg, seed), victim_scorer=scorer), evaluator


def _searched_moves(cfg, game, rng, builder, seed: int, slm_net, upper_net, until) -> tuple[list[int], list[int]]:
    """Play searched moves (``open_search``) while ``until(game.state)``; returns the side to move and the
    position's index in the game (plies from the start) of each recorded sample."""
    sp = cfg.selfplay
    search, evaluator = open_search(cfg, seed, slm_net, upper_net)
    teacher = None
    if upper_net is not None and sp.teacher is not None and sp.teacher_mix > 0:
        from knowledge.plugins import REGISTRY

        teacher = REGISTRY.create(sp.teacher, "battle_prior")
    sides: list[int] = []
    plies: list[int] = []
    try:
        while until(game.state):
            n = len(builder)
            side, ply = game.state.side, len(game.moves)
            game.searched_move(search, rng, cfg, builder, teacher)
            if len(builder) > n:
                sides.append(side)
                plies.append(ply)
    finally:
        _close(search, evaluator)
    return sides, plies


def _drift_z(cfg, game, plies: list[int]) -> list[float]:
    """The drift value targets (``selfplay.value_drift``, ``train.learning.supervised.drift_values`` with
    ``selfplay.search.value_evaluator``'s margin) of the game's positions ``plies``; the game has ended, so each is
    defined, except within ``K`` plies of its end with ``selfplay.value_drift_ends = "drop"`` (NaN: no
    value target, ``nets.losses.value_mse``)."""
    from train.learning.drift import drift_values

    drifts = drift_values(game.states, cfg.drift_target("upper"))
    return [float(drifts[i]) for i in plies]


def _outcome_z(final: GameState, sides: list[int]) -> list[float]:
    r = final.returns()
    return [r[s] for s in sides]


# ============================================================================ the three games
def play_slm_game(cfg, slm_net, seed: int) -> tuple[_Game, Any, dict]:
    """One ``slm`` self-play game (module docstring): ``(game, samples, info)``."""
    from knowledge.agents import make_agent
    from knowledge.plugins import REGISTRY
    from train.learning.samples import SampleBuilder

    s_search, s_sample, s_aux, s_reward = sub_seeds(seed)
    rng = np.random.default_rng(s_sample)
    game = _Game(GameState.initial(cfg.ruleset))
    builder = SampleBuilder("slm")
    sides, _ = _searched_moves(cfg, game, rng, builder, s_search, slm_net, None, lambda st: st.phase == PHASE_LAYOUT)
    layout_end = game.state
    reward = REGISTRY.create(cfg.selfplay.reward, "reward")
    t0 = time.perf_counter()
    rewards = reward.rewards(layout_end, seed=s_reward)
    reward_seconds = time.perf_counter() - t0
    builder.set_values([rewards[s] for s in sides])
    reward_moves = list(getattr(reward, "last_moves", None) or ())
    for move in reward_moves:  # the reward's own battle (module docstring)
        if game.state.is_terminal():
            break
        game.play(move, {"reward": True})
    agents = (make_agent(cfg.selfplay.aux_agent, seed=s_aux), make_agent(cfg.selfplay.aux_agent, seed=s_aux + 1))
    while not game.state.is_terminal():
        game.play(agents[game.state.side].select(game.state))
    info = {"reward": {"plugin": cfg.selfplay.reward, "white": rewards[0], "black": rewards[1],
                       "seconds": round(reward_seconds, 3), "plies": len(reward_moves)},
            "seeds": {"search": s_search, "sample": s_sample, "aux": s_aux, "reward": s_reward},
            "players": f"slm-mcts:sims={cfg.selfplay.search.simulations}+{cfg.selfplay.aux_agent}"}
    return game, builder, info


def play_upper_game(cfg, upper_net, seed: int) -> tuple[_Game, Any, dict]:
    """One ``upper`` self-play game (module docstring)."""
    from knowledge.agents import make_agent
    from train.learning.samples import SampleBuilder

    s_search, s_sample, s_aux, _ = sub_seeds(seed)
    rng = np.random.default_rng(s_sample)
    game = _Game(GameState.initial(cfg.ruleset))
    agents = (make_agent(cfg.selfplay.aux_agent, seed=s_aux), make_agent(cfg.selfplay.aux_agent, seed=s_aux + 1))
    while game.state.phase == PHASE_LAYOUT:
        game.play(agents[game.state.side].select(game.state))
    builder = SampleBuilder("upper")
    sides, plies = _searched_moves(cfg, game, rng, builder, s_search, None, upper_net, lambda st: not st.is_terminal())
    builder.set_values(_drift_z(cfg, game, plies) if cfg.selfplay.value_drift else _outcome_z(game.state, sides))
    info = {"seeds": {"search": s_search, "sample": s_sample, "aux": s_aux},
            "players": f"{cfg.selfplay.aux_agent}+upper-mcts:sims={cfg.selfplay.search.simulations}"}
    return game, builder, info


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


GAMES = {"slm": play_slm_game, "upper": play_upper_game, "lower": play_lower_game}


# ============================================================================ the worker task
def selfplay_task(task: dict[str, Any]) -> dict[str, Any]:
    """Play self-play game ``task["index"]`` of ``task["iteration"]`` and write its shard and record.

    ``task``: ``run_dir``, ``config`` (``TrainConfig`` as a dict), ``kind``, ``iteration``, ``index``,
    ``net`` (path of the net that plays). Returns statistics: ``index``, ``seed``, ``plies``,
    ``searched`` (positions searched or decided by the net), ``simulations``, ``samples``, ``seconds``,
    ``search_seconds``, ``result``, ``reason``, ``z_mean``, ``pid``."""
    import torch

    import catalog  # noqa: F401 - the auxiliary agent may be any registered agent (Ray tasks skip init_worker)
    from core.records import GameRecord, write_json
    from train.learning.config import validate_config
    from train.learning.samples import write_shard

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    cfg = validate_config(task["config"])
    kind, iteration, index = task["kind"], int(task["iteration"]), int(task["index"])
    seed = game_seed(cfg.seed, iteration, index)
    net = load_net(task["net"], kind)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    game, builder, info = GAMES[kind](cfg, net, seed)
    final = game.state
    outcome = final.outcome()
    meta = {"selfplay": {"kind": kind, "iteration": iteration, "game": index, "run_seed": cfg.seed,
                         "game_seed": seed, "seeds": info.pop("seeds"), "worker_pid": os.getpid(),
                         "net": str(task["net"])}}
    players = info.pop("players")
    meta.update(info)
    samples = builder.build({"kind": kind, "iteration": iteration, "game": index, "game_seed": seed})
    run = Path(task["run_dir"])
    write_shard(run / "shards" / kind / shard_name(iteration, index), samples)
    seconds = time.perf_counter() - t0
    meta["duration_seconds"] = round(seconds, 3)
    record = GameRecord(ruleset=cfg.ruleset, white=players, black=players,
                        result=outcome.winner_code, reason=outcome.reason if outcome.terminal else "unfinished",
                        start_time=_iso(started), moves=tuple(game.moves), search=tuple(game.search), metadata=meta)
    path = run / "records" / record_name(iteration, index)
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
