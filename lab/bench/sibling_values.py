"""How the upper net's value and the expert's two-ply value rank the moves a net agent's battle search
chooses among, in the flight stage: whether the net tells those moves apart better than the
knowledge-only twin does (docs/results.md, "What the net's value knows in the flight stage").

``python -m lab.bench.sibling_values ARENA_DIR [ARENA_DIR ...] [--agent jfa] [--upper PATH] [--stones 29]
[--records 60] [--every 10] [--positions 300] [--playouts 0] [--rank value] [--simulations 16]`` takes
every ``every``-th battle position from ply 200 of the first ``records`` decided games of each arena
directory where the side with fewer has ``stones`` or fewer (up to ``positions`` of them;
:func:`flight_positions`), searches each with ``--agent`` (a ``jfa`` or ``hbm`` spec), and values every
root child for the side to move with the upper net ``--upper`` (default: the shipped one) and with
``eval.expert:plies=2`` (:func:`sibling_rows`). It prints the spread of each value over the siblings
(max - min), how often the two values' best children agree, and how often the search chose the net's
best child, the expert's best and the prior's best (:func:`sibling_summary`).

``--playouts N`` then takes up to ``N`` of those positions where the net's best child (``--rank value``:
by the upper net's value; ``prior``: by the search's prior) is not the move the agent's knowledge-only
twin plays (``lab.bench.move_time.twin_spec`` at ``--simulations``), plays the game on from both moves
with the twin on both sides (:func:`playouts`), and prints the score of each move for the side to move,
with the pairs whose results differ: whether following the net there would win more games than the
twin's choice."""

from __future__ import annotations

import argparse

import numpy as np

def flight_positions(arena_dirs: list[str], stones: int = 29, records: int = 60, every: int = 10,
                     limit: int = 300) -> list[tuple]:
    """Up to ``limit`` tuples ``(record, ply, state)``: every ``every``-th non-terminal battle position from
    ply ``lab.bench.value_stages.FROM_PLY`` of the first ``records`` decided games (``result`` ``"w"`` or ``"b"``) of each arena
    directory where the side with fewer has ``stones`` or fewer, ``state`` the position after ``ply``
    moves. Raises ``ValueError`` for ``records``, ``every`` or ``limit`` below 1 or ``stones`` outside
    0..98, ``FileNotFoundError`` for a directory without a ``games`` folder."""
    from core.board import PHASE_BATTLE, STONES_PER_SIDE
    from lab.bench.conversion import decided_records
    from lab.bench.value_stages import FROM_PLY

    if min(records, every, limit) < 1:
        raise ValueError(f"records, every and limit must be >= 1, got {records!r}, {every!r}, {limit!r}")
    if not 0 <= stones <= STONES_PER_SIDE:
        raise ValueError(f"stones must be in 0..{STONES_PER_SIDE}, got {stones!r}")
    out = []
    for record in decided_records(arena_dirs, records):  # every directory checked before any work
        replay = record.replay()
        for ply in range(FROM_PLY, len(replay) - 1, every):
            s = replay[ply]
            if s.phase == PHASE_BATTLE and not s.is_terminal() and min(int(s.counts[0]), int(s.counts[1])) <= stones:
                out.append((record, ply, s))
                if len(out) >= limit:
                    return out
    return out


def child_values(state, children: list, net, expert=None) -> tuple[np.ndarray, np.ndarray | None]:
    """``(net, expert)``, each ``float64 (len(children),)``: every child position's value for
    ``state``'s side to move in ``[-1, 1]``, by ``net`` (a ``nets.evaluator.NetEvaluator``) and by
    ``expert`` (a ``knowledge.evaluation.ExpertEvaluator``; ``None``: not computed, and ``None``
    returned in its place); a terminal child gets its result from both."""
    net_v = np.empty(len(children))
    expert_v = np.empty(len(children)) if expert is not None else None
    live = [i for i, c in enumerate(children) if not c.is_terminal()]
    evals = net.evaluate([children[i] for i in live]) if live else []
    for i, e in zip(live, evals):
        sign = 1.0 if children[i].side == state.side else -1.0
        net_v[i] = sign * float(e.value)
        if expert_v is not None:
            expert_v[i] = sign * expert.value(children[i])
    for i, c in enumerate(children):
        if c.is_terminal():
            net_v[i] = c.returns()[state.side]
            if expert_v is not None:
                expert_v[i] = net_v[i]
    return net_v, expert_v


