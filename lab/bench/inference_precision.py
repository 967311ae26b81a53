"""Net throughput in float32 against bfloat16 (``nets.inference``), from one run.

``python -m lab.bench.inference_precision [SECONDS] [BATCH...]`` times the shipped nets
(``models/default``: SLM, upper, lower) compiled for inference in each precision, one torch thread,
for about ``SECONDS`` (default 1.5) per (net, precision, batch size), batch sizes 1, 2, 4, 8, 16 by
default, the two precisions measured back to back for each batch so that both see the same machine
load. Prints one JSON object: positions per second per net, precision and batch, and the ratio
bfloat16 / float32, plus whether the CPU has native bfloat16 (``nets.inference.bfloat16_native``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(seconds: float = 1.5, batches: tuple[int, ...] = (1, 2, 4, 8, 16)) -> dict:
    import torch

    from nets.evaluator import net_throughput
    from nets.inference import bfloat16_native, compile_for_inference
    from nets.io import load

    torch.set_num_threads(1)
    out: dict = {"bfloat16_native": bfloat16_native(), "seconds": seconds, "nets": {}}
    for kind in ("slm", "upper", "lower"):
        net, _, _ = load(Path("models") / "default" / f"{kind}.safetensors", expected_kind=kind)
        forward = {p: compile_for_inference(net, p) for p in ("float32", "bfloat16")}
        rows = {}
        for b in batches:
            rate = {p: net_throughput(net, b, seconds, forward=f) for p, f in forward.items()}
            rows[b] = {"float32": round(rate["float32"], 1), "bfloat16": round(rate["bfloat16"], 1),
                       "ratio": round(rate["bfloat16"] / rate["float32"], 2)}
        out["nets"][kind] = rows
    return out


if __name__ == "__main__":  # pragma: no cover - command line
    args = sys.argv[1:]
    print(json.dumps(main(float(args[0]) if args else 1.5, tuple(int(a) for a in args[1:]) or (1, 2, 4, 8, 16))))
