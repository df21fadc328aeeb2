# cycles_summary.py: flash_v3's and cuDNN's kernels side by side at the clock Nsight Compute locks
# (--clock-control base), from ncu_ours_<shape>_base.txt and ncu_cudnn_<shape>_base.txt: elapsed
# cycles, duration, SM clock, and flash_v3's cycles over cuDNN's (below 1: fewer cycles).
# Run in this folder: python3 cycles_summary.py > cycles_summary.txt
import re

SHAPES = [("d64_causal", "B4 H16 S4096 D64 causal"), ("d96_causal_D", "B2 H16 S4096 D96 causal"),
          ("d96_noncausal_D", "B2 H16 S4096 D96 non-causal"), ("d128_causal", "B2 H16 S4096 D128 causal"),
          ("d128_noncausal", "B2 H16 S4096 D128 non-causal"), ("d192_noncausal", "B2 H16 S4096 D192 non-causal"),
          ("d256_noncausal", "B2 H8 S4096 D256 non-causal")]


def read(path):
    text = open(path).read()
    value = lambda name: re.search(rf"{name}\s+\S+\s+([\d,.]+)", text).group(1)
    return int(value("Elapsed Cycles").replace(",", "")), float(value("Duration")), float(value("SM Frequency"))


print(f"{'shape':30s} {'flash_v3 cycles':>15s} {'us':>8s} {'GHz':>5s} {'cuDNN cycles':>13s} {'us':>8s} {'GHz':>5s} "
      f"{'v3/cuDNN':>8s}")
for key, shape in SHAPES:
    ours = read(f"ncu_ours_{key}_base.txt")
    theirs = read(f"ncu_cudnn_{key.replace('_D', '')}_base.txt")
    print(f"{shape:30s} {ours[0]:15,d} {ours[1]:8.2f} {ours[2]:5.2f} {theirs[0]:13,d} {theirs[1]:8.2f} {theirs[2]:5.2f} "
          f"{ours[0] / theirs[0]:8.3f}")
