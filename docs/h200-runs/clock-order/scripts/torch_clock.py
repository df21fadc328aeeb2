import json, sys, torch
from torch.profiler import profile, ProfilerActivity
n, path = int(sys.argv[1]), sys.argv[2]
busy = float(sys.argv[3]) if len(sys.argv) > 3 else 0
import time
a = torch.randn(1, device="cuda", dtype=torch.bfloat16); b = torch.randn(1, device="cuda", dtype=torch.bfloat16)
x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
t0 = time.time()
while time.time() - t0 < busy:
    for _ in range(20): x @ x
    torch.cuda.synchronize()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
    for _ in range(n): torch.add(a, b)
    torch.cuda.synchronize()
p.export_chrome_trace(path)
ev = json.load(open(path))["traceEvents"]
launch = {e["args"]["correlation"]: e["ts"] for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
deltas = sorted((e["ts"] - launch[e["args"]["correlation"]]) * 1000 for e in ev
                if e.get("cat") == "kernel" and e.get("args", {}).get("correlation") in launch)
bad = sum(d < 0 for d in deltas)
print(f"after {busy:.0f} s busy: torch {torch.__version__}: {len(deltas)} kernels, {bad} start before their launch; delta ns min {deltas[0]:.0f} median {deltas[len(deltas)//2]:.0f}")
