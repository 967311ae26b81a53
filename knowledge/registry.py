"""One registry of everything selectable by name: knowledge plugins and agents.

Plugins register under dotted names by kind (``prune.expansion``, ``prune.capture``,
``prior.gaussian``, ``eval.shape``, ``reward.first_square``, ``reward.outcome``); agents under plain
names (``random``, ``greedy``, ``minimax``, ``expert`` here in ``knowledge``; ``mcts``, ``slm``,
``hbm``, ``jfa`` in ``search.agents``). Every module registers its entries when it is imported; this
module imports none of them (it is the lowest layer, imported by every plugin module). Code that
resolves spec strings imports the modules first: ``knowledge.plugins`` for every knowledge plugin and
agent (it re-exports ``REGISTRY``), the top-level ``catalog`` for those and the search agents. The CLI
and configs refer to plugins and agents by *spec strings*:

- ``NAME`` or ``NAME:key=value,key=value``: options of the factory (``minimax:depth=3``,
  ``mcts:sims=400``); ``-`` in a key reads as ``_``;
- for agents, ``LAYOUT+BATTLE`` plays the layout with one agent and the battle with another
  (``slm+expert``; built by ``knowledge.agents.make_agent``).

A factory registered with ``options=`` (a frozen pydantic model, see :class:`Options`) receives one
validated instance of it: the spec's values are strings that the model converts and checks (types,
bounds, finite numbers, no unknown keys), and :func:`option_rows` lists its options for ``--help`` and
``python cli.py agents``. A factory without a model receives keyword arguments parsed as int, float,
``true``/``false`` or string.

Errors: :class:`SpecError` (a ``core.errors.JiuError``) with one line naming the kind, the name and the
option, e.g. ``agent 'mcts' option 'sims': must be >= 1 (got -5)``; an unknown name raises
:class:`UnknownNameError` (also a ``KeyError``) listing the available names of that kind.
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, ValidationError

from core.errors import JiuError
from core.options import parse_key_values

KINDS = ("expansion_pruner", "capture_pruner", "layout_prior", "battle_prior", "evaluator", "reward", "agent")

# Largest seed an option accepts (NumPy generators take any non-negative integer; 63 bits keep seeds
# exact in JSON readers that use doubles only below 2**53, and in int64 arrays).
SEED_MAX = 2**63 - 1


class SpecError(JiuError):
    """A bad spec string: syntax, unknown option, or an option value of the wrong type or out of range.
    The message is one line naming the kind, the name and the option."""


class UnknownNameError(SpecError, KeyError):
    """A spec names no registered plugin or agent of the wanted kind (lists the available names)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


# ``json_schema_extra`` of an option field whose value names a file on this machine (weights paths:
# ``slm=``, ``upper=``, ``lower=``, ``net=``), and of one whose value is itself an agent spec (``layout=``,
# ``battle=``). A server refuses specs from its clients that use the first (``frontends.server``); the
# second are looked into (``knowledge.agents.file_options``).
# The shipped models directory (models/ of the repository): the default files of agent options
# (search.agents, knowledge.approxq, search.dqn).
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
NAMES_FILE = {"names_file": True}
AGENT_SPEC = {"agent_spec": True}


def flagged_options(model: type[BaseModel] | None, flag: dict[str, Any]) -> set[str]:
    """The option names (field names and their input aliases) of ``model`` whose ``json_schema_extra``
    has ``flag`` (:data:`NAMES_FILE`, :data:`AGENT_SPEC`); empty for a factory without an options model."""
    out: set[str] = set()
    for name, info in (model.model_fields.items() if model is not None else ()):
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if all(extra.get(k) == v for k, v in flag.items()):
            out.add(name)
            alias = info.validation_alias
            out.update(c for c in getattr(alias, "choices", ()) if isinstance(c, str))
            if isinstance(alias, str):
                out.add(alias)
    return out


