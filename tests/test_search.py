"""WU-UCT search: forced wins, statistics invariants (also under many threads), determinism, reuse."""

from __future__ import annotations

import math
import random
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core import GameState
from core.jfen import format_jfen
from core.board import POINT_BY_NAME
from core.notation import Move
from nets.evaluator import Evaluation, UniformEvaluator
from search.mcts import Search, SearchConfig
from search.tree import EXPANDED, TERMINAL
from tests.strategies import played_positions, random_battle_jfen, rulesets


def _jfen(white: list[str], black: list[str], side: str = "w") -> str:
    board = np.zeros(196, np.int8)
    for names, v in ((white, 1), (black, 2)):
        for n in names:
            board[POINT_BY_NAME[n]] = v
    return format_jfen(board, 0 if side == "w" else 1, 1, 0, 300)


ROW14 = [f"{c}14" for c in "abcdefghijklmn"]
# White: three corners of cell a1 (a1, b1, a2) and c2 next to the empty corner b2; 14 more on row 14.
# Black has 4 stones: the square capture c2-b2 leaves it 3 < loss_below = 4, so White wins at once.
SQUARE_WIN = _jfen(["a1", "b1", "a2", "c2"] + ROW14, ["k5", "k7", "m5", "m9"])
# A diagonal Dalian (rule book 5): b2 is a corner of White's square a1-b1-a2-b2, and stepping b2-c2
# forms the square c2-d2-c3-d3; the capture leaves Black 3 < 4 stones. Only the shuttle b2-c2 wins.
DALIAN_WIN = _jfen(["a1", "b1", "a2", "b2", "d2", "c3", "d3"] + ROW14, ["k5", "k7", "m5", "m9"])


def _search(config: SearchConfig, evaluator=None) -> Search:
    return Search(evaluator or UniformEvaluator(), config)


@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("formula", ["puct", "printed"])
def test_finds_the_square_capture_that_ends_the_game(prune, formula):
    state = GameState.from_jfen(SQUARE_WIN)
    winning = [m for m in state.legal_moves() if state.apply(m).outcome().winner_code == "w"]
    assert {m.path_str() for m in winning} == {"c2-b2"}
    config = SearchConfig(simulations=300, expansion_pruner="prune.expansion" if prune else None,
                          capture_pruner="prune.capture" if prune else None, formula=formula)
    with _search(config) as search:
        result = search.run(state)
    best = result.best()
    assert best.path_str() == "c2-b2"
    assert result.q[result.moves.index(best)] == 1.0  # every visit of the winning move ends the game
    assert state.apply(best).outcome().winner_code == "w"  # a full legal move: lazy victims resolved
    for move in result.moves:  # every root child is a complete legal move, visited or not
        state.check_move(move)
    assert result.value > 0


def test_finds_the_dalian_shuttle_win():
    state = GameState.from_jfen(DALIAN_WIN)
    winners = {m.path_str() for m in state.legal_moves() if state.apply(m).outcome().winner_code == "w"}
    assert winners == {"b2-c2"}
    with _search(SearchConfig(simulations=400, expansion_pruner=None, capture_pruner=None)) as search:
        result = search.run(state)
    assert result.best().path_str() in winners


def _check_invariants(search: Search, simulations: int) -> None:
    tree = search.tree
    n = tree.size
    assert (tree.O[:n] == 0).all(), "every unobserved count must be back to 0"
    assert int(tree.N[0]) == simulations
    for node in range(n):
        if tree.flag[node] == EXPANDED:
            first, k = int(tree.first_child[node]), int(tree.n_children[node])
            assert int(tree.N[node]) == 1 + int(tree.N[first:first + k].sum()), node
            assert (tree.parent[first:first + k] == node).all()


class _SlowUniform(UniformEvaluator):
    """Sleeps a little per call (releasing the GIL) so that threads interleave everywhere."""

    def __init__(self, seed: int = 0):
        super().__init__()
        self.rng = random.Random(seed)

    def evaluate(self, states):
        time.sleep(self.rng.random() * 2e-4)
        out = super().evaluate(states)
        return [Evaluation(e.policy, self.rng.uniform(-0.5, 0.5)) for e in out]


