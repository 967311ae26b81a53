"""What a training run shows while it runs: the rich live panel, plain progress lines, TensorBoard.

- :class:`Dashboard`: a rich ``Live`` panel on stderr (iteration, phase, self-play counts and speeds,
  losses, the last gate and learning-curve point, progress bars of the running matches) when stdout and
  stderr are terminals; otherwise (a log file, a CI job) :class:`Dashboard` prints one plain line per
  phase change and at least one status line a minute (a timer thread) on stdout, so a log never stays
  silent.
- :class:`LineProgress`: the same plain lines for the progress bars of ``arena``, ``tournament``,
  ``gen-records``, ``pretrain`` and the export gate when stderr is not a terminal (a rich bar is not
  drawn there): a line as games finish and a status line at least once a minute.
- :class:`StampedLines`: the one timestamped-line printer with its timer thread under both.
- :class:`TensorBoard`: scalars in ``RUN/tb`` (``torch.utils.tensorboard``), or nothing with one warning.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable

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


class StampedLines:
    """Timestamped plain lines (``[HH:MM:SS] text``) on ``stream`` (default: ``sys.stdout`` or ``sys.stderr``
    as named by ``to``, looked up when a line is printed), and, between :meth:`start` and :meth:`stop`, a
    timer thread that prints ``status()`` whenever ``interval`` seconds (> 0) pass without a line; a
    ``status()`` of ``None`` or ``""`` prints nothing. Thread-safe."""

    def __init__(self, status: Callable[[], str | None], interval: float = 60.0, stream=None, to: str = "stdout"):
        if not interval > 0:
            raise ValueError(f"interval: expected seconds > 0, got {interval!r}")
        if to not in ("stdout", "stderr"):
            raise ValueError(f"to: stdout or stderr, got {to!r}")
        self.status = status
        self.interval = float(interval)
        self.stream = stream
        self.to = to
        self._last = time.time()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    def line(self, text: str) -> None:
        out = self.stream if self.stream is not None else getattr(sys, self.to)
        with self._lock:
            print(f"[{time.strftime('%H:%M:%S')}] {text}", file=out, flush=True)
            self._last = time.time()

    def seconds_since_line(self) -> float:
        return time.time() - self._last

    def start(self) -> None:
        if self._timer is not None:
            return
        self._stop.clear()
        self._last = time.time()
        self._timer = threading.Thread(target=self._beat, name="progress-lines", daemon=True)
        self._timer.start()

    def stop(self) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join(timeout=2)
            self._timer = None

    def _beat(self) -> None:
        while not self._stop.wait(min(5.0, self.interval)):
            if self.seconds_since_line() >= self.interval:
                text = self.status()
                if text:
                    self.line(text)


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}"


class LineProgress:
    """A stand-in for the part of ``rich.progress.Progress`` the commands use (``add_task``, ``update``,
    ``advance``, ``start``/``stop``, ``with``), printing plain :class:`StampedLines` on stderr instead of a
    bar: ``description: done/total [score], elapsed h:mm:ss, about h:mm:ss left`` when a task's count
    changes (at most one line per task every ``min_gap`` seconds, and always when it finishes), and every
    unfinished task's line when ``interval`` seconds pass without one. ``update(visible=False)`` silences
    a task. For output that is not a terminal (:func:`train.matches.arena.new_progress` picks it)."""

    def __init__(self, interval: float = 60.0, min_gap: float = 10.0, stream=None):
        if not min_gap >= 0:
            raise ValueError(f"min_gap: expected seconds >= 0, got {min_gap!r}")
        self.min_gap = float(min_gap)
        self._tasks: dict[int, dict[str, Any]] = {}
        self._printer = StampedLines(self._status, interval, stream, to="stderr")

    def add_task(self, description: str, total: float | None = None, completed: float = 0, **fields: Any) -> int:
        task_id = len(self._tasks)
        self._tasks[task_id] = {"description": description, "total": total, "completed": completed,
                                "fields": dict(fields), "visible": True, "start": time.time(),
                                "start_completed": completed, "last_line": 0.0}
        return task_id

    def update(self, task_id: int, *, advance: float | None = None, completed: float | None = None,
               total: float | None = None, visible: bool | None = None, **fields: Any) -> None:
        task = self._tasks[task_id]
        before = task["completed"]
        if total is not None:
            task["total"] = total
        if completed is not None:
            task["completed"] = completed
        if advance is not None:
            task["completed"] += advance
        if visible is not None:
            task["visible"] = visible
        task["fields"].update(fields)
        if task["completed"] == before or not task["visible"]:
            return
        done = task["total"] is not None and task["completed"] >= task["total"]
        if done or time.time() - task["last_line"] >= self.min_gap:
            task["last_line"] = time.time()
            self._printer.line(self._text(task))

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    def start(self) -> None:
        self._printer.start()

    def stop(self) -> None:
        self._printer.stop()

    def __enter__(self) -> "LineProgress":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _text(self, task: dict[str, Any]) -> str:
        done, total = task["completed"], task["total"]
        elapsed = time.time() - task["start"]
        parts = [f"{task['description']}: {done:g}" + (f"/{total:g}" if total is not None else "")]
        score = task["fields"].get("score")
        if score:
            parts.append(str(score))
        parts.append(f"elapsed {_duration(elapsed)}")
        rate = (done - task["start_completed"]) / elapsed if elapsed > 0 else 0.0
        if total is not None and done < total and rate > 0:
            parts.append(f"about {_duration((total - done) / rate)} left")
        return ", ".join(parts)

    def _status(self) -> str:
        return "; ".join(self._text(t) for t in list(self._tasks.values())  # a copy: the timer thread reads
                         if t["visible"] and (t["total"] is None or t["completed"] < t["total"]))


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
        self.fields: dict[str, Any] = {}
        self.live = None
        self.progress = None
        self._phase_line = None
        self._t0 = time.time()
        self._lines = StampedLines(self.status_text, self.interval, stream, to="stdout") if mode == "lines" else None
        self._finished_games: Callable[[], int] | None = None
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
        elif self._lines is not None:
            self._lines.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)
            self.live = None
        if self._lines is not None:
            self._lines.stop()

    # ------------------------------------------------------------------ plain lines
    def line(self, text: str) -> None:
        """Print one plain progress line (``lines`` mode only)."""
        if self._lines is not None:
            self._lines.line(text)

    def count_finished_games(self, count: Callable[[], int] | None) -> None:
        """Show, as the phase's games done, at least ``count()`` (``None``: stop): the games finished so
        far, counted where they land (their records on disk), since a worker reports its games only
        when its whole batch of games in flight ends. Called from the display's timer thread."""
        self._finished_games = count

    def games_done(self) -> int:
        """The self-play games of this iteration done: reported, or counted on disk if more."""
        done = int(self.fields.get("games_done") or 0)
        count = self._finished_games
        if count is not None:
            try:
                done = max(done, int(count()))
            except OSError:  # a directory that moves under the count: the reported number stands
                pass
        return done

    def status_text(self) -> str:
        f = self.fields
        its = self.config.iterations
        parts = [f"iteration {f.get('iteration', '-')}/{its if its else '-'} {f.get('kind', '-')}",
                 f"phase {f.get('phase', '-')}"]
        if f.get("games_total"):
            parts.append(f"self-play {self.games_done()}/{f['games_total']} ({f.get('games', 0)} in the run,"
                         f" {f.get('positions_per_s', 0):.2f} positions/s)")
        if f.get("loss") is not None:
            parts.append(f"loss {f['loss']:.4f}")
        if f.get("gate"):
            parts.append(f"gate: {f['gate']}")
        if f.get("curve"):
            parts.append(f"curve: {f['curve']}")
        parts.append(f"session {time.time() - self._t0:.0f} s")
        return "; ".join(parts)

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
        t.add_row("self-play", f"{self.games_done()}/{f.get('games_total', '-')} games this iteration, "
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


