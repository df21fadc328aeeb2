#!/usr/bin/env python3
"""What PyTorch answers on the numerics cases tensorscope's tests check at scale.

    python3 tools/pytorch_numerics.py > docs/pytorch-reference/numerics_at_scale.out.txt

Sums and softmax over 2^25 elements (where one f32 running sum stops at 2^24), mm over K = 2^25,
fills with values a dtype cannot hold, and int64 arange past 2^53 (where a double loses integers).
Each line: the expression, the device, and the value PyTorch returned or the error it raised.
tests/test_ops_edge_cases.cpp and tests/test_cuda_ops.cpp quote these lines.
"""
import torch

N = 2**25


def show(expr, fn, devices):
    for device in devices:
        try:
            value = fn(device)
            if isinstance(value, torch.Tensor):
                value = value.tolist()
            text = repr(value)
        except Exception as e:  # the error PyTorch raises is the answer
            text = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        print(f"{expr:<58} {device:<5} {text}")


def main():
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    print(f"# PyTorch {torch.__version__} on {name}")
    f32 = torch.float32
    show("sum(ones(2^25)).item()", lambda d: torch.ones(N, dtype=f32, device=d).sum().item(), devices)
    show("sum(full(2^24, 0.1)).item()", lambda d: torch.full((N // 2,), 0.1, dtype=f32, device=d).sum().item(),
         devices)
    show("float64 sum of 2^24 x float32(0.1)", lambda d: float(torch.tensor(0.1, dtype=f32).double()) * (N // 2),
         ["cpu"])
    show("sum(ones(2, 2^24 + 2), 1)", lambda d: torch.ones(2, 2**24 + 2, dtype=f32, device=d).sum(1), devices)
    show("softmax(zeros(2^25), 0)[0].item()", lambda d: torch.zeros(N, dtype=f32, device=d).softmax(0)[0].item(),
         devices)
    show("softmax(zeros(2^25), 0).double().sum().item()",
         lambda d: torch.zeros(N, dtype=f32, device=d).softmax(0).double().sum().item(), devices)
    show("mm(ones(1, 2^25), ones(2^25, 1)).item()",
         lambda d: torch.mm(torch.ones(1, N, dtype=f32, device=d), torch.ones(N, 1, dtype=f32, device=d)).item(),
         devices)
    show("full((2,), 1e30, dtype=float16)", lambda d: torch.full((2,), 1e30, dtype=torch.float16, device=d), devices)
    show("full((2,), 1e39, dtype=float32)", lambda d: torch.full((2,), 1e39, dtype=f32, device=d), devices)
    show("zeros(2, dtype=bfloat16).fill_(1e39)", lambda d: torch.zeros(2, dtype=torch.bfloat16, device=d).fill_(1e39),
         devices)
    show("zeros(2, dtype=float16).masked_fill_(mask, 1e30)",
         lambda d: torch.zeros(2, dtype=torch.float16, device=d).masked_fill_(torch.ones(2, dtype=torch.bool,
                                                                                         device=d), 1e30), devices)
    show("full((2,), inf, dtype=float16)", lambda d: torch.full((2,), float("inf"), dtype=torch.float16, device=d),
         devices)
    show("arange(2^53, 2^53 + 5, dtype=int64)",
         lambda d: torch.arange(2**53, 2**53 + 5, dtype=torch.int64, device=d), devices)
    show("arange(2^62, 2^62 + 9, 3, dtype=int64)",
         lambda d: torch.arange(2**62, 2**62 + 9, 3, dtype=torch.int64, device=d), devices)


if __name__ == "__main__":
    main()
