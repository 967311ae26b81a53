"""``train.jobs.signals.sigterm_as_interrupt`` in real processes: SIGTERM raises ``KeyboardInterrupt`` once,
a second SIGTERM does not interrupt the clean-up, and a stop that hangs is forced within its grace."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROLOGUE = """
import os, signal, sys, time
from train.jobs.signals import sigterm_as_interrupt
"""


def _run(body: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``body`` (after :data:`PROLOGUE`) in a fresh interpreter; stdout, stderr and the seconds taken."""
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", PROLOGUE + textwrap.dedent(body)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)
    return proc, time.monotonic() - t0


def test_sigterm_raises_once_and_a_second_one_spares_the_clean_up():
    proc, _ = _run("""
        with sigterm_as_interrupt(grace=30):
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(30)
            except KeyboardInterrupt as exc:
                print("interrupted:", exc)
                os.kill(os.getpid(), signal.SIGTERM)  # a second stop while cleaning up
                time.sleep(0.3)
                print("clean-up done")
        print("after", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, signal.set_wakeup_fd(-1))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"interrupted: signal {int(signal.SIGTERM)}", "clean-up done",
                                        "after True -1"]


def test_a_stop_that_hangs_is_forced_with_every_threads_stack():
    proc, seconds = _run("""
        with sigterm_as_interrupt(grace=1):
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(30)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
                time.sleep(30)  # a clean-up that never ends
        print("not reached")
    """)
    assert proc.returncode == 130 and seconds < 20, (proc.returncode, seconds)
    assert proc.stdout.splitlines() == ["interrupted"]
    assert "error: still running 1 s after SIGTERM; forced exit" in proc.stderr
    assert 'File "<string>"' in proc.stderr  # the stuck main thread's stack


def test_a_main_thread_stuck_in_native_code_is_forced_too():
    # The Python handler never runs while the main thread waits inside one C call that ignores signals
    # (here a read that signals do not interrupt: SA_RESTART); the watchdog still ends the process.
    proc, seconds = _run("""
        import threading
        r, w = os.pipe()
        with sigterm_as_interrupt(grace=1):
            signal.siginterrupt(signal.SIGTERM, False)
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
            os.read(r, 1)
        print("not reached")
    """)
    assert proc.returncode == 130 and seconds < 20, (proc.returncode, proc.stderr)
    assert "forced exit" in proc.stderr


def test_the_block_ends_cleanly_without_a_signal_and_nests():
    proc, _ = _run("""
        import threading
        with sigterm_as_interrupt():
            inner = signal.getsignal(signal.SIGTERM)
            with sigterm_as_interrupt():
                assert signal.getsignal(signal.SIGTERM) is inner  # the inner block changes nothing
        time.sleep(0.2)
        print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,
              [t.name for t in threading.enumerate() if t.name == "sigterm-watchdog"])
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "[]"]


def test_grace_must_be_positive():
    from train.jobs.signals import sigterm_as_interrupt

    with pytest.raises(ValueError, match="grace"):
        with sigterm_as_interrupt(grace=0):
            pass