@pytest.mark.parametrize("threads", [1, 4, 16])
def test_statistics_invariants_after_search(threads):
    state = GameState.from_jfen(random_battle_jfen(random.Random(4), 40, 40, 4))
    with _search(SearchConfig(simulations=1200, threads=threads), _SlowUniform()) as search:
        result = search.run(state)
        _check_invariants(search, 1200)
        assert result.simulations == 1200 and int(result.visits.sum()) == 1199
        # Layout root, too (the 196th placement switches side and phase).
        layout = GameState.initial()
        search.run(layout)
        _check_invariants(search, 1200)


def test_deterministic_mode_repeats_exactly():
    state = GameState.from_jfen(random_battle_jfen(random.Random(9), 30, 35, 3))
    runs = []
    for _ in range(2):
        config = SearchConfig(simulations=300, threads=1, seed=5, dirichlet_epsilon=0.25)
        with _search(config, _SlowUniform(seed=1)) as search:
            r = search.run(state)
            runs.append((r.visits.tolist(), [str(m) for m in r.moves], r.priors.tolist()))
    assert runs[0] == runs[1]


def test_tree_reuse_keeps_the_subtree_of_the_position_played():
    state = GameState.from_jfen(random_battle_jfen(random.Random(2), 40, 40, 2))
    with _search(SearchConfig(simulations=300)) as search:
        first = search.run(state)
        move = first.best()
        child_visits = int(first.visits[[str(m) for m in first.moves].index(str(move))])
        after = state.apply(move)
        reply = after.legal_moves()[0]
        grandchild = after.apply(reply)
        kept = _subtree_visits(search, grandchild)
        second = search.run(grandchild)
        assert int(search.tree.N[0]) == kept + 300
        assert child_visits >= kept
        _check_counts_zero(search)
    assert second.simulations == 300


def _subtree_visits(search: Search, state: GameState) -> int:
    tree = search.tree
    for node in range(tree.size):
        if tree.hash[node] == np.uint64(state.hash) and np.array_equal(tree.board[node], state.board):
            return int(tree.N[node])
    return 0


def _check_counts_zero(search: Search) -> None:
    assert (search.tree.O[: search.tree.size] == 0).all()


def test_terminal_root_is_rejected():
    lone = GameState.from_jfen("/".join(["W13"] + ["14"] * 13) + " b battle 0 300")
    with _search(SearchConfig(simulations=10)) as search, pytest.raises(ValueError, match="terminal"):
        search.run(lone)


# ============================================================================ expansion kernels
@pytest.mark.parametrize("seed", range(6))
def test_kept_children_matches_a_naive_gather(seed):
    """``kept_children`` against plain Python over the path set: kept paths, flags, squares, upper
    actions (``encode_upper``) and move-pool size."""
    from nets.encoding import encode_upper
    from search.tree import kept_children

    rng = random.Random(seed)
    state = GameState.from_jfen(random_battle_jfen(rng, rng.choice([10, 40, 80]), rng.choice([10, 40, 80]), 4))
    ps = state.paths()
    keep = np.array(sorted(rng.sample(range(ps.m), rng.randint(1, ps.m))), np.int64)
    pts, off, jump, squares, actions, pool = kept_children(ps.pts, ps.off, ps.jump, ps.nsq, keep)
    paths = [ps.path(int(i)) for i in keep]
    assert [tuple(int(p) for p in pts[off[i]:off[i + 1]]) for i in range(len(keep))] == paths
    assert jump.tolist() == [int(ps.jump[i]) for i in keep]
    assert squares.tolist() == [int(ps.nsq[i]) for i in keep]
    assert actions.tolist() == [encode_upper(p, bool(ps.jump[i])) for p, i in zip(paths, keep)]
    assert pool == sum(len(p) for p in paths) + sum(min(int(ps.nsq[i]), 4) for i in keep)
    assert (pts.dtype, off.dtype, jump.dtype, squares.dtype, actions.dtype) == (np.int16, np.int32, np.int8, np.int8, np.int32)


def test_shared_prior_splits_an_action_among_the_children_sharing_it():
    from search.tree import shared_prior

    rng = np.random.default_rng(0)
    policy = rng.random(300).astype(np.float32)
    for actions in ([5], [7, 7, 3, 7, 299, 3], list(rng.integers(0, 40, 200))):
        actions = np.array(actions, np.int32)
        want = [float(policy[a]) / int((actions == a).sum()) for a in actions.tolist()]
        assert shared_prior(policy, actions).tolist() == want


