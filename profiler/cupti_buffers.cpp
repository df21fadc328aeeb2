// profiler/cupti_buffers.cpp: the bounded buffer pool and CUPTI's two buffer callbacks (see the header).
#include "profiler/cupti_buffers.h"

#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

#include "profiler/cuda_call_check.h"
#include "profiler/cupti_decode.h"

namespace ts::profiler::cupti {

namespace {

constexpr size_t kBufferBytes = size_t{4} << 20;
constexpr size_t kMaxBuffers = 32;

struct Pool {
  std::mutex mutex;
  std::vector<uint8_t*> free;
  size_t allocated = 0;
  int64_t refused = 0;  // requests past kMaxBuffers (or a failed allocation)
};
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

struct Store {
  std::mutex mutex;  // also serialises keep_record's name caches
  KeptRecords kept;
  int64_t dropped = 0;
  bool keeping = true;
};
Store& store() {
  static Store* s = new Store;
  return *s;
}

uint8_t* take_buffer(Pool& p) {
  if (!p.free.empty()) {
    uint8_t* buffer = p.free.back();
    p.free.pop_back();
    return buffer;
  }
  if (p.allocated == kMaxBuffers) return nullptr;
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  if (buffer != nullptr) ++p.allocated;
  return buffer;
}

// Every record of one buffer, kept; then CUPTI's count of records it dropped in this context and stream.
void keep_buffer(Store& s, CUcontext context, uint32_t stream, uint8_t* buffer, size_t valid) {
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult next = cuptiActivityGetNextRecord(buffer, valid, &record);
    if (next == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // the end of the valid records
    if (!TS_CUPTI_OK(next)) break;                      // a corrupt buffer: the rest of it is lost
    keep_record(*record, s.kept);
  }
  size_t dropped = 0;
  if (context != nullptr && TS_CUPTI_OK(cuptiActivityGetNumDroppedRecords(context, stream, &dropped)))
    s.dropped += static_cast<int64_t>(dropped);
}

}  // namespace

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  *max_records = 0;  // as many as fit
  *buffer = take_buffer(p);
  if (*buffer == nullptr) ++p.refused;  // CUPTI drops the records it cannot write
  *size = *buffer != nullptr ? kBufferBytes : 0;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  {
    Store& s = store();
    std::lock_guard lock(s.mutex);
    if (s.keeping && buffer != nullptr) keep_buffer(s, context, stream, buffer, valid);
  }
  if (buffer == nullptr) return;
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  p.free.push_back(buffer);
}

TakenRecords take_records() {
  TakenRecords taken;
  {
    Store& s = store();
    std::lock_guard lock(s.mutex);
    taken.kept = std::exchange(s.kept, {});
    taken.cupti_dropped = std::exchange(s.dropped, 0);
  }
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  taken.buffers_refused = std::exchange(p.refused, 0);
  return taken;
}

void stop_keeping_records() {
  Store& s = store();
  std::lock_guard lock(s.mutex);
  s.keeping = false;
}

}  // namespace ts::profiler::cupti
