// profiler/cupti_source.h: the CUDA side of a profile, from CUPTI's activity API.
//
// What Kineto does for torch.profiler, step by step:
//   prepare()     first use: register CUPTI's buffer and timestamp callbacks,
//                 read the devices' properties; every window: enable the
//                 activity kinds (kernels, copies, sets, runtime and driver
//                 calls, external correlation, synchronization, overhead), then
//                 switch off at the source the API calls nobody keeps
//                 (cupti_api_selection.h)
//   start()       ops now push their External id on CUPTI's correlation stack
//   end_window()  cudaDeviceSynchronize: the GPU finishes inside the window
//   stop()        flush, disable; the kept records become Events
//                 (cupti_records.h): kernels with their footprint, copies, launch
//                 calls with their op as parent, gpu_user_annotation spans, syncs
//                 (trace only); anything from before the window (the schedule's
//                 wait and warmup steps) is dropped
// When CUPTI cannot start, start() says why on stderr and the profile falls
// back to per-op CUDA-event timing (cuda_event_fallback.h), marked as such in
// the table's footer and the trace's metadata. Without a GPU nothing here
// touches CUDA or CUPTI. Nothing here throws: a failed CUDA or CUPTI call is
// reported with the recording (cuda_call_check.h).
//
// Switches: TS_CUPTI_DISABLE=1 simulates a CUPTI that cannot start (tests);
// TS_NVTX=1 wraps every op in an NVTX range, so Nsight Systems shows our op names.
#pragma once

#include "profiler/collector.h"

namespace ts::profiler {

// The process's CUPTI source (made on first call; never destroyed, so that
// CUPTI's threads can still call into it while the process exits).
DeviceActivitySource& cupti_activity_source();

}  // namespace ts::profiler
