"""Signals for long jobs: SIGTERM stops them as Ctrl-C does. Standard library only, so that the command
line can install it before it imports anything heavy."""

from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["sigterm_as_interrupt"]


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Within the block, SIGTERM (a scheduler's or ``kill``'s stop) raises ``KeyboardInterrupt`` in the
    main thread, so that a job stopped that way ends as after Ctrl-C (a run saves its state and logs
    ``run_end`` with reason ``interrupted``; a match stops its workers; the command prints
    ``interrupted`` and exits with status 130) instead of dying between two saves. The previous
    handler comes back afterwards; off the main thread (where signals cannot be handled) nothing
    changes. Used by every command (``cli.py``'s command group) and by ``train.learning.pipeline``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
