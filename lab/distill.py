"""Teacher targets for a smaller upper net: battle positions labelled with a teacher upper net's own
policy and value (knowledge distillation, Hinton et al. 2015, at temperature 1).

The positions come from game records and from sample shards. Each battle position of the records with
at least two legal paths becomes one ``upper`` sample (``train.learning.supervised.samples_from_record``:
the planes and the upper actions of every legal path); a shard's ``upper`` samples (a self-play run's
``RUN/shards/upper``) keep their planes and the actions their policy lists (the searched root's
children). Either way the policy target is replaced by the teacher's softmax over those actions and the
value target by the teacher's value (``tanh`` output, side to move). The samples go into one shard
per ``--chunk`` record files (converted by ``train.learning.supervised.samples_from_records`` on one
pool of ``--workers`` processes, started once) or per input shard (``train.learning.samples.write_shard``, atomic; a shard
that exists is kept, so a killed run resumes when given the same inputs and ``--chunk``), for ``python
cli.py pretrain --model upper --shards OUT --set nets.blocks=B --set nets.channels=C``.

Usage::

    python -m lab.distill TEACHER [RECORDS...] [--shards PATH...] --out OUT [--batch 512] [--chunk 32]
        [--workers 0]

``TEACHER``: an upper net file (``nets.io``). ``RECORDS``: record files or directories
(``train.learning.supervised.record_files``). ``--shards``: shard files, directories or glob patterns
(``train.learning.samples.shard_paths``); shards of other kinds are skipped. Bad input: one
``error: ...`` line, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

from train.learning.samples import Samples, write_shard


def teacher_targets(model: torch.nn.Module, samples: Samples, batch: int = 512) -> Samples:
    """``samples`` (``upper``) with the policy target replaced by ``model``'s softmax over each sample's
    listed actions and ``z`` by its value. ``model``: an ``UpperNet`` (``forward(planes (B, 14, 14, 14)
    float32) -> (logits (B, 48804), value (B,))``) in eval mode. ``batch``: positions per forward pass,
    at least 1. Raises ``ValueError`` for a non-``upper`` sample set, a sample without listed actions
    or a bad ``batch``."""
    if samples.kind != "upper":
        raise ValueError(f"teacher targets need upper samples, got {samples.kind!r}")
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    n = len(samples)
    off, idx = samples.pi_off, samples.pi_idx
    counts = np.diff(off)
    if n and counts.min() < 1:
        raise ValueError("teacher targets need at least one listed action per sample")
    pi_val = np.empty_like(samples.pi_val)
    z = np.empty(n, np.float32)
    with torch.inference_mode():
        for lo in range(0, n, batch):
            hi = min(n, lo + batch)
            logits, value = model(torch.from_numpy(samples.planes[lo:hi].astype(np.float32)))
            z[lo:hi] = value.float().numpy()
            # one segment of listed actions per sample (CSR): softmax within each segment
            rows = np.repeat(np.arange(hi - lo), counts[lo:hi])
            x = logits.double().numpy()[rows, idx[off[lo]:off[hi]]]
            starts = off[lo:hi] - off[lo]
            e = np.exp(x - np.maximum.reduceat(x, starts)[rows])
            pi_val[off[lo]:off[hi]] = e / np.add.reduceat(e, starts)[rows]
    return Samples("upper", samples.planes, z, samples.pi_off, samples.pi_idx, pi_val,
                   meta={**samples.meta, "target": "teacher"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.distill", description=__doc__.split("\n\n")[0])
    parser.add_argument("teacher", type=Path)
    parser.add_argument("records", nargs="*", type=Path)
    parser.add_argument("--shards", nargs="+", default=[])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--chunk", type=int, default=32)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args(argv)
    from core.errors import JiuError
    from core.records import read_record
    from nets.io import load
    from train.learning.samples import read_shard, shard_paths
    from train.jobs.workers import make_runner
    from train.learning.supervised import record_files, samples_from_records

    for name, value, low in (("batch", args.batch, 1), ("chunk", args.chunk, 1), ("workers", args.workers, 0)):
        if value < low:
            print(f"error: --{name} must be at least {low}, got {value}", file=sys.stderr)
            return 2
    try:
        model, _, _ = load(args.teacher, expected_kind="upper")
        files = record_files(args.records)
        inputs = [("records", files[i:i + args.chunk]) for i in range(0, len(files), args.chunk)]
        inputs += [("shard", [f]) for f in shard_paths(args.shards)]
    except (ValueError, JiuError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not inputs:
        print("error: records: no record files or shards given", file=sys.stderr)
        return 2
    start, total = time.monotonic(), 0
    runner = make_runner(args.workers)  # one pool for every chunk
    try:
        for k, (what, group) in enumerate(inputs, 1):
            out = args.out / f"{k:05d}-{group[0].stem}.npz"
            if out.exists():
                continue
            try:
                if what == "records":
                    records = [r for f in group for r in read_record(f)]
                    samples = samples_from_records(records, "upper", runner=runner)
                else:
                    samples = read_shard(group[0])
            except (ValueError, JiuError) as exc:
                where = group[0] if len(group) == 1 else f"{group[0]} .. {group[-1]}"
                print(f"error: {where}: {exc}", file=sys.stderr)
                return 2
            if samples.kind != "upper" or not len(samples):
                continue
            write_shard(out, teacher_targets(model, samples, args.batch))
            total += len(samples)
            print(f"{what} {k}/{len(inputs)}: {len(samples)} samples ({total} in {time.monotonic() - start:.0f} s)",
                  flush=True)
    finally:
        runner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
