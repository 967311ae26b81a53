"""What a training run shows while it runs: the rich live panel, plain progress lines, TensorBoard.

- :class:`Dashboard`: a rich ``Live`` panel on stderr (iteration, phase, self-play counts and speeds,
  losses, the last gate and learning-curve point, progress bars of the running matches) when stdout and
  stderr are terminals; otherwise (a log file, a CI job) :class:`Dashboard` prints one plain line per
  phase change and at least one status line a minute (a timer thread) on stdout, so a log never stays
  silent.
- :class:`TensorBoard`: scalars in ``RUN/tb`` (``torch.utils.tensorboard``), or nothing with one warning.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np


class TensorBoard:
    """``torch.utils.tensorboard.SummaryWriter`` in ``RUN/tb``, or nothing (one warning) without tensorboard."""

    def __init__(self, directory: Path):
        self.writer = None
        try:
            from torch.utils.tensorboard import SummaryWriter
        except Exception as exc:  # noqa: BLE001 - ImportError or a broken tensorboard install
            warnings.warn(f"TensorBoard logging skipped: {exc} (pip install tensorboard)", RuntimeWarning, stacklevel=2)
            return
        self.writer = SummaryWriter(str(directory))

    def scalars(self, step: int, **values: Any) -> None:
        if self.writer is None:
            return
        for k, v in values.items():
            if isinstance(v, (int, float)) and v is not None and np.isfinite(v):
                self.writer.add_scalar(k, float(v), step)

    def flush(self) -> None:
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class Dashboard:
    """The run's display. ``mode``: ``"live"`` (rich panel), ``"lines"`` (plain lines on ``stream``: one
    per phase change and one status line at least every ``interval`` seconds), ``"off"``, or ``"auto"``
    (``live`` when stdout and stderr are terminals, else ``lines`` on stdout)."""

    def __init__(self, mode: str | bool, run_dir: Path, config, interval: float = 60.0, stream=None):
        if mode is True:
            mode = "auto"
        elif mode is False:
            mode = "off"
        if mode == "auto":
            mode = "live" if sys.stdout.isatty() and sys.stderr.isatty() else "lines"
        if mode not in ("live", "lines", "off"):
            raise ValueError(f"display mode: live, lines, off or auto, got {mode!r}")
        self.mode = mode
        self.enabled = mode == "live"
        self.run_dir = run_dir
        self.config = config
        self.interval = float(interval)
        self.stream = stream
        self.fields: dict[str, Any] = {}
        self.live = None
        self.progress = None
        self._phase_line = None
        self._t0 = time.time()
        self._last_line = 0.0
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._lock = threading.Lock()
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.console = Console(stderr=True)
            self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[score]}"), TimeElapsedColumn(), console=self.console)

    def __enter__(self) -> "Dashboard":
        if self.enabled:
            from rich.live import Live

            self.live = Live(get_renderable=self._render, console=self.console, refresh_per_second=2,
                             transient=False)
            self.live.__enter__()
        elif self.mode == "lines":
            self._last_line = time.time()
            self._timer = threading.Thread(target=self._beat, name="progress-lines", daemon=True)
            self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)
            self.live = None
        self._stop.set()
        if self._timer is not None:
            self._timer.join(timeout=2)
            self._timer = None

    # ------------------------------------------------------------------ plain lines
    def _out(self):
        return self.stream if self.stream is not None else sys.stdout

    def line(self, text: str) -> None:
        """Print one plain progress line (``lines`` mode only)."""
        if self.mode != "lines":
            return
        with self._lock:
            stamp = time.strftime("%H:%M:%S")
            print(f"[{stamp}] {text}", file=self._out(), flush=True)
            self._last_line = time.time()

    def status_text(self) -> str:
        f = self.fields
        its = self.config.iterations
        parts = [f"iteration {f.get('iteration', '-')}/{its if its else '-'} {f.get('kind', '-')}",
                 f"phase {f.get('phase', '-')}"]
        if f.get("games_total"):
            parts.append(f"self-play {f.get('games_done', 0)}/{f['games_total']} ({f.get('games', 0)} in the run,"
                         f" {f.get('positions_per_s', 0):.2f} positions/s)")
        if f.get("loss") is not None:
            parts.append(f"loss {f['loss']:.4f}")
        if f.get("gate"):
            parts.append(f"gate: {f['gate']}")
        if f.get("curve"):
            parts.append(f"curve: {f['curve']}")
        parts.append(f"session {time.time() - self._t0:.0f} s")
        return "; ".join(parts)

    def _beat(self) -> None:
        while not self._stop.wait(min(5.0, self.interval)):
            if time.time() - self._last_line >= self.interval:
                self.line(self.status_text())

    # ------------------------------------------------------------------ updates
    def update(self, **fields: Any) -> None:
        self.fields.update(fields)
        if self.mode == "lines" and "phase" in fields:
            key = (self.fields.get("iteration"), self.fields.get("kind"), self.fields.get("phase"))
            if key != self._phase_line:
                self._phase_line = key
                self.line(self.status_text())

    def task(self, description: str, total: int, completed: int = 0):
        if self.progress is None:
            return None
        return self.progress.add_task(description, total=total, completed=completed, score="")

    def advance(self, task_id, score: str = "") -> None:
        if self.progress is not None and task_id is not None:
            self.progress.update(task_id, advance=1, score=score)

    def finish(self, task_id) -> None:
        if self.progress is not None and task_id is not None:
            self.progress.update(task_id, visible=False)

    def hide_finished(self) -> None:
        """Hide the finished task lines (arena matches, record generation) so the panel stays short."""
        if self.progress is not None:
            for task in self.progress.tasks:
                if task.finished:
                    self.progress.update(task.id, visible=False)

    def _render(self):
        from rich.console import Group
        from rich.table import Table

        f = self.fields
        t = Table(title=f"JFA training: {self.run_dir}", show_header=False, expand=False)
        t.add_column(style="bold")
        t.add_column()
        its = self.config.iterations
        t.add_row("iteration", f"{f.get('iteration', '-')}/{its if its else '-'}  net {f.get('kind', '-')}  "
                  f"phase {f.get('phase', '-')}")
        t.add_row("self-play", f"{f.get('games_done', 0)}/{f.get('games_total', '-')} games this iteration, "
                  f"{f.get('games', 0)} in the run")
        t.add_row("speed", f"{f.get('plies_per_s', 0):.1f} plies/s  {f.get('sims_per_s', 0):.0f} simulations/s  "
                  f"{f.get('positions_per_s', 0):.2f} positions/s  {f.get('games_per_hour', 0):.0f} games/h")
        if f.get("loss") is not None:
            t.add_row("losses", f"total {f['loss']:.4f}  value {f.get('value_loss', 0):.4f}  policy "
                      f"{f.get('policy_loss', 0):.4f}  L2 penalty {f.get('l2', 0):.4f}  lr {f.get('lr', 0):.2e}  "
                      f"step {f.get('step', 0)}")
        for key, label in (("eval_best", "gate (SPRT)"), ("eval_expert", "vs expert")):
            e = f.get(key)
            if e:
                t.add_row(label, e)
        if f.get("gate"):
            t.add_row("gate", f["gate"])
        if f.get("curve"):
            t.add_row("Elo curve", f["curve"])
        t.add_row("elapsed", f"{f.get('elapsed', 0):.0f} s")
        parts = [t]
        if self.progress is not None:
            parts.append(self.progress)
        return Group(*parts)


def eval_text(data: dict[str, Any]) -> str:
    wr, ci = data.get("win_rate"), data.get("wilson_ci95")
    if wr is None:
        return "-"
    ci_txt = f" (95% Wilson CI {100 * ci[0]:.0f}-{100 * ci[1]:.0f}%)" if ci else ""
    return f"{100 * wr:.0f}%{ci_txt}  +{data['wins']:g} ={data['draws']:g} -{data['losses']:g} in {data['games']} games"