@pytest.mark.parametrize("formula", [0, 1])
def test_select_node_matches_a_naive_puct_scan(formula):
    """``select_node`` against Eq. 1 written out in Python, first-play urgency and the known results of
    unvisited terminal children included."""
    import math

    from search.tree import select_node

    rng = np.random.default_rng(formula)
    for trial in range(50):
        n = 12
        N = rng.integers(0, 4, n).astype(np.int32)
        O = rng.integers(0, 2, n).astype(np.int32)
        W = rng.uniform(-1, 1, n) * N
        P = rng.dirichlet(np.ones(n)).astype(np.float32)
        side = rng.integers(0, 2, n).astype(np.int8)
        mover = rng.integers(0, 2, n).astype(np.int8)
        flag = rng.choice(np.array([0, 3], np.int8), n)  # UNEXPANDED or TERMINAL
        terminal_value = rng.choice(np.array([-1.0, 0.0, 0.4, 1.0], np.float32), n)
        first = np.full(n, 2, np.int32)
        count = np.full(n, n - 2, np.int32)
        node = int(rng.integers(0, 2))
        q_node = float(W[node]) / int(N[node]) if N[node] > 0 else 0.0
        fpu = (q_node if mover[node] == side[node] else -q_node) - 0.2
        sq = math.sqrt(max(float(N[node] + O[node]), 1.0))
        scores = []
        for c in range(2, n):
            if N[c] > 0:
                q = float(W[c]) / int(N[c])
            elif flag[c] == 3:  # the child's result, for its side to move, seen by the side choosing here
                q = float(terminal_value[c]) * (1 if side[c] == mover[c] else -1)
            else:
                q = fpu
            u = 1.5 * float(P[c]) * sq / (1 + int(N[c]) + int(O[c]))
            scores.append(q + u if formula == 0 else (q + 1.5 * float(P[c])) * sq / (1 + int(N[c]) + int(O[c])))
        want = 2 + max(range(n - 2), key=lambda i: (scores[i], -i))
        assert select_node(N, O, W, P, flag, terminal_value, first, count, side, mover, node, 1.5, 0.2, formula) == want


def test_bench_search_reports_every_figure_and_its_settings():
    from bench.search import run_search_benchmark

    result = run_search_benchmark((8,), (1, 2), progress=False, net_seconds=0.05, torch_threads=1)
    assert result["settings"]["serial_torch_threads"] == 1 and result["settings"]["threads"] == [1, 2]
    rows = {(r["phase"], r["search"], r["threads"]) for r in result["rows"]}
    assert rows == {(p, s, t) for p in ("layout", "battle") for s, t in (("serial", 1), ("wu-uct", 1), ("wu-uct", 2))}
    assert all(r["sims_per_s"] > 0 for r in result["rows"])
    for key in ("wuuct_vs_serial_8", "two_vs_one_thread", "search_vs_net_only"):
        assert result[key] > 0
    assert set(result["net_only_per_s"]["battle"]) == {"1", "2"} and result["net_only_serial_per_s"]["layout"] > 0
    assert result["settings"]["wuuct_in_flight"] == 2 and result["settings"]["compiled_nets"]
    for phase in ("layout", "battle"):
        assert 0 < result["search_seconds_per_simulation"][phase] < 1
        assert 0 < result["search_cpu_seconds_per_simulation"][phase] < 1
        assert result["ceiling_vs_serial"][phase] > 0
    # one thread: batch 1 (and the 16 of the one-thread scan); 2 threads, 2 in flight: batch 1 too
    assert set(result["net_only_one_thread_per_s"]["battle"]) == {"1", "16"}


def test_net_agents_stop_their_evaluator_thread_on_close():
    """An arena closes each agent after its game: the net agents' inference threads must end with it
    (they leaked one thread and its nets per game before)."""
    import catalog  # noqa: F401 - registers the search agents
    from knowledge.plugins import REGISTRY

    agent = REGISTRY.create("jfa:sims=2,threads=1", "agent")
    agent.select(GameState.initial())
    threads = agent.search.evaluator._threads
    assert threads and all(t.is_alive() for t in threads)
    agent.close()
    assert not any(t.is_alive() for t in threads)


