// tools/trace_file.h: reading a Chrome trace (Kineto's JSON, plain or gzip) for the tools in tools/.
//
// One reader for ts_trace_check, ts_trace_svg and ts_trace_diff, header-only (the tools link fmt,
// nlohmann_json and zlib, not the runtime; CLI11 is header-only). Three layers:
//   TraceStream, for_each_event  the file, checked (a regular file, at most max_trace_bytes()
//                                inflated), parsed as a stream with nlohmann's SAX interface:
//                                one event's JSON at a time, never the whole document
//   Event                        one event's fields through checked accessors
//   load_trace -> Trace          the duration events ("ph": "X") with their nesting per thread,
//                                the ac2g flows, the lane names and (when asked) the [memory]
//                                events, as ts_trace_svg and ts_trace_diff need them
// and the checked parsers of the tools' numeric command-line values.
//
// Every failure throws ts::trace::Error with one line that names the file and, for a field, the
// event and the field:
//   trace.json: event 4: "ts" is a string, expected a number
// Each tool's main prints it on stderr and exits 1 (a trace it cannot read).
//
// Limits, so that any file ends in one line instead of an abort:
//   nesting       at most kMaxDepth levels (the parser and the builder here are iterative, but
//                 nlohmann's copy and dump of a deeper value would recurse off the stack)
//   size          at most max_trace_bytes() bytes read, after inflating a .gz (a gzip bomb stops
//                 there); at most kMaxValueBytes for one event or one other top-level value, and
//                 from one string or number to the next (a string that long, or a run of brackets
//                 or spaces), so that no single piece of a hostile file is held whole
//   times         ts within +-kMaxTsUs us, dur within [0, kMaxDurUs] us, so that every end, span
//                 and difference of two times fits in int64 ns
#pragma once

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

namespace ts::trace {

// Timestamps parsed as long double: microseconds with three decimals near 5e12
// need more than a double's 53 bits to stay exact to the nanosecond.
using Json = nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, std::int64_t, std::uint64_t,
                                  long double>;

// A trace that cannot be read, or a command-line value that cannot be used: one line.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr int kMaxDepth = 64;                      // Kineto's deepest value (record_shapes' lists): ~6 levels
constexpr uint64_t kDefaultMaxBytes = 1ull << 30;  // 1 GiB of JSON (~35 s to parse, ~1 GB of model)
constexpr uint64_t kMaxValueBytes = 16ull << 20;   // one event, other top-level value, token or gap: 16 MiB
constexpr size_t kMaxTopLevelKeys = 10'000;        // Kineto writes a dozen
constexpr long double kMaxTsUs = 4e15L;            // |ts|: 126 years of microseconds
constexpr long double kMaxDurUs = 1e15L;           // dur: 31 years
constexpr double kMaxViewUs = 1e12;                // |--from-us|, |--to-us|: 11.6 days from time 0

// The most bytes a trace may hold (inflated): TS_TRACE_MAX_BYTES when set (a whole number >= 1),
// else kDefaultMaxBytes.
inline uint64_t max_trace_bytes() {
  const char* text = std::getenv("TS_TRACE_MAX_BYTES");
  if (text == nullptr || *text == '\0') return kDefaultMaxBytes;
  uint64_t value = 0;
  const char* end = text + std::strlen(text);
  const auto [stop, ec] = std::from_chars(text, end, value);
  if (ec != std::errc{} || stop != end || value == 0)
    throw Error(fmt::format("TS_TRACE_MAX_BYTES is '{}': expected a whole number of bytes >= 1", text));
  return value;
}

// ---- the file ----------------------------------------------------------------------------------

// A gzip or plain file as a stream (zlib reads both), counting the bytes it hands out and
// refusing to go past `limit`. Optionally watches for the first occurrence of `probe` and keeps
// the `probe_tail` bytes that follow it (ts_trace_check's look at the raw text).
class TraceStream : public std::streambuf {
 public:
  TraceStream(const std::string& path, uint64_t limit, std::string probe = "", size_t probe_tail = 0)
      : path_(path), limit_(limit), probe_(std::move(probe)), probe_tail_(probe_tail) {
    // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer; it is refused below.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw Error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    struct stat st {};
    const char* kind = nullptr;
    if (::fstat(fd, &st) != 0) kind = "a file it cannot stat";
    else if (S_ISDIR(st.st_mode)) kind = "a directory";
    else if (S_ISFIFO(st.st_mode)) kind = "a FIFO";
    else if (S_ISCHR(st.st_mode)) kind = "a character device";
    else if (S_ISBLK(st.st_mode)) kind = "a block device";
    else if (S_ISSOCK(st.st_mode)) kind = "a socket";
    else if (!S_ISREG(st.st_mode)) kind = "not a regular file";
    if (kind != nullptr) {
      ::close(fd);
      throw Error(fmt::format("cannot read {}: {}, expected a regular file (a trace, .json or .json.gz)", path, kind));
    }
    if (static_cast<uint64_t>(st.st_size) > limit_) {
      ::close(fd);
      throw Error(too_big(false));
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    file_ = gzdopen(fd, "rb");
    if (file_ == nullptr) {
      ::close(fd);
      throw Error(fmt::format("cannot read {}: out of memory for zlib", path));
    }
    gzbuffer(file_, sizeof buffer_);
  }
  TraceStream(const TraceStream&) = delete;
  TraceStream& operator=(const TraceStream&) = delete;
  ~TraceStream() override { gzclose(file_); }

  uint64_t bytes() const { return bytes_; }  // read so far (inflated), in whole chunks
  // The parser has read a string, a number or a literal: from here, at most kMaxValueBytes until
  // the next one (nlohmann's lexer keeps every byte since its last such token, for its messages).
  void mark() { mark_ = bytes_; }
  // The bytes after the first `probe`, or nullopt when it has not been seen (or the file ends
  // less than probe_tail bytes after it).
  const std::optional<std::string>& probe_match() const { return match_; }

 protected:
  int_type underflow() override {
    const int n = gzread(file_, buffer_, sizeof buffer_);
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(file_, &code);
      throw Error(fmt::format("cannot read {}: {}", path_, code == Z_ERRNO ? std::strerror(errno) : message));
    }
    if (n == 0) return traits_type::eof();
    bytes_ += static_cast<uint64_t>(n);
    if (bytes_ > limit_) throw Error(too_big(path_.ends_with(".gz")));
    if (bytes_ - mark_ > kMaxValueBytes + sizeof buffer_)
      throw Error(fmt::format("{}: not a trace: more than {} MiB without a complete string or number", path_,
                              kMaxValueBytes >> 20));
    if (!probe_.empty() && !match_) look_for_probe(static_cast<size_t>(n));
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(buffer_[0]);
  }

