#!/usr/bin/env python3
"""PyTorch compiling the series' MLP again for a new shape: torch.compile's specialization, measured.

    python3 -u tools/pytorch_recompile.py > docs/pytorch-reference/torch-2.11-h200-recompile.out.txt 2>&1

The GeGLU MLP of part 2 (bench/torch_side_by_side.py's GeGLUMLP: dim 768, hidden 3072, bf16) under
torch.compile, called twice at each of three sequence lengths (batch 64): each call's wall time
(the first at a new shape includes any compile) and how many graphs Dynamo has compiled so far, with
Dynamo's own recompile log (torch._logging recompiles) between them; then PyTorch's profiler table of
one more call at each shape.
"""
import os
import sys
import time

import torch
from torch._dynamo.utils import counters

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from torch_side_by_side import GeGLUMLP  # noqa: E402

SEQS = (128, 256, 384)


def main():
    torch._logging.set_logs(recompiles=True)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    torch.manual_seed(0)
    mlp = torch.compile(GeGLUMLP().cuda().to(torch.bfloat16))
    xs = {s: torch.randn(64, s, 768, device="cuda", dtype=torch.bfloat16) for s in SEQS}
    with torch.no_grad():
        for s in SEQS:
            for _ in range(2):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                mlp(xs[s])
                torch.cuda.synchronize()
                ms = (time.perf_counter() - t0) * 1e3
                print(f"call at [64, {s}, 768]: {ms:10.3f} ms, graphs compiled so far: "
                      f"{counters['stats']['unique_graphs']}", flush=True)
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            for s in SEQS:
                mlp(xs[s])
            torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=20))


if __name__ == "__main__":
    main()