# ============================================================================ terminal bound
class _ConstantEvaluator:
    """Uniform policy, value ``value`` for every position."""

    name = "constant"

    def __init__(self, value: float):
        self.value = value

    def evaluate(self, states):
        from nets.evaluator import UNIFORM_POLICY

        return [Evaluation(UNIFORM_POLICY[s.phase], self.value) for s in states]


def _with_repeated_child(state: GameState, rng: random.Random, times: int) -> GameState:
    """``state`` with a history in which the position after one of its quiet steps already occurred
    ``times`` times (its ``quiet`` counter made to match), or ``state`` when it has no quiet step."""
    ps = state.paths()
    quiet = [i for i in range(ps.m) if not ps.jump[i] and not ps.nsq[i]]
    if not quiet or times == 0:
        return state
    child = state.apply(Move(ps.path(rng.choice(quiet))))
    history = np.array([child.hash] * times + [state.hash], np.uint64)
    return GameState.from_arrays(state.board.copy(), state.side, state.phase, len(history) - 1, state.ply,
                                 state.counts, state.hash, history, state.ruleset)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(jfen=played_positions(), ruleset=rulesets(), at_cap=st.booleans(), times=st.integers(0, 2), seed=st.integers(0, 99),
       twofold=st.booleans())
def test_children_status_and_the_terminal_bound_match_the_game_after_each_child(jfen, ruleset, at_cap, times, seed,
                                                                                twofold):
    """``children_status`` on the children an expansion writes (square victims still pending) against
    ``GameState.apply`` with any legal victims and its ``outcome``; the expanded leaf's value is
    ``max(evaluator value, best game end among the children)`` with ``terminal_bound`` and the
    evaluator's value without it. With ``twofold_draw`` the search's ends are the rule book's under
    ``repetition_draw`` 2, whatever the game's own ``repetition_draw``."""
    from core.board import NUM_POINTS
    from core.rules import Ruleset
    from core.status import END_REASONS
    from search.tree import children_status

    state = GameState.from_jfen(jfen)
    if at_cap:  # every child reaches the ply cap
        ruleset = Ruleset(**{**ruleset.model_dump(), "max_battle_plies": max(1, state.ply - NUM_POINTS + 1)})
    state = GameState.from_jfen(jfen, ruleset)
    assume(state.phase == 1 and not state.is_terminal())
    state = _with_repeated_child(state, random.Random(seed), times)
    assume(not state.is_terminal())
    values = {}
    for bound in (True, False):
        search = Search(_ConstantEvaluator(-0.5), SearchConfig(expansion_pruner=None, terminal_bound=bound,
                                                               twofold_draw=twofold))
        search._root_state = state
        search._new_tree(state)
        values[bound] = search._expand(search.tree, 0, [0])
    tree = search.tree
    first, k = int(tree.first_child[0]), int(tree.n_children[0])
    searched = ruleset.model_copy(update={"repetition_draw": 2}) if twofold else ruleset
    reason, winner = children_status(tree.side, tree.counts, tree.ply, tree.quiet, tree.hash, tree.pending, first, k,
                                     state.history, len(state.history), searched.vector)
    ends = []
    for i in range(k):
        c = first + i
        o, n = int(tree.move_off[c]), int(tree.move_npath[c])
        path, jump = tuple(int(p) for p in tree.move_pool[o:o + n]), bool(tree.move_jump[c])
        victims = tuple(sorted(state.victims_left(path, jump)))[: int(tree.pending[c])]
        after = state.apply(Move(path, jump, victims))
        if twofold:  # the same position under the search's rules (history and all)
            after = GameState.from_arrays(after.board, after.side, after.phase, after.quiet, after.ply, after.counts,
                                          after.hash, after.history, searched)
        outcome = after.outcome()
        assume(outcome.reason != "no-move")  # the kernel assumes the child's side can move
        assert END_REASONS[reason[i]] == outcome.reason, (i, path, victims)
        assert winner[i] == (outcome.winner if outcome.terminal else -2)
        if outcome.terminal:
            ends.append(1.0 if outcome.winner == state.side else 0.0 if outcome.winner == -1 else -1.0)
    assert values[True] == max([-0.5] + ends)
    assert values[False] == -0.5


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(jfen=played_positions(), times=st.integers(0, 2), at_least=st.integers(1, 3), seed=st.integers(0, 99))
def test_returning_paths_are_the_quiet_moves_back_to_a_position_of_the_history(jfen, times, at_least, seed):
    """``search.tree.returning_paths`` against applying every legal path and counting the position after it
    in the history; with ``twofold_draw`` an expansion behind ``prune.expansion`` keeps those paths
    (their children marked drawn), whatever the pruner's level."""
    from search.tree import returning_paths

    state = GameState.from_jfen(jfen)
    assume(state.phase == 1 and not state.is_terminal())
    state = _with_repeated_child(state, random.Random(seed), times)
    assume(not state.is_terminal())
    ps = state.paths()
    history = np.asarray(state.history, np.uint64)
    seen = [int(h) for h in history]
    expected = [i for i in range(ps.m)
                if seen.count(int(state.apply(Move(ps.path(i), bool(ps.jump[i]),
                                                   tuple(sorted(state.victims_left(ps.path(i), bool(ps.jump[i]))))[:int(ps.nsq[i])])).hash)) >= at_least]
    got = returning_paths(state.side, np.uint64(state.hash), ps.m, ps.pts, ps.off, ps.jump, ps.nsq, history,
                          len(history), at_least)
    assert list(got) == expected
    if at_least == 1:
        search = Search(_ConstantEvaluator(0.5), SearchConfig(expansion_pruner="prune.expansion", twofold_draw=True))
        search._root_state = state
        search._new_tree(state)
        search._expand(search.tree, 0, [0])
        tree = search.tree
        first, k = int(tree.first_child[0]), int(tree.n_children[0])
        kept = {str(search._move_of(c)).split("/")[0]: c for c in range(first, first + k)}
        for i in expected:
            c = kept[ps.path_str(i)]
            assert tree.flag[c] == TERMINAL and tree.terminal_value[c] == 0.0
        if expected:  # the game goes on there: a search of it, the tree kept, still has moves to choose from
            child = state.apply(Move(ps.path(expected[0])))
            assume(not child.is_terminal())
            result = search.run(child, simulations=2)
            assert len(result.moves) >= 1 and result.visits.sum() >= 1


