"""The batched engine (``search.batched``): a search as a generator of leaf requests builds the tree the
search would build, whatever other searches share its evaluations (issue 64's equal-trees test, beside
``tests/test_signature.py``), and the driver's own contract."""

from __future__ import annotations

import numpy as np
import pytest

from core.state import GameState
from knowledge.agents import make_agent
from nets.evaluator import POLICY_SIZE, Evaluation
from search.batched import DriveStats, LeafRequest, Offload, drive, run_alone, search_steps
from search.config import SearchConfig
from search.mcts import Search

TREE_FIELDS = ("N", "W", "P", "flag", "first_child", "n_children", "board", "side", "action", "move_pool")


class HashEvaluator:
    """Deterministic and batch-independent: policy and value drawn from a generator seeded by the
    position's hash, so a position gets the same answer alone or in any batch. Counts its calls."""

    def __init__(self):
        self.calls = 0
        self.positions = 0

    def evaluate(self, states):
        self.calls += 1
        self.positions += len(states)
        out = []
        for s in states:
            rng = np.random.default_rng(int(s.hash) & 0xFFFF_FFFF)
            policy = rng.random(POLICY_SIZE[s.phase]).astype(np.float32)
            out.append(Evaluation(policy / policy.sum(), float(rng.uniform(-0.9, 0.9))))
        return out


def _battle_positions(n: int, seed: int = 3) -> list[GameState]:
    """``n`` battle positions of one seeded expert game."""
    agents = (make_agent("expert", seed=seed), make_agent("expert", seed=seed + 1))
    state, out = GameState.initial(), []
    while not state.is_terminal() and len(out) < n:
        if state.phase == 1 and state.ply % 3 == 0:
            out.append(state)
        state = state.apply(agents[state.side].select(state))
    return out


def _config(threads: int, root: str = "puct") -> SearchConfig:
    return SearchConfig(simulations=24, threads=threads, expansion_pruner="prune.expert:top=4",
                        value_evaluator="eval.expert:plies=1", value_mix=0.5, value_center=True, c_puct=0.25,
                        root_selection=root, gumbel_m=8, seed=7)


def _tree(search: Search) -> dict[str, np.ndarray]:
    t = search.tree
    return {f: getattr(t, f)[: t.size].copy() if f != "move_pool" else t.move_pool[: t.pool_used].copy()
            for f in TREE_FIELDS}


def _same_trees(a: dict, b: dict) -> None:
    for f in TREE_FIELDS:
        assert np.array_equal(a[f], b[f]), f


def _job(state: GameState, threads: int, root: str):
    """A search of ``state`` as a ``drive`` job returning its tree and result."""
    search = Search(None, _config(threads, root))
    result = yield from search_steps(search, state)
    return _tree(search), result


@pytest.mark.parametrize("root", ["puct", "gumbel"])
def test_one_simulation_a_step_builds_the_tree_of_the_one_thread_search(root):
    """With ``threads = 1`` a step is one simulation, in ``Search.run``'s order: the same tree."""
    for state in _battle_positions(3):
        ev = HashEvaluator()
        with Search(ev, _config(1, root)) as search:
            expected = search.run(state)
            tree = _tree(search)
        got_tree, got = run_alone(_job(state, 1, root), HashEvaluator())
        _same_trees(tree, got_tree)
        assert np.array_equal(expected.visits, got.visits) and expected.chosen == got.chosen
        assert [str(m) for m in expected.moves] == [str(m) for m in got.moves]


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_a_search_among_others_builds_the_tree_it_builds_alone(threads):
    """Issue 64: with a deterministic evaluator, a search played alone and the same search played among
    others (their leaves evaluated in the same batches) give identical trees."""
    states = _battle_positions(4)
    alone = [run_alone(_job(s, threads, "gumbel"), HashEvaluator()) for s in states]
    ev = HashEvaluator()
    together = dict(drive(((i, _job(s, threads, "gumbel")) for i, s in enumerate(states)), ev, in_flight=4,
                          threads=2))
    assert sorted(together) == list(range(len(states)))
    for i, (tree, result) in enumerate(alone):
        _same_trees(tree, together[i][0])
        assert np.array_equal(result.visits, together[i][1].visits)
    assert ev.calls < ev.positions  # the leaves of several searches shared evaluations


