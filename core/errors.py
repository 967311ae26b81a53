"""Typed errors of the rules engine. Each message names the offending field or token and the reason."""

from __future__ import annotations


class JiuError(ValueError):
    """Base class: any bad input to the rules engine (position, move, record, ruleset)."""


class InvalidPositionError(JiuError):
    """A JFEN string or board that is not a valid position (names the JFEN field)."""


class NotationError(JiuError):
    """A move string that is not well-formed notation (names the token and the reason)."""


class IllegalMoveError(JiuError):
    """A well-formed move that is not legal in the position (says why)."""


class RecordError(JiuError):
    """A game record that cannot be read or replayed (names the entry index and the reason)."""


class InputError(JiuError):
    """A file or stream that cannot be taken as input: larger than its limit, or not text in the
    expected encoding (names the file and the reason; see ``core.inputs``)."""
