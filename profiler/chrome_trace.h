// profiler/chrome_trace.h: the recording as Kineto's Chrome trace JSON (Perfetto, chrome://tracing, HTA).
//
// Layout, key order and units follow what torch.profiler writes
// (export_chrome_trace): a header of metadata keys, then "traceEvents", then
// "traceName". Times are microseconds with three decimals (nanosecond
// precision) relative to "baseTimeNanoseconds". CPU events sit on
// pid = process id, tid = OS thread id; GPU work on pid = device, tid = stream.
#pragma once

#include <string>

#include "profiler/event.h"

namespace ts::profiler {

// Writes `path` (".gz": gzip) through a temporary file and a rename, so a
// reader never sees half a trace. Throws ts::Error when the file cannot be written.
void export_chrome_trace(const Recording& recording, const std::string& path);

// The JSON text itself (trace_name goes into "traceName").
std::string chrome_trace_json(const Recording& recording, const std::string& trace_name);

// Kineto's time base: now (system clock) floored to a multiple of 7,889,238 s
// (about three months), fixed once per process.
int64_t trace_base_time_ns();

}  // namespace ts::profiler