def test_terminal_bound_sees_the_draw_the_side_behind_can_force():
    """A side behind on stones that can end the game by repetition: with the centred value plugin its
    leaf is worth at least the centred draw (``tanh((0 - margin(root)) / scale)`` for it), which is
    above its own static value, and exactly its static value without the bound."""
    from tests.strategies import shuffle_to_a_draw

    state, draw = next(filter(None, (shuffle_to_a_draw(40, 30, seed) for seed in range(40))))
    values = {}
    for bound in (True, False):
        config = SearchConfig(simulations=1, expansion_pruner="prune.expert:top=4", value_evaluator="eval.expert",
                              value_mix=1.0, value_center=True, terminal_bound=bound)
        with Search(UniformEvaluator(), config) as search:
            search.run(state, simulations=1)  # the root's margin is the centre: a draw is worth -tanh(margin/scale)
            plugin = search._value_plugin
            values[bound] = float(search.tree.W[0]) * (1 if search.tree.mover[0] == state.side else -1)
    draw_value = math.tanh(-plugin.margin(state) / plugin.scale)
    assert draw_value > 0  # behind: the draw is better than the centre
    assert values[False] == pytest.approx(0.0)  # the root's own centred value
    assert values[True] == pytest.approx(draw_value)


class _LaterEvaluator(UniformEvaluator):
    """A uniform evaluator with ``evaluate_later``, logging when a leaf is queued and when it is read."""

    def __init__(self, log: list[str]):
        self.log = log

    def evaluate_later(self, states):
        self.log.append("queued")

        def answer():
            self.log.append("read")
            return self.evaluate(states)
        return answer


