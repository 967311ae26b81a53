"""Model directories (``models/default``): the nets the search agents load, the training configuration
they continue with, and their model card with the lineage.

A model directory holds ``slm.safetensors``, ``upper.safetensors``, ``lower.safetensors`` (float16 copies,
``nets.io``), ``config.toml`` (the ``TrainConfig`` that ``python cli.py selfplay`` continues with, without
``init_dir``/``export_dir``: the CLI sets them), ``README.md`` (the model card) and ``lineage.json`` (one
entry per export: time, command, run directory, iterations, self-play games, hours, every gate's result
and the last learning-curve point). :func:`export_run` appends an entry to both and a line per gate to
the card's ``## Lineage`` section.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from core.atomic import atomic_write_bytes, atomic_write_text
from train.jobs.rundir import RunPaths, TrainError, atomic_write_json, eval_seed, read_metrics, read_state

CONFIG_FILE = "config.toml"
CARD_FILE = "README.md"
LINEAGE_FILE = "lineage.json"
LINEAGE_HEADING = "## Lineage"


def _drop_none(x):
    if isinstance(x, dict):
        return {k: _drop_none(v) for k, v in x.items() if v is not None}
    if isinstance(x, list):
        return [_drop_none(v) for v in x]
    return x


def config_toml(config) -> str:
    """``config`` (``TrainConfig``) as TOML for a model directory (no ``init_dir``/``export_dir``; ``null``
    fields are left out, so they read back as their defaults). Raises ``TrainError`` for a field whose
    ``null`` is not its default (TOML has no null)."""
    import tomli_w

    from train.learning.config import TrainConfig, config_to_dict

    data = config_to_dict(config)
    data.pop("init_dir", None)
    data.pop("export_dir", None)
    defaults = config_to_dict(TrainConfig())

    def check(a, d, prefix=""):
        for k, v in a.items():
            if isinstance(v, dict):
                check(v, d.get(k, {}) if isinstance(d, dict) else {}, f"{prefix}{k}.")
            elif v is None and (d or {}).get(k) is not None:
                raise TrainError(f"config field {prefix}{k!r} is null, which a model directory's config.toml cannot"
                                 " store; give it a value")

    check(data, defaults)
    head = ("# Training configuration of this model (python cli.py selfplay continues with it;"
            " train/learning/config.py)\n")
    return head + tomli_w.dumps(_drop_none(data))


def read_model_config(model_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The mapping in ``MODEL_DIR/config.toml`` (``None`` when there is none)."""
    from train.learning.config import read_config_file

    path = Path(model_dir) / CONFIG_FILE
    return read_config_file(path) if path.exists() else None


def read_run_config(run_dir: str | os.PathLike) -> Any:
    """What a training run stored in ``RUN/config.json``, parsed and unvalidated (a JSON object unless the
    file is damaged: :func:`load_run_config` says so); ``TrainError`` (one line) if missing or unreadable."""
    p = RunPaths(Path(run_dir)).config
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TrainError(f"{run_dir}: no config.json; not a training run directory") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TrainError(f"{p}: unreadable ({exc})") from None
    return data


def load_run_config(run_dir: str | os.PathLike, device: str | None = None, data: Any = None):
    """The resolved ``TrainConfig`` a training run stored in ``RUN/config.json`` (the one a resumed run and an
    export continue with); ``TrainError`` (one line) if missing or unreadable. ``device``: validate with
    this ``device`` field instead of the stored one (a resumed run may move to another device, and the
    stored one may not exist on this machine); ``data``: the file's contents when already read
    (:func:`read_run_config`). ``ConfigError`` (one line) when they are not a valid configuration."""
    from train.learning.config import validate_config

    data = read_run_config(run_dir) if data is None else data
    if device is not None and isinstance(data, dict):
        data = {**data, "device": device}
    return validate_config(data, str(RunPaths(Path(run_dir)).config))


