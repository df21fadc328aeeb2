// profiler/cupti_buffers.h: the buffers CUPTI writes activity records into, and what is kept from them.
//
// CUPTI asks for a buffer when it needs one (buffer_requested) and hands it
// back, full or flushed, on one of its own threads (buffer_completed). The
// buffers come from a bounded pool: 4 MiB each (CUPTI recommends 1-10 MB), at
// most 128 MiB in all (as Kineto). A request past that is refused and CUPTI
// drops those records; both counts reach the recording. TS_CUPTI_BUFFER_KIB
// sets another size (16 KiB makes CUPTI ask for a new buffer every few dozen
// steps of a small loop, so that a trace shows what a refill costs). The completion
// callback copies what we keep of each record (cupti_decode.h) and returns
// the buffer to the pool at once, so the pool rarely grows past a few buffers.
//
// The pool and the kept records are never freed: CUPTI may call back while
// the process exits.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "profiler/cupti_records.h"

namespace ts::profiler::cupti {

// The two callbacks to register with cuptiActivityRegisterCallbacks.
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid);

// The size of each buffer: TS_CUPTI_BUFFER_KIB when it is a whole number of KiB in range, else 4 MiB
// and an error that says why.
constexpr int64_t kMinBufferKib = 16, kMaxBufferKib = 65536;
struct BufferSize {
  size_t bytes;
  std::string error;  // empty when the text was used
};
BufferSize parse_buffer_kib(std::string_view text);

// The size of the buffers handed to CUPTI from now on (buffers it holds keep theirs), and the current one.
void set_buffer_bytes(size_t bytes);
size_t buffer_bytes();

// What the callbacks kept since the last take, and what was lost meanwhile.
struct TakenRecords {
  KeptRecords kept;
  int64_t cupti_dropped = 0;    // records CUPTI reported dropped (cuptiActivityGetNumDroppedRecords)
  int64_t buffers_refused = 0;  // requests the full pool refused: CUPTI dropped their records
};
TakenRecords take_records();

// From now on records that still arrive are thrown away (the process exits).
void stop_keeping_records();

}  // namespace ts::profiler::cupti
