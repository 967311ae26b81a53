"""Arena, tournament and the human-play loop (train/matches/arena.py, train/matches/tournament.py,
frontends/terminal.py).

Cheap test-only agents are registered under ``t-*`` names while this module's tests run (a
module fixture); worker processes import this module (``imports=[__name__]``) and register them
too. Games use ``max_battle_plies=20`` with stone
adjudication so that they end fast and are usually decided.
"""

from __future__ import annotations

import io
import json
import os
import random
import time
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from cli import app
from core.records import read_json
from core.rules import Ruleset
from core.state import GameState
from knowledge.plugins import REGISTRY
from train.matches.arena import (ARENA_VERSION, ARENA_VERSIONS, OPENING_PLIES_MAX, ArenaError, game_seeds,
                                 load_records, opening_moves, record_path, run_arena)
from train.matches.summary import summarize_records
from frontends.terminal import play
from train.matches.stats import percentile
from train.matches.tournament import pair_dir_name, run_tournament

RULES = Ruleset(max_battle_plies=20, adjudicate="stones")
THIS = __name__  # "tests.test_arena": what worker processes import


# ------------------------------------------------------------------------- test-only agents
class RandomTestAgent:
    """Seeded uniform choice among the full legal moves."""

    def __init__(self, seed: int = 0):
        self.name = "t-random"
        self.seed = seed
        self.rng = random.Random(seed)
        self.last_think_time = 0.0

    def select(self, state):
        t0 = time.perf_counter()
        move = self.rng.choice(state.legal_moves())
        self.last_think_time = time.perf_counter() - t0
        return move


class FirstTestAgent:
    """The first legal move in notation order (deterministic; reports no thinking time)."""

    name = "t-first"

    def __init__(self, seed: int = 0):
        pass

    def select(self, state):
        return state.legal_moves()[0]


class DyingTestAgent(RandomTestAgent):
    """Plays like ``t-random``, but kills its process on its first move when its seed is
    ``$JIU_TEST_DIE_SEED`` and the file ``$JIU_TEST_DIE_MARK`` does not exist yet (it creates it)."""

    def select(self, state):
        mark = os.environ.get("JIU_TEST_DIE_MARK")
        if mark and str(self.seed) == os.environ.get("JIU_TEST_DIE_SEED") and not os.path.exists(mark):
            Path(mark).write_text("died")
            os._exit(17)
        return super().select(state)


class IllegalTestAgent(FirstTestAgent):
    """Places ``a1`` in the battle: an illegal move."""

    def select(self, state):
        return "a1" if state.phase == 1 else super().select(state)


TEST_AGENTS = {"t-random": RandomTestAgent, "t-first": FirstTestAgent, "t-dying": DyingTestAgent,
               "t-illegal": IllegalTestAgent}
ENV = "JIU_TEST_ARENA_AGENTS"  # set while this module's tests run, so that worker processes register too


def register_test_agents() -> None:
    for name, factory in TEST_AGENTS.items():
        REGISTRY.register(name, "agent", "test-only agent")(factory)


if os.environ.get(ENV) == "1":  # a worker process importing this module
    register_test_agents()


@pytest.fixture(scope="module", autouse=True)
def test_agents():
    """Register the ``t-*`` agents for this module's tests only (in a copy of the registry, restored
    afterwards, so that tests parametrised over every registered agent never see them)."""
    import catalog  # noqa: F401  register every built-in agent in the original registry first: an
    # import inside the copy below would register them only there, and a later import is a no-op
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(REGISTRY, "_entries", dict(REGISTRY._entries))
        mp.setenv(ENV, "1")
        register_test_agents()
        yield


def _mtimes(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in sorted((out / "games").glob("*.json"))}


def _moves(out: Path) -> dict[str, tuple[str, ...]]:
    return {p.name: read_json(p).moves for p in sorted((out / "games").glob("*.json"))}


# ------------------------------------------------------------------------- seeds and one arena
def test_game_seeds_pair_games_and_swap_colours():
    for version in ARENA_VERSIONS:
        s = [game_seeds(100, i, version) for i in range(6)]
        assert [x["a_colour"] for x in s] == ["w", "b"] * 3
        assert [x["game_seed"] for x in s][::2] == [x["game_seed"] for x in s][1::2]  # a pair's games share it
        assert s[0]["seed_a"] == s[1]["seed_a"] and s[0]["seed_b"] == s[1]["seed_b"]
        assert s[0]["seed_a"] != s[0]["seed_b"] and s[0]["seed_a"] != s[2]["seed_a"]
    assert [game_seeds(100, i, 1)["game_seed"] for i in range(6)] == [100, 100, 101, 101, 102, 102]
    assert game_seeds(100, 4) == game_seeds(100, 4, ARENA_VERSION) and ARENA_VERSION == 2
    with pytest.raises(ValueError, match="arena version"):
        game_seeds(100, 0, 3)


