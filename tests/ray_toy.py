"""A toy task for the Ray runner's tests (``tests/test_ray.py``), module-level so that Ray workers
import it by name: idempotent like the self-play tasks, each index written once, atomically."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


def write_records(task: dict) -> list[int]:
    """For ``task = {"dir": DIR, "indices": [int, ...], "sleep": seconds}``: each index without a record
    ``DIR/records/<index>.json`` is played (``sleep`` seconds) and then written atomically (a temporary
    file in the same directory, then ``os.replace``), ``{"index": i, "pid": writer's pid}``. Returns the
    indices written by this call (an index whose record exists is skipped; the temporary file of an
    attempt killed before its ``os.replace`` is removed when the index is played again)."""
    records = Path(task["dir"]) / "records"
    records.mkdir(parents=True, exist_ok=True)
    wrote = []
    for i in task["indices"]:
        final = records / f"{i}.json"
        if final.exists():
            continue
        for stale in records.glob(f".{i}.json.*.tmp"):  # left by an attempt killed between write and replace
            stale.unlink(missing_ok=True)
        time.sleep(task["sleep"])
        tmp = records / f".{i}.json.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"index": i, "pid": os.getpid()}), encoding="utf-8")
        os.replace(tmp, final)
        wrote.append(i)
    return wrote