class Options(BaseModel):
    """Base of the option models of registered factories: frozen, no unknown keys, finite numbers.
    Give every field bounds and a ``description`` (shown by ``python cli.py agents``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str
    factory: Callable[..., Any]
    summary: str
    options: type[Options] | None = None

    @property
    def what(self) -> str:
        """``"agent 'mcts'"``, ``"capture pruner 'prune.capture'"``: how messages name this entry."""
        return f"{self.kind.replace('_', ' ')} {self.name!r}"

    def parse(self, raw: dict[str, Any], overrides: dict[str, Any] | None = None) -> Options | dict[str, Any]:
        """The factory's arguments from a spec's ``raw`` strings plus ``overrides`` (which win): a
        validated options model, or keyword arguments for a factory without one. Raises
        :class:`SpecError`."""
        if self.options is None:
            kwargs = {**{k: _value(v) if isinstance(v, str) else v for k, v in raw.items()}, **(overrides or {})}
            params = inspect.signature(self.factory).parameters
            if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                accepted = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
                for key in kwargs:
                    if key not in accepted:
                        raise SpecError(f"{self.what}: unknown option {key!r} (options: {', '.join(accepted) or 'none'})")
            try:
                inspect.signature(self.factory).bind(**kwargs)
            except TypeError as exc:
                raise SpecError(f"{self.what}: {exc}") from None
            return kwargs
        try:
            options = self.options.model_validate(raw)  # the spec alone must be valid, also where overridden
            return self.options.model_validate({**raw, **overrides}) if overrides else options
        except ValidationError as exc:
            raise SpecError(option_error(self.what, self.options, exc)) from None

    def build(self, args: Options | dict[str, Any]) -> Any:
        """Call the factory with arguments from :meth:`parse`."""
        if self.options is None:
            return self.factory(**args)
        return self.factory(args)


class Registry:
    """Name -> factory, per kind. Use :func:`register` as a decorator."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, kind: str, summary: str = "", options: type[Options] | None = None) -> Callable:
        """Decorator registering ``factory`` under ``name``. With ``options`` (a subclass of
        :class:`Options`) the factory is called with one validated instance, else with keywords."""
        if kind not in KINDS:
            raise ValueError(f"unknown plugin kind {kind!r}; kinds: {', '.join(KINDS)}")
        if options is not None and not (isinstance(options, type) and issubclass(options, Options)):
            raise TypeError(f"{name}: options must be a subclass of knowledge.registry.Options")

        def deco(factory):
            if name in self._entries and self._entries[name].factory is not factory:
                raise ValueError(f"{name!r} is already registered")
            doc = (factory.__doc__ or "").strip().split("\n")[0]
            self._entries[name] = Entry(name, kind, factory, summary or doc, options)
            return factory

        return deco

    def names(self, kind: str | None = None) -> list[str]:
        return sorted(n for n, e in self._entries.items() if kind is None or e.kind == kind)

    def entry(self, name: str, kind: str | None = None) -> Entry:
        e = self._entries.get(name)
        if e is None or (kind is not None and e.kind != kind):
            what = kind.replace("_", " ") if kind else "plugin or agent"
            raise UnknownNameError(f"unknown {what} {name!r}; available: {', '.join(self.names(kind)) or '(none)'}")
        return e

    def check(self, spec: str, kind: str | None = None, **overrides: Any) -> tuple[Entry, Options | dict[str, Any]]:
        """Resolve and validate ``spec`` without building anything: ``(entry, arguments)``. Raises
        :class:`SpecError` (or :class:`UnknownNameError`)."""
        name, raw = parse_spec(spec)
        entry = self.entry(name, kind)
        return entry, entry.parse(raw, overrides)

    def create(self, spec: str, kind: str | None = None, **overrides: Any) -> Any:
        """Instantiate from a spec string ``NAME[:k=v,...]`` (``overrides`` win over the spec)."""
        entry, args = self.check(spec, kind, **overrides)
        return entry.build(args)


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


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"minimax:depth=3,time=0.5"`` -> ``("minimax", {"depth": "3", "time": "0.5"})`` (values stay
    strings; the factory's options model converts them). Raises :class:`SpecError` for a missing name,
    an item that is not ``key=value``, or a key given twice."""
    if not isinstance(spec, str):
        raise SpecError(f"spec must be a string, got {type(spec).__name__}")
    name, _, args = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise SpecError(f"spec {spec!r}: missing name")
    items = filter(None, (a.strip() for a in args.split(",")))
    return name, parse_key_values(items, lambda reason: SpecError(f"spec {spec!r}: {reason}"))


# ============================================================================ option models: errors and listings
def _number(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


_BOUNDS = {"greater_than_equal": ("ge", ">="), "greater_than": ("gt", ">"), "less_than_equal": ("le", "<="),
           "less_than": ("lt", "<")}
_TYPES = {"int_parsing": "an integer", "int_from_float": "an integer", "int_type": "an integer",
          "float_parsing": "a number", "float_type": "a number", "finite_number": "a finite number",
          "bool_parsing": "true or false", "bool_type": "true or false", "string_type": "a string"}


def option_error(what: str, model: type[BaseModel], exc: ValidationError) -> str:
    """One line for the first error of ``exc`` (validating ``model`` for ``what``, e.g. ``agent 'mcts'``):
    ``agent 'mcts' option 'sims': must be >= 1 (got -5)``; an unknown key lists the options."""
    errors = exc.errors()
    err = errors[0]
    kind, ctx = err["type"], err.get("ctx") or {}
    key = str(err["loc"][0]) if err["loc"] else None
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if kind == "extra_forbidden":
        return f"{what}: unknown option {key!r} (options: {', '.join(model.model_fields)}){more}"
    if kind in _BOUNDS:
        name, op = _BOUNDS[kind]
        reason = f"must be {op} {_number(ctx[name])}"
    elif kind in _TYPES:
        reason = f"must be {_TYPES[kind]}"
    elif kind == "literal_error":
        reason = f"must be {ctx['expected']}"
    elif kind == "value_error":
        reason = str(ctx.get("error", err["msg"]))
    else:
        reason = err["msg"][:1].lower() + err["msg"][1:]
    where = f"{what} option {key!r}" if key else what
    if kind == "value_error" and "(got " in reason:  # a nested spec's message already shows its value
        return f"{where}: {reason}{more}"
    got = err["input"]
    got = got if isinstance(got, str) and got and got.isprintable() and got.strip() == got else repr(got)
    return f"{where}: {reason} (got {got}){more}"


def _bound_text(x: Any) -> str:
    return "2^63-1" if x == SEED_MAX else _number(x)


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "|".join(str(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return " | ".join(_type_name(a) for a in args) + (" (optional)" if len(args) < len(typing.get_args(annotation)) else "")
    return getattr(annotation, "__name__", str(annotation))


def option_rows(model: type[BaseModel]) -> list[dict[str, str]]:
    """The options of ``model`` for listings: ``[{"name", "type", "range", "default", "description"}]``
    (strings; ``range`` from the field's bounds as an interval, ``[1, 256]``, ``(0, 1000]`` or ``>= 0``,
    empty when unbounded)."""
    rows = []
    for name, field in model.model_fields.items():
        bound = {}
        for meta in field.metadata:
            for attr in ("ge", "gt", "le", "lt"):
                if getattr(meta, attr, None) is not None:
                    bound[attr] = _bound_text(getattr(meta, attr))
        low = ("[", bound["ge"]) if "ge" in bound else ("(", bound["gt"]) if "gt" in bound else None
        high = (bound["le"], "]") if "le" in bound else (bound["lt"], ")") if "lt" in bound else None
        if low and high:
            span = f"{low[0]}{low[1]}, {high[0]}{high[1]}"
        elif low:
            span = f"{'>=' if low[0] == '[' else '>'} {low[1]}"
        elif high:
            span = f"{'<=' if high[1] == ']' else '<'} {high[0]}"
        else:
            span = ""
        default = field.get_default(call_default_factory=True)
        if isinstance(default, bool):
            default_text = str(default).lower()
        elif isinstance(default, float) and math.isfinite(default):
            default_text = _number(default)
        else:
            default_text = "(none)" if default is None else str(default)
        rows.append({"name": name, "type": _type_name(field.annotation), "range": span,
                     "default": default_text, "description": field.description or ""})
    return rows


REGISTRY = Registry()
register = REGISTRY.register