def _model_config(config, model_dir: Path):
    """The configuration an export writes into ``model_dir``: the run's, except that the fields which only
    say how far or how fast a run goes (``train.learning.config.RESUMABLE_FIELDS``: ``iterations``, ``minutes``,
    ``workers``, ``curve``, ...) keep the values of the directory's valid ``config.toml``; ``None`` when
    that file already holds exactly these values (it is left as it is, comments and all)."""
    from train.learning.config import RESUMABLE_FIELDS, ConfigError, config_to_dict, validate_config

    try:
        data = read_model_config(model_dir)
        previous = validate_config(data) if data is not None else None
    except (ConfigError, ValueError, OSError):
        previous = None
    if previous is None:
        return config
    merged = config_to_dict(config)
    old = config_to_dict(previous)
    for name in RESUMABLE_FIELDS:
        section, _, key = name.partition(".")
        if key:
            merged[section][key] = old[section][key]
        else:
            merged[section] = old[section]
    merged = validate_config(merged)
    strip = {"init_dir": None, "export_dir": None}
    return None if merged.model_copy(update=strip) == previous.model_copy(update=strip) else merged


def _gates(run: Path) -> list[dict[str, Any]]:
    rows = {}
    for e in read_metrics(run / "metrics.jsonl"):
        if e.get("event") == "gate":
            rows[(e.get("kind"), e.get("iteration"))] = {
                k: e.get(k) for k in ("iteration", "kind", "accepted", "games", "wins", "draws", "losses", "win_rate",
                                      "decision", "best_iteration")}
    return [rows[k] for k in sorted(rows, key=lambda k: (k[1] or 0, str(k[0])))]


EXPORT_GATE_DIR = "export-gate"


def export_gate(run_dir: str | os.PathLike, model_dir: str | os.PathLike, workers: int | None = None,
                progress: Any = False, config=None) -> list[dict[str, Any]]:
    """The export gate: each best net of the run in ``run_dir`` that training changed (best iteration > 0)
    plays ``model_dir``'s net of its kind, colour-balanced, each pair from ``gate.export_opening_plies`` random
    placements of its own (so that two agents that do not sample play more than one game a colour), with the
    run's evaluation agent
    (``train.learning.selfplay.net_agent``) and the pentanomial SPRT of the run's ``gate.elo0``, ``gate.elo1``,
    ``gate.alpha``, ``gate.beta``, stopping when it decides or at ``gate.export_games`` games (an undecided test
    fails there, or with ``gate.export_at_cap = "threshold"`` the score decides against ``gate.threshold``); ``config`` (a ``TrainConfig``)
    replaces the run's stored one, e.g. with the command line's ``--set gate.*``. The games go to
    ``RUN/eval/export-gate/<kind>-i<iteration>`` (a rerun resumes them). ``workers``: ``None`` = the run's.

    Returns one row per kind: ``kind``, ``iteration``, ``against`` (the incumbent's path), ``passed``
    (bool) and, when games were played, ``games``, ``wins``, ``draws``, ``losses``, ``win_rate``,
    ``wilson_ci95``, ``elo``, ``sprt`` and ``decision``; a kind without an incumbent net, or with
    ``gate.export_games = 0``, passes without games. Raises ``TrainError`` for a run without a best net
    or an evaluation that fails."""
    from train.learning.selfplay import games_in_flight, net_agent

    paths = RunPaths(Path(run_dir))
    state = read_state(paths)
    config = load_run_config(paths.root) if config is None else config
    if not state.best:
        raise TrainError(f"{paths.root}: no best net yet (the run has not finished its first init phase)")
    g = config.gate
    rows = []
    for kind, best in sorted(state.best.items()):
        incumbent = Path(model_dir) / f"{kind}.safetensors"
        row: dict[str, Any] = {"kind": kind, "iteration": best.iteration, "against": str(incumbent)}
        if best.iteration == 0 or not incumbent.exists() or g.export_games == 0:
            why = ("the start net, unchanged" if best.iteration == 0 else
                   f"no {incumbent.name} in {model_dir}" if not incumbent.exists() else "gate.export_games = 0")
            rows.append({**row, "passed": True, "decision": f"no gate ({why})"})
            continue
        try:
            spec_cand, spec_inc = net_agent(kind, paths.best(kind), config), net_agent(kind, incumbent, config)
        except ValueError as exc:
            raise TrainError(str(exc)) from None
        out = paths.root / "eval" / EXPORT_GATE_DIR / f"{kind}-i{best.iteration:04d}"
        rows.append({**row, **_gate_match(spec_cand, spec_inc, g, out, seed=eval_seed(config.seed, best.iteration, 7),
                                          workers=config.workers if workers is None else workers,
                                          ruleset=config.ruleset, progress=progress,
                                          games_in_flight=games_in_flight(config))})
    return rows


