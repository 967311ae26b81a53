"""One registry of everything selectable by name: knowledge plugins and agents.

Plugins register under dotted names by kind (``prune.expansion``, ``prune.capture``,
``prior.gaussian``, ``eval.shape``, ``reward.first_square``, ``reward.outcome``); agents under plain
names (``random``, ``greedy``, ``minimax``, ``expert``, and search agents ``mcts``, ``slm``, ``hbm``,
``jfa`` registered by ``search``). The CLI and configs refer to them by *spec strings*:

- ``NAME`` or ``NAME:key=value,key=value`` — keyword arguments to the factory; values are parsed as
  int, float, ``true``/``false``, or kept as strings (e.g. ``minimax:depth=3``, ``mcts:sims=400``);
- for agents, ``LAYOUT+BATTLE`` plays the layout with one agent and the battle with another
  (e.g. ``slm+expert``).

Unknown names raise ``KeyError`` listing the available ones of that kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

KINDS = ("expansion_pruner", "capture_pruner", "layout_prior", "evaluator", "reward", "agent")


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str
    factory: Callable[..., Any]
    summary: str


class Registry:
    """Name -> factory, per kind. Use :func:`register` as a decorator."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, kind: str, summary: str = "") -> Callable:
        if kind not in KINDS:
            raise ValueError(f"unknown plugin kind {kind!r}; kinds: {', '.join(KINDS)}")

        def deco(factory):
            if name in self._entries and self._entries[name].factory is not factory:
                raise ValueError(f"{name!r} is already registered")
            doc = (factory.__doc__ or "").strip().split("\n")[0]
            self._entries[name] = Entry(name, kind, factory, summary or doc)
            return factory

        return deco

    def names(self, kind: str | None = None) -> list[str]:
        _load_builtin_modules()
        return sorted(n for n, e in self._entries.items() if kind is None or e.kind == kind)

    def entry(self, name: str, kind: str | None = None) -> Entry:
        _load_builtin_modules()
        e = self._entries.get(name)
        if e is None or (kind is not None and e.kind != kind):
            what = kind.replace("_", " ") if kind else "plugin or agent"
            raise KeyError(f"unknown {what} {name!r}; available: {', '.join(self.names(kind)) or '(none)'}")
        return e

    def create(self, spec: str, kind: str | None = None, **overrides: Any) -> Any:
        """Instantiate from a spec string ``NAME[:k=v,...]`` (``overrides`` win over the spec)."""
        name, kwargs = parse_spec(spec)
        return self.entry(name, kind).factory(**{**kwargs, **overrides})


def _value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"minimax:depth=3,time=0.5"`` -> ``("minimax", {"depth": 3, "time": 0.5})``; raises ``ValueError``."""
    name, _, args = spec.strip().partition(":")
    if not name:
        raise ValueError(f"spec {spec!r}: missing name")
    kwargs: dict[str, Any] = {}
    for item in filter(None, (a.strip() for a in args.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"spec {spec!r}: argument {item!r} is not key=value")
        kwargs[key.strip().replace("-", "_")] = _value(value.strip())
    return name, kwargs


def select_plugins(enabled: Iterable[str] | str | None, disabled: Iterable[str] | str | None = None) -> list[str]:
    """Resolve ``--knowledge a,b`` / ``--no-knowledge c`` into a validated list of plugin names."""

    def split(x):
        if x is None:
            return []
        return [s.strip() for s in (x.split(",") if isinstance(x, str) else x) if s.strip()]

    chosen = split(enabled)
    for name in chosen + split(disabled):
        REGISTRY.entry(parse_spec(name)[0])  # raises KeyError listing the options
    off = {parse_spec(n)[0] for n in split(disabled)}
    return [n for n in chosen if parse_spec(n)[0] not in off]


REGISTRY = Registry()
register = REGISTRY.register

# Modules whose import registers built-in plugins and agents (imported on first lookup, so that
# importing the registry stays cheap and free of cycles).
BUILTIN_MODULES: list[str] = [
    "knowledge.pruning",  # prune.expansion, prune.capture
    "knowledge.priors",  # prior.gaussian
    "knowledge.evaluation",  # eval.shape
    "knowledge.agents",  # random, greedy, minimax, expert
    "knowledge.rewards",  # reward.first_square, reward.outcome
    "search.agents",  # mcts, slm, hbm, jfa (found by name: knowledge does not depend on search)
    "train.selfplay",  # train-slm, train-upper, train-lower (checkpoints under training)
]


def _load_builtin_modules() -> None:
    import importlib

    for module in BUILTIN_MODULES:
        importlib.import_module(module)