def test_arenas_of_neighbouring_seeds_share_no_game_seed():
    """Version 2: the base seeds 1, 2 and 3 give three independent samples (version 1's ``seed + k``
    made ``--seed 2`` replay all but one pair of ``--seed 1``)."""
    pairs = 500
    seeds = {base: {game_seeds(base, 2 * k)["game_seed"] for k in range(pairs)} for base in (1, 2, 3)}
    assert all(len(v) == pairs for v in seeds.values())
    assert not seeds[1] & seeds[2] and not seeds[1] & seeds[3] and not seeds[2] & seeds[3]
    old = {base: {game_seeds(base, 2 * k, 1)["game_seed"] for k in range(pairs)} for base in (1, 2)}
    assert len(old[1] & old[2]) == pairs - 1  # what version 1 did


@pytest.fixture(scope="module")
def arena_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("arena") / "run"
    summary = run_arena("t-random", "t-first", 4, workers=0, seed=7, out_dir=out, ruleset=RULES, progress=False)
    return out, summary


def test_arena_records_are_colour_balanced_seeded_and_replayable(arena_run):
    out, summary = arena_run
    assert summary.games == 4 and summary.played == 4
    assert sorted(p.name for p in (out / "games").iterdir()) == ["0000.json", "0001.json", "0002.json", "0003.json"]
    for i in range(4):
        record = read_json(record_path(out, i))
        seeds = game_seeds(7, i)
        meta = record.metadata
        assert meta["game_index"] == i and meta["pair"] == i // 2 and meta["game_seed"] == seeds["game_seed"]
        assert meta["arena"] == {"a": "t-random", "b": "t-first", "seed": 7}
        a_white = i % 2 == 0
        assert meta["a_colour"] == ("w" if a_white else "b")
        assert (record.white, record.black) == (("t-random", "t-first") if a_white else ("t-first", "t-random"))
        assert meta["seeds"] == ({"white": seeds["seed_a"], "black": seeds["seed_b"]} if a_white
                                 else {"white": seeds["seed_b"], "black": seeds["seed_a"]})
        assert record.ruleset == RULES
        states = record.replay()  # every move legal
        final = states[-1]
        assert final.is_terminal()
        assert record.result == final.outcome().winner_code and record.reason == final.outcome().reason
        assert len(record.search) == len(record.moves)
        for state, entry in zip(states, record.search):
            assert entry["side"] == "wb"[state.current_player()]
            assert entry["phase"] == ("layout" if state.phase == 0 else "battle")
            assert entry["time"] >= 0
            who = "t-random" if entry["side"] == meta["a_colour"] else "t-first"
            assert ("wall" in entry) == (who == "t-first")  # t-first reports no last_think_time


def test_arena_summary_matches_the_records(arena_run):
    out, summary = arena_run
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk == summary.data
    records = [read_json(record_path(out, i)) for i in range(4)]
    wins = draws = losses = 0
    by_colour = {"w": [0, 0, 0], "b": [0, 0, 0]}
    times = {(who, ph): [] for who in "ab" for ph in ("layout", "battle")}
    reasons = {}
    for r in records:
        states = r.replay()
        a_colour = "w" if r.white == "t-random" else "b"
        winner = states[-1].outcome().winner_code
        k = 1 if winner == "draw" else 0 if winner == a_colour else 2
        wins, draws, losses = wins + (k == 0), draws + (k == 1), losses + (k == 2)
        by_colour[a_colour][k] += 1
        reasons[r.reason] = reasons.get(r.reason, 0) + 1
        for state, entry in zip(states, r.search):
            who = "a" if "wb"[state.current_player()] == a_colour else "b"
            times[(who, "layout" if state.phase == 0 else "battle")].append(entry["time"])
    d = summary.data
    assert (d["wins"], d["draws"], d["losses"]) == (wins, draws, losses)
    assert d["games"] == 4 and d["complete"] and d["games_requested"] == 4
    assert d["win_rate"] == pytest.approx((wins + draws / 2) / 4)
    p = d["win_rate"]
    assert d["se"] == pytest.approx(np.sqrt(p * (1 - p) / 4))
    assert d["ci95"] == pytest.approx([max(0, p - 1.959964 * d["se"]), min(1, p + 1.959964 * d["se"])], abs=1e-5)
    for colour, key in (("w", "a_white"), ("b", "a_black")):
        c = d["by_colour"][key]
        assert [c["wins"], c["draws"], c["losses"]] == by_colour[colour] and c["games"] == 2
    assert d["reasons"] == reasons
    assert d["mean_game_length"] == pytest.approx(np.mean([len(r.moves) for r in records]))
    assert d["mean_battle_plies"] == pytest.approx(np.mean([len(r.moves) - 196 for r in records]))
    for (who, phase), values in times.items():
        t = d["time"][who][phase]
        assert t["moves"] == len(values)
        assert t["mean"] == pytest.approx(np.mean(values)) and t["p95"] == pytest.approx(percentile(values, 95))
    assert d["time"]["a"]["all"]["moves"] == len(times[("a", "layout")]) + len(times[("a", "battle")])
    fresh = summarize_records(records, "t-random", "t-first")
    assert {k: d[k] for k in fresh} == fresh