def _gate_match(candidate, incumbent, g, out_dir: Path, **arena: Any) -> dict[str, Any]:
    """Play an export gate (``candidate`` against ``incumbent``, agent specs or recipes) with the SPRT and
    the opening placements of ``g`` (a ``GateConfig``), the games in ``out_dir`` (resumed when there), and
    decide it: the row fields ``passed``, ``decision``, ``sprt`` and the score. The SPRT's decision, else at
    the cap ``g.export_at_cap``. ``arena``: ``run_arena``'s other keywords (seed, workers, ruleset, ...).
    Raises ``TrainError`` (one line) when the match fails."""
    from train.matches.arena import ArenaError, run_arena

    try:
        summary = run_arena(candidate, incumbent, g.export_games, out_dir=out_dir, sprt=(g.elo0, g.elo1, g.alpha, g.beta),
                            opening_plies=g.export_opening_plies, **arena)
    except ArenaError as exc:
        raise TrainError(f"export gate ({out_dir}): {exc}; rerun to resume it") from None
    test = summary.data["sprt"]
    rate = summary.win_rate
    if test.get("decision") == "H1":
        passed, how = True, f"SPRT accepted H1 after {summary.games} games"
    elif test.get("decision") == "H0":
        passed, how = False, f"SPRT accepted H0 after {summary.games} games"
    elif g.export_at_cap == "threshold":
        passed = rate is not None and rate > g.threshold
        how = f"cap of {g.export_games} games: score {rate if rate is None else round(rate, 3)} vs threshold {g.threshold}"
    else:
        passed = False
        how = (f"cap of {g.export_games} games undecided (score {rate if rate is None else round(rate, 3)}): "
               "not shown stronger (gate.export_at_cap = fail)")
    return {"passed": passed, "decision": how, "sprt": test,
            **{k: summary.data.get(k) for k in ("games", "wins", "draws", "losses", "win_rate", "wilson_ci95", "elo")}}


def export_gate_text(row: dict[str, Any]) -> str:
    """One export-gate row of :func:`export_gate` as text: ``passed (+W =D -L = R% (Wilson a-b); decision)``."""
    score = ""
    if row.get("games") and row.get("win_rate") is not None:
        lo, hi = row.get("wilson_ci95") or (0.0, 1.0)
        score = (f"+{row['wins']} ={row['draws']} -{row['losses']} = {100 * row['win_rate']:.1f}% "
                 f"(Wilson {100 * lo:.1f}-{100 * hi:.1f}); ")
    return f"{'passed' if row['passed'] else 'failed'} ({score}{row['decision']})"