def test_a_leaf_queues_the_net_before_its_knowledge_and_reads_it_after():
    """``Search._expand`` overlaps the net with the expert's two-ply value: it queues the leaf with the
    evaluator's ``evaluate_later``, runs the knowledge job, then reads the net's answer."""
    log: list[str] = []
    state = GameState.from_jfen(SQUARE_WIN)
    config = SearchConfig(simulations=6, threads=1, expansion_pruner="prune.expert:top=4",
                          value_evaluator="eval.expert:plies=2", value_mix=0.5, value_center=False)
    with Search(_LaterEvaluator(log), config) as search:
        plugin = search._value_plugin
        value = plugin.value

        def logged(s):
            log.append("knowledge")
            return value(s)
        plugin.value = logged
        search.run(state)
    leaves = [log[i:i + 3] for i in range(0, len(log), 3)]
    assert len(leaves) >= 2 and all(leaf == ["queued", "knowledge", "read"] for leaf in leaves), log


# ============================================================================ Gumbel root search
def _halving_visits(n: int, m: int) -> list[int]:
    """Visits per considered child (sorted) of sequential halving with ``n`` simulations over ``m``
    children, one simulation at a time: each phase raises every remaining child to the phase's target
    ``max(1, n // (phases * remaining))`` more, then the better half goes on (which half does not change
    the counts); the last child takes what is left."""
    phases = max(1, math.ceil(math.log2(m))) if m > 1 else 1
    counts, remaining, target = [0] * m, list(range(m)), max(1, n // (phases * m))
    for _ in range(n):
        if len(remaining) > 1 and all(counts[c] >= target for c in remaining):
            remaining = remaining[: -(-len(remaining) // 2)]
            target += max(1, n // (phases * len(remaining)))
        c = min(remaining, key=lambda i: counts[i])
        counts[c] += 1
    return sorted(counts)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), m=st.integers(1, 9), sims=st.integers(1, 60), scale=st.sampled_from([0.0, 1.0]))
def test_gumbel_root_search_halves_and_improves_the_policy(seed, m, sims, scale):
    """Gumbel root search (``root_selection="gumbel"``) against the paper's formulas written out: the
    considered children are the top ``m`` by ``g + log P`` (Gumbel noise from the search's generator),
    their visits follow sequential halving, the choice is the best most-visited child by
    ``g + log P + sigma(completed q)`` and the improved policy is ``softmax(log P + sigma(completed q))``."""
    from nets.evaluator import KnowledgeEvaluator

    rng = random.Random(seed)
    state = GameState.from_jfen(random_battle_jfen(rng, rng.choice([20, 60]), rng.choice([20, 60]), 4))
    assume(not state.is_terminal())
    config = SearchConfig(simulations=sims + 1, root_selection="gumbel", gumbel_m=m, gumbel_scale=scale, seed=seed,
                          expansion_pruner="prune.expert:top=6")
    with Search(KnowledgeEvaluator(), config) as search:
        result = search.run(state)
        tree = search.tree
        root_mean = -float(tree.W[0] / tree.N[0])
    k = len(result.moves)
    noise = np.random.default_rng(seed).gumbel(size=k) * scale if scale > 0 else np.zeros(k)
    logits = np.log(np.maximum(result.priors.astype(np.float64), 1e-12))
    considered = set(np.argsort(-(noise + logits), kind="stable")[: min(m, k)].tolist())
    assert {i for i in range(k) if result.visits[i] > 0} <= considered
    assert sorted(int(result.visits[i]) for i in considered) == _halving_visits(sims, min(m, k))
    completed = np.where(result.visits > 0, result.q, root_mean)
    lo, hi = completed.min(), completed.max()
    sigma = (50 + result.visits.max()) * 0.1 * ((completed - lo) / (hi - lo) if hi > lo else np.zeros(k))
    most = [i for i in range(k) if result.visits[i] == result.visits.max()]
    assert result.chosen == max(most, key=lambda i: noise[i] + logits[i] + sigma[i])
    assert result.best() == result.moves[result.chosen]
    z = logits + sigma
    assert np.allclose(result.target(), np.exp(z - z.max()) / np.exp(z - z.max()).sum(), atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), k=st.integers(1, 12), m=st.integers(1, 12), sims=st.integers(1, 80),
       scale=st.sampled_from([0.0, 1.0]))
def test_gumbel_child_sequence_matches_a_naive_sequential_halving(seed, k, m, sims, scale):
    """The root children ``_gumbel_child`` returns, one simulation at a time on a root whose children
    have fixed values ``q``, against sequential halving written out: the top ``min(m, k)`` by
    ``g + log P``; each phase brings the remaining children to its target, then keeps the better half
    by ``g + log P + sigma(completed q)`` at that moment (ties: the better-ranked)."""
    from search.tree import Tree

    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, k)
    prior = rng.dirichlet(np.ones(k)).astype(np.float32)
    search = Search(UniformEvaluator(), SearchConfig(root_selection="gumbel", gumbel_m=m, gumbel_scale=scale, seed=seed))
    tree = search.tree = Tree(k + 1)
    tree.first_child[0], tree.n_children[0], tree.flag[0] = 1, k, EXPANDED
    tree.P[1:k + 1] = prior
    tree.N[0], tree.W[0] = 1, -0.1  # the root's mean, seen from the root's side: 0.1
    search._remaining = sims - 1
    got = []
    for _ in range(sims):
        c = search._gumbel_child(tree)
        got.append(c - 1)
        tree.N[c] += 1
        tree.W[c] += q[c - 1]
        tree.N[0] += 1
        tree.W[0] -= q[c - 1]

    noise = np.random.default_rng(seed).gumbel(size=k) * scale if scale > 0 else np.zeros(k)
    logits = np.log(np.maximum(prior.astype(np.float64), 1e-12))
    mm = min(m, k)
    phases = max(1, math.ceil(math.log2(mm))) if mm > 1 else 1
    remaining = list(np.argsort(-(noise + logits), kind="stable")[:mm])
    visits, w, n0, w0 = np.zeros(k), np.zeros(k), 1, -0.1
    target, want = max(1, sims // (phases * mm)), []
    for _ in range(sims):
        if len(remaining) > 1 and all(visits[c] >= target for c in remaining):
            completed = np.where(visits > 0, w / np.maximum(visits, 1), -w0 / n0)
            lo, hi = completed.min(), completed.max()
            sigma = (50 + visits.max()) * 0.1 * ((completed - lo) / (hi - lo) if hi > lo else 0 * completed)
            score = noise + logits + sigma
            remaining = sorted(remaining, key=lambda c: -score[c])[: -(-len(remaining) // 2)]
            target += max(1, sims // (phases * len(remaining)))
        c = min(remaining, key=lambda i: visits[i])
        want.append(int(c))
        visits[c] += 1
        w[c] += q[c]
        n0 += 1
        w0 -= q[c]
    assert got == want


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), k=st.integers(2, 8), m=st.integers(2, 8), sims=st.integers(2, 80))
def test_gumbel_choice_ignores_the_visits_a_reused_subtree_brought(seed, k, m, sims):
    """``gumbel_choice`` on a root whose children already hold visits from a reused subtree (different
    counts, their own values): sequential halving run one simulation at a time, then the choice is the
    best by ``g + log P + sigma(completed q)`` among the remaining children with the most simulations
    started in this search, written out here; the reused visits decide nothing. (Choosing by the
    tree's visit counts took the child the previous search had looked at most.)"""
    from search.gumbel import completed_sigma, gumbel_choice, next_root_child, start_halving
    from search.tree import Tree

    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, k)
    reused = rng.integers(0, 30, k)  # visits the previous search left under each child
    config = SearchConfig(root_selection="gumbel", gumbel_m=m, gumbel_scale=1.0, seed=seed)
    tree = Tree(k + 1)
    tree.first_child[0], tree.n_children[0], tree.flag[0] = 1, k, EXPANDED
    tree.P[1:k + 1] = rng.dirichlet(np.ones(k)).astype(np.float32)
    tree.N[1:k + 1] = reused
    tree.W[1:k + 1] = reused * rng.uniform(-1, 1, k)
    tree.N[0] = 1 + reused.sum()
    tree.W[0] = -tree.W[1:k + 1].sum()
    h = start_halving(tree, config, np.random.default_rng(seed), sims)
    started = np.zeros(k, dtype=int)
    for _ in range(sims):
        c = next_root_child(tree, h, config)
        started[c - 1] += 1
        tree.N[c] += 1
        tree.W[c] += q[c - 1]
        tree.N[0] += 1
        tree.W[0] -= q[c - 1]
    chosen, _ = gumbel_choice(tree, h, config)
    score = h.noise + h.logits + completed_sigma(tree, 1, k, config)
    most = max(started[c - 1] for c in h.remaining)
    want = max((c - 1 for c in h.remaining if started[c - 1] == most), key=lambda i: score[i])
    assert chosen == want
