"""lab.bench.layout_worth: the summary against the statistics module, the play-outs against the rollout
evaluator played by hand on a short-battle arena, resuming, and the errors."""

import json
import math
import statistics
import subprocess
import sys
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.board import NUM_POINTS
from core.records import read_record
from core.rules import Ruleset
from lab.bench.layout_worth import WORTH_FILE, WorthError, arena_games, paired_difference, run_layout_worth, worth_stats
from train.matches.arena import run_arena

RULES = Ruleset(max_battle_plies=12, adjudicate="stones")  # short battles: cheap play-outs


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0, 1), st.booleans()), min_size=2, max_size=12))
def test_worth_stats_against_the_statistics_module(rows):
    played, worth, white = (list(x) for x in zip(*rows))
    s = worth_stats(np.array(played), np.array(worth), np.array(white))
    mean = statistics.fmean(worth)
    se = statistics.stdev(worth) / math.sqrt(len(worth))
    assert s["games"] == len(rows) and s["played"] == pytest.approx(statistics.fmean(played))
    assert s["worth"] == pytest.approx(mean) and s["se"] == pytest.approx(se, abs=1e-12)
    assert s["ci95"] == pytest.approx((mean - 1.96 * se, mean + 1.96 * se), abs=1e-12)
    for colour, flag in (("white", True), ("black", False)):
        part = [w for w, c in zip(worth, white) if c == flag]
        assert s[colour] == (pytest.approx(statistics.fmean(part)) if part else None)
    var = statistics.variance(worth)
    if var > 1e-12:
        assert s["variance_ratio"] == pytest.approx(statistics.variance(played) / var, rel=1e-6)
    gaps = [p - w for p, w in zip(played, worth)]
    gap_se = statistics.stdev(gaps) / math.sqrt(len(gaps))
    assert s["luck"]["mean"] == pytest.approx(statistics.fmean(gaps), abs=1e-12)
    assert s["luck"]["se"] == pytest.approx(gap_se, abs=1e-12)
    if gap_se > 1e-9:
        assert s["luck"]["z"] == pytest.approx(statistics.fmean(gaps) / gap_se, rel=1e-6)
    with pytest.raises(ValueError, match="at least 2 games"):
        worth_stats(np.array(played[:1]), np.array(worth[:1]), np.array(white[:1]))


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.integers(0, 20), st.tuples(st.sampled_from("wb"), st.floats(0, 1)), max_size=12),
       st.dictionaries(st.integers(0, 20), st.tuples(st.sampled_from("wb"), st.floats(0, 1)), max_size=12))
def test_paired_difference_against_the_statistics_module(first, other):
    first = {(k, v[0]): v for k, v in first.items()}  # keys as run_layout_worth's: (game seed, A's colour)
    other = {(k, v[0]): v for k, v in other.items()}
    pairs = [other[k][1] - first[k][1] for k in first if k in other and first[k][0] == other[k][0]]
    p = paired_difference(first, other)
    if len(pairs) < 2:
        assert p is None
        return
    se = statistics.stdev(pairs) / math.sqrt(len(pairs))
    assert p["games"] == len(pairs) and p["worth"] == pytest.approx(statistics.fmean(pairs), abs=1e-12)
    assert p["se"] == pytest.approx(se, abs=1e-12)
    assert p["z"] == (None if p["se"] == 0 else pytest.approx(p["worth"] / p["se"]))


@pytest.fixture(scope="module")
def arena_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("worth") / "arena"
    run_arena("random", "greedy", 4, workers=0, seed=5, out_dir=out, ruleset=RULES, progress=False)
    return out


def _by_hand(record_path, key, playouts, seed, ply=NUM_POINTS):
    """A's mean score over the play-outs written out: the record's position after ``ply`` placements,
    the rollout evaluator (the expert finishing the layout, then no battle limit) under the record's
    rules, seeded (seed, crc32(key), i)."""
    from lab.rollout import ROLLOUT_PLIES_MAX, RolloutEvaluator

    record = read_record(record_path)[0]
    state = record.replay()[ply]
    assert state.ruleset == RULES
    judge = RolloutEvaluator(battle_plies=ROLLOUT_PLIES_MAX)
    a = 0 if record.metadata["a_colour"] == "w" else 1
    scores = []
    for i in range(playouts):
        end = judge.rollout(state, np.random.SeedSequence([seed, zlib.crc32(key.encode()), i]))
        scores.append((float(end.returns()[a]) + 1.0) / 2.0)
    return float(np.mean(scores))