 private:
  std::string too_big(bool inflated) const {
    return fmt::format("cannot read {}: more than {} bytes{} (the limit; TS_TRACE_MAX_BYTES sets it)", path_, limit_,
                       inflated ? " once inflated" : "");
  }
  void look_for_probe(size_t n) {
    carry_.append(buffer_, n);
    const size_t at = carry_.find(probe_);
    if (at != std::string::npos && at + probe_.size() + probe_tail_ <= carry_.size()) {
      match_ = carry_.substr(at + probe_.size(), probe_tail_);
      carry_.clear();
    } else if (at == std::string::npos) {
      const size_t keep = probe_.size() + probe_tail_;
      if (carry_.size() > keep) carry_.erase(0, carry_.size() - keep);
    } else {
      carry_.erase(0, at);  // seen, its tail not yet: keep it for the next chunk
    }
  }

  std::string path_;
  uint64_t limit_;
  gzFile file_ = nullptr;
  uint64_t bytes_ = 0, mark_ = 0;
  char buffer_[1 << 16];
  std::string probe_, carry_;
  size_t probe_tail_;
  std::optional<std::string> match_;
};

// What a trace holds besides its events: the top-level keys in file order and their values
// ("traceEvents" stands there as an empty list when it is one), and how many events it streamed.
struct Document {
  std::string root_type = "object";  // nlohmann's type name of the top-level value
  std::vector<std::string> keys;
  Json top = Json::object();
  bool has_event_list = false;  // "traceEvents" is a list
  size_t events = 0;
  uint64_t bytes = 0;
  std::optional<std::string> probe_match;  // see TraceStream
};

namespace detail {

// Builds the top-level object, except that each element of its "traceEvents" list is built
// alone and handed to `on_event`, then dropped. Values are built with an explicit stack (no
// recursion) and nesting deeper than kMaxDepth stops the parse.
class EventSax : public nlohmann::json_sax<Json> {
 public:
  using OnEvent = std::function<void(size_t, const Json&)>;
  EventSax(const std::string& path, TraceStream* stream, Document* doc, const OnEvent& on_event)
      : path_(path), stream_(stream), doc_(doc), on_event_(on_event) {}

