"""Signals for long jobs: SIGTERM stops them as Ctrl-C does, and a stop that hangs is forced. Standard
library only, so that the command line can install it before it imports anything heavy."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading

__all__ = ["FORCED_EXIT_SECONDS", "FORCED_EXIT_STATUS", "sigterm_as_interrupt"]

FORCED_EXIT_SECONDS = 60.0  # seconds a job may spend stopping after SIGTERM before it is forced to exit
FORCED_EXIT_STATUS = 130  # the status of an interrupted command, forced or not

_installed = False  # a sigterm_as_interrupt block is active (nested blocks change nothing)


@contextlib.contextmanager
def sigterm_as_interrupt(grace: float = FORCED_EXIT_SECONDS):
    """Within the block, SIGTERM (a scheduler's or ``kill``'s stop) raises ``KeyboardInterrupt`` in the
    main thread, so that a job stopped that way ends as after Ctrl-C (a run saves its state and logs
    ``run_end`` with reason ``interrupted``; a match stops its workers; the command prints
    ``interrupted`` and exits with status 130) instead of dying between two saves. Only the first
    SIGTERM raises: later ones do not interrupt the clean-up the first one started.

    A watchdog thread learns of the signal from Python's wakeup descriptor (``signal.set_wakeup_fd``),
    which the C-level handler writes whatever the main thread is doing. If the process still runs
    ``grace`` seconds (> 0) after the first SIGTERM (the main thread stuck in a native call, or a
    clean-up or interpreter shutdown that hangs), it prints every thread's stack and an ``error:`` line
    on stderr and exits at once with status :data:`FORCED_EXIT_STATUS`. Nothing is lost that a
    ``kill -9`` would not lose: long jobs write atomically and resume from their last save.

    The previous handler and wakeup descriptor come back afterwards; off the main thread (where signals
    cannot be handled), or inside another such block, nothing changes. Raises ``ValueError`` for
    ``grace`` <= 0. Used by every command (``cli.py``'s command group) and by ``train.learning.pipeline``."""
    global _installed
    if not grace > 0:
        raise ValueError(f"grace: expected seconds > 0, got {grace!r}")
    if _installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    received = threading.Event()
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)

    def interrupt(signum, frame):
        if received.is_set():
            return
        received.set()
        raise KeyboardInterrupt(f"signal {signum}")

    def watch() -> None:
        try:
            while True:
                data = os.read(read_fd, 64)
                if not data:  # the block ended without a SIGTERM
                    return
                if signal.SIGTERM in data:
                    break
        finally:
            os.close(read_fd)
        threading.Event().wait(grace)  # the process exits before this returns when its stop is clean
        faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
        os.write(2, f"error: still running {grace:g} s after SIGTERM; forced exit (long jobs resume from their "
                    "last save)\n".encode())
        os._exit(FORCED_EXIT_STATUS)

    previous = signal.signal(signal.SIGTERM, interrupt)
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    watchdog = threading.Thread(target=watch, name="sigterm-watchdog", daemon=True)
    watchdog.start()
    _installed = True
    try:
        yield
    finally:
        _installed = False
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGTERM, previous)
        os.close(write_fd)  # ends the watchdog, unless a SIGTERM came: then it bounds the rest of the stop