def test_simulations_in_flight_spread_over_the_tree():
    """``threads`` simulations a step, each seeing the previous ones' unobserved counts (WU-UCT):
    the steps are fewer than the simulations, and every simulation of the budget is backed up."""
    state = _battle_positions(1)[0]
    steps = 0
    search = Search(None, _config(4))
    gen = search_steps(search, state)
    request = next(gen)
    ev = HashEvaluator()
    try:
        while True:
            steps += 1
            assert 1 <= len(request) <= 4 and all(isinstance(r, LeafRequest) for r in request)
            from search.batched import LeafAnswer

            answers = [LeafAnswer(e, r.knowledge() if r.knowledge else None)
                       for e, r in zip(ev.evaluate([r.state for r in request]), request)]
            request = gen.send(answers)
    except StopIteration as stop:
        result = stop.value
    assert result.simulations == 24 and int(search.tree.N[0]) == 24
    assert steps < 24 and int(search.tree.O[: search.tree.size].sum()) == 0


def test_drive_runs_offloads_keeps_jobs_in_flight_and_counts():
    def job(i):
        x = yield Offload(lambda: i * 10)
        (answer,) = yield [LeafRequest(GameState.initial(), lambda: 0.25)]
        return x + answer.knowledge

    stats = DriveStats()
    ev = HashEvaluator()
    out = dict(drive(((i, job(i)) for i in range(5)), ev, in_flight=2, threads=1, stats=stats))
    assert out == {i: i * 10 + 0.25 for i in range(5)}
    assert stats.offloads == 5 and stats.leaves == 5 and max(stats.batches) <= 2
    summary = stats.summary()
    assert summary["leaves"] == 5 and set(summary["shares"]) == {"net", "knowledge", "search"}


def test_an_offload_error_is_raised_in_its_job_and_a_job_error_propagates():
    def failing():
        raise ValueError("boom")

    def job():
        try:
            yield Offload(failing)
        except ValueError as exc:
            return f"caught {exc}"

    assert run_alone(job(), HashEvaluator()) == "caught boom"

    def bad():
        yield [LeafRequest(GameState.initial(), None)]
        raise RuntimeError("job failed")

    with pytest.raises(RuntimeError, match="job failed"):
        list(drive([(0, bad())], HashEvaluator(), in_flight=1))


@pytest.mark.parametrize("in_flight, threads", [(0, 1), (1, 0)])
def test_drive_checks_its_ranges(in_flight, threads):
    with pytest.raises(ValueError, match="in_flight|threads"):
        list(drive([], HashEvaluator(), in_flight=in_flight, threads=threads))


def test_games_in_flight_and_batches_of_a_worker_pool():
    from train.learning.config import load_config
    from train.learning.selfplay import GAMES_IN_FLIGHT_CPU, games_in_flight, plan_batches

    cfg = load_config(None, ["workers=2", "device=cpu"])
    assert games_in_flight(cfg) == GAMES_IN_FLIGHT_CPU
    tasks = [{"index": i} for i in range(10)]
    batches = plan_batches(tasks, cfg)
    assert len(batches) == 2 and sorted(t["index"] for b in batches for t in b["tasks"]) == list(range(10))
    cfg = load_config(None, ["workers=1", "selfplay.games_in_flight=2", "device=cpu"])
    batches = plan_batches(tasks, cfg)  # at most 2 x games_in_flight a batch
    assert [len(b["tasks"]) for b in batches] == [4, 3, 3]
    assert all(b["games_in_flight"] <= 2 for b in batches)
    assert plan_batches([], cfg) == []