  bool null() override { return value(Json(nullptr)); }
  bool boolean(bool v) override { return value(Json(v)); }
  bool number_integer(number_integer_t v) override { return value(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return value(Json(v)); }
  bool string(string_t& v) override { return value(Json(std::move(v))); }
  bool binary(binary_t&) override { return value(Json()); }  // not produced by the JSON parser

  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool key(string_t& k) override {
    step(true);
    if (depth_ == 1) {
      if (doc_->keys.size() == kMaxTopLevelKeys)
        throw Error(fmt::format("{}: not a trace: more than {} top-level keys", path_, kMaxTopLevelKeys));
      doc_->keys.push_back(k);
      in_events_ = k == "traceEvents";
      if (in_events_) doc_->has_event_list = false;
    }
    if (building_) key_ = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  // nlohmann's message quotes every byte since its last string or number ("last read: '...'"):
  // up to kMaxValueBytes of them. The line keeps the last 60.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    std::string what = ex.what();
    const std::string quote = "last read: '";
    const size_t at = what.find(quote);
    if (at != std::string::npos && what.size() - at - quote.size() > 60)
      what = what.substr(0, at + quote.size()) + "..." + what.substr(what.size() - 60);
    throw Error(fmt::format("{}: not valid JSON: {}", path_, what));
  }

 private:
  // At each callback the value being built (an event or another top-level value) may not have
  // grown past kMaxValueBytes; a string, number or literal lets the stream read kMaxValueBytes more.
  void step(bool scalar = false) {
    if (scalar) stream_->mark();
    if (!building_ || stream_->bytes() - start_ <= kMaxValueBytes + (64 << 10)) return;
    if (stack_.front() == &event_)
      throw Error(fmt::format("{}: event {}: more than {} MiB of JSON", path_, doc_->events, kMaxValueBytes >> 20));
    throw Error(fmt::format("{}: \"{}\": more than {} MiB of JSON", path_, doc_->keys.back(), kMaxValueBytes >> 20));
  }
  // Where a value goes: the top-level object's current key, the event being built, or nowhere.
  bool value(Json&& v) {
    step(true);
    if (depth_ == 0) {  // a top-level scalar
      doc_->root_type = v.type_name();
      return true;
    }
    if (depth_ == 1 && doc_->root_type == "object") {
      doc_->top[doc_->keys.back()] = std::move(v);
      return true;
    }
    if (depth_ == 2 && in_events_ && doc_->has_event_list && !building_) {  // a scalar element of traceEvents
      event_ = std::move(v);
      emit();
      return true;
    }
    if (!building_) return true;  // inside a top-level list (not a trace): checked, not kept
    Json& parent = *stack_.back();
    if (parent.is_array()) parent.push_back(std::move(v));
    else parent[key_] = std::move(v);
    return true;
  }
  bool open(Json&& container) {
    step();
    if (++depth_ > kMaxDepth)
      throw Error(fmt::format("{}: not a trace: JSON nested deeper than {} levels", path_, kMaxDepth));
    if (depth_ == 1) {
      doc_->root_type = container.type_name();
      return true;
    }
    if (depth_ == 2 && doc_->root_type == "object") {
      if (in_events_ && container.is_array()) {
        doc_->has_event_list = true;
        doc_->top[doc_->keys.back()] = Json::array();
        return true;
      }
      building_ = true;  // another top-level value: built whole, into doc_->top
      start_ = stream_->bytes();
      doc_->top[doc_->keys.back()] = std::move(container);
      stack_.push_back(&doc_->top[doc_->keys.back()]);
      return true;
    }
    if (depth_ == 3 && in_events_ && doc_->has_event_list && stack_.empty()) {  // an event begins
      building_ = true;
      start_ = stream_->bytes();
      event_ = std::move(container);
      stack_.push_back(&event_);
      return true;
    }
    if (!building_) return true;
    Json& parent = *stack_.back();
    Json* child = nullptr;
    if (parent.is_array()) {
      parent.push_back(std::move(container));
      child = &parent.back();
    } else {
      child = &(parent[key_] = std::move(container));
    }
    stack_.push_back(child);
    return true;
  }
  bool close() {
    step();
    --depth_;
    if (!building_) return true;
    stack_.pop_back();
    if (stack_.empty()) {
      building_ = false;
      if (depth_ == 2 && in_events_ && doc_->has_event_list) emit();
    }
    return true;
  }
  // Events stream only in a top-level "traceEvents" list; its scalar elements count as events too.
  void emit() {
    on_event_(doc_->events++, event_);
    event_ = Json();
    building_ = !stack_.empty();
  }

  const std::string& path_;
  TraceStream* stream_;
  Document* doc_;
  const OnEvent& on_event_;
  int depth_ = 0;
  bool in_events_ = false, building_ = false;
  uint64_t start_ = 0;  // stream bytes when the value being built began
  std::vector<Json*> stack_;  // the containers being built, innermost last
  std::string key_;
  Json event_;
};

}  // namespace detail

// Reads `path` once, calling on_event(index, event) for each element of its top-level
// "traceEvents" list in file order (the event's JSON lives only during the call). Throws Error.
inline Document for_each_event(const std::string& path, const std::function<void(size_t, const Json&)>& on_event,
                               const std::string& probe = "", size_t probe_tail = 0) {
  TraceStream stream(path, max_trace_bytes(), probe, probe_tail);
  std::istream in(&stream);
  Document doc;
  detail::EventSax sax(path, &stream, &doc, on_event);
  Json::sax_parse(in, &sax);  // parse errors throw from sax.parse_error; read errors from the stream
  doc.bytes = stream.bytes();
  doc.probe_match = stream.probe_match();
  return doc;
}

// ---- one event's fields --------------------------------------------------------------------------

// An event (or its "args") read field by field: a field that is absent gives the fallback or
// nullopt, a field of another JSON type throws Error naming the file, the event and the field.
class Event {
 public:
  Event(const Json& json, const std::string& path, size_t index, std::string within = "")
      : json_(json), path_(path), index_(index), within_(std::move(within)) {
    if (!json.is_object())
      throw Error(fmt::format("{}: event {}{} is {}, expected an object", path, index,
                              within_.empty() ? "" : fmt::format(": \"{}\"", within_), describe(json)));
  }

