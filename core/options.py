"""``KEY=VALUE`` option lists, the one parser behind ``-r`` rule options (``Ruleset.from_options``) and
agent spec options (``knowledge.registry``). Values stay strings; the caller's pydantic model converts
and bounds them."""

from __future__ import annotations

from collections.abc import Callable, Iterable


def parse_key_values(items: Iterable[str], error: Callable[[str], Exception]) -> dict[str, str]:
    """``{"key": "value"}`` of ``items`` like ``"loss-below=14"`` (keys and values stripped, ``-`` in a
    key read as ``_``). Raises ``error(reason)`` for an item that is not ``key=value`` (reason
    ``option 'x' is not key=value``) or a key given twice (``option 'k' is given twice``)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise error(f"option {item.strip()[:60]!r} is not key=value")
        if key in out:
            raise error(f"option {key!r} is given twice")
        out[key] = value.strip()
    return out
