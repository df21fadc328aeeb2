// profiler/cupti_decode.h: one CUPTI activity record -> what the profiler keeps of it (cupti_records.h).
//
// Each record kind has its reader: kernels (demangled name, launch geometry,
// resources), copies and sets (named as PyTorch names them, "Memcpy HtoD
// (Pinned -> Device)", "Memset (Device)"), synchronizations ("Context Sync"),
// API calls (only those cupti_api_selection.h keeps), external correlations
// (which op or user scope a launch belongs to) and CUPTI's overhead.
#pragma once

#include <cupti.h>

#include "profiler/cupti_records.h"

namespace ts::profiler::cupti {

// Copies what we keep of `record` into `kept`; kinds we never enable are skipped.
// Runs on the thread that reads CUPTI's buffers, under their lock (its name
// caches have no lock of their own).
void keep_record(const CUpti_Activity& record, KeptRecords& kept);

}  // namespace ts::profiler::cupti