  size_t index() const { return index_; }
  bool has(const char* key) const { return find(key) != nullptr; }

  // A string field.
  std::string text(const char* key, const std::string& fallback = "") const {
    const Json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_string()) throw mismatch(key, *v, "a string");
    return v->get<std::string>();
  }
  std::optional<std::string> optional_text(const char* key) const {
    if (!has(key)) return std::nullopt;
    return text(key);
  }
  // An integer field that fits in int64.
  std::optional<int64_t> integer(const char* key) const {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      throw fail(key, fmt::format("is {}, out of range: expected an integer below 2^63", v->get<uint64_t>()));
    if (!v->is_number_integer()) throw mismatch(key, *v, "an integer");
    return v->get<int64_t>();
  }
  // An integer field >= 0 that fits in uint64 (an address).
  std::optional<uint64_t> unsigned_integer(const char* key) const {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) throw mismatch(key, *v, "an integer");
    if (!v->is_number_unsigned() && v->get<int64_t>() < 0)
      throw fail(key, fmt::format("is {}, out of range: expected an integer >= 0", v->get<int64_t>()));
    return v->get<uint64_t>();
  }
  // Microseconds (a number in [lo_us, hi_us]) as integer nanoseconds, rounded.
  std::optional<int64_t> time_ns(const char* key, long double lo_us, long double hi_us) const {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) throw mismatch(key, *v, "a number");
    const long double us = v->get<long double>();
    if (!(us >= lo_us && us <= hi_us))
      throw fail(key, fmt::format("is {}, out of range: expected microseconds in [{:g}, {:g}]", number_text(*v),
                                  static_cast<double>(lo_us), static_cast<double>(hi_us)));
    return static_cast<int64_t>(std::llround(us * 1000.0L));
  }
  std::optional<int64_t> ts_ns() const { return time_ns("ts", -kMaxTsUs, kMaxTsUs); }
  // A lane id (pid, tid) as the JSON writes it: a number (1299, 7, -1) or a string ("Spans").
  std::string lane_id(const char* key) const {
    const Json* v = find(key);
    if (v == nullptr) return "";
    if (!v->is_number() && !v->is_string()) throw mismatch(key, *v, "a number or a string");
    return v->dump();
  }
  // An object field ("args"); absent reads as an empty object.
  Event object(const char* key) const {
    static const Json kEmpty = Json::object();
    const Json* v = find(key);
    if (v != nullptr && !v->is_object()) throw mismatch(key, *v, "an object");
    return Event(v == nullptr ? kEmpty : *v, path_, index_, field_name(key));
  }
  // A field of any type, as compact JSON (bounded: kMaxDepth levels at most).
  std::string dump(const char* key) const {
    const Json* v = find(key);
    return v == nullptr ? "" : v->dump();
  }

  // Error for a field that is present but unusable: "FILE: event N: FIELD WHAT".
  Error fail(const char* key, const std::string& what) const {
    return Error(fmt::format("{}: event {}: {} {}", path_, index_, quoted(key), what));
  }
  Error missing(const char* key) const { return fail(key, "is missing"); }

 private:
  const Json* find(const char* key) const {
    const auto it = json_.find(key);
    return it == json_.end() ? nullptr : &*it;
  }
  std::string field_name(const char* key) const { return within_.empty() ? key : within_ + "." + key; }
  std::string quoted(const char* key) const { return fmt::format("\"{}\"", field_name(key)); }
  static std::string number_text(const Json& v) {
    if (v.is_number_integer()) return v.dump();
    return fmt::format("{:g}", static_cast<double>(v.get<long double>()));
  }
  static std::string describe(const Json& v) {
    if (v.is_string()) return "a string";
    if (v.is_number()) return "a number";
    if (v.is_boolean()) return "a boolean";
    if (v.is_null()) return "null";
    if (v.is_array()) return "a list";
    return "an object";
  }
  Error mismatch(const char* key, const Json& v, const char* expected) const {
    return fail(key, fmt::format("is {}, expected {}", describe(v), expected));
  }

  const Json& json_;
  const std::string& path_;
  size_t index_;
  std::string within_;  // "args" for an event's args
};

