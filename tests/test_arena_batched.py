"""Arena games on the batched engine (issue 64: ``run_arena(games_in_flight=G)``, ``arena --games-in-flight``,
the gate and the learning curve): the games played together are the games played alone, the net agents of
one batch share one evaluator and send it the leaves of several games at once, and a batched match resumes
and stops by its SPRT as a match of lone games does."""

from __future__ import annotations

import pytest

from core.records import read_json
from core.rules import Ruleset
from search.agents import SharedEvaluators, searching_agent
from train.matches.arena import ArenaError, build_agent, load_records, plan_arena_batches, run_arena

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("one_torch_thread")]

RULES = Ruleset(max_battle_plies=20, adjudicate="stones")


def _moves(out) -> dict[str, tuple[str, ...]]:
    return {p.name: read_json(p).moves for p in sorted((out / "games").glob("*.json"))}


def test_games_played_together_are_the_games_played_alone(tmp_path):
    """One-thread searches with a deterministic evaluator (``mcts``'s knowledge value): the records of a
    match played 4 games at a time have the moves of the same match played one game at a time."""
    spec = "mcts:sims=6,threads=1"
    alone = run_arena(spec, "greedy", 4, workers=0, seed=5, out_dir=tmp_path / "alone", ruleset=RULES, progress=False)
    together = run_arena(spec, "greedy", 4, workers=0, seed=5, out_dir=tmp_path / "together", ruleset=RULES,
                         progress=False, games_in_flight=4)
    assert _moves(tmp_path / "together") == _moves(tmp_path / "alone")
    assert (together.wins, together.draws, together.losses) == (alone.wins, alone.draws, alone.losses)
    records = load_records(tmp_path / "together", 4)
    assert all(r.metadata["games_in_flight"] == 4 for r in records.values())
    assert all("games_in_flight" not in r.metadata for r in load_records(tmp_path / "alone", 4).values())


def test_net_agents_of_one_batch_share_one_evaluator(monkeypatch):
    """Inside ``SharedEvaluators`` the agents of one recipe share a caller-run evaluator they do not own
    (closed when the block ends); another net setting gets its own; outside, each agent owns its own."""
    with SharedEvaluators() as shared:
        a, b = build_agent("hbm:sims=2,threads=1", 1), build_agent("hbm:sims=2,threads=1", 2)
        c = build_agent("hbm:sims=2,threads=1,batch=7", 3)
        ev = a.battle_agent.search.evaluator
        assert b.battle_agent.search.evaluator is ev and ev.inference_threads == 0
        assert c.battle_agent.search.evaluator is not ev and len(shared) == 2
        assert not a.battle_agent.owns_evaluator
        closed = []
        monkeypatch.setattr(type(ev), "close", lambda self: closed.append(self))
        for agent in (a, b, c):
            agent.close()
        assert closed == []
    assert len(closed) == 2 and len(shared) == 0
    monkeypatch.undo()
    d, e = build_agent("hbm:sims=2,threads=1", 1), build_agent("hbm:sims=2,threads=1", 2)
    try:
        assert d.battle_agent.search.evaluator is not e.battle_agent.search.evaluator
        assert d.battle_agent.owns_evaluator
    finally:
        d.close()
        e.close()


def test_one_agents_leaves_of_several_games_go_to_the_net_in_one_call(tmp_path, monkeypatch):
    """Two games of ``hbm`` (upper-net battle search) against the expert in flight together: one net
    evaluator serves both games, and some of its calls hold leaves of both (more than the search's one
    simulation a step)."""
    from nets.evaluator import NetEvaluator

    calls: list[tuple[int, int]] = []
    evaluate = NetEvaluator.evaluate

    def counted(self, states):
        calls.append((id(self), len(states)))
        return evaluate(self, states)

    monkeypatch.setattr(NetEvaluator, "evaluate", counted)
    run_arena("hbm:sims=4,threads=1", "expert", 2, workers=0, seed=2, out_dir=tmp_path / "m", ruleset=RULES,
              progress=False, games_in_flight=2)
    assert len({who for who, _ in calls}) == 1
    assert max(n for _, n in calls) == 2


def test_a_batched_match_resumes_and_stops_by_its_sprt(tmp_path):
    out = tmp_path / "m"
    first = run_arena("random", "greedy", 6, workers=0, seed=4, out_dir=out, ruleset=RULES, progress=False,
                      games_in_flight=3)
    moves = _moves(out)
    (out / "games" / "0003.json").unlink()
    kept = {p.name: p.stat().st_mtime_ns for p in (out / "games").glob("*.json")}
    again = run_arena("random", "greedy", 6, workers=0, seed=4, out_dir=out, ruleset=RULES, progress=False,
                      games_in_flight=3)
    assert again.played == 1 and _moves(out) == moves and again.data["wins"] == first.data["wins"]
    assert {p.name: p.stat().st_mtime_ns for p in (out / "games").glob("*.json") if p.name != "0003.json"} == kept
    # random loses every game to greedy: the SPRT accepts H0 within a few batches of 4
    test = run_arena("random", "greedy", 200, workers=0, seed=4, out_dir=tmp_path / "sprt", ruleset=RULES,
                     progress=False, sprt=(0, 100, 0.05, 0.05), games_in_flight=4)
    assert test.data["sprt"]["decision"] == "H0" and test.games < 200 and test.games % 4 == 0


def test_batches_share_the_games_and_the_cores():
    tasks = [{"index": i} for i in range(10)]
    batches = plan_arena_batches(tasks, 4, 2)
    assert sorted(t["index"] for b in batches for t in b["tasks"]) == list(range(10))
    assert all(len(b["tasks"]) <= 4 and b["games_in_flight"] == len(b["tasks"]) for b in batches)
    assert all(t["games_in_flight"] == 4 for b in batches for t in b["tasks"])
    assert plan_arena_batches([], 4, 2) == []
    with pytest.raises(ArenaError, match="games_in_flight"):
        run_arena("random", "random", 2, workers=0, out_dir="unused", games_in_flight=0)


def test_searching_agent_finds_the_searching_part():
    agent = build_agent("hbm:sims=2,threads=1", 0)
    try:
        from core.state import GameState

        assert searching_agent(agent, GameState.initial()) is None  # the expert lays out
    finally:
        agent.close()