def test_layout_worth_plays_each_layout_out_and_resumes(arena_dir, tmp_path):
    arena = arena_games(arena_dir)
    games = arena["games"]
    assert (arena["a"], arena["b"], arena["seed"]) == ("random", "greedy", 5)
    assert len(games) == 4 and {g["a_colour"] for g in games} == {"w", "b"}
    assert [g["file"] for g in games] == sorted(f.name for f in (arena_dir / "games").glob("*.json"))
    assert all(g["key"] == f"{arena_dir.name}/{g['file']}" for g in games)
    assert [g["game_seed"] for g in games] == [read_record(arena_dir / "games" / g["file"])[0].metadata["game_seed"]
                                               for g in games]
    out = tmp_path / "out"
    r = run_layout_worth([arena_dir], playouts=2, seed=9, out=str(out))
    a = r["arenas"][0]
    assert (a["a"], a["b"], a["games"], a["difference"]) == ("random", "greedy", 4, None)
    files = sorted((arena_dir / "games").glob("*.json"))
    expected = [_by_hand(f, f"{arena_dir.name}/{f.name}", 2, 9) for f in files]
    assert a["worth"] == pytest.approx(np.mean(expected))
    assert a["played"] == pytest.approx(np.mean([g["played"] for g in games]))
    # resume: a game dropped from the saved file is played out again, to the same scores
    saved = json.loads((out / WORTH_FILE).read_text())
    dropped = sorted(saved["games"])[1]
    del saved["games"][dropped]
    (out / WORTH_FILE).write_text(json.dumps(saved))
    again = run_layout_worth([arena_dir, arena_dir], playouts=2, seed=9, out=str(out))
    assert [x["worth"] for x in again["arenas"]] == pytest.approx([a["worth"]] * 2)
    assert again["arenas"][1]["difference"]["worth"] == pytest.approx(0.0)
    assert r["arenas"][0]["paired"] is None  # the first arena is what the others are paired with
    assert again["arenas"][1]["paired"] == {"games": 4, "worth": 0.0, "se": 0.0, "z": None}  # the same games
    # the same pair of specs twice: one pool of both arenas' games, each distinct game (game seed, colour) once
    assert r["pooled"] == [] and len(again["pooled"]) == 1
    pool = again["pooled"][0]
    assert (pool["a"], pool["b"], pool["arenas"], pool["games"]) == ("random", "greedy", 2, 4)
    assert pool["worth"] == pytest.approx(a["worth"]) and pool["played"] == pytest.approx(a["played"])
    assert pool["se"] == pytest.approx(np.std(expected, ddof=1) / np.sqrt(4))
    assert pool["paired"] is None  # the first arena's own pair of specs
    with pytest.raises(WorthError, match="made with --playouts 2 --seed 9"):
        run_layout_worth([arena_dir], playouts=3, seed=9, out=str(out))
    (out / WORTH_FILE).write_text('{"playouts": 2, "seed": 9, "games": [1, 2]}')
    with pytest.raises(WorthError, match="not a worth.json of this command"):
        run_layout_worth([arena_dir], playouts=2, seed=9, out=str(out))


def test_layout_worth_from_an_earlier_ply(arena_dir, tmp_path):
    """--ply P: the play-outs start after the game's first P placements, the expert finishing the
    layout; a worth.json of another ply is refused."""
    files = sorted((arena_dir / "games").glob("*.json"))
    out = tmp_path / "out"
    r = run_layout_worth([arena_dir], playouts=2, seed=4, out=str(out), ply=150)
    assert r["ply"] == 150
    expected = [_by_hand(f, f"{arena_dir.name}/{f.name}", 2, 4, ply=150) for f in files]
    assert r["arenas"][0]["worth"] == pytest.approx(np.mean(expected))
    early = [g["jfen"] for g in arena_games(arena_dir, 150)["games"]]
    assert early == [read_record(f)[0].replay()[150].to_jfen() for f in files]
    assert not set(early) & {g["jfen"] for g in arena_games(arena_dir)["games"]}
    assert json.loads((out / WORTH_FILE).read_text())["ply"] == 150
    with pytest.raises(WorthError, match="--ply 150"):
        run_layout_worth([arena_dir], playouts=2, seed=4, out=str(out))
    with pytest.raises(ValueError, match="ply must be in 0..196"):
        run_layout_worth([arena_dir], ply=197)
    with pytest.raises(ValueError, match="ply must be in 0..196"):
        arena_games(arena_dir, -1)


