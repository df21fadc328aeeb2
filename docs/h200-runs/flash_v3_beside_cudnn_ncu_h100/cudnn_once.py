# One cuDNN forward (after 3 warm-ups) at B H S D [causal], for ncu to catch with --launch-skip.
import sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
B, H, S, D = map(int, sys.argv[1:5]); causal = len(sys.argv) > 5 and sys.argv[5] == "causal"
torch.manual_seed(1)
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with torch.no_grad(), sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(4):
        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
torch.cuda.synchronize()