def test_resume_replays_only_the_missing_games(arena_run, tmp_path):
    out, _ = arena_run
    before_moves = _moves(out)
    record_path(out, 1).unlink()
    record_path(out, 2).unlink()
    (out / "games" / ".0003.json.abc.tmp").write_text("half")  # left by a kill during a write
    kept = {k: v for k, v in _mtimes(out).items()}
    summary = run_arena("t-random", "t-first", 4, workers=0, seed=7, out_dir=out, ruleset=RULES, progress=False)
    assert summary.played == 2 and summary.games == 4
    after = _mtimes(out)
    assert {k: after[k] for k in kept} == kept  # untouched
    assert _moves(out) == before_moves  # the same games again (deterministic seeds)
    assert not list((out / "games").glob(".*.tmp"))
    again = run_arena("t-random", "t-first", 4, workers=0, seed=7, out_dir=out, ruleset=RULES, progress=False)
    assert again.played == 0 and again.data["wins"] == summary.data["wins"]


def test_resume_rejects_another_match_in_the_same_directory(arena_run):
    out, _ = arena_run
    with pytest.raises(ArenaError, match="field 'b'"):
        run_arena("t-random", "t-random", 4, workers=0, seed=7, out_dir=out, ruleset=RULES, progress=False)
    with pytest.raises(ArenaError, match="field 'seed'"):
        run_arena("t-random", "t-first", 4, workers=0, seed=8, out_dir=out, ruleset=RULES, progress=False)
    with pytest.raises(ArenaError, match="field 'ruleset'"):
        run_arena("t-random", "t-first", 4, workers=0, seed=7, out_dir=out, ruleset=Ruleset(), progress=False)


def test_a_version_1_directory_resumes_with_its_own_seeding(tmp_path):
    """arena.json of version 1 (game seed ``seed + k``): the missing games are played with that seeding
    and the file stays version 1; a version this code does not know is refused, naming the field."""
    old = tmp_path / "old"
    old.mkdir()
    (old / "arena.json").write_text(json.dumps({"format": "jiu-arena", "version": 1, "a": "t-random", "b": "t-first",
                                                "seed": 7, "ruleset": RULES.model_dump(), "games": 4}))
    run_arena("t-random", "t-first", 4, workers=0, seed=7, out_dir=old, ruleset=RULES, progress=False)
    assert json.loads((old / "arena.json").read_text())["version"] == 1
    metas = [read_json(record_path(old, i)).metadata for i in range(4)]
    assert [m["game_seed"] for m in metas] == [7, 7, 8, 8]
    assert [m["seeds"]["white" if i % 2 == 0 else "black"] for i, m in enumerate(metas)] == \
        [game_seeds(7, i, 1)["seed_a"] for i in range(4)]
    new = tmp_path / "new"
    run_arena("t-random", "t-first", 2, workers=0, seed=7, out_dir=new, ruleset=RULES, progress=False)
    assert json.loads((new / "arena.json").read_text())["version"] == ARENA_VERSION
    assert read_json(record_path(new, 0)).metadata["game_seed"] == game_seeds(7, 0)["game_seed"] != 7
    config = json.loads((new / "arena.json").read_text())
    (new / "arena.json").write_text(json.dumps({**config, "version": 3}))
    with pytest.raises(ArenaError, match="field 'version' is 3"):
        run_arena("t-random", "t-first", 2, workers=0, seed=7, out_dir=new, ruleset=RULES, progress=False)


def test_bad_arguments(tmp_path):
    with pytest.raises(ArenaError, match="games: must be an even"):
        run_arena("t-random", "t-first", 3, workers=0, out_dir=tmp_path, progress=False)
    with pytest.raises(ArenaError, match="seed: must be an integer >= 0"):
        run_arena("t-random", "t-first", 2, workers=0, seed=-1, out_dir=tmp_path, progress=False)
    with pytest.raises(ArenaError, match="unknown agent 'nope'; available: .*t-random"):
        run_arena("nope", "t-first", 2, workers=0, out_dir=tmp_path, progress=False)
    with pytest.raises(ArenaError, match="agent 't-first': unknown option 'depth'"):
        run_arena("t-random", "t-first:depth=2", 2, workers=0, out_dir=tmp_path, progress=False)


