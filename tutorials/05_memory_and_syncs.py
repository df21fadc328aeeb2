#!/usr/bin/env python3
"""PyTorch's side of tutorial 05, for the walk-through's comparisons (needs torch and a GPU).

1. The GeGLU MLP of tutorial 03 (x [64, 128, 768], hidden 3072, bf16), eager, profiled with
   profile_memory=True under the series' schedule: PyTorch's table with its memory columns,
   sorted by self_cuda_memory_usage (the units, the negative frees).
2. The peak of one forward above what was allocated before it
   (torch.cuda.max_memory_allocated after reset_peak_memory_stats), written two ways: as one
   expression (Python frees gate(x) as soon as gelu has read it) and with every intermediate
   kept in a local (as C++ keeps the temporaries of one full expression).
3. The same forward and loss with loss.item() every step: PyTorch's rows for the read
   (aten::item, aten::_local_scalar_dense, cudaMemcpyAsync, cudaStreamSynchronize).

Run: python3 tutorials/05_memory_and_syncs.py
"""
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule

B, S, D, H = 64, 128, 768, 3072
DTYPE, DEV = torch.bfloat16, "cuda"


def mib(n):
    return f"{n / 2**20:.2f} MB"


def main():
    torch.manual_seed(0)
    gate = torch.randn(H, D, dtype=DTYPE, device=DEV) / D**0.5
    up = torch.randn(H, D, dtype=DTYPE, device=DEV) / D**0.5
    down = torch.randn(D, H, dtype=DTYPE, device=DEV) / H**0.5
    x = torch.randn(B, S, D, dtype=DTYPE, device=DEV)

    def expression(x):
        with record_function("mlp_fwd"):
            return F.linear(F.gelu(F.linear(x, gate), approximate="tanh") * F.linear(x, up), down)

    def locals_kept(x):
        g = F.linear(x, gate)
        a = F.gelu(g, approximate="tanh")
        u = F.linear(x, up)
        h = a * u
        y = F.linear(h, down)
        return y, (g, a, u, h)  # every intermediate alive until the caller drops them

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    with torch.inference_mode():
        for _ in range(3):
            expression(x)
        torch.cuda.synchronize()

        print("\n== 1. profile_memory=True, the eager MLP, schedule(wait=1, warmup=1, active=3)")
        y = None
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True,
                     schedule=schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:
            for _ in range(5):
                y = expression(x)
                prof.step()
        print(prof.key_averages().table(sort_by="self_cuda_memory_usage", row_limit=12))

        print("== 2. the peak of one forward above what was allocated before it")
        del y
        T = B * S
        one = T * H * 2
        for name, fn in [("one expression", lambda: expression(x)), ("locals kept", lambda: locals_kept(x))]:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            out = fn()
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
            print(f"{name:<15} peak {mib(peak)} = {peak / one:.2f} x [T, H] ({mib(one)}); the output [T, D] is "
                  f"{mib(T * D * 2)}")
            del out

        print("\n== 3. loss.item() every step")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:
            for _ in range(5):
                y = expression(x)
                loss = (y * y).sum()
                loss.item()
                prof.step()
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=14))


if __name__ == "__main__":
    main()
