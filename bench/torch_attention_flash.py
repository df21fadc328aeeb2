#!/usr/bin/env python3
"""bench/torch_attention_flash.py: PyTorch's SDPA backends on ts_bench_attention's shapes.

    python3 bench/torch_attention_flash.py [--repeats 21]

Timed as ts_bench_attention times our rungs: CUDA events around one call, each
call after a 256 MiB memset (L2 emptied, GPU busy while the call is issued),
warm-up first, then the median. Each backend is forced with
torch.nn.attention.sdpa_kernel; q, k, v are contiguous [B, H, S, D] bf16, as
ours. FLOPs: 4*B*H*S*S*D, halved with causal.
"""
import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

WORKLOADS = [(4, 16, 4096, 64, True), (2, 16, 4096, 128, True), (4, 16, 1024, 64, True)]
BACKENDS = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]


def device_ms(fn, warmup, repeats):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for r in range(repeats):
        flush.fill_(r & 0xFF)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, bf16, median of {args.repeats} calls")
    print(f"{'entry':<34} {'us':>10} {'TFLOP/s':>10}")
    for B, H, S, D, causal in WORKLOADS:
        torch.manual_seed(1)
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        name = f"B{B}_H{H}_S{S}_D{D}{'_causal' if causal else ''}"
        flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
        for label, backend in BACKENDS:
            try:
                with sdpa_kernel(backend):
                    ms = device_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), 3, args.repeats)
            except RuntimeError as e:  # a backend this build or GPU lacks
                print(f"{'torch/' + label + '/bf16/' + name:<34} unavailable: {str(e).splitlines()[0]}")
                continue
            print(f"{'torch/' + label + '/bf16/' + name:<34} {ms * 1e3:>10.1f} {flops / (ms * 1e-3) / 1e12:>10.1f}")


if __name__ == "__main__":
    main()
