#!/usr/bin/env python3
"""PyTorch replaying part 1's step from a CUDA graph: what its profiler shows, and what a replay saves.

    python3 -u tools/pytorch_cuda_graph.py OUT_DIR > OUT_DIR/pytorch_cuda_graph.out.txt 2>&1

Part 1's step, add(matmul(x, w), b) in bf16 (x, w [N, N], b [N]), at N = 64 and 4096: captured with
torch.cuda.graph after a warm-up on a side stream (as PyTorch's documentation does), then
  - the host's time per step, eager and replayed, median of 200 batches of 20 steps, each batch
    followed by a synchronize (at 64 the step is overhead-bound: the host's time is the step's);
  - the replay checked against the eager step (the same kernels on the same inputs);
  - PyTorch's profiler over 3 eager steps and 3 replays: its key_averages table, and the Chrome
    trace of the replays (OUT_DIR/torch-<version>-<gpu>-cuda-graph-replay-<N>.json, <gpu> such as h200).
"""
import os
import re
import statistics
import sys
import time

import torch


def host_us_per_step(fn, steps=20, batches=200):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        samples.append((t1 - t0) / steps * 1e6)
    return statistics.median(samples)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    gpu = torch.cuda.get_device_name(0)
    print(f"torch {torch.__version__}, {gpu}")
    model = re.search(r"\b([A-Z]+\d+[A-Z]*)\b", gpu.replace("NVIDIA", ""))  # "NVIDIA H200" -> h200
    prefix = f"torch-{'.'.join(torch.__version__.split('.')[:2])}-{model.group(1).lower() if model else 'gpu'}"
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    for n in (64, 4096):
        torch.manual_seed(0)
        x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        step = lambda: torch.add(torch.matmul(x, w), b)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = step()
        graph.replay()
        torch.cuda.synchronize()
        same = torch.equal(y, step())
        eager_us = host_us_per_step(step)
        replay_us = host_us_per_step(graph.replay)
        print(f"\n===== N = {n}: replay equals eager: {same}; host time per step: eager {eager_us:.3f} us, "
              f"replayed {replay_us:.3f} us ({eager_us / replay_us:.2f}x)")
        with torch.profiler.profile(activities=acts):  # CUPTI's first buffers and setup: not in the tables
            step()
            graph.replay()
            torch.cuda.synchronize()
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(3):
                step()
            for _ in range(3):
                graph.replay()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=20))
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(3):
                graph.replay()
            torch.cuda.synchronize()
        trace = os.path.join(out, f"{prefix}-cuda-graph-replay-{n}.json")
        prof.export_chrome_trace(trace)
        print(f"replays only:\n{prof.key_averages().table(sort_by='cuda_time_total', row_limit=20)}")
        print(f"wrote {os.path.basename(trace)}")


if __name__ == "__main__":
    main()
