"""The upper learner's step with the policy loss on the listed actions (``nets.model`` "Training") against
the dense form it replaced, in one run: the ratio of their CPU seconds per step.

``python -m bench.learner_step [STEPS] [SHAPE...]`` times ``STEPS`` (default 12) alternating steps of
each form, batch 256 with the four symmetries, on the upper samples of eight held-out expert records
(``data/heldout-expert``), for each trunk ``SHAPE`` (``BLOCKSxCHANNELS``, default ``3x32 6x64``), torch on
one thread, and prints one JSON object: per shape the median CPU seconds (``time.process_time``) of a
step of each form, batch drawing included, and ``dense / listed``.

- **listed**: ``Learner.train_step`` on ``make_batch``'s sparse rows (``PolicyValueNet.forward_listed``).
- **dense**: the same net and optimiser state (a copy), the batch's dense views ``Batch.pi`` and
  ``Batch.mask`` ``(256, 48804)``, the full logits and ``nets.losses.policy_value_terms`` over them, as the
  learner computed the loss before.
"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _shape(text: str) -> tuple[int, int]:
    try:
        blocks, channels = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"shape: expected BLOCKSxCHANNELS such as 3x32, got {text!r}") from None
    if not (1 <= blocks <= 40 and 1 <= channels <= 512):
        raise ValueError(f"shape: blocks must be 1..40 and channels 1..512, got {text!r}")
    return blocks, channels


def main(steps: int = 12, shapes: tuple[tuple[int, int], ...] = ((3, 32), (6, 64))) -> dict:
    import numpy as np
    import torch

    from core.records import read_record
    from nets.losses import l2_penalty, policy_value_terms
    from train.learning.config import load_config
    from train.learning.learner import Learner
    from train.learning.samples import concat, make_batch
    from train.learning.supervised import record_files, samples_from_record

    files = record_files([ROOT / "data" / "heldout-expert"])[:8]
    samples = concat([samples_from_record(r, "upper") for f in files for r in read_record(f)], kind="upper")
    out: dict = {"steps": steps, "batch": 256, "samples": len(samples)}
    for blocks, channels in shapes:
        cfg = load_config(None, [f"nets.blocks={blocks}", f"nets.channels={channels}", "learner.schedule=constant"])
        listed = Learner(cfg.nets.net_config("upper"), cfg.learner, seed=0)
        model = copy.deepcopy(listed.model)
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.learner.lr)

        def dense_step(batch) -> None:
            model.train()
            logits, v = model(torch.from_numpy(batch.planes))
            t = policy_value_terms(logits, v, torch.from_numpy(batch.pi), torch.from_numpy(batch.z),
                                   torch.from_numpy(batch.mask))
            loss = t.total + l2_penalty(model, cfg.learner.l2_penalty)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        rng = np.random.default_rng(0)
        times: dict[str, list[float]] = {"listed": [], "dense": []}
        for i in range(steps + 2):  # the first two of each form warm up
            for form in ("listed", "dense"):
                t0 = time.process_time()
                batch = make_batch(samples, rng.integers(len(samples), size=256), rng, (0, 1, 2, 3))
                listed.train_step(batch) if form == "listed" else dense_step(batch)
                if i >= 2:
                    times[form].append(time.process_time() - t0)
        med = {form: float(np.median(t)) for form, t in times.items()}
        out[f"{blocks}x{channels}"] = {"listed_s": round(med["listed"], 3), "dense_s": round(med["dense"], 3),
                                       "dense/listed": round(med["dense"] / med["listed"], 2)}
    return out


def _cli(args: list[str]) -> int:
    steps = 12
    try:
        if args and "x" not in args[0].lower():
            text = args.pop(0)
            if not text.isdigit() or int(text) < 1:
                raise ValueError(f"steps: expected a whole number of at least 1, got {text!r}")
            steps = int(text)
        shapes = tuple(_shape(a) for a in args) or ((3, 32), (6, 64))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(1)
    print(json.dumps(main(steps, shapes), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))