def sibling_rows(spec: str, upper: str, positions: list[tuple]) -> np.ndarray:
    """``float64 (N, 7)``, one row per position with 2 or more root children: the number of root children
    of ``spec``'s search (a ``jfa`` or ``hbm`` spec), the spread (max - min) over them of the value of
    the net ``upper`` (a ``.safetensors`` file) and of the expert's two-ply value (:func:`child_values`),
    then 0/1 flags: the two values' best children (the first, on a tie) are the same; the search chose
    the net's best child; the expert's; the prior's. Raises ``ValueError`` when ``spec`` does not search
    the battle."""
    from knowledge.agents import make_agent
    from knowledge.evaluation import ExpertEvaluator
    from nets.evaluator import NetEvaluator
    from search.agents import load_net, think

    agent = make_agent(spec, seed=1)
    net = NetEvaluator(None, load_net(upper, "upper"), max_batch=64, inference_threads=0)
    expert = ExpertEvaluator(plies=2)
    rows = []
    for _, _, s in positions:
        _, result = think(agent, s)
        if result is None:
            raise ValueError(f"{spec!r} does not search the battle")
        if len(result.moves) < 2:
            continue
        net_v, expert_v = child_values(s, [s.apply(m) for m in result.moves], net, expert)
        chosen = result.moves.index(result.best())
        best_net, best_expert = int(np.argmax(net_v)), int(np.argmax(expert_v))
        rows.append((len(result.moves), float(np.ptp(net_v)), float(np.ptp(expert_v)), float(best_net == best_expert),
                     float(chosen == best_net), float(chosen == best_expert), float(chosen == int(np.argmax(result.priors)))))
    return np.asarray(rows, dtype=np.float64).reshape(-1, 7)


def sibling_summary(rows: np.ndarray) -> dict[str, float]:
    """The means and medians :func:`sibling_rows`' rows are printed as: ``positions``, ``children`` (mean),
    ``net_spread`` and ``expert_spread`` (median and ``_mean``), ``agree``, ``chose_net``, ``chose_expert``,
    ``chose_prior`` (fractions). Raises ``ValueError`` for no rows."""
    if not len(rows):
        raise ValueError("no positions")
    return {"positions": float(len(rows)), "children": float(rows[:, 0].mean()),
            "net_spread": float(np.median(rows[:, 1])), "net_spread_mean": float(rows[:, 1].mean()),
            "expert_spread": float(np.median(rows[:, 2])), "expert_spread_mean": float(rows[:, 2].mean()),
            "agree": float(rows[:, 3].mean()), "chose_net": float(rows[:, 4].mean()),
            "chose_expert": float(rows[:, 5].mean()), "chose_prior": float(rows[:, 6].mean())}


def playout_pair(twin: str, record, ply: int, side: int, moves: tuple[str, str], seed: int = 3) -> tuple[float, float]:
    """For each of the two ``moves`` (notation) played after ``record``'s first ``ply`` moves, the score
    for ``side`` (the side to move there; ``train.matches.arena.a_points``) of the game played on with ``twin`` on
    both sides (White seed ``seed``, Black ``seed + 1``; ``train.matches.arena.play_game``)."""
    from train.matches.arena import a_points, play_game

    opening = list(record.moves[:ply])
    a, b = (a_points(play_game(twin, twin, record.ruleset, seed, seed + 1, opening=opening + [m]).result, "wb"[side])
            for m in moves)
    return a, b


RANKS = ("value", "prior")  # playouts: the net's child ranked first by the upper net's value, or by the search's prior