def test_the_opening_option_help_names_the_arena_limit():
    """The CLI's --opening-plies help states the range the arena checks (the constant lives in the
    arena, which the CLI imports only when a match runs)."""
    import typing

    from frontends.cli_match import OpeningOption

    option = typing.get_args(OpeningOption)[1]
    assert f"(0..{OPENING_PLIES_MAX})" in option.help


def test_openings_make_agents_that_do_not_sample_play_distinct_games(tmp_path):
    """``t-first`` against itself replays one game whatever the seeds; with ``opening_plies`` both games of a
    pair start from the pair's own random placements (legal, drawn from its game seed), so pairs differ."""
    plain = run_arena("t-first", "t-first", 6, workers=0, seed=3, out_dir=tmp_path / "plain", ruleset=RULES,
                      progress=False)
    assert plain.data["distinct_games"] == 1 and plain.data["opening_plies"] == 0
    s = run_arena("t-first", "t-first", 6, workers=0, seed=3, out_dir=tmp_path / "open", ruleset=RULES,
                  progress=False, opening_plies=5)
    assert s.data["distinct_games"] == 3 and s.data["opening_plies"] == 5
    records = [read_json(record_path(tmp_path / "open", i)) for i in range(6)]
    for i, r in enumerate(records):
        opening = opening_moves(RULES, 5, r.metadata["game_seed"])
        assert r.moves[:5] == tuple(opening) and r.metadata["opening_plies"] == 5
        assert list(r.search[:5]) == [None] * 5 and all(r.search[5:])
        assert r.moves == records[i ^ 1].moves  # the pair's two games: one opening, colours swapped
        state = GameState.initial(RULES)
        for move in opening:  # each placement legal where it is played
            assert move in [str(m) for m in state.legal_moves()]
            state = state.apply(move)
    assert len({r.moves[:5] for r in records}) == 3
    assert s.data["time"]["a"]["all"]["moves"] + s.data["time"]["b"]["all"]["moves"] == \
        sum(len(r.moves) - 5 for r in records)  # the opening is neither agent's
    with pytest.raises(ArenaError, match="field 'opening_plies' is 5 but this run asks for 0"):
        run_arena("t-first", "t-first", 6, workers=0, seed=3, out_dir=tmp_path / "open", ruleset=RULES, progress=False)
    for bad in (-1, OPENING_PLIES_MAX + 1, 2.5, True):
        with pytest.raises(ArenaError, match=f"opening_plies: must be an integer in 0..{OPENING_PLIES_MAX}"):
            run_arena("t-first", "t-first", 2, workers=0, out_dir=tmp_path / "bad", progress=False, opening_plies=bad)
    assert not (tmp_path / "bad").exists()
    t = run_tournament([("x", "t-first"), ("y", "t-first")], 4, workers=0, out_dir=tmp_path / "rr", ruleset=RULES,
                       progress=False, plots=False, opening_plies=3)
    assert t.data["opening_plies"] == 3 and t.data["pairs"][0]["distinct_games"] == 2
    res = CliRunner().invoke(app, ["arena", "t-first", "t-first", "-n", "4", "--workers", "0", "--out",
                                   str(tmp_path / "cli"), "-r", "max_battle_plies=20", "-r", "adjudicate=stones"])
    assert res.exit_code == 0 and "note: t-first vs t-first: only 1 of the 4 games differ" in res.output and "--opening-plies K" in res.output
    res = CliRunner().invoke(app, ["arena", "t-first", "t-first", "-n", "2", "--opening-plies", "65", "--out",
                                   str(tmp_path / "cli2")])
    assert res.exit_code == 2 and "error: opening_plies: must be an integer in 0..64, got 65" in res.output
    assert "Traceback" not in res.output


def test_an_illegal_move_forfeits_the_game(tmp_path):
    s = run_arena("t-illegal", "t-first", 2, workers=0, seed=1, out_dir=tmp_path, ruleset=RULES, progress=False)
    assert s.data["reasons"] == {"illegal-move": 2} and s.losses == 2
    record = read_json(record_path(tmp_path, 0))
    assert record.result == "b" and record.metadata["forfeit"]["move"] == "a1"
    assert "placements end with the layout" in record.metadata["forfeit"]["error"]
    assert len(record.replay()) == len(record.moves) + 1