def export_run(run_dir: str | os.PathLike, model_dir: str | os.PathLike, command: str = "",
               half: bool = True, export_gate: list[dict[str, Any]] | None = None) -> list[Path]:
    """Write the gated best nets of the run in ``run_dir`` into ``model_dir`` (float16 with ``half``), its
    configuration as ``config.toml`` (keeping the directory's run-length fields, :func:`_model_config`;
    not rewritten when nothing else changed), and append the lineage entry (module docstring), with the rows of
    :func:`export_gate` when given. Returns the files written. Raises ``TrainError`` when the run has no
    best net."""
    from nets.io import load, save

    paths = RunPaths(Path(run_dir))
    state = read_state(paths)
    config = load_run_config(paths.root)
    if not state.best:
        raise TrainError(f"{paths.root}: no best net yet (the run has not finished its first init phase)")
    out = Path(model_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    nets = {}
    for kind, best in sorted(state.best.items()):
        src = paths.best(kind)
        model, net_config, extra = load(src, expected_kind=kind)
        target = out / f"{kind}.safetensors"
        lineage_extra = {**extra, "exported_from": str(src), "run": str(paths.root), "best_iteration": best.iteration}
        save(model, net_config, target, extra=lineage_extra, half=half)
        written.append(target)
        nets[kind] = {"best_iteration": best.iteration, "checkpoint": best.checkpoint}
    model_config = _model_config(config, out)
    if model_config is not None:
        atomic_write_text(out / CONFIG_FILE, config_toml(model_config))
        written.append(out / CONFIG_FILE)
    gates = _gates(paths.root)
    entry = {"time": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": command, "run": str(paths.root),
             "model": config.model, "iterations": state.completed_iterations, "games": state.games,
             "samples": state.samples, "hours": round(state.elapsed_seconds / 3600, 3), "init_from": state.init_from,
             "nets": nets, "gates": gates, "export_gate": export_gate, "curve": state.last_curve}
    lines = [f"\n### {entry['time']}: {config.model} self-play, {state.completed_iterations} iteration(s), "
             f"{state.games} games, {entry['hours']:.2f} h",
             "", f"- command: `{command or '(library call)'}`", f"- run: `{paths.root}`, started from "
             f"{'`' + state.init_from + '`' if state.init_from else 'pretraining on records'}",
             "- nets: " + ", ".join(f"{k} from iteration {v['best_iteration']}" for k, v in nets.items())]
    lines += gate_lines(gates)
    for r in export_gate or []:
        lines.append(f"- export gate {r['kind']} i{r['iteration']} vs the directory's previous net: "
                     f"{export_gate_text(r)}")
    c = state.last_curve
    if c and c.get("elo") is not None:
        lines.append(f"- learning curve: {c['player']} Elo {c['elo']:+.0f} [{c['ci95'][0]:+.0f}, {c['ci95'][1]:+.0f}]"
                     f" ({c.get('anchor')} = 0)")
    return written + _append_lineage(out, entry, lines)


def gate_lines(gates: list[dict[str, Any]]) -> list[str]:
    """The model card's lines for a run's in-run gates (:func:`_gates` rows): one per gate that played
    games, ``- gate i3 upper: accepted (+5 =1 -2; decision)``, and one line counting the iterations
    accepted without a game (``gate.max_games = 0``), so that a long run without gates adds one line."""
    def played(g: dict[str, Any]) -> bool:
        return bool(g.get("games") or (g.get("wins") or 0) + (g.get("draws") or 0) + (g.get("losses") or 0))

    lines = [f"- gate i{g['iteration']} {g['kind']}: {'accepted' if g['accepted'] else 'rejected'} "
             f"(+{g.get('wins') or 0:g} ={g.get('draws') or 0:g} -{g.get('losses') or 0:g}; {g.get('decision')})"
             for g in gates if played(g)]
    unplayed = [g for g in gates if not played(g)]
    if unplayed:
        accepted = sum(1 for g in unplayed if g.get("accepted"))
        lines.append(f"- {len(unplayed)} iteration(s) without a gate game, {accepted} accepted "
                     f"(i{unplayed[0]['iteration']}-i{unplayed[-1]['iteration']}; {unplayed[-1].get('decision')})")
    return lines


def _append_lineage(out: Path, entry: dict[str, Any], lines: list[str]) -> list[Path]:
    """Append ``entry`` to ``OUT/lineage.json`` and ``lines`` to the model card's ``## Lineage`` section;
    the two files written."""
    lineage_path = out / LINEAGE_FILE
    lineage: list = []
    if lineage_path.exists():
        try:
            lineage = json.loads(lineage_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            lineage = []
    atomic_write_json(lineage_path, [*(lineage if isinstance(lineage, list) else []), entry])
    card = out / CARD_FILE
    text = card.read_text(encoding="utf-8") if card.exists() else "# Model\n"
    if LINEAGE_HEADING not in text:
        text = (text.rstrip("\n") + f"\n\n{LINEAGE_HEADING}\n\nOne entry per export (`selfplay --export`, `export-net`;"
                f" details in `{LINEAGE_FILE}`).\n")
    atomic_write_text(card, text.rstrip("\n") + "\n" + "\n".join(lines) + "\n")
    return [lineage_path, card]


AGENT_TABLES = ("search", "agent")  # the tables of agent.toml an export may set (search.config)


def _toml_ready(table: dict[str, Any]) -> dict[str, Any]:
    """``table`` with ``None`` spelled ``"none"`` (TOML has no null; the plugin fields read it as ``None``)."""
    return {k: "none" if v is None else v for k, v in table.items()}


def _parent(init: Any) -> dict[str, Any] | None:
    """A net's ``init`` metadata as a lineage parent: ``{"file", "sha256"}`` as the CLI's ``pretrain`` and
    self-play write it, ``{"file": NAME}`` from a path (a library call's ``extra={"init": PATH}``), ``None``
    for none."""
    if isinstance(init, dict):
        return init
    if isinstance(init, (str, os.PathLike)) and str(init):
        return {"file": Path(init).name}
    return None


def stage_candidate(nets: list[str | os.PathLike], model_dir: str | os.PathLike, stage_dir: str | os.PathLike,
                    settings: dict[str, dict[str, Any]] | None = None, half: bool = True) -> dict[str, Any]:
    """Write the candidate of an :func:`export_nets` into ``stage_dir``: ``model_dir``'s nets and
    ``agent.toml`` with the net files ``nets`` in place of those of their kinds (float16 with ``half``) and
    ``settings`` (``{"search": {...}, "agent": {...}}``) over the ``agent.toml`` tables, checked as the
    agents read them. Returns ``{"nets": {kind: {"file", "sha256", "init"}}, "settings": settings}`` for the
    lineage. Raises ``TrainError`` (one line) for a second net of one kind, a table other than
    :data:`AGENT_TABLES` or settings the agents refuse; ``nets.io`` errors for a bad net file."""
    import hashlib
    import shutil
    import tomllib

    import tomli_w

    from nets.io import load, save
    from search.config import AgentFileError, model_search_config

    src, stage = Path(model_dir), Path(stage_dir)
    settings = {k: dict(v) for k, v in (settings or {}).items()}
    for table in settings:
        if table not in AGENT_TABLES:
            raise TrainError(f"--set {table}.*: unknown agent.toml table {table!r} (tables: {', '.join(AGENT_TABLES)})")
    loaded = {}
    for path in nets:
        model, config, extra = load(path)
        if config.kind in loaded:
            raise TrainError(f"{path}: a second {config.kind} net (one net of each kind)")
        loaded[config.kind] = (Path(path), model, config, extra)
    stage.mkdir(parents=True, exist_ok=True)
    for kind in ("slm", "upper", "lower"):
        if (src / f"{kind}.safetensors").exists():
            shutil.copyfile(src / f"{kind}.safetensors", stage / f"{kind}.safetensors")
    lineage: dict[str, Any] = {}
    for kind, (path, model, config, extra) in loaded.items():
        save(model, config, stage / f"{kind}.safetensors", extra={**extra, "exported_from": path.name}, half=half)
        lineage[kind] = {"file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                         "init": _parent(extra.get("init"))}
    tables: dict[str, Any] = {}
    head = ""  # the file's leading comment block stays
    if (src / "agent.toml").exists():
        try:
            text = (src / "agent.toml").read_text(encoding="utf-8")
            tables = tomllib.loads(text)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise TrainError(f"{src / 'agent.toml'}: unreadable ({exc})") from None
        for line in text.splitlines(keepends=True):
            if not line.startswith("#"):
                break
            head += line
    for table, values in settings.items():
        tables[table] = {**tables.get(table, {}), **values}
    if tables:
        atomic_write_text(stage / "agent.toml", head + tomli_w.dumps({k: _toml_ready(v) for k, v in tables.items()}))
        try:
            from search.agents import model_agent_options

            model_search_config(stage)
            model_agent_options(stage)
        except AgentFileError as exc:
            raise TrainError(str(exc).replace(str(stage / "agent.toml"), "--set")) from None
    return {"nets": lineage, "settings": settings}


def export_work_dir(nets: list[str | os.PathLike], model_dir: str | os.PathLike,
                    settings: dict[str, Any] | None = None) -> Path:
    """The default work directory of an :func:`export_nets`: ``runs/export-<MODEL_DIR name>-<hash>``, the
    hash (8 hex digits of SHA-256) over the net files' bytes and ``settings``, so that the same command
    resumes the same gate."""
    import hashlib

    digest = hashlib.sha256()
    for path in map(Path, nets):
        digest.update(path.read_bytes() if path.is_file() else str(path).encode())
    digest.update(json.dumps(settings or {}, sort_keys=True).encode())
    return Path("runs") / f"export-{Path(model_dir).resolve().name}-{digest.hexdigest()[:8]}"


def export_nets(nets: list[str | os.PathLike], model_dir: str | os.PathLike, work_dir: str | os.PathLike,
                settings: dict[str, dict[str, Any]] | None = None, command: str = "", workers: int = 2,
                games_in_flight: int = 8, seed: int = 1, progress: Any = False,
                half: bool = True) -> tuple[dict[str, Any], list[Path]]:
    """Ship net files (and play settings) into the model directory ``model_dir`` through the export gate.

    The candidate (:func:`stage_candidate`, in ``WORK/candidate``) plays ``model_dir`` as it stands, both as
    ``jfa`` (``search.agents.model_agent``), colour-balanced from ``seed``, each pair from
    ``gate.export_opening_plies`` random placements of its own, with the pentanomial SPRT of the
    directory's ``config.toml`` ``[gate]`` (``elo0``, ``elo1``, ``alpha``, ``beta``; at most ``export_games``
    games, then ``export_at_cap``: :func:`export_gate`'s rule); the games go to ``WORK/gate`` (a rerun with
    the same arguments resumes them). A directory without a playable model (no ``agent.toml`` or no SLM or
    upper net) or with ``gate.export_games = 0`` passes without games. Only a passed candidate is written:
    its nets, its ``agent.toml`` and a lineage entry (nets with SHA-256 and their ``init`` parent, settings,
    the gate's row).

    Returns ``(row, written)``: the gate's row (``passed``, ``decision``, and the score when games were
    played) and the files written (none when it failed). Raises ``TrainError`` (one line) for a bad
    candidate or a failed match."""
    from search.agents import model_agent
    from train.learning.config import TrainConfig, validate_config

    out, work = Path(model_dir), Path(work_dir)
    stage = work / "candidate"
    staged = stage_candidate(nets, out, stage, settings, half=half)
    data = read_model_config(out)
    config = validate_config(data) if data is not None else TrainConfig()
    g = config.gate
    playable = all((out / name).exists() for name in ("agent.toml", "slm.safetensors", "upper.safetensors"))
    row: dict[str, Any] = {"kind": "model", "against": str(out)}
    if not playable or g.export_games == 0:
        why = "gate.export_games = 0" if playable else f"no playable model in {out}"
        row.update(passed=True, decision=f"no gate ({why})")
    else:
        try:
            candidate, incumbent = model_agent(stage), model_agent(out)
        except (ValueError, OSError) as exc:
            raise TrainError(f"export gate: {exc}") from None
        row.update(_gate_match(candidate, incumbent, g, work / "gate", seed=seed, workers=workers, progress=progress,
                               games_in_flight=games_in_flight))
    if not row["passed"]:
        return row, []
    entry = {"time": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": command, "kind": "export-net", **staged,
             "export_gate": [row]}
    lines = [f"\n### {entry['time']}: nets exported ({', '.join(staged['nets']) or 'none'})", "",
             f"- command: `{command or '(library call)'}`"]
    for kind, net in staged["nets"].items():
        parent = net.get("init") or {}
        sha = f" (sha256 {str(parent['sha256'])[:12]})" if parent.get("sha256") else ""
        lines.append(f"- {kind}: `{net['file']}` (sha256 {net['sha256'][:12]})"
                     + (f", trained from `{parent.get('file')}`{sha}" if parent else ""))
    for table, values in staged["settings"].items():
        if values:
            lines.append(f"- agent.toml [{table}]: " + ", ".join(f"{k} = {v}" for k, v in values.items()))
    lines.append(f"- export gate vs the directory's previous model: {export_gate_text(row)}")
    written: list[Path] = []  # the entry is complete before the first file is written
    for kind in staged["nets"]:
        written.append(atomic_write_bytes(out / f"{kind}.safetensors", (stage / f"{kind}.safetensors").read_bytes()))
    if staged["settings"]:
        atomic_write_text(out / "agent.toml", (stage / "agent.toml").read_text(encoding="utf-8"))
        written.append(out / "agent.toml")
    return row, written + _append_lineage(out, entry, lines)
