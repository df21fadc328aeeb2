// profiler/cupti_versions.h: the CUPTI records and calls that differ across the CUDA toolkits the profiler builds with.
//
// CUPTI's headers say their version in CUPTI_API_VERSION (cupti_version.h):
// 18 in CUDA 12.0, 22 in 12.4, 23 in 12.5, 24 in 12.6, 26 in 12.8, 28 in 12.9,
// 130001 in 13.0. Each difference the profiler meets is decided here, once; the
// code that reads a record names the alias, never the versioned struct. A newer
// struct only appends fields to the one before it, and the profiler reads none
// of the appended ones, so every build keeps the same fields of every record.
// tools/cuda_toolkit_check.sh compiles the profiler with an older toolkit.
#pragma once

#include <cupti.h>

namespace ts::profiler::cupti {

// CUPTI 13.0 appends isDeviceLaunched to the kernel record (Kernel10); every 12.x has Kernel9.
#if CUPTI_API_VERSION >= 130001
using KernelActivity = CUpti_ActivityKernel10;
#else
using KernelActivity = CUpti_ActivityKernel9;
#endif

// CUPTI 12.8 (API 26) appends copyCount, for batched copies, to the copy record (Memcpy6); before it, Memcpy5.
#if CUPTI_API_VERSION >= 26
using MemcpyActivity = CUpti_ActivityMemcpy6;
#else
using MemcpyActivity = CUpti_ActivityMemcpy5;
#endif

// CUPTI 12.8 (API 26) appends cudaEventSyncId and returnValue to the sync record (Synchronization2);
// before it, Synchronization, which already has the cudaEventId the profiler reads.
#if CUPTI_API_VERSION >= 26
using SyncActivity = CUpti_ActivitySynchronization2;
#else
using SyncActivity = CUpti_ActivitySynchronization;
#endif

// CUPTI 12.4 (API 22) appends overheadData to the overhead record (Overhead3); 12.3 (API 21) has
// Overhead2 (correlationId appended), 12.0 to 12.2 Overhead. The profiler reads kind, start and end.
#if CUPTI_API_VERSION >= 22
using OverheadActivity = CUpti_ActivityOverhead3;
#elif CUPTI_API_VERSION >= 21
using OverheadActivity = CUpti_ActivityOverhead2;
#else
using OverheadActivity = CUpti_ActivityOverhead;
#endif

// Overhead kinds newer than CUDA 12.0: a build with older headers names them "Unknown Overhead".
// CUPTI 12.3 (API 21): runtime-triggered module loading and lazy function loading.
#define TS_CUPTI_HAS_MODULE_LOADING_OVERHEAD (CUPTI_API_VERSION >= 21)
// CUPTI 12.4 (API 22): the command buffer was full.
#define TS_CUPTI_HAS_COMMAND_BUFFER_FULL_OVERHEAD (CUPTI_API_VERSION >= 22)
// CUPTI 12.6 (API 24): the time spent asking the client for a buffer.
#define TS_CUPTI_HAS_BUFFER_REQUEST_OVERHEAD (CUPTI_API_VERSION >= 24)

// CUPTI 12.5 (API 23) can switch single runtime and driver calls off at the source
// (cuptiActivityEnableRuntimeApi, cuptiActivityEnableDriverApi). Before it, CUPTI
// records every call of an enabled API kind; the decoder then drops the unkept
// ones (cupti_api_selection.h), which costs speed but no data, and the profiler
// warns once.
#define TS_CUPTI_HAS_PER_CALL_API_SWITCH (CUPTI_API_VERSION >= 23)

}  // namespace ts::profiler::cupti
