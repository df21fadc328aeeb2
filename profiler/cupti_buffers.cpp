// profiler/cupti_buffers.cpp: the bounded buffer pool and CUPTI's two buffer callbacks (see the header).
#include "profiler/cupti_buffers.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

#include "profiler/cuda_call_check.h"
#include "profiler/cupti_decode.h"

namespace ts::profiler::cupti {

namespace {

constexpr size_t kDefaultBufferBytes = size_t{4} << 20;
constexpr size_t kPoolBytes = size_t{128} << 20;

struct Pool {
  std::mutex mutex;
  size_t buffer_bytes = 0;  // of every buffer handed out from now on
  std::vector<uint8_t*> free;  // each of buffer_bytes
  size_t allocated = 0;        // bytes handed out and not freed
  int64_t refused = 0;         // requests past kPoolBytes (or a failed allocation)
};

// TS_CUPTI_BUFFER_KIB, read when the pool is made: a value it refuses is warned about, not used.
size_t buffer_bytes_from_environment() {
  const char* v = std::getenv("TS_CUPTI_BUFFER_KIB");
  if (v == nullptr) return kDefaultBufferBytes;
  const BufferSize size = parse_buffer_kib(v);
  if (!size.error.empty()) std::fprintf(stderr, "warning: profiler: %s\n", size.error.c_str());
  return size.bytes;
}

Pool& pool() {
  static Pool* p = [] {
    auto* made = new Pool;
    made->buffer_bytes = buffer_bytes_from_environment();
    return made;
  }();
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
  if (p.allocated + p.buffer_bytes > kPoolBytes) return nullptr;
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(8, p.buffer_bytes));
  if (buffer != nullptr) p.allocated += p.buffer_bytes;
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

BufferSize parse_buffer_kib(std::string_view text) {
  int64_t kib = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), kib);
  if (ec != std::errc{} || end != text.data() + text.size() || kib < kMinBufferKib || kib > kMaxBufferKib)
    return {kDefaultBufferBytes,
            fmt::format("TS_CUPTI_BUFFER_KIB={}: expected a whole number of KiB from {} to {}; CUPTI's buffers "
                        "stay {} KiB",
                        text, kMinBufferKib, kMaxBufferKib, kDefaultBufferBytes >> 10)};
  return {static_cast<size_t>(kib) << 10, {}};
}

void set_buffer_bytes(size_t bytes) {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  if (bytes == p.buffer_bytes) return;
  for (uint8_t* buffer : p.free) std::free(buffer);
  p.allocated -= p.free.size() * p.buffer_bytes;
  p.free.clear();
  p.buffer_bytes = bytes;
}

size_t buffer_bytes() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  return p.buffer_bytes;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  *max_records = 0;  // as many as fit
  *buffer = take_buffer(p);
  if (*buffer == nullptr) ++p.refused;  // CUPTI drops the records it cannot write
  *size = *buffer != nullptr ? p.buffer_bytes : 0;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  {
    Store& s = store();
    std::lock_guard lock(s.mutex);
    if (s.keeping && buffer != nullptr) keep_buffer(s, context, stream, buffer, valid);
  }
  if (buffer == nullptr) return;
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  if (size == p.buffer_bytes) {
    p.free.push_back(buffer);
  } else {  // handed out before set_buffer_bytes changed the size
    std::free(buffer);
    p.allocated -= size;
  }
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