# ------------------------------------------------------------------------- worker processes
def test_parallel_workers_give_the_same_games_and_survive_a_dead_worker(tmp_path, monkeypatch):
    reference = tmp_path / "reference"
    mark = tmp_path / "died.txt"
    monkeypatch.setenv("JIU_TEST_DIE_MARK", str(mark))
    monkeypatch.setenv("JIU_TEST_DIE_SEED", str(game_seeds(3, 2)["seed_a"]))  # A's seed in games 2 and 3
    # two processes, nobody dies yet (the mark is created first): the games are those of one process
    mark.write_text("not yet")
    par = run_arena("t-dying", "t-random", 4, workers=2, seed=3, out_dir=tmp_path / "par", ruleset=RULES,
                    progress=False, imports=[THIS])
    mark.unlink()
    # one worker: game 2 kills its process; games 0 and 1 are saved, the run stops with a clear error
    killed = tmp_path / "killed"
    with pytest.raises(ArenaError, match="worker process died.*rerun"):
        run_arena("t-dying", "t-random", 4, workers=1, seed=3, out_dir=killed, ruleset=RULES, progress=False,
                  imports=[THIS])
    assert mark.exists()
    saved = _mtimes(killed)
    assert sorted(saved) == ["0000.json", "0001.json"]
    resumed = run_arena("t-dying", "t-random", 4, workers=1, seed=3, out_dir=killed, ruleset=RULES, progress=False,
                        imports=[THIS])
    assert resumed.played == 2 and resumed.games == 4
    assert {k: v for k, v in _mtimes(killed).items() if k in saved} == saved
    ref = run_arena("t-dying", "t-random", 4, workers=0, seed=3, out_dir=reference, ruleset=RULES, progress=False)
    assert _moves(killed) == _moves(reference) == _moves(tmp_path / "par")
    assert par.data["wins"] == resumed.data["wins"] == ref.data["wins"]
    assert len(load_records(killed, 4)) == 4


# ------------------------------------------------------------------------- tournament
def test_tournament_round_robin_and_resume(tmp_path):
    agents = ["t-random", "t-first", "t-illegal"]
    t = run_tournament(agents, 2, workers=0, seed=5, out_dir=tmp_path, ruleset=RULES, progress=False)
    data = json.loads((tmp_path / "tournament.json").read_text())
    assert data == t.data and data["agents"] == agents and len(data["pairs"]) == 3
    m = np.array(data["payoff"], float)
    assert np.allclose(m + m.T, 1.0) and np.all(np.diag(m) == 0.5)
    i, j = agents.index("t-random"), agents.index("t-illegal")
    assert m[i, j] == 1.0  # the illegal agent forfeits every battle
    ratings = {r["agent"]: r for r in data["ratings"]["ratings"]}
    assert sum(r["elo"] for r in ratings.values()) == pytest.approx(0, abs=1e-6)
    assert ratings["t-illegal"]["elo"] < min(ratings["t-random"]["elo"], ratings["t-first"]["elo"])
    assert all(r["ci95"][0] < r["elo"] < r["ci95"][1] for r in ratings.values())
    assert data["ratings"]["prior_draws"] == 1.0  # an agent lost every game: a prior keeps Elo finite
    md = (tmp_path / "tournament.md").read_text()
    assert "| rank | agent | Elo |" in md and "`t-illegal`" in md
    # round robin by colour (papers/004), latency, Nash weights and plots
    bc = data["by_colour"]
    for x in range(3):
        for y in range(3):
            if x != y:
                assert bc[x][y]["white"] == pytest.approx(1 - bc[y][x]["black"])
                assert (bc[x][y]["white"] + bc[x][y]["black"]) / 2 == pytest.approx(m[x, y])
    assert set(data["latency"]) == set(agents) and data["latency"]["t-random"]["battle"]["moves"] > 0
    weights = data["nash"]["weights"]
    assert sum(weights.values()) == pytest.approx(1.0) and weights["t-illegal"] == pytest.approx(0, abs=1e-6)
    assert data["populations"] is None and len(data["gamescape"]["points"]) == 3
    assert (tmp_path / "payoff.png").exists() and (tmp_path / "gamescape.png").exists()
    pair = sorted(["t-random", "t-first"])
    assert (tmp_path / "pairs" / pair_dir_name(*pair) / "summary.json").exists()
    # resume in another order: the same pair directories, no game played again
    again = run_tournament(list(reversed(agents)), 2, workers=0, seed=5, out_dir=tmp_path, ruleset=RULES,
                           progress=False)
    assert all(s.played == 0 for s in again.arenas.values())
    by_agent = {r["agent"]: r["elo"] for r in again.data["ratings"]["ratings"]}
    assert by_agent == pytest.approx({a: r["elo"] for a, r in ratings.items()}, abs=1e-6)
    assert data["clusters"][-1] == ["t-illegal"] and sum(data["cluster_sizes"]) == 3  # the weakest layer last
    assert "Nash clustering" in md
    with pytest.raises(ArenaError, match="listed twice"):
        run_tournament(["t-first", "t-first"], 2, workers=0, out_dir=tmp_path, progress=False)
    with pytest.raises(ArenaError, match="'x' is listed twice"):
        run_tournament([("x", "t-first"), ("x", "t-random")], 2, workers=0, out_dir=tmp_path, progress=False)


