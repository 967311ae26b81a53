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

from core.atomic import atomic_write_text
from train.rundir import RunPaths, TrainError, atomic_write_json, read_metrics, read_state

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

    from train.config import TrainConfig, config_to_dict

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
    head = "# Training configuration of this model (python cli.py selfplay continues with it; train/config.py)\n"
    return head + tomli_w.dumps(_drop_none(data))


def read_model_config(model_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The mapping in ``MODEL_DIR/config.toml`` (``None`` when there is none)."""
    from train.config import read_config_file

    path = Path(model_dir) / CONFIG_FILE
    return read_config_file(path) if path.exists() else None


def _gates(run: Path) -> list[dict[str, Any]]:
    rows = {}
    for e in read_metrics(run / "metrics.jsonl"):
        if e.get("event") == "gate":
            rows[(e.get("kind"), e.get("iteration"))] = {
                k: e.get(k) for k in ("iteration", "kind", "accepted", "games", "wins", "draws", "losses", "win_rate",
                                      "decision", "best_iteration")}
    return [rows[k] for k in sorted(rows, key=lambda k: (k[1] or 0, str(k[0])))]


def export_run(run_dir: str | os.PathLike, model_dir: str | os.PathLike, command: str = "",
               half: bool = True) -> list[Path]:
    """Write the gated best nets of the run in ``run_dir`` into ``model_dir`` (float16 with ``half``), its
    configuration as ``config.toml``, and append the lineage entry (module docstring). Returns the files
    written. Raises ``TrainError`` when the run has no best net."""
    from nets.io import load, save

    from train.rundir import load_run_config

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
    atomic_write_text(out / CONFIG_FILE, config_toml(config))
    written.append(out / CONFIG_FILE)
    gates = _gates(paths.root)
    entry = {"time": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": command, "run": str(paths.root),
             "model": config.model, "iterations": state.completed_iterations, "games": state.games,
             "samples": state.samples, "hours": round(state.elapsed_seconds / 3600, 3), "init_from": state.init_from,
             "nets": nets, "gates": gates, "curve": state.last_curve}
    lineage_path = out / LINEAGE_FILE
    lineage: list = []
    if lineage_path.exists():
        try:
            lineage = json.loads(lineage_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            lineage = []
    atomic_write_json(lineage_path, [*(lineage if isinstance(lineage, list) else []), entry])
    written.append(lineage_path)
    card = out / CARD_FILE
    text = card.read_text(encoding="utf-8") if card.exists() else "# Model\n"
    if LINEAGE_HEADING not in text:
        text = text.rstrip("\n") + f"\n\n{LINEAGE_HEADING}\n\nOne entry per `selfplay --export` (details in `{LINEAGE_FILE}`).\n"
    lines = [f"\n### {entry['time']}: {config.model} self-play, {state.completed_iterations} iteration(s), "
             f"{state.games} games, {entry['hours']:.2f} h",
             "", f"- command: `{command or '(library call)'}`", f"- run: `{paths.root}`, started from "
             f"{'`' + state.init_from + '`' if state.init_from else 'pretraining on records'}",
             "- nets: " + ", ".join(f"{k} from iteration {v['best_iteration']}" for k, v in nets.items())]
    for g in gates:
        lines.append(f"- gate i{g['iteration']} {g['kind']}: {'accepted' if g['accepted'] else 'rejected'} "
                     f"(+{g.get('wins') or 0:g} ={g.get('draws') or 0:g} -{g.get('losses') or 0:g}; {g.get('decision')})")
    c = state.last_curve
    if c and c.get("elo") is not None:
        lines.append(f"- learning curve: {c['player']} Elo {c['elo']:+.0f} [{c['ci95'][0]:+.0f}, {c['ci95'][1]:+.0f}]"
                     f" ({c.get('anchor')} = 0)")
    atomic_write_text(card, text.rstrip("\n") + "\n" + "\n".join(lines) + "\n")
    written.append(card)
    return written
