"""The Ray runner (``train.jobs.workers.RayRunner``): long-lived actors, a killed actor replaced and its
task resubmitted (no finished work lost, each task reported once), and joining a cluster by address
(``ray_address``, ``--ray-address``): checked before anything starts. The pipeline's own Ray tests
(a worker killed mid-game, the backend missing) are in ``tests/test_train.py``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.ray_toy import write_records
from train.learning.config import ConfigError, load_config, validate_config

ROOT = Path(__file__).resolve().parent.parent
DEAD_ADDRESS = "127.0.0.1:1"  # nothing listens on port 1 (tcpmux) here


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray with 2 CPUs (the runner uses it instead of starting one), as in ``tests/test_train.py``."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    yield ray
    ray.shutdown()


def test_ray_actor_killed_mid_task_loses_no_record(tmp_path, ray_cluster):
    """Two actors, four tasks of four indices; one actor is killed (``ray.kill``) once the first record
    is on disk, in the middle of a task: a new actor replays that task, which skips what the killed
    attempt finished. Every index has exactly one record, no temporary file is left, ``on_done`` got
    each task once, and the indices it reports plus those the killed actor wrote are all, each once."""
    from train.jobs.workers import RayRunner

    ray = ray_cluster
    runner = RayRunner(2)
    records = tmp_path / "records"
    tasks = [{"dir": str(tmp_path), "indices": [4 * k + j for j in range(4)], "sleep": 0.2} for k in range(4)]
    pids = [ray.get(a.pid.remote()) for a in runner.actors]  # the actors have started
    done: list[list[int]] = []
    killed: list[int] = []
    stop = threading.Event()

    def kill_one() -> None:
        while not stop.is_set():
            if any(records.glob("*.json")):
                victim = runner.actors[0]
                ray.kill(victim)
                killed.append(pids[0])
                return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    try:
        assert runner.run(write_records, tasks, done.append) is True
    finally:
        stop.set()
        killer.join()
        runner.close()
    assert killed, "the actor was not killed"
    assert len(runner.actors) == 0  # closed
    files = sorted(records.iterdir())
    assert sorted(int(f.stem) for f in files if f.suffix == ".json") == list(range(16))
    assert not [f.name for f in files if f.suffix != ".json"], "temporary files left"
    assert len(done) == len(tasks)
    reported = [i for wrote in done for i in wrote]
    assert len(reported) == len(set(reported))
    writers = {int(f.stem): json.loads(f.read_text())["pid"] for f in files}
    by_killed = {i for i, pid in writers.items() if pid == killed[0]}
    assert set(reported) | by_killed == set(range(16)) and not set(reported) & by_killed
    assert any(pid not in pids for pid in writers.values()), "no replacement actor wrote a record"


def test_ray_runner_task_error_is_the_tasks_own(tmp_path, ray_cluster):
    """An exception raised by a task is raised as itself (not as a Ray wrapper, not as ``WorkerDied``)."""
    from train.jobs.workers import RayRunner

    runner = RayRunner(1)
    try:
        with pytest.raises(KeyError, match="indices"):
            runner.run(write_records, [{"dir": str(tmp_path), "sleep": 0}], lambda r: None)
    finally:
        runner.close()


def test_ray_address_that_does_not_answer_fails_at_once(tmp_path):
    """``--ray-address`` where nothing listens: one ``error:`` line naming ``ray_address``, exit status 2,
    within seconds (a TCP connect, not ``ray.init``'s retries), and no run directory."""
    run = tmp_path / "run"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "cli.py", "selfplay", "--backend", "ray", "--ray-address", DEAD_ADDRESS,
                           "--from-scratch", "--iterations", "1", "--run-dir", str(run)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"error: ray_address: {DEAD_ADDRESS} does not answer (connection refused)"], proc.stderr
    assert elapsed < 30  # the interpreter and imports; ray.init on a dead address retries for minutes
    assert not run.exists()
    # the same through the pipeline's API: before the run directory is made
    from train.learning.pipeline import run_pipeline

    cfg = load_config(None, ["backend=ray", f"ray_address={DEAD_ADDRESS}", "workers=1", "pretrain.enabled=false"])
    with pytest.raises(ConfigError, match=f"^ray_address: {DEAD_ADDRESS} does not answer"):
        run_pipeline(cfg, run, progress=False)
    assert not run.exists()


def test_ray_address_needs_the_ray_backend_and_a_host_port():
    with pytest.raises(ConfigError, match="config field 'ray_address': .*backend = 'ray'"):
        validate_config({"backend": "process", "ray_address": "127.0.0.1:6379"})
    with pytest.raises(ConfigError, match="config field 'ray_address': .*backend = 'ray'"):
        validate_config({"ray_address": "127.0.0.1:6379"})  # the default backend is process
    for bad in ("6379", "head", "head:0", "head:65536", ":6379", "head :6379"):
        with pytest.raises(ConfigError, match="config field 'ray_address': expected HOST:PORT"):
            validate_config({"backend": "ray", "ray_address": bad})
    for good in ("head:6379", "10.0.0.5:6379", "[::1]:6379"):
        assert validate_config({"backend": "ray", "ray_address": good}).ray_address == good
    assert validate_config({"backend": "ray"}).ray_address is None


def test_ray_address_flag_names_the_option(tmp_path):
    from typer.testing import CliRunner

    from cli import app

    result = CliRunner().invoke(app, ["selfplay", "--ray-address", "head:6379", "--from-scratch",
                                      "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 2 and "--ray-address: joins a Ray cluster" in result.stderr
    assert not (tmp_path / "run").exists()
