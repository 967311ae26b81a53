"""Moves as small value objects and their notation (rule book section 4).

``Move.path`` holds point indices: one point for a placement, origin and destination for a step or
flight, origin and every landing for a jump chain. ``Move.victims`` are the square-capture victims,
ascending. ``str(move)`` is the notation; two moves are equal exactly when their strings are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.board import POINT_BY_NAME, POINT_NAMES, SIZE
from core.errors import NotationError

_POINT_RE = re.compile(r"[a-n](?:1[0-4]|[1-9])")


@dataclass(frozen=True, slots=True, order=False)
class Move:
    """A full move: a placement (``path`` of one point), a step/flight (two points, ``jump=False``)
    or a jump chain (``jump=True``), plus square ``victims`` (ascending point indices)."""

    path: tuple[int, ...]
    jump: bool = False
    victims: tuple[int, ...] = ()

    @property
    def is_placement(self) -> bool:
        return len(self.path) == 1

    @property
    def origin(self) -> int:
        return self.path[0]

    @property
    def destination(self) -> int:
        return self.path[-1]

    @property
    def jumped(self) -> tuple[int, ...]:
        """Points of the stones removed by the jump chain, in hop order."""
        if not self.jump:
            return ()
        return tuple((a + b) // 2 for a, b in zip(self.path, self.path[1:]))

    def path_str(self) -> str:
        """The path part of the notation (before the first ``/``)."""
        sep = "x" if self.jump else "-"
        return sep.join(POINT_NAMES[p] for p in self.path)

    def __str__(self) -> str:
        return self.path_str() + "".join("/" + POINT_NAMES[v] for v in self.victims)

    def __repr__(self) -> str:
        return f"Move({str(self)!r})"


def parse_point(token: str, what: str = "point") -> int:
    """Point index of a name like ``g7``; raises ``NotationError`` naming the token."""
    if not _POINT_RE.fullmatch(token):
        raise NotationError(f"{what} {token!r}: not a point (columns a-n, rows 1-14)")
    return POINT_BY_NAME[token]


def is_hop(a: int, b: int) -> bool:
    (ac, ar), (bc, br) = (a % SIZE, a // SIZE), (b % SIZE, b // SIZE)
    return (ac == bc and abs(ar - br) == 2) or (ar == br and abs(ac - bc) == 2)


def parse_move(text: str) -> Move:
    """Parse notation into a ``Move``, checking only its shape (not legality in a position).

    Raises ``NotationError`` naming the offending token: unknown points, mixed or empty separators,
    a hop that is not two points along a line, a step to the same point, victims after a placement,
    repeated or unsorted victims.
    """
    if not isinstance(text, str) or not text.strip():
        raise NotationError("move: empty")
    text = text.strip()
    path_part, *victim_tokens = text.split("/")
    if "-" in path_part and "x" in path_part:
        raise NotationError(f"move {text!r}: path {path_part!r} mixes '-' and 'x'")
    jump = "x" in path_part
    tokens = path_part.split("x" if jump else "-")
    path = tuple(parse_point(t, "path point") for t in tokens)
    if not jump and len(path) > 2:
        raise NotationError(f"move {text!r}: a step or flight has exactly two points")
    if not jump and len(path) == 2 and path[0] == path[1]:
        raise NotationError(f"move {text!r}: origin and destination are the same point")
    if jump:
        for a, b in zip(path, path[1:]):
            if not is_hop(a, b):
                raise NotationError(
                    f"move {text!r}: hop {POINT_NAMES[a]}x{POINT_NAMES[b]} is not two points along a line"
                )
    victims = tuple(parse_point(t, "victim") for t in victim_tokens)
    if victims and len(path) == 1:
        raise NotationError(f"move {text!r}: a placement captures nothing")
    for a, b in zip(victims, victims[1:]):
        if a == b:
            raise NotationError(f"move {text!r}: victim {POINT_NAMES[a]} repeated")
        if a > b:
            raise NotationError(
                f"move {text!r}: victims out of order ({POINT_NAMES[a]} before {POINT_NAMES[b]};"
                " sort by point index)"
            )
    return Move(path, jump, victims)
