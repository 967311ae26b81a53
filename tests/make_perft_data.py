"""Regenerate ``tests/data/perft.json``: perft counts computed by the pure-Python reference.

Run ``python -m tests.make_perft_data`` from the repository root. Positions: the start position
(rule book section 9), and battle positions reached by seeded random play: right after the layout,
the middle game, a flying side, and a non-default ruleset. The engine never computes these numbers.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from tests import reference as ref
from tests.strategies import random_battle_jfen

OUT = Path(__file__).parent / "data" / "perft.json"


def _played(seed: int, plies: int, rules) -> str:
    rng = random.Random(seed)
    pos = ref.parse_jfen(ref.START_JFEN)
    for _ in range(plies):
        moves = ref.legal_moves(pos, rules)
        pos = ref.apply_move(pos, rng.choice(moves), rules)
    return ref.to_jfen(pos)


def main() -> None:
    default = ref.RefRules()
    lineage = ref.RefRules(chain_revisit="allow", fly_jump_rule="all-multi", loss_below=14)
    cases = [("start position (rule book section 9)", ref.START_JFEN, default, 4)]
    cases.append(("battle start after a random layout", _played(1, 196, default), default, 3))
    cases.append(("middle game", _played(2, 196 + 120, default), default, 2))
    rng = random.Random(5)
    cases.append(("White flying (12 v 40), planted shapes", random_battle_jfen(rng, 12, 40, 4), default, 2))
    cases.append(("both flying (9 v 11)", random_battle_jfen(rng, 9, 11, 2), default, 2))
    cases.append(("chains and squares, JFA-lineage rules", random_battle_jfen(rng, 45, 45, 6), lineage, 2))
    rows = []
    for name, jfen, rules, depth in cases:
        pos = ref.parse_jfen(jfen)
        counts = [ref.perft(pos, rules, d) for d in range(1, depth + 1)]
        rows.append({"name": name, "jfen": jfen, "ruleset": vars(rules), "counts": counts})
        print(name, counts)
    OUT.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
