"""Plain PyTorch reference for gpu_smoke's bf16 figure: an n x n x n bf16 product timed the usual way.

    python reference_matmul.py [N] [WARMUP] [TIMED] [REPEATS]

Random normal operands, WARMUP untimed products, then REPEATS rounds of TIMED products bracketed by CUDA
events; prints one JSON object with every round's TFLOP/s, their best and median. Nothing of gpulab.dlstack
is imported: this is the yardstick the collection's own measurement is compared with (tests/gpu/run.sh).
"""

from __future__ import annotations

import json
import statistics
import sys

import torch


def main(argv: list[str]) -> int:
    n, warmup, timed, repeats = (int(v) for v in (argv + ["8192", "3", "10", "5"][len(argv) :])[:4])
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch sees no GPU", "torch": torch.__version__}))
        return 1
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    for _warm in range(warmup):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    rounds = []
    for _round in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _call in range(timed):
            torch.matmul(a, b)
        stop.record()
        stop.synchronize()
        seconds = start.elapsed_time(stop) / 1e3 / timed
        rounds.append(2.0 * n**3 / seconds / 1e12)
    doc = {
        "what": f"torch.matmul bf16 {n}^3, {warmup} warm-up, {repeats} rounds of {timed} timed with CUDA events",
        "n": n,
        "tflops_rounds": [round(r, 1) for r in rounds],
        "tflops_best": round(max(rounds), 1),
        "tflops_median": round(statistics.median(rounds), 1),
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