def test_layout_worth_pairs_two_arenas_game_by_game(arena_dir, tmp_path):
    """Another arena with the same seed (so the same game files, A of the same colour in each): its
    worth minus the first's, game by game, against the play-outs run by hand. A third with another
    seed pairs with neither, and the pool of the second and third pairs with the first's games
    only through the second's."""
    other, reseeded = tmp_path / "other", tmp_path / "reseeded"
    run_arena("greedy", "greedy", 4, workers=0, seed=5, out_dir=other, ruleset=RULES, progress=False)
    run_arena("greedy", "greedy", 4, workers=0, seed=6, out_dir=reseeded, ruleset=RULES, progress=False)
    r = run_layout_worth([arena_dir, other, reseeded], playouts=2, seed=3)
    names = sorted(f.name for f in (arena_dir / "games").glob("*.json"))
    assert names == sorted(f.name for f in (other / "games").glob("*.json"))
    colour = [[read_record(d / "games" / n)[0].metadata["a_colour"] for n in names] for d in (arena_dir, other)]
    assert colour[0] == colour[1]
    d = [_by_hand(other / "games" / n, f"other/{n}", 2, 3) - _by_hand(arena_dir / "games" / n, f"arena/{n}", 2, 3)
         for n in names]
    p = r["arenas"][1]["paired"]
    assert p["games"] == 4 and p["worth"] == pytest.approx(statistics.fmean(d))
    assert p["se"] == pytest.approx(statistics.stdev(d) / 2)
    assert p["worth"] == pytest.approx(r["arenas"][1]["difference"]["worth"])  # all games paired: the same mean
    assert names == sorted(f.name for f in (reseeded / "games").glob("*.json"))  # the same files, another seed
    assert r["arenas"][2]["paired"] is None
    assert len(r["pooled"]) == 1 and r["pooled"][0]["games"] == 8 and r["pooled"][0]["paired"] == p


def test_layout_worth_pairs_a_version_1_replay_by_game_seed(tmp_path):
    """Version-1 arenas (game seed ``seed + k``) with ``--seed 5`` and ``--seed 6`` play the same pair
    (game seed 6) as the first's pair 1 and the second's pair 0: those two games, and only they, pair."""
    dirs = []
    for seed in (5, 6):
        d = tmp_path / f"v1-{seed}"
        d.mkdir()
        (d / "arena.json").write_text(json.dumps({"format": "jiu-arena", "version": 1, "a": "random", "b": "greedy",
                                                  "seed": seed, "ruleset": RULES.model_dump(), "games": 4}))
        run_arena("random", "greedy", 4, workers=0, seed=seed, out_dir=d, ruleset=RULES, progress=False)
        dirs.append(d)
    assert [read_record(dirs[0] / "games" / f"000{i}.json")[0].moves for i in (2, 3)] == \
        [read_record(dirs[1] / "games" / f"000{i}.json")[0].moves for i in (0, 1)]  # the same two games
    r = run_layout_worth(dirs, playouts=2, seed=2, out=str(tmp_path / "out"))
    assert r["arenas"][1]["paired"] is not None and r["arenas"][1]["paired"]["games"] == 2
    assert r["pooled"][0]["games"] == 6 and r["pooled"][0]["paired"] is None  # the replayed pair counted once
    scores = json.loads((tmp_path / "out" / WORTH_FILE).read_text())["games"]

    def colour(d, i):  # A's colour in game i of arena d
        return read_record(d / "games" / f"000{i}.json")[0].metadata["a_colour"]

    def worth(d, i):  # A's worth of game i of arena d, from its saved play-outs
        m = statistics.fmean(scores[f"{d.name}/000{i}.json"])
        return m if colour(d, i) == "w" else 1 - m

    distinct = [worth(dirs[0], 0), worth(dirs[0], 1), worth(dirs[1], 2), worth(dirs[1], 3),
                (worth(dirs[0], 2) + worth(dirs[1], 0)) / 2, (worth(dirs[0], 3) + worth(dirs[1], 1)) / 2]
    assert r["pooled"][0]["worth"] == pytest.approx(statistics.fmean(distinct))
    colours = [colour(dirs[0], 0), colour(dirs[0], 1), colour(dirs[1], 2), colour(dirs[1], 3), colour(dirs[0], 2),
               colour(dirs[0], 3)]
    for name, c in (("white", "w"), ("black", "b")):  # the pool's worth by A's colour
        assert r["pooled"][0][name] == pytest.approx(statistics.fmean(w for w, k in zip(distinct, colours) if k == c))


def test_layout_worth_errors_are_one_line(tmp_path, arena_dir):
    with pytest.raises(WorthError, match="not an arena directory"):
        arena_games(tmp_path)
    cmd = [sys.executable, "-m", "lab.bench.layout_worth"]
    cases = (([str(tmp_path)], "not an arena directory"), ([str(arena_dir), "--playouts", "0"], "--playouts"),
             ([str(arena_dir), "--ply", "-1"], "--ply"))
    for args, needle in cases:
        p = subprocess.run(cmd + args, capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr.startswith("error: ") and needle in p.stderr
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