// ---- the event model of ts_trace_svg and ts_trace_diff ---------------------------------

// One duration event ("ph": "X").
struct Slice {
  size_t index = 0;           // position in traceEvents
  std::string cat, name;
  std::string pid, tid;       // as the JSON writes them: numbers (1299, 7, -1) or strings ("Spans")
  int64_t start_ns = 0, end_ns = 0;
  int64_t external_id = -1;   // args["External id"]: an op's id; GPU work and launch calls carry their op's; -1: none
  int64_t correlation = -1;   // args["correlation"]: shared by a launch call and what it launched; -1: none
  int parent = -1;            // the innermost slice enclosing it on the same pid/tid (index in Trace::slices)

  int64_t duration_ns() const { return end_ns - start_ns; }
};

// An ac2g flow: "s" on the launch call's thread, "f" on the GPU lane, both at their slices' starts.
struct Flow {
  int64_t id = 0;
  std::string from_pid, from_tid, to_pid, to_tid;
  int64_t from_ns = 0, to_ns = 0;
};

// A (pid, tid) pair's names and order, from the "M" events Kineto writes.
struct LaneInfo {
  std::string process_label;  // process_labels: "CPU", "GPU 0"
  std::string process_name;   // "03_mlp"
  std::string thread_name;    // "thread 1299 (03_mlp)", "stream 7", "Device 0"
  int64_t process_sort = 0, thread_sort = 0;
};

// One "[memory]" instant event (profile_memory).
struct MemoryEvent {
  std::string pid, tid;
  int64_t ts_ns = 0;
  int64_t bytes = 0;  // > 0 allocation, < 0 free
  uint64_t addr = 0;
  int64_t device_type = 0, device_id = 0;  // type 0: the CPU
};

constexpr int64_t kMaxMemoryBytes = int64_t{1} << 48;  // |Bytes| of one [memory] event: 256 TiB

struct Trace {
  std::string path;
  std::vector<Slice> slices;  // (start, -end) order, ties in file order; a parent comes before its children
  std::vector<Flow> flows;    // complete pairs only, by id
  std::map<std::pair<std::string, std::string>, LaneInfo> lanes;  // every (pid, tid) a slice sits on
  std::vector<MemoryEvent> memory;  // with load_trace(path, true) only: the [memory] events in file order
};

