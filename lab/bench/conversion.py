"""How often an agent converts a won-looking battle against ``expert`` once a side is about to fly:
the endgames where ``jfa``'s searches lose most of their games against ``expert`` (docs/results.md,
"Where the searches lose to `expert`").

``python -m lab.bench.conversion SPEC ARENA_DIR [ARENA_DIR ...] [--at 16] [--lead 15] [--losses] [--limit N]
[--seeds 1] [--tally | --draws | --leaders | --fliers | --colours]`` reads the game records of arena
directories of some agent against ``expert``, takes from each the first battle position where a side
has ``at`` stones or fewer (:func:`conversion_positions`; ``at`` 16: two captures before the flight
threshold of jiu-rules section 3.1) if the non-expert side then leads by
``lead`` stones or more, and plays the game on from there with ``SPEC`` in that side's colour against
``expert`` (:func:`play_on`, one process), once for each seed of ``--seeds`` (comma-separated; the
agent gets the seed, ``expert`` the seed plus one). It prints one line per game (``game 3/60``), then
the score with its Wilson 95% interval; ``--losses`` keeps only the positions whose recorded game the
non-expert side lost (a small, hard sample: what a change repairs), ``--limit`` the first ``N``
positions; ``--tally`` plays nothing and counts how the records' games went from these positions and
from those where the agent trails by as much; ``--draws`` plays nothing and counts the drawn records of the
directories (any players) by how they ended: the reason and each side's stones (:func:`draw_endings`).
``--leaders`` plays nothing and, for records of any players (``jfa`` against ``jfa`` as well), scores
the side with more stones at the first battle position where a side has ``at`` or fewer, by the size
of its lead (:data:`LEAD_BANDS`, :func:`leader_results`): whether a stone lead there is worth anything
between these players. ``--fliers`` plays nothing and, for records of any players, scores the side
that first has ``at`` stones or fewer (default 14: it flies first) by the other side's stones
(:data:`OTHER_BANDS`, :func:`first_fliers`), in all and for each player. ``--colours`` plays nothing and,
for records where ``SPEC`` is a player (its name as recorded), gives its score and its mean stone lead
at battle plies 60 and 120 and at the first position where a side has ``at`` or fewer, by its colour
(:func:`colour_leads`): where in the battle an agent gains or loses against another, White and Black
apart. ``SPEC`` is checked but unused by the other four counts."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from core.board import FLY_THRESHOLD, STONES_PER_SIDE

OPPONENT = "expert"
LEAD_BANDS = ((1, 4), (5, 14), (15, 29), (30, STONES_PER_SIDE))  # --leaders: the leader's stone lead, inclusive
OTHER_BANDS = ((0, 29), (30, 44), (45, STONES_PER_SIDE))  # --fliers: the other side's stones, inclusive (above --at)
LEAD_PLIES = (60, 120)  # --colours: the battle plies at which the agent's stone lead is taken


@dataclass(frozen=True)
class Position:
    """A position to play on: the record's first ``ply`` moves, the colour ``side`` (0 White, 1 Black)
    of the non-expert player, the stone ``counts`` there (White, Black), its ``lead`` (negative when it
    trails) and whether it ``won`` the recorded game."""

    record: object  # core.records.GameRecord
    name: str
    ply: int
    side: int
    counts: tuple[int, int]
    lead: int
    won: bool


def game_files(arena_dir: str) -> list[Path]:
    """The game records of an arena directory, ``arena_dir/games/*.json`` sorted by name; raises
    ``FileNotFoundError`` when the directory has no ``games`` folder."""
    from train.matches.arena import GAMES_DIR

    games = Path(arena_dir, GAMES_DIR)
    if not games.is_dir():
        raise FileNotFoundError(f"{arena_dir}: no games folder (not an arena directory)")
    return sorted(games.glob("*.json"))


def decided_records(arena_dirs: list[str], records: int):
    """An iterator over the first ``records`` decided game records (``result`` ``"w"`` or ``"b"``) of each
    arena directory, in :func:`game_files` order, read as it goes; every directory is checked first
    (``FileNotFoundError`` for one without a ``games`` folder)."""
    from core.records import read_json

    files = [game_files(d) for d in arena_dirs]

    def read():
        for paths in files:
            taken = 0
            for path in paths:
                if taken >= records:
                    break
                record = read_json(path)
                if record.result in ("w", "b"):
                    taken += 1
                    yield record

    return read()


def _check_stones(name: str, value: int) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a stone count, 0..98."""
    if not 0 <= value <= STONES_PER_SIDE:
        raise ValueError(f"{name}: must be in 0..{STONES_PER_SIDE}, got {value!r}")


def threshold_ply(replay, at: int) -> int | None:
    """The index in ``replay`` (a record's positions, ``GameRecord.replay()``) of the first battle
    position, not terminal, where a side has at most ``at`` stones; ``None`` when there is none."""
    from core.board import PHASE_BATTLE

    return next((i for i, s in enumerate(replay)
                 if s.phase == PHASE_BATTLE and not s.is_terminal() and min(int(s.counts[0]), int(s.counts[1])) <= at),
                None)


def _threshold_counts(arena_dir: str, at: int):
    """``(record, (white, black))`` for each record of ``arena_dir/games/*.json`` (sorted by name; any
    players) that reaches a battle position with a side at ``at`` stones or fewer: the stone counts at
    the first (:func:`threshold_ply`). Raises ``ValueError`` for ``at`` outside 0..98 (before any file is
    read), ``FileNotFoundError`` when the directory has no ``games`` folder."""
    from core.records import read_json

    _check_stones("at", at)
    for path in game_files(arena_dir):
        record = read_json(path)
        replay = record.replay()
        ply = threshold_ply(replay, at)
        if ply is not None:
            yield record, tuple(int(c) for c in replay[ply].counts)


def leader_results(arena_dir: str, at: int = 16) -> list[tuple[int, float]]:
    """``(lead, score)`` for each record of ``arena_dir/games/*.json`` (sorted by name; any players) whose
    first battle position with a side at ``at`` stones or fewer (:func:`threshold_ply`) has a leader:
    that side's lead in stones (1..98) and its score in the recorded game (1 won, 0.5 drawn, 0 lost).
    Raises ``ValueError`` for ``at`` outside 0..98, ``FileNotFoundError`` when the directory has no
    ``games`` folder."""
    from train.matches.arena import a_points

    return [(abs(white - black), a_points(record.result, "w" if white > black else "b"))
            for record, (white, black) in _threshold_counts(arena_dir, at) if white != black]


def first_fliers(arena_dir: str, at: int = FLY_THRESHOLD) -> list[tuple[str, int, float]]:
    """``(player, other, score)`` for each record of ``arena_dir/games/*.json`` (sorted by name; any
    players) whose first battle position with a side at ``at`` stones or fewer (:func:`threshold_ply`;
    ``at`` 14: that side flies, jiu-rules 3.1) has only one such side: that side's player, the other
    side's stones and the first side's score in the recorded game (1 won, 0.5 drawn, 0 lost). Raises
    ``ValueError`` for ``at`` outside 0..98, ``FileNotFoundError`` when the directory has no ``games``
    folder."""
    from train.matches.arena import a_points

    out = []
    for record, counts in _threshold_counts(arena_dir, at):
        if max(counts) > at:
            side = counts.index(min(counts))
            out.append(((record.white, record.black)[side], max(counts), a_points(record.result, "wb"[side])))
    return out


def threshold_positions(arena_dir: str, at: int = 16) -> list[Position]:
    """One position per record of ``arena_dir/games/*.json`` (sorted by name) with ``expert`` on one
    side: the first battle position where a side has at most ``at`` stones (records that never get
    there give none). Raises ``ValueError`` for ``at`` outside 0..98, ``FileNotFoundError`` when the
    directory has no ``games`` folder."""
    from core.records import read_json

    _check_stones("at", at)
    out = []
    for path in game_files(arena_dir):
        record = read_json(path)
        if (record.white == OPPONENT) == (record.black == OPPONENT):
            continue
        side = 1 if record.white == OPPONENT else 0
        replay = record.replay()
        ply = threshold_ply(replay, at)
        if ply is None:
            continue
        counts = (int(replay[ply].counts[0]), int(replay[ply].counts[1]))
        out.append(Position(record, f"{Path(arena_dir).name}/{path.stem}", ply, side, counts,
                            counts[side] - counts[1 - side], record.result == "wb"[side]))
    return out


def select(positions: list[Position], lead: int = 15, losses: bool = False, behind: bool = False) -> list[Position]:
    """Those of ``positions`` where the non-expert player leads by at least ``lead`` (with ``behind``:
    trails by at least ``lead``); with ``losses`` only those of records it lost. Raises ``ValueError``
    for ``lead`` outside 0..98."""
    _check_stones("lead", lead)
    return [p for p in positions if (-p.lead if behind else p.lead) >= lead and not (losses and p.won)]


def conversion_positions(arena_dir: str, at: int = 16, lead: int = 15, losses: bool = False,
                         behind: bool = False) -> list[Position]:
    """:func:`select` of :func:`threshold_positions` (module docstring); the same errors."""
    return select(threshold_positions(arena_dir, at), lead, losses, behind)


def draw_endings(arena_dir: str) -> list[tuple[str, str, int, int]]:
    """``(name, reason, more, fewer)`` for each drawn record of ``arena_dir/games/*.json`` (sorted by
    name; any players): its end (``repetition`` or ``ply-cap``) and the stones of the side with more and
    of the side with fewer in its last position. Raises ``FileNotFoundError`` when the directory has no
    ``games`` folder."""
    from core.records import read_json

    out = []
    for path in game_files(arena_dir):
        record = read_json(path)
        if record.result != "draw":
            continue
        counts = sorted(int(c) for c in record.replay()[-1].counts)
        out.append((f"{Path(arena_dir).name}/{path.stem}", record.reason, counts[1], counts[0]))
    return out


def play_on(spec: str, position: Position, seed: int = 1):
    """The ``GameRecord`` of ``spec`` (in the position's non-expert colour) against ``expert`` played
    from ``position`` to the end under the record's ruleset (``train.matches.arena.play_game`` with the
    record's moves as the opening); ``spec`` gets seed ``seed``, ``expert`` ``seed + 1``."""
    from train.matches.arena import play_game

    record = position.record
    players = (spec, OPPONENT) if position.side == 0 else (OPPONENT, spec)
    seeds = (seed, seed + 1) if position.side == 0 else (seed + 1, seed)
    return play_game(*players, record.ruleset, *seeds, opening=record.moves[: position.ply])


def colour_leads(arena_dir: str, spec: str, at: int = 16,
                 plies: tuple[int, ...] = LEAD_PLIES) -> list[tuple[int, list[int | None], float]]:
    """``(side, leads, score)`` for each record of ``arena_dir/games/*.json`` (sorted by name) with the
    player ``spec`` (its name as recorded; White when it plays both sides): its colour ``side`` (0 White,
    1 Black); its stone lead (its stones minus the other side's) at each battle ply of ``plies`` (battle
    ply 0 is the battle's first position) and then at the first battle position where a side has at
    most ``at`` stones (:func:`threshold_ply`), ``None`` where the game never gets there; and its score
    in the recorded game (1 won, 0.5 drawn, 0 lost). Raises ``ValueError`` for ``at`` outside 0..98 or a
    negative ply, ``FileNotFoundError`` when the directory has no ``games`` folder."""
    from core.board import PHASE_BATTLE
    from core.records import read_json
    from train.matches.arena import a_points

    _check_stones("at", at)
    if any(p < 0 for p in plies):
        raise ValueError(f"plies: must be battle plies of at least 0, got {list(plies)}")
    out = []
    for path in game_files(arena_dir):
        record = read_json(path)
        if spec not in (record.white, record.black):
            continue
        side = 0 if record.white == spec else 1
        replay = record.replay()
        first = next((i for i, s in enumerate(replay) if s.phase == PHASE_BATTLE), len(replay))
        marks = [first + p for p in plies] + [threshold_ply(replay, at)]
        leads = [None if i is None or i >= len(replay)
                 else int(replay[i].counts[side]) - int(replay[i].counts[1 - side]) for i in marks]
        out.append((side, leads, a_points(record.result, "wb"[side])))
    return out


def _print_colours(rows: list[tuple[int, list[int | None], float]], at: int) -> None:
    """``--colours``: by the agent's colour, its games, score and mean stone lead (with the share of
    games it leads and trails) at each mark of :func:`colour_leads`."""
    labels = [f"battle ply {p}" for p in LEAD_PLIES] + [f"a side first at {at} or fewer"]
    for side, colour in enumerate(("White", "Black")):
        mine = [(leads, score) for s, leads, score in rows if s == side]
        if not mine:
            print(f"as {colour}: no game")
            continue
        print(f"as {colour}: {len(mine)} games, score {sum(s for _, s in mine) / len(mine):.1%}; its stone lead at")
        for k, label in enumerate(labels):
            leads = [leads[k] for leads, _ in mine if leads[k] is not None]
            if leads:
                print(f"  {label}: mean {sum(leads) / len(leads):+.1f} over {len(leads)} games, "
                      f"ahead in {sum(x > 0 for x in leads) / len(leads):.0%}, behind in {sum(x < 0 for x in leads) / len(leads):.0%}")
            else:
                print(f"  {label}: no game gets there")


def _print_fliers(fliers: list[tuple[str, int, float]], at: int) -> None:
    """``--fliers``: the first side's score by the other side's stones (:data:`OTHER_BANDS`), in all and
    for each player as that side, with Wilson 95% intervals."""
    from train.matches.stats import wilson_interval

    players = sorted({p for p, _, _ in fliers})
    print(f"{len(fliers)} games where one side first has {at} stones or fewer; its score by the other's stones:")
    for k, name in enumerate(players, 1):
        print(f"  player {k}: {name}")
    for lo, hi in OTHER_BANDS:
        rows = [("all", [s for _, o, s in fliers if lo <= o <= hi])]
        rows += [(f"player {k}", [s for p, o, s in fliers if p == name and lo <= o <= hi])
                 for k, name in enumerate(players, 1)] if len(players) > 1 else []
        band = f"{max(lo, at + 1)}-{hi}"
        for who, scores in rows:
            if scores:
                a, b = wilson_interval(sum(scores), len(scores))
                print(f"  other {band}, {who}: {sum(scores):g}/{len(scores)} = {sum(scores) / len(scores):.1%} "
                      f"[{a:.1%}, {b:.1%}]")
            else:
                print(f"  other {band}, {who}: no game")


def main(argv: list[str] | None = None) -> None:
    import catalog
    from knowledge.agents import validate_agent_spec
    from knowledge.registry import SpecError
    from train.matches.stats import wilson_interval

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("arena_dirs", nargs="+", metavar="arena_dir")
    parser.add_argument("--at", type=int, default=None, help="default 16 (--fliers: 14)")
    parser.add_argument("--lead", type=int, default=15)
    parser.add_argument("--losses", action="store_true")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--tally", action="store_true",
                        help="play nothing: count how the records' games went from the positions where the agent "
                             "leads by --lead and from those where it trails by as much")
    parser.add_argument("--draws", action="store_true",
                        help="play nothing: count the drawn records by their end and each side's stones")
    parser.add_argument("--leaders", action="store_true",
                        help="play nothing: score the side with more stones at the first position where a side "
                             "has --at or fewer, by its lead (any players)")
    parser.add_argument("--fliers", action="store_true",
                        help="play nothing: score the side that first has --at (default 14: it flies) or fewer "
                             "stones, by the other side's stones, in all and by player (any players)")
    parser.add_argument("--colours", action="store_true",
                        help="play nothing: SPEC's score and stone lead at battle plies 60 and 120 and when a side "
                             "first has --at or fewer, by SPEC's colour (records where SPEC is a player)")
    parser.add_argument("--seeds", default="1", metavar="SEED,SEED,...")
    parser.add_argument("--import", dest="modules", action="append", default=[], metavar="MODULE")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be >= 1")
    try:
        seeds = [int(x) for x in args.seeds.split(",")]
    except ValueError:
        seeds = []
    if not seeds or not all(0 <= x < 2**31 - 1 for x in seeds):
        parser.error(f"--seeds: {args.seeds!r} is not a comma-separated list of integers in 0..2147483646")
    catalog.import_plugins(args.modules)
    if args.at is None:
        args.at = FLY_THRESHOLD if args.fliers else 16
    try:
        validate_agent_spec(args.spec)
        if args.fliers:
            fliers = [r for d in args.arena_dirs for r in first_fliers(d, args.at)]
        elif args.colours:
            coloured = [r for d in args.arena_dirs for r in colour_leads(d, args.spec, args.at)]
        elif args.leaders:
            _check_stones("lead", args.lead)
            results = [r for d in args.arena_dirs for r in leader_results(d, args.at)]
        elif args.draws:  # no replay to the threshold: the options are checked all the same
            _check_stones("at", args.at)
            _check_stones("lead", args.lead)
            total = sum(len(game_files(d)) for d in args.arena_dirs)
            drawn = [e for d in args.arena_dirs for e in draw_endings(d)]
        else:
            reached = [p for d in args.arena_dirs for p in threshold_positions(d, args.at)]
            found = select(reached, args.lead, args.losses)
            trailing = select(reached, args.lead, behind=True)
    except (SpecError, ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    if args.fliers:
        _print_fliers(fliers, args.at)
        return
    if args.colours:
        _print_colours(coloured, args.at)
        return
    if args.leaders:
        print(f"{len(results)} games with a leader when a side first has {args.at} stones or fewer; "
              f"the leader's score by its lead:")
        for lo, hi in LEAD_BANDS:
            scores = [score for lead, score in results if lo <= lead <= hi]
            if scores:
                a, b = wilson_interval(sum(scores), len(scores))
                print(f"  lead {lo}-{hi}: {sum(scores):g}/{len(scores)} = {sum(scores) / len(scores):.1%} [{a:.1%}, {b:.1%}]")
            else:
                print(f"  lead {lo}-{hi}: no game")
        return
    if args.draws:
        from collections import Counter

        print(f"{len(drawn)} drawn games of {total}; by end and stones (more v fewer):")
        for (reason, more, fewer), n in sorted(Counter(e[1:] for e in drawn).items()):
            print(f"  {reason} {more} v {fewer}: {n}")
        return
    if args.tally:
        for what, positions in (("leads", found), ("trails", trailing)):
            won = sum(p.won for p in positions)
            print(f"the agent {what} by {args.lead}+ stones when a side first has {args.at} or fewer: "
                  f"{len(positions)} games, won {won} in the records")
        return
    found = found[: args.limit] if args.limit is not None else found
    if not found:
        print("no position qualifies")
        return
    games = [(pos, seed) for pos in found for seed in seeds]
    score = 0.0
    for k, (pos, seed) in enumerate(games, 1):
        rec = play_on(args.spec, pos, seed)
        mine = rec.result == "wb"[pos.side]
        draw = rec.result not in ("w", "b")
        score += 1.0 if mine else 0.5 if draw else 0.0
        print(f"game {k}/{len(games)}  {pos.name} seed {seed} ply {pos.ply} stones W/B {pos.counts[0]}/{pos.counts[1]} "
              f"({'won' if pos.won else 'lost'} in the record) -> {'win' if mine else 'draw' if draw else 'loss'} "
              f"({rec.reason}, {len(rec.moves)} plies)  {score:g}/{k}", flush=True)
    lo, hi = wilson_interval(score, len(games))
    print(f"converted {score:g}/{len(games)} = {score / len(games):.1%} [{lo:.1%}, {hi:.1%}] from "
          f"{len(found)} positions  {args.spec}")


if __name__ == "__main__":
    main()
