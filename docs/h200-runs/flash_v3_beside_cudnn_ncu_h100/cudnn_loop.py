# cuDNN's forward (sdpa_kernel CUDNN_ATTENTION) at one shape, back to back for a while: the
# sustained counterpart of loop_attn. Usage: cudnn_loop.py B H S D causal(0|1) seconds
import sys, time, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
B, H, S, D, causal, seconds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", float(sys.argv[6])
torch.manual_seed(1)
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with torch.no_grad(), sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.cuda.synchronize()
    t0 = time.perf_counter(); n = 0; el = 0.0
    while el < seconds:
        for _ in range(8):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize(); n += 8; el = time.perf_counter() - t0
us = el * 1e6 / n
flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
print(f"cudnn B{B}H{H}S{S}D{D}{'' if causal else '_noncausal'}: {n} forwards in {el:.3f} s, {us:.3f} us each, {flops / (us * 1e-6) / 1e12:.1f} TFLOP/s")
