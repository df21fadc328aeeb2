// profiler/cuda_event_fallback.h: GPU time per op from CUDA events, for when CUPTI cannot start.
//
// The legacy torch.autograd.profiler(use_device='cuda') method: a cudaEvent is
// recorded on the op's stream when the op begins and another when it ends; the
// time between them is the op's GPU time. It costs a few microseconds per op,
// sees no kernel names, and times an op that launches nothing as the gap
// between its neighbours; the table says so in its footer. Only ops with no
// child ops get a timing event (their parents' CUDA total adds them up).
#pragma once

#include "profiler/collector.h"

namespace ts::profiler::detail {

class CudaEventFallback {
 public:
  void start();  // installs its correlation hooks and records the reference event
  // Turns the events recorded since start() into `kernel` events named "<op> [CUDA events]".
  void stop(Recording& recording);
};

CudaEventFallback& cuda_event_fallback();

}  // namespace ts::profiler::detail