# ------------------------------------------------------------------------- CLI
runner = CliRunner()


def test_cli_unknown_agent_exits_2_listing_the_agents(tmp_path):
    for args in (["arena", "nope", "t-first", "--games", "2", "--out", str(tmp_path / "a")],
                 ["tournament", "t-first", "nope", "--games", "2", "--out", str(tmp_path / "t")],
                 ["play", "--agent", "nope"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "unknown agent 'nope'; available:" in result.output and "t-random" in result.output
        assert "Traceback" not in result.output
    bad = runner.invoke(app, ["arena", "t-first", "t-random", "--games", "3", "--out", str(tmp_path / "b")])
    assert bad.exit_code == 2 and "games: must be an even number" in bad.output
    rule = runner.invoke(app, ["arena", "t-first", "t-random", "-r", "loss_below=0", "--out", str(tmp_path / "c")])
    assert rule.exit_code == 2 and "loss_below" in rule.output


def test_cli_arena_json_and_tournament(tmp_path, monkeypatch):
    args = ["--games", "2", "--workers", "0", "-r", "max_battle_plies=20", "-r", "adjudicate=stones"]
    result = runner.invoke(app, ["arena", "t-first", "t-random", *args, "--seed", "2", "--json",
                                 "--out", str(tmp_path / "a"), "--import", THIS])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"win_rate", "ci95", "games", "se", "wilson_ci95", "by_colour", "time", "reasons"} <= set(data)
    assert data["games"] == 2 and data["ruleset"]["max_battle_plies"] == 20
    table = runner.invoke(app, ["arena", "t-first", "t-random", *args, "--seed", "2", "--out", str(tmp_path / "a")])
    assert table.exit_code == 0 and "t-first (A) vs t-random (B)" in table.stdout
    tour = runner.invoke(app, ["tournament", "t-first", "t-random", *args, "--out", str(tmp_path / "t")])
    assert tour.exit_code == 0, tour.output
    assert "Bradley-Terry" in tour.stdout and (tmp_path / "t" / "tournament.md").exists()
    # LABEL=SPEC names a player; a spec's own "=" (after its ":") is not a label
    tour = runner.invoke(app, ["tournament", "first=t-first", "rand=t-random", "minimax:depth=1", *args,
                               "--anchor", "rand", "--out", str(tmp_path / "l")])
    assert tour.exit_code == 0, tour.output
    data = json.loads((tmp_path / "l" / "tournament.json").read_text())
    assert data["agents"] == ["first", "rand", "minimax:depth=1"] and data["ratings"]["anchor"] == "rand"
    assert "Nash clusters (sizes" in tour.stdout
    bad = runner.invoke(app, ["tournament", "=t-first", "t-random", *args, "--out", str(tmp_path / "b")])
    assert bad.exit_code == 2 and "error: agent '=t-first': expected LABEL=SPEC" in bad.output
    # the arena takes LABEL=SPEC too: the label names the player in the table, the summary and the default
    # directory; the records keep the spec
    monkeypatch.chdir(tmp_path)
    named = runner.invoke(app, ["arena", "first=t-first", "minimax:depth=1", *args, "--seed", "2"])
    assert named.exit_code == 0, named.output
    assert "first (A) vs minimax:depth=1 (B)" in named.stdout
    run_dir = Path("runs") / "arena" / "first__vs__minimax_depth_1"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["labels"] == ["first", "minimax:depth=1"] and summary["a"] == "t-first"
    bad = runner.invoke(app, ["arena", "first=", "t-random", *args])
    assert bad.exit_code == 2 and "error: agent 'first=': expected LABEL=SPEC" in bad.output
    missing = runner.invoke(app, ["arena", "t-first", "new=hbm:upper=missing.safetensors", *args])
    assert missing.exit_code == 2 and "error: agent B (new) 'hbm:upper=missing.safetensors'" in missing.output


# ------------------------------------------------------------------------- human play
def _script(lines):
    it = iter(lines)

    def read(prompt):
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    return read


def _console():
    return Console(file=io.StringIO(), width=100, color_system=None)


def test_play_placements_illegal_input_undo_save_and_quit(tmp_path):
    console = _console()
    mid, final = tmp_path / "mid.json", tmp_path / "final.json"
    lines = ["g7", "zz9", "a1", "a1", "undo", "moves", "b2", f"save {mid}", "help", "quit"]
    record = play("t-first", "w", seed=0, ruleset=RULES, record=final, input_fn=_script(lines), console=console)
    out = console.file.getvalue()
    assert "illegal: path point 'zz9'" in out  # notation error, then the prompt repeats
    assert "illegal: placement a1: a1 is occupied" in out  # the agent's reply to g7 was h8, to a1 it was a10
    assert "took back a1 a10" in out
    assert "placements: " in out and "a10" in out  # moves
    assert "t-first plays h8" in out
    assert record.moves == ("g7", "h8", "b2", "a1")
    assert read_json(final).moves == record.moves and read_json(final).reason == "unfinished"
    assert read_json(mid).moves == record.moves and read_json(mid).white == "human"
    assert [e["by"] for e in record.search] == ["human", "agent", "human", "agent"]
    assert "○" in out and "●" in out and "layout, ply 4" in out and "White 2 stones" in out
    assert "   a b c d e f g h i j k l m n" in out and "14  " in out


def test_play_as_black_with_nothing_to_undo_and_end_of_input(tmp_path):
    console = _console()
    record = play("t-first", "b", seed=0, ruleset=RULES, input_fn=_script(["undo", "g7", "h8"]), console=console)
    out = console.file.getvalue()
    assert "nothing to undo" in out and "g7 is occupied" in out
    assert record.moves == ("g7", "h8", "a1") and record.black == "human" and record.result is None


def test_play_a_whole_game_to_the_end(tmp_path):
    rules = Ruleset(max_battle_plies=2, adjudicate="stones")
    # the human copies what t-first would play as White, so the game is t-first against itself
    first = FirstTestAgent()
    state, human_lines = GameState.initial(rules), []
    while not state.is_terminal():
        move = first.select(state)
        if state.current_player() == 0:
            human_lines.append(str(move))
        state = state.apply(move)
    console = _console()
    final = tmp_path / "game.json"
    record = play("t-first", "w", ruleset=rules, record=final, input_fn=_script(human_lines), console=console)
    assert record.final_state() == state and record.result == state.outcome().winner_code
    assert read_json(final).moves == record.moves and len(record.moves) == 198
    out = console.file.getvalue()
    assert "game over" in out and f"result: {record.result}" in out and "battle, ply 198" in out


def test_cli_play_saves_the_record(tmp_path):
    final = tmp_path / "g.json"
    result = runner.invoke(app, ["play", "--agent", "t-first", "--record", str(final)], input="g7\nb3\nquit\n")
    assert result.exit_code == 0, result.output
    assert read_json(final).moves == ("g7", "h8", "b3", "a1")
    bad = runner.invoke(app, ["play", "--agent", "t-first", "--human", "x"])
    assert bad.exit_code == 2 and "--human 'x'" in bad.output


class _StuckAgent:
    """An agent whose search never returns on its own (a stand-in for a long native search call);
    ``thinking`` is set once its search has started."""

    def __init__(self):
        import threading

        self.thinking = threading.Event()

    def select(self, state):
        self.thinking.set()
        time.sleep(600)


def test_ctrl_c_while_the_agent_thinks_stops_at_once_and_writes_the_record(tmp_path):
    import os
    import signal
    import threading

    console, final, agent = _console(), tmp_path / "g.json", _StuckAgent()

    def interrupt():  # Ctrl-C once the agent is thinking (a fixed delay races a loaded machine)
        if agent.thinking.wait(60):
            time.sleep(0.2)
            os.kill(os.getpid(), signal.SIGINT)

    # Python leaves SIGINT ignored when it started ignored (a runner launched in the background with
    # `cmd &`); Ctrl-C is what this test is about, so it gets Python's own handler for its duration.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt, daemon=True).start()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            play("stuck", "b", ruleset=RULES, record=final, input_fn=_script([]), console=console, agent=agent)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - t0 < 60  # not the agent's 600 s
    assert "interrupted while stuck was thinking" in console.file.getvalue()
    saved = read_json(final)
    assert saved.moves == () and saved.reason == "unfinished" and saved.white == "stuck"


def test_pool_workers_end_when_the_parent_is_killed(tmp_path):
    """kill -9 of an arena or self-play parent must not leave its workers playing on (they could write
    records beside a resumed run's)."""
    import signal
    import subprocess
    import sys

    script = (
        "import os, time, sys\n"
        "from train.jobs.workers import make_pool\n"
        "pool = make_pool(1)\n"
        "print(pool.submit(os.getpid).result(), flush=True)\n"
        "pool.submit(time.sleep, 120)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parent.parent)
    worker = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(worker, signal.SIGKILL)
    raise AssertionError(f"worker {worker} still running 15 s after its parent was killed")


def test_sigterm_stops_an_arena_as_ctrl_c_does(tmp_path):
    """``kill`` (SIGTERM) of a running ``arena``: the command prints ``interrupted`` and exits with
    status 130 (not a signal death), its worker processes end, and the finished games' records stay
    readable for the resume."""
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "arena"
    proc = subprocess.Popen([sys.executable, "cli.py", "arena", "expert", "random", "-n", "400", "--workers", "2",
                             "--seed", "1", "--out", str(out)], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 180
    while not list((out / "games").glob("*.json")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    workers = [int(p) for p in os.popen(f"pgrep -P {proc.pid}").read().split()]
    assert workers
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in err.splitlines(), err
    deadline = time.monotonic() + 15
    alive = workers
    while alive and time.monotonic() < deadline:
        alive = [w for w in workers if Path(f"/proc/{w}").exists() and "zombie" not in
                 Path(f"/proc/{w}/status").read_text(errors="replace").lower()]
        time.sleep(0.2)
    assert not alive, f"workers {alive} still running after the arena was stopped"
    saved = load_records(out, 400)
    assert 1 <= len(saved) < 400


def test_sprt_stops_the_match_as_soon_as_it_decides(tmp_path):
    """``--sprt``: random loses every game to greedy, so H0 is accepted long before the cap; the
    decision equals a by-hand pentanomial SPRT over the complete pairs of the records on disk."""
    import math

    out = tmp_path / "sprt"
    result = runner.invoke(app, ["arena", "random", "greedy", "-n", "60", "--workers", "0", "--seed", "3",
                                 "--sprt", "0,100", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output.strip().splitlines()[-1])
    records = load_records(out, 60)
    assert 2 <= len(records) < 60 and data["complete"] is False
    pairs: dict[int, float] = {}
    for i, r in records.items():
        pts = 0.5 if r.result in ("draw", None) else float(r.result == r.metadata["a_colour"])
        pairs[i // 2] = pairs.get(i // 2, 0.0) + pts
    full = [i // 2 for i in records if i % 2 == 0 and i + 1 in records]
    counts = [0] * 5
    for k in full:
        counts[int(round(2 * pairs[k]))] += 1
    # fishtest's normal-approximation LLR with a 1/2 pseudo-count per outcome (train.matches.stats)
    scores = [0, 0.25, 0.5, 0.75, 1.0]
    reg = [c + 0.5 for c in counts]
    m = sum(c * x for c, x in zip(reg, scores)) / sum(reg)
    var = sum(c * (x - m) ** 2 for c, x in zip(reg, scores)) / sum(reg)
    s0, s1 = 0.5, 1 / (1 + 10 ** (-100 / 400))
    llr = sum(counts) * (s1 - s0) * (2 * m - s0 - s1) / (2 * var)
    assert data["sprt"]["llr"] == pytest.approx(llr)
    assert data["sprt"]["decision"] == "H0" and llr <= math.log(0.05 / 0.95)
    # the progress lines show the LLR and its bounds: the last one the summary's
    import io

    from train.jobs.dashboard import LineProgress
    from train.matches.arena import run_arena

    stream = io.StringIO()
    again = run_arena("random", "greedy", 60, workers=0, seed=3, out_dir=tmp_path / "sprt2",
                      sprt=(0, 100, 0.05, 0.05), progress=LineProgress(min_gap=0, stream=stream))
    lines = stream.getvalue().strip().splitlines()
    assert len(lines) >= 2 and all("LLR " in line for line in lines), lines
    assert f"LLR {again.data['sprt']['llr']:+.2f} [-2.94, 2.94]" in lines[-1], lines[-1]
    assert runner.invoke(app, ["arena", "random", "greedy", "--sprt", "40,0", "--out", str(tmp_path / "x")]).exit_code == 2


def _index_square(task: dict) -> dict:  # a picklable task for map_indexed (sleeps so results arrive out of order)
    import time

    time.sleep(0.05 * (task["index"] % 3))
    return {"index": task["index"], "square": task["x"] * task["x"]}


@pytest.mark.parametrize("workers", [1, 2])
def test_map_indexed_returns_results_in_index_order(workers):
    """``train.jobs.workers.map_indexed``: every task's result once, sorted by index however they finish,
    inline (1 worker) or on a pool, with a progress call per result."""
    from train.jobs.workers import map_indexed

    tasks = [{"index": i, "x": x} for i, x in zip([4, 0, 3, 1, 5, 2], [7, 1, 2, 9, 3, 5])]
    calls = []
    out = map_indexed(_index_square, tasks, workers, lambda done, total: calls.append((done, total)))
    assert [r["index"] for r in out] == list(range(6))
    assert {r["index"]: r["square"] for r in out} == {t["index"]: t["x"] ** 2 for t in tasks}
    assert calls == [(k, 6) for k in range(1, 7)]