def playouts(spec: str, upper: str, twin: str, positions: list[tuple], limit: int, rank: str = "value") -> np.ndarray:
    """``float64 (N, 3)`` rows ``(fewer side's stones, score after the net's best child, score after the
    twin's move)`` for up to ``limit`` of ``positions`` where the net's best child among ``spec``'s root
    children (``rank`` ``"value"``: by the value of ``upper``; ``"prior"``: by the search's prior) is not
    the move ``twin`` plays (:func:`playout_pair`), skipping positions with fewer than 2 root children or
    a child that ends the game. Prints ``pair 3/100`` as each is played. Raises ``ValueError`` for
    ``limit`` below 1 or another ``rank`` (:data:`RANKS`)."""
    from knowledge.agents import make_agent
    from nets.evaluator import NetEvaluator
    from search.agents import load_net, think

    if limit < 1:
        raise ValueError(f"playouts must be >= 1, got {limit!r}")
    if rank not in RANKS:
        raise ValueError(f"rank must be one of {', '.join(RANKS)}, got {rank!r}")
    agent, twin_agent = make_agent(spec, seed=1), make_agent(twin, seed=1)
    net = NetEvaluator(None, load_net(upper, "upper"), max_batch=64, inference_threads=0)
    rows = []
    for record, ply, s in positions:
        _, result = think(agent, s)
        children = [s.apply(m) for m in result.moves] if result is not None else []
        if len(children) < 2 or any(c.is_terminal() for c in children):
            continue
        values = child_values(s, children, net)[0] if rank == "value" else result.priors
        net_move = str(result.moves[int(np.argmax(values))])
        twin_move = str(think(twin_agent, s)[0])
        if net_move == twin_move:
            continue
        rows.append((min(int(s.counts[0]), int(s.counts[1])), *playout_pair(twin, record, ply, s.side, (net_move, twin_move))))
        print(f"pair {len(rows)}/{limit}: ply {ply}, net's move {rows[-1][1]:g}, twin's {rows[-1][2]:g}", flush=True)
        if len(rows) >= limit:
            break
    return np.asarray(rows, dtype=np.float64).reshape(-1, 3)


def main(argv: list[str] | None = None) -> None:
    from lab.bench.move_time import twin_spec
    from search.agents import weights_path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arena_dirs", nargs="+", metavar="arena_dir")
    parser.add_argument("--agent", default="jfa", help="a jfa or hbm spec (default jfa)")
    parser.add_argument("--upper", default=None, help="the upper net valuing the children (default: the shipped one)")
    parser.add_argument("--stones", type=int, default=29)
    parser.add_argument("--records", type=int, default=60)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--positions", type=int, default=300)
    parser.add_argument("--playouts", type=int, default=0)
    parser.add_argument("--rank", choices=RANKS, default="value",
                        help="--playouts: the net's best child by the upper net's value (default) or by the search's prior")
    parser.add_argument("--simulations", type=int, default=16, help="the twin's simulations (default 16, jfa's)")
    args = parser.parse_args(argv)
    try:
        upper = weights_path(args.upper, "upper")
        twin = twin_spec(args.agent, args.simulations)
        positions = flight_positions(args.arena_dirs, args.stones, args.records, args.every, args.positions)
        r = sibling_summary(sibling_rows(args.agent, upper, positions))
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    print(f"{r['positions']:.0f} positions where the side with fewer has {args.stones} stones or fewer; "
          f"{r['children']:.2f} root children on average")
    print(f"spread over the siblings, median (mean): net {r['net_spread']:.4f} ({r['net_spread_mean']:.4f}), "
          f"expert two-ply {r['expert_spread']:.4f} ({r['expert_spread_mean']:.4f})")
    print(f"best child the same for both values: {r['agree']:.2f}; the search chose the net's best {r['chose_net']:.2f}, "
          f"the expert's {r['chose_expert']:.2f}, the prior's {r['chose_prior']:.2f}")
    if args.playouts:
        from train.matches.stats import wilson_interval

        try:
            rows = playouts(args.agent, upper, twin, positions, args.playouts, args.rank)
        except ValueError as exc:
            parser.error(str(exc))
        if not len(rows):
            print(f"no position where the {args.rank}'s best child is not the twin's move")
            return
        better, worse = int((rows[:, 1] > rows[:, 2]).sum()), int((rows[:, 1] < rows[:, 2]).sum())
        lo, hi = wilson_interval(float(rows[:, 1].sum()), len(rows))
        print(f"{len(rows)} positions played on by {twin}: the {args.rank}'s best child scores {rows[:, 1].mean():.3f} "
              f"[{lo:.3f}, {hi:.3f}], the twin's move {rows[:, 2].mean():.3f}; results differ in {better + worse}: "
              f"{better} for the {args.rank}'s child, {worse} for the twin's")


if __name__ == "__main__":
    main()