// Kineto's categories, grouped as the tools read them.
inline bool is_cpu_range(const std::string& cat) {  // a scope or API call on a CPU thread
  return cat == "cpu_op" || cat == "user_annotation" || cat == "cuda_runtime" || cat == "cuda_driver";
}
inline bool is_gpu_work(const std::string& cat) {  // device time: what "Self CUDA" adds up
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}
inline bool on_gpu_lane(const std::string& cat) {
  return is_gpu_work(cat) || cat == "gpu_user_annotation" || cat == "cuda_sync";
}
inline bool is_step(const Slice& s) { return s.cat == "user_annotation" && s.name.starts_with("ProfilerStep#"); }

namespace detail {

inline std::string trim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace detail

// Reads `path` into a Trace in one pass over the file; with `memory`, its [memory] events too.
// Throws Error when the file cannot be read, is not JSON, is not a Chrome trace (no traceEvents
// list) or has a field of another type or out of range (an X event needs ts and dur).
//
// Memory: the file streams through a 64 KiB buffer and one event's JSON at a time; what stays is
// the model, about 1 MB per MB of a Kineto trace (a Slice is ~180 bytes plus its name beyond 15
// characters, for ~300 bytes of JSON): 99 MB of peak RSS for ts_trace_svg --step on a 103 MB
// trace, 3 s. For any file the model stays under ~10 bytes per byte of JSON (the smallest event
// that leaves a record, {"ph":"X","ts":1,"dur":1}, is 25 bytes for a 180-byte Slice), and the
// file under max_trace_bytes(); running out of memory still ends in one line.
inline Trace load_trace(const std::string& path, bool memory = false) {
  Trace trace;
  trace.path = path;
  std::map<int64_t, Flow> starts, ends;
  std::map<std::string, LaneInfo> process;                         // by pid
  std::map<std::pair<std::string, std::string>, LaneInfo> thread;  // by (pid, tid)
  const Document doc = for_each_event(path, [&](size_t i, const Json& json) {
    const Event e(json, trace.path, i);
    const std::optional<std::string> ph = e.optional_text("ph");
    if (!ph) return;
    if (*ph == "M") {
      const Event args = e.object("args");
      const std::string what = e.text("name");
      const std::string pid = e.lane_id("pid"), tid = e.lane_id("tid");
      LaneInfo& p = process[pid];
      if (what == "process_labels") p.process_label = args.text("labels");
      if (what == "process_name") p.process_name = args.text("name");
      if (what == "process_sort_index") p.process_sort = args.integer("sort_index").value_or(p.process_sort);
      if (what == "thread_name") thread[{pid, tid}].thread_name = detail::trim(args.text("name"));
      if (what == "thread_sort_index")
        thread[{pid, tid}].thread_sort = args.integer("sort_index").value_or(thread[{pid, tid}].thread_sort);
      return;
    }
    if (*ph == "s" || *ph == "f") {
      if (e.text("cat") != "ac2g") return;
      const std::optional<int64_t> id = e.integer("id"), ts = e.ts_ns();
      if (!id || !ts) return;
      Flow& flow = (*ph == "s" ? starts : ends)[*id];
      flow.id = *id;
      (*ph == "s" ? flow.from_pid : flow.to_pid) = e.lane_id("pid");
      (*ph == "s" ? flow.from_tid : flow.to_tid) = e.lane_id("tid");
      (*ph == "s" ? flow.from_ns : flow.to_ns) = *ts;
      return;
    }
    if (*ph == "i" && memory && e.text("name") == "[memory]") {
      const Event args = e.object("args");
      MemoryEvent m;
      m.pid = e.lane_id("pid");
      m.tid = e.lane_id("tid");
      const std::optional<int64_t> ts = e.ts_ns(), bytes = args.integer("Bytes"), type = args.integer("Device Type"),
                                   id = args.integer("Device Id");
      const std::optional<uint64_t> addr = args.unsigned_integer("Addr");
      if (!ts) throw e.missing("ts");
      if (!bytes) throw args.missing("Bytes");
      if (!addr) throw args.missing("Addr");
      if (!type) throw args.missing("Device Type");
      if (!id) throw args.missing("Device Id");
      if (*bytes > kMaxMemoryBytes || *bytes < -kMaxMemoryBytes)
        throw args.fail("Bytes", fmt::format("is {}, out of range: expected at most 2^48 either way", *bytes));
      m.ts_ns = *ts;
      m.bytes = *bytes;
      m.addr = *addr;
      m.device_type = *type;
      m.device_id = *id;
      trace.memory.push_back(std::move(m));
      return;
    }
    if (*ph != "X") return;
    Slice s;
    s.index = i;
    s.name = e.text("name");
    s.cat = e.text("cat");
    const std::optional<int64_t> ts = e.ts_ns(), dur = e.time_ns("dur", 0, kMaxDurUs);
    if (!ts) throw e.missing("ts");
    if (!dur) throw e.missing("dur");
    s.pid = e.lane_id("pid");
    s.tid = e.lane_id("tid");
    s.start_ns = *ts;
    s.end_ns = *ts + *dur;
    const Event args = e.object("args");
    s.external_id = args.integer("External id").value_or(-1);
    s.correlation = args.integer("correlation").value_or(-1);
    trace.slices.push_back(std::move(s));
  });
  if (doc.root_type != "object" || !doc.has_event_list)
    throw Error(fmt::format("{}: not a Chrome trace (no \"traceEvents\" list)", path));

  // Lanes: every (pid, tid) a slice sits on, named by its process's and its thread's metadata.
  for (const Slice& s : trace.slices) {
    if (trace.lanes.contains({s.pid, s.tid})) continue;
    LaneInfo info = process[s.pid];
    info.thread_name = thread[{s.pid, s.tid}].thread_name;
    info.thread_sort = thread[{s.pid, s.tid}].thread_sort;
    trace.lanes.emplace(std::make_pair(s.pid, s.tid), info);
  }
  for (const auto& [id, from] : starts) {
    const auto to = ends.find(id);
    if (to == ends.end()) continue;
    Flow flow = from;
    flow.to_pid = to->second.to_pid;
    flow.to_tid = to->second.to_tid;
    flow.to_ns = to->second.to_ns;
    trace.flows.push_back(flow);
  }

  // (start, -end) order, then nesting per lane: each slice's parent is the innermost open one
  // that has not ended before it starts. A slice that overlaps without nesting (ts_trace_check
  // reports those) still gets the open one as its parent, so that it is drawn below it.
  std::stable_sort(trace.slices.begin(), trace.slices.end(), [](const Slice& a, const Slice& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::map<std::pair<std::string, std::string>, std::vector<int>> open;
  for (size_t i = 0; i < trace.slices.size(); ++i) {
    Slice& s = trace.slices[i];
    std::vector<int>& stack = open[{s.pid, s.tid}];
    while (!stack.empty() && s.start_ns >= trace.slices[static_cast<size_t>(stack.back())].end_ns) stack.pop_back();
    s.parent = stack.empty() ? -1 : stack.back();
    stack.push_back(static_cast<int>(i));
  }
  return trace;
}

// ---- the tools' command lines ---------------------------------------------------------------------

// A whole number in [lo, hi], or the reason it is not one (empty when it is).
inline std::string parse_whole_number(const std::string& text, int64_t lo, int64_t hi, int64_t* out) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && stop == end && (value < lo || value > hi)))
    return fmt::format("{} is out of range: expected a whole number in [{}, {}]", text, lo, hi);
  if (ec != std::errc{} || stop != end) return fmt::format("'{}' is not a whole number", text);
  *out = value;
  return "";
}

// Microseconds: a finite number within +-kMaxViewUs, or the reason it is not one (empty when it is).
inline std::string parse_microseconds(const std::string& text, double* out) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && stop == end && std::isfinite(value) &&
                                               std::fabs(value) > kMaxViewUs))
    return fmt::format("{} is out of range: expected microseconds in [-{:g}, {:g}]", text, kMaxViewUs, kMaxViewUs);
  if (ec != std::errc{} || stop != end || !std::isfinite(value))
    return fmt::format("'{}' is not a number of microseconds", text);
  *out = value;
  return "";
}

// parse_whole_number as a CLI11 check, run on the text before CLI11 converts it.
inline CLI::Validator whole_number(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) {
        int64_t unused = 0;
        return parse_whole_number(text, lo, hi, &unused);
      },
      fmt::format("INT in [{}, {}]", lo, hi), "whole_number");
}

}  // namespace ts::trace
