// tools/ts_trace_svg.cpp: a Chrome trace drawn as a standalone SVG timeline, to read without a browser.
//
//   ts_trace_svg TRACE.json[.gz] [--step N] [--from-us A] [--to-us B] [-o OUT.svg | -o -]
//
// The picture goes to -o's file, to stdout with -o -, and by default to a file in the current
// directory named after the trace: its file name without .json or .json.gz, then _step<N> with
// --step, _memory with --memory, then .svg (64_bf16_warm_eager.json --step 3 gives
// 64_bf16_warm_eager_step3.svg). After writing a file it prints "wrote PATH (what it draws)" on
// stdout; with -o - stdout holds the SVG alone. --help prints the options.
//
// What is drawn, top to bottom, in the trace's own lane order (its sort-index metadata):
//   each CPU thread: ProfilerStep#N > your annotations > ts:: ops > the runtime and driver
//                    calls (cudaLaunchKernel, cuLaunchKernelEx, cudaDeviceSynchronize), one row
//                    per nesting depth
//   each GPU lane:   a stream's kernels, memcpys and memsets under its GPU annotations; the
//                    device lane's syncs ("Context Sync")
//   arrows:          the ac2g flows, from each launch call to the GPU work it made
// with a time axis in microseconds, the lane names on the left and a colour key below.
//
// Which events: the whole trace by default. --step N keeps ProfilerStep#N: the CPU slices that
// lie within it, the GPU work whose launch call (same correlation) is one of them, and the GPU
// annotations of its annotations (same External id); time 0 is then the step's start, otherwise
// the first event's. --from-us/--to-us narrow the view to a window in those microseconds (the
// events that overlap it, cut at its edges); a common --to-us gives pictures a common scale.
//
// Every event is one <g class="ev" data-name=... data-cat=... data-ts=... data-dur=...> (the
// full name; times in us from time 0), every arrow one <path class="flow">, so that a test can
// count them. A name is drawn inside its box when it fits, else cut with "…", by a monospace
// estimate of its width (no font metrics); kernels are labelled without "void " and their
// argument list. The same input gives the same bytes. Exits 2 with one line on stderr on a wrong
// command line (--from-us and --to-us must lie within 1e12 us of time 0), 1 on a trace that cannot
// be read (tools/trace_file.h's rules: a regular file, fields of the right types, bounded size and
// nesting), a step it does not have, or an empty view.
//
//   ts_trace_svg --memory TRACE.json[.gz] [--step N] [--from-us A] [--to-us B] [-o OUT.svg | -o -]
//
// draws the trace's "[memory]" events instead (profile_memory): one chart per device, bytes live
// over time, stacked by the op that allocated each block. An event belongs to the innermost op or
// annotation enclosing it on its thread (the scope the table charges it to). A free is matched
// to its allocation by address; a block allocated before the view and freed in it sits in the
// bottom band ("allocated before the view"), which starts at the sum of those blocks. Blocks that
// live through the whole view (weights, inputs) are not drawn: the chart starts at 0 plus that
// band, and at every event it rises or falls by the event's Bytes. Above the chart, the scopes the
// events happened in; below it, one tick per event (up: allocation, down: free); a dashed line at
// the peak. Each chart is a <g class="mem-chart"> whose data-* attributes give its device, its
// event counts and byte sums, the starting band, the peak and the bytes live at the end; each
// band a <path class="mem-band" data-op=...>, each event a <line class="mem-ev" data-op=...
// data-bytes=... data-ts=...>, so that a test can recompute them from the trace. Exits 1 with one
// line when the view holds no memory events.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "tensor/file_output.h"
#include "tools/trace_file.h"

namespace {

using ts::trace::Slice;
using ts::trace::Trace;

// ---- geometry (px) ----
constexpr double kWidth = 1200;
constexpr double kLabelWidth = 190;                   // the lane names' column
constexpr double kPlotLeft = kLabelWidth + 10, kPlotRight = kWidth - 16;
constexpr double kRow = 18, kBox = 15;                // one nesting depth; a box inside it
constexpr double kLaneGap = 8;
constexpr double kAxisTop = 48, kLanesTop = 70;
constexpr double kFontSize = 10, kCharWidth = 6.02;   // monospace: advance ~0.6 em
constexpr double kLabelFontSize = 11, kLabelCharWidth = 6.63;
constexpr const char* kFont = "DejaVu Sans Mono, Menlo, Consolas, monospace";

// Fill colour and the colour key's words for a slice.
struct Style {
  const char* fill;
  const char* key;
};

Style style_of(const Slice& s) {
  if (ts::trace::is_step(s)) return {"#d9d9d9", "ProfilerStep#N"};
  if (s.cat == "user_annotation") return {"#cdb8ea", "user annotation (record_function)"};
  if (s.cat == "cpu_op") return {"#94bce9", "op (cpu_op)"};
  if (s.cat == "cuda_runtime" || s.cat == "cuda_driver") return {"#f5b47f", "runtime / driver call"};
  if (s.cat == "kernel") return {"#8fd19e", "kernel"};
  if (s.cat == "gpu_memcpy") return {"#7fd3d6", "memcpy"};
  if (s.cat == "gpu_memset") return {"#f1d36b", "memset"};
  if (s.cat == "gpu_user_annotation") return {"#ece3f7", "GPU annotation (span of its GPU work)"};
  if (s.cat == "cuda_sync") return {"#ea8f8f", "sync (waiting for the GPU)"};
  return {"#bdbdbd", "other"};
}

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// UTF-8 code points: the unit of the width estimate.
size_t glyphs(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string first_glyphs(const std::string& s, size_t count) {
  size_t n = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (n == count) break;
      ++n;
    }
  }
  return s.substr(0, i);
}

// The text that fits in `width` px at `char_width` per glyph: all of it, or a cut one ending in "…", or "".
std::string fit(const std::string& text, double width, double char_width) {
  const auto room = static_cast<size_t>(std::max(0.0, std::floor(width / char_width)));
  if (glyphs(text) <= room) return text;
  if (room < 3) return "";
  return first_glyphs(text, room - 1) + "…";
}

// A kernel's label: its demangled name without "void ", "(anonymous namespace)::" and the argument list.
std::string label_of(const Slice& s) {
  if (s.cat != "kernel") return s.name;
  std::string name = s.name;
  if (name.starts_with("void ")) name = name.substr(5);
  for (size_t at; (at = name.find("(anonymous namespace)::")) != std::string::npos;) name.erase(at, 23);
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0 && i > 0) return name.substr(0, i);
  }
  return name;
}

std::string num(double v) {  // coordinates: one decimal, never "-0.0"
  std::string s = fmt::format("{:.1f}", v);
  return s == "-0.0" ? "0.0" : s;
}

std::string us(int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1000.0); }

// A tick step of 1, 2 or 5 x 10^k us giving at most ~10 ticks over `span_us`.
double tick_step(double span_us) {
  const double raw = span_us / 10.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10.0 * magnitude;
}

std::string tick_label(double value, double step) {
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  std::string s = fmt::format("{:.{}f}", value, decimals);
  return s.starts_with("-0") && std::stod(s) == 0 ? s.substr(1) : s;
}

struct Options {
  std::string path;
  std::string out;  // -o as given: a file, "-" for stdout, empty for the default file
  bool memory = false;  // draw the [memory] events: bytes live over time, by op
  std::optional<int64_t> step;
  std::optional<double> from_us, to_us;
};

constexpr const char* kUsage =
    "ts_trace_svg [--memory] TRACE.json[.gz] [--step N] [--from-us A] [--to-us B] [-o OUT.svg | -o -]";

constexpr const char* kHelp = R"(usage: ts_trace_svg [--memory] TRACE.json[.gz] [--step N] [--from-us A] [--to-us B] [-o OUT.svg | -o -]

Draws a Chrome trace that the profiler wrote (export_chrome_trace) as one standalone SVG picture,
to read without a browser.

  the timeline (default)  one lane per CPU thread (ProfilerStep#N, your annotations, ts:: ops, the
                          runtime and driver calls; one row per nesting depth) and one per GPU
                          stream (kernels, memcpys, memsets, GPU annotations, syncs); arrows from
                          each launch call to the GPU work it made; a time axis in us; a colour key
  --memory                the trace's [memory] events instead (a trace recorded with
                          profile_memory): one chart per device of the bytes live over time,
                          stacked by the op that allocated each block; the peak; one tick per
                          allocation or free

options:
  TRACE.json[.gz]  the trace to draw (required; read as gzip when the name ends in .gz)
  --memory         draw the memory chart instead of the timeline (default: the timeline)
  --step N         only ProfilerStep#N: its CPU slices and the GPU work they launched, time 0 at
                   the step's start (default: the whole trace, time 0 at its first event)
  --from-us A      the view starts A us after time 0 (default: 0; within 1e12 us either way)
  --to-us B        the view ends B us after time 0 (default: the end of the last event; within
                   1e12 us either way); one --to-us for several traces draws them on one scale
  -o OUT.svg       write the picture to OUT.svg; -o - writes it to stdout (default: a file in
                   the current directory named after the trace: its file name without .json or
                   .json.gz, then _step<N> with --step, _memory with --memory, then .svg;
                   --from-us and --to-us leave the name as it is: give -o to keep two views)
  -h, --help       print this text

After writing a file it prints one line on stdout: wrote OUT.svg (what it draws). With -o - stdout
holds the SVG alone. A wrong command line exits 2 and a trace it cannot read or draw (no such
step, an empty view, no [memory] events) exits 1, each with one line on stderr.

examples:
  ts_trace_svg traces/01_matmul_add/64_bf16_warm_eager.json --step 3
      writes 64_bf16_warm_eager_step3.svg
  ts_trace_svg --memory traces/05_memory_and_syncs/64x128x768x3072_bf16_warm_memory_eager.json --step 3
      writes 64x128x768x3072_bf16_warm_memory_eager_step3_memory.svg
  ts_trace_svg fused.json --step 3 --to-us 560 -o fused.svg
      step #3 from 0 to 560 us, into fused.svg (eager.json drawn with the same --to-us: one scale)
  ts_trace_svg TRACE.json -o - | gzip > trace.svg.gz
      the SVG on stdout, for a script
)";

int bad_usage(const std::string& message) {  // one line, exit 2
  fmt::print(stderr, "ts_trace_svg: {} (usage: {}; --help says more)\n", message, kUsage);
  return 2;
}

// The last two parts of a path: the tutorial's folder and the file, the same wherever the checkout is.
std::string short_path(const std::string& path) {
  const size_t last = path.rfind('/');
  if (last == std::string::npos || last == 0) return path;
  const size_t before = path.rfind('/', last - 1);
  return before == std::string::npos ? path : path.substr(before + 1);
}

int fail(const std::string& message) {
  fmt::print(stderr, "ts_trace_svg: {}\n", message);
  return 1;
}

// The file written without -o: the trace's file name less .json or .json.gz, _step<N> with --step,
// _memory with --memory, .svg; in the current directory.
std::string default_output(const Options& opt) {
  std::string name = opt.path.substr(opt.path.rfind('/') + 1);  // npos + 1 == 0: the whole path
  for (const char* suffix : {".json.gz", ".json"}) {
    if (name.size() > std::strlen(suffix) && name.ends_with(suffix)) {
      name.resize(name.size() - std::strlen(suffix));
      break;
    }
  }
  if (opt.step) name += fmt::format("_step{}", *opt.step);
  if (opt.memory) name += "_memory";
  return name + ".svg";
}

// The SVG to stdout (-o -), or to -o's file or the default one, then "wrote PATH (what)".
int write_output(const Options& opt, const std::string& svg, const std::string& what) {
  if (opt.out == "-") {
    fmt::print("{}", svg);
    return std::fflush(stdout) == 0 ? 0 : fail("cannot write the SVG to stdout");
  }
  // Whole or not at all, never through a planted link or over a device (tensor/file_output.h); its
  // ts::Error ("cannot write PATH: why") becomes main's one line and exit 1.
  const std::string path = opt.out.empty() ? default_output(opt) : opt.out;
  ts::write_file(path, svg, "");
  fmt::print("wrote {} ({})\n", path, what);
  return 0;
}

// ---- --memory: bytes live over time, by the op that allocated them ----------------------------------

// One "[memory]" instant event with the scope it happened in.
struct MemEvent {
  size_t order = 0;  // position among the memory events of the file
  std::string pid, tid;
  int64_t ts_ns = 0;
  int64_t bytes = 0;  // > 0 allocation, < 0 free
  uint64_t addr = 0;
  std::string device;  // "cpu", "cuda:0"
  std::string op;      // the innermost op or annotation enclosing it on its thread
  int scope = -1;      // that slice's index in Trace::slices; -1: none
};

// PyTorch's memory units (profiler_util.py's _format_memory): 512 B, 1.50 KB, -48.00 MB, 2.00 GB.
std::string format_memory(int64_t bytes) {
  constexpr int64_t KB = 1024, MB = 1024 * KB, GB = 1024 * MB;
  const int64_t magnitude = bytes < 0 ? -bytes : bytes;
  const double b = static_cast<double>(bytes);
  if (magnitude >= GB) return fmt::format("{:.2f} GB", b / GB);
  if (magnitude >= MB) return fmt::format("{:.2f} MB", b / MB);
  if (magnitude >= KB) return fmt::format("{:.2f} KB", b / KB);
  return fmt::format("{} B", bytes);
}

// The memory events of the trace (load_trace read them), each with the scope it happened in, in
// time order.
std::vector<MemEvent> memory_events(const Trace& trace) {
  std::vector<MemEvent> out;
  out.reserve(trace.memory.size());
  for (const ts::trace::MemoryEvent& e : trace.memory) {
    MemEvent m;
    m.order = out.size();
    m.pid = e.pid;
    m.tid = e.tid;
    m.ts_ns = e.ts_ns;
    m.bytes = e.bytes;
    m.addr = e.addr;
    m.device = e.device_type == 0 ? std::string("cpu") : fmt::format("cuda:{}", e.device_id);
    out.push_back(std::move(m));
  }
  // The innermost op or annotation around each event on its thread: the last slice, in (start,
  // -end) order, that has started by the event and not ended before it. One sweep per thread, its
  // events in time order: a stack of the scopes started so far; one that ended before an event has
  // ended before every later one too, so it leaves the stack once it is on top.
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> scopes, events;  // by (pid, tid)
  for (size_t i = 0; i < trace.slices.size(); ++i) {
    const Slice& s = trace.slices[i];
    if (s.cat == "cpu_op" || s.cat == "user_annotation") scopes[{s.pid, s.tid}].push_back(i);
  }
  for (size_t k = 0; k < out.size(); ++k) events[{out[k].pid, out[k].tid}].push_back(k);
  for (auto& [lane, ks] : events) {
    std::stable_sort(ks.begin(), ks.end(), [&](size_t a, size_t b) { return out[a].ts_ns < out[b].ts_ns; });
    const std::vector<size_t>& lane_scopes = scopes[lane];
    std::vector<size_t> open;
    size_t next = 0;
    for (size_t k : ks) {
      MemEvent& m = out[k];
      while (next < lane_scopes.size() && trace.slices[lane_scopes[next]].start_ns <= m.ts_ns)
        open.push_back(lane_scopes[next++]);
      while (!open.empty() && trace.slices[open.back()].end_ns < m.ts_ns) open.pop_back();
      m.scope = open.empty() ? -1 : static_cast<int>(open.back());
    }
  }
  for (MemEvent& m : out)
    m.op = m.scope < 0 ? std::string("(no scope)") : trace.slices[static_cast<size_t>(m.scope)].name;
  std::stable_sort(out.begin(), out.end(), [](const MemEvent& a, const MemEvent& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

// a + b, or Error when the sum leaves int64 (the byte counts of a trace that cannot be real).
int64_t add_bytes(int64_t a, int64_t b, const std::string& path) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    throw ts::trace::Error(fmt::format("{}: the [memory] events' bytes add up past 2^63", path));
  return sum;
}

// A y-axis step: 1, 2 or 5 times a power of ten, in the unit (B, KB, MB, GB) the top value reads in.
double byte_tick(double top) {
  const double unit = top >= (1 << 30) ? double(1 << 30) : top >= (1 << 20) ? double(1 << 20) : top >= 1024 ? 1024.0 : 1.0;
  const double raw = top / unit / 5.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) return std::max(1.0, m * magnitude * unit);
  return 10.0 * magnitude * unit;
}

constexpr const char* kBandFills[] = {"#94bce9", "#8fd19e", "#f5b47f", "#cdb8ea", "#f1d36b",
                                      "#7fd3d6", "#ea8f8f", "#c9c9a3", "#b7d7f0", "#e3b5d8"};
constexpr const char* kBeforeBand = "allocated before the view";

int draw_memory(const Options& opt, const Trace& trace) {
  const std::vector<MemEvent> all = memory_events(trace);

  // The view: a step's span (time 0 at its start) or the whole trace (time 0 at its first event),
  // narrowed by --from-us/--to-us.
  int64_t origin = 0, view_from = 0, view_to = 0;
  std::string scope = "whole trace";
  if (opt.step) {
    const std::string wanted = fmt::format("ProfilerStep#{}", *opt.step);
    const Slice* step = nullptr;
    for (const Slice& e : trace.slices)
      if (ts::trace::is_step(e) && e.name == wanted && step == nullptr) step = &e;
    if (step == nullptr) return fail(fmt::format("{} has no {}", opt.path, wanted));
    origin = view_from = step->start_ns;
    view_to = step->end_ns;
    scope = wanted;
  } else {
    bool first = true;
    for (const Slice& e : trace.slices) {
      if (e.cat == "Trace") continue;
      origin = first ? e.start_ns : std::min(origin, e.start_ns);
      view_to = first ? e.end_ns : std::max(view_to, e.end_ns);
      first = false;
    }
    for (const MemEvent& m : all) {
      origin = first ? m.ts_ns : std::min(origin, m.ts_ns);
      view_to = first ? m.ts_ns : std::max(view_to, m.ts_ns);
      first = false;
    }
    view_from = origin;
  }
  if (opt.from_us) view_from = origin + std::llround(*opt.from_us * 1000.0);
  if (opt.to_us) view_to = origin + std::llround(*opt.to_us * 1000.0);
  if (view_to <= view_from)
    return fail(fmt::format("empty view: from {} us to {} us", us(view_from - origin), us(view_to - origin)));

  std::map<std::string, std::vector<const MemEvent*>> by_device;
  for (const MemEvent& m : all)
    if (m.ts_ns >= view_from && m.ts_ns <= view_to) by_device[m.device].push_back(&m);
  if (by_device.empty())
    return fail(fmt::format("{}: no [memory] events in {} (was the trace recorded with profile_memory?)", opt.path,
                            scope));

  // ---- one chart per device: the bands, the peak, the scopes ----
  struct Band {
    std::string op;
    int allocations = 0;
    int64_t allocated = 0;
    std::vector<int64_t> live;  // after each event of the chart; [0] before the first
  };
  struct Chart {
    std::string device;
    std::vector<const MemEvent*> events;
    std::vector<Band> bands;  // bands[0]: blocks allocated before the view
    int allocations = 0, frees = 0;
    int64_t allocated = 0, freed = 0, before = 0, peak = 0, end = 0;
    size_t peak_at = 0;  // 0: the start; k: after event k-1
    std::vector<int> scopes;  // the slices the events happened in, in (start, -end) order
  };
  std::vector<Chart> charts;
  for (auto& [device, events] : by_device) {
    Chart c;
    c.device = device;
    c.events = events;
    std::map<uint64_t, size_t> band_of_block;  // live blocks allocated in the view: address -> band
    std::map<std::string, size_t> band_of_op;
    c.bands.push_back({kBeforeBand, 0, 0, {}});
    // First pass: which frees release blocks from before the view, and the bands' order.
    {
      std::map<uint64_t, bool> seen;
      for (const MemEvent* m : events) {
        if (m->bytes > 0) {
          seen[m->addr] = true;
          if (!band_of_op.contains(m->op)) {
            band_of_op[m->op] = c.bands.size();
            c.bands.push_back({m->op, 0, 0, {}});
          }
        } else if (!seen[m->addr]) {
          c.before = add_bytes(c.before, -m->bytes, opt.path);
        } else {
          seen[m->addr] = false;
        }
      }
    }
    std::vector<int64_t> live(c.bands.size(), 0);
    live[0] = c.before;
    const auto snapshot = [&] {
      for (size_t b = 0; b < c.bands.size(); ++b) c.bands[b].live.push_back(live[b]);
    };
    snapshot();
    int64_t total = c.before;
    c.peak = total;
    std::set<int> scope_set;
    for (size_t k = 0; k < events.size(); ++k) {
      const MemEvent* m = events[k];
      if (m->scope >= 0) scope_set.insert(m->scope);
      if (m->bytes > 0) {
        const size_t b = band_of_op[m->op];
        band_of_block[m->addr] = b;
        live[b] = add_bytes(live[b], m->bytes, opt.path);
        c.bands[b].allocations += 1;
        c.bands[b].allocated = add_bytes(c.bands[b].allocated, m->bytes, opt.path);
        c.allocations += 1;
        c.allocated = add_bytes(c.allocated, m->bytes, opt.path);
      } else {
        const auto it = band_of_block.find(m->addr);
        const size_t b = it == band_of_block.end() ? 0 : it->second;
        if (it != band_of_block.end()) band_of_block.erase(it);
        live[b] = add_bytes(live[b], m->bytes, opt.path);
        c.frees += 1;
        c.freed = add_bytes(c.freed, -m->bytes, opt.path);
      }
      total = add_bytes(total, m->bytes, opt.path);
      if (total > c.peak) {
        c.peak = total;
        c.peak_at = k + 1;
      }
      snapshot();
    }
    c.end = total;
    c.scopes.assign(scope_set.begin(), scope_set.end());
    if (c.before == 0) {  // no band for blocks from before the view
      c.bands.erase(c.bands.begin());
    }
    charts.push_back(std::move(c));
  }

  // ---- geometry ----
  constexpr double kChartHeight = 220, kTickRow = 14;
  const double span = static_cast<double>(view_to - view_from);
  const auto x_of = [&](int64_t t) {
    return kPlotLeft + static_cast<double>(std::clamp(t, view_from, view_to) - view_from) * (kPlotRight - kPlotLeft) / span;
  };
  std::string out;
  const auto emit = [&](const std::string& text) { out += text; };
  std::string body;
  double y = kLanesTop;
  for (const Chart& c : charts) {
    // Scope rows: nesting among the scopes drawn (a scope inside another one goes a row lower):
    // row[i] = 1 + the deepest row of an earlier scope that encloses it. In (start, -end) order an
    // earlier scope has started no later, so it encloses scope i when it ends no earlier: a
    // running maximum over the ends >= scope i's (a Fenwick tree over the ends, latest first).
    std::vector<int> row(c.scopes.size(), 0);
    int rows = 0;
    {
      std::vector<int64_t> ends;
      for (int k : c.scopes) ends.push_back(trace.slices[static_cast<size_t>(k)].end_ns);
      std::sort(ends.begin(), ends.end(), std::greater<>());
      ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
      std::vector<int> deepest(ends.size() + 1, 0);  // row + 1 of the deepest scope so far per end; 0: none
      for (size_t i = 0; i < c.scopes.size(); ++i) {
        const int64_t end = trace.slices[static_cast<size_t>(c.scopes[i])].end_ns;
        const size_t rank = static_cast<size_t>(std::lower_bound(ends.begin(), ends.end(), end, std::greater<>()) -
                                                ends.begin()) + 1;
        int above = 0;
        for (size_t r = rank; r > 0; r -= r & (~r + 1)) above = std::max(above, deepest[r]);
        row[i] = above;
        for (size_t r = rank; r < deepest.size(); r += r & (~r + 1)) deepest[r] = std::max(deepest[r], row[i] + 1);
        rows = std::max(rows, row[i] + 1);
      }
    }
    const double scopes_top = y + 22, chart_top = scopes_top + rows * kRow + 10;
    const double chart_bottom = chart_top + kChartHeight;
    const double top_bytes = std::max<double>(1.0, static_cast<double>(c.peak) * 1.08);
    const auto y_of = [&](double bytes) { return chart_bottom - bytes / top_bytes * kChartHeight; };

    body += fmt::format("<g class=\"mem-chart\" data-device=\"{}\" data-events=\"{}\" data-allocations=\"{}\" "
                        "data-allocated-bytes=\"{}\" data-frees=\"{}\" data-freed-bytes=\"{}\" data-before-bytes=\"{}\" "
                        "data-peak-bytes=\"{}\" data-peak-ts=\"{}\" data-end-bytes=\"{}\">\n",
                        c.device, c.events.size(), c.allocations, c.allocated, c.frees, c.freed, c.before, c.peak,
                        us((c.peak_at == 0 ? view_from : c.events[c.peak_at - 1]->ts_ns) - origin), c.end);
    body += fmt::format("<text x=\"10\" y=\"{}\" font-size=\"12\" font-weight=\"bold\">{}: {} allocations ({}), {} "
                        "frees ({}); peak {}</text>\n",
                        num(y + 12), escape(c.device), c.allocations, escape(format_memory(c.allocated)), c.frees,
                        escape(format_memory(c.freed)), escape(format_memory(c.peak)));
    // The scopes.
    body += fmt::format("<text x=\"10\" y=\"{}\" font-size=\"{}\">scopes</text>\n", num(scopes_top + 12), kLabelFontSize);
    for (size_t i = 0; i < c.scopes.size(); ++i) {
      const Slice& s = trace.slices[static_cast<size_t>(c.scopes[i])];
      const double x1 = x_of(s.start_ns), x2 = x_of(s.end_ns), w = std::max(x2 - x1, 1.0);
      const double top = scopes_top + row[i] * kRow + (kRow - kBox) / 2;
      body += fmt::format("<g class=\"scope\" data-name=\"{}\"><title>{}: {} µs at {} µs</title><rect x=\"{}\" y=\"{}\" "
                          "width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#555555\" stroke-width=\"0.5\"/>",
                          escape(s.name), escape(s.name), us(s.duration_ns()), us(s.start_ns - origin), num(x1),
                          num(top), num(w), num(kBox), style_of(s).fill);
      const std::string text = fit(s.name, w - 4, kCharWidth);
      if (!text.empty()) body += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>", num(x1 + 2), num(top + kBox - 4), escape(text));
      body += "</g>\n";
    }
    // The frame, the y axis, the time grid.
    body += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fbfbfb\" stroke=\"#bbbbbb\"/>\n",
                        num(kPlotLeft), num(chart_top), num(kPlotRight - kPlotLeft), num(kChartHeight));
    const double ytick = byte_tick(top_bytes);
    for (double b = 0; b <= top_bytes; b += ytick) {
      body += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e6e6e6\"/><text x=\"{3}\" "
                          "y=\"{4}\" text-anchor=\"end\" font-size=\"10\" fill=\"#444444\">{5}</text>\n",
                          num(kPlotLeft), num(y_of(b)), num(kPlotRight), num(kPlotLeft - 6), num(y_of(b) + 3),
                          escape(format_memory(static_cast<int64_t>(std::min(b, 9e18)))));
    }
    body += fmt::format("<text x=\"10\" y=\"{}\" font-size=\"{}\">bytes live</text>\n", num(chart_top + 12),
                        kLabelFontSize);
    const double step_us = tick_step(span / 1000.0);
    const double first_tick = std::ceil(static_cast<double>(view_from - origin) / 1000.0 / step_us - 1e-9) * step_us;
    for (int k = 0;; ++k) {
      const double t_us = first_tick + k * step_us;
      const auto t_ns = origin + static_cast<int64_t>(std::llround(t_us * 1000.0));
      if (t_ns > view_to) break;
      body += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e6e6e6\"/><text x=\"{0}\" "
                          "y=\"{3}\" text-anchor=\"middle\" font-size=\"10\" fill=\"#444444\">{4}</text>\n",
                          num(x_of(t_ns)), num(chart_top), num(chart_bottom + kTickRow), num(chart_bottom + kTickRow + 12),
                          tick_label(t_us, step_us));
    }
    body += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"10\" fill=\"#444444\">µs</text>\n",
                        num(kPlotLeft - 6), num(chart_bottom + kTickRow + 12));
    // The bands, stacked: each a step function over the events' times, its top edge left to
    // right, then the band below's top edge back.
    std::vector<double> times{static_cast<double>(view_from)};
    for (const MemEvent* m : c.events) times.push_back(static_cast<double>(m->ts_ns));
    std::vector<int64_t> below(times.size(), 0);
    for (size_t b = 0; b < c.bands.size(); ++b) {
      const Band& band = c.bands[b];
      const bool is_before = band.op == kBeforeBand;
      std::string top_edge, bottom_edge;
      std::vector<int64_t> above(times.size());
      for (size_t k = 0; k < times.size(); ++k) above[k] = below[k] + band.live[k];
      for (size_t k = 0; k < times.size(); ++k) {
        const double x1 = x_of(static_cast<int64_t>(times[k]));
        const double x2 = k + 1 < times.size() ? x_of(static_cast<int64_t>(times[k + 1])) : x_of(view_to);
        top_edge += fmt::format("{}{},{} L{},{} ", k == 0 ? "M" : "L", num(x1), num(y_of(static_cast<double>(above[k]))),
                                num(x2), num(y_of(static_cast<double>(above[k]))));
      }
      for (size_t k = times.size(); k-- > 0;) {
        const double x1 = x_of(static_cast<int64_t>(times[k]));
        const double x2 = k + 1 < times.size() ? x_of(static_cast<int64_t>(times[k + 1])) : x_of(view_to);
        bottom_edge += fmt::format("L{},{} L{},{} ", num(x2), num(y_of(static_cast<double>(below[k]))), num(x1),
                                   num(y_of(static_cast<double>(below[k]))));
      }
      const char* fill = is_before ? "#d9d9d9" : kBandFills[(b - (c.bands[0].op == kBeforeBand ? 1 : 0)) % 10];
      body += fmt::format("<path class=\"mem-band\" data-op=\"{}\" data-allocations=\"{}\" data-bytes=\"{}\" d=\"{}{}Z\" "
                          "fill=\"{}\" stroke=\"#555555\" stroke-width=\"0.4\"><title>{}</title></path>\n",
                          escape(band.op), band.allocations, band.allocated, top_edge, bottom_edge, fill,
                          escape(band.op));
      below = above;
    }
    // The peak.
    const double peak_x = x_of(c.peak_at == 0 ? view_from : c.events[c.peak_at - 1]->ts_ns);
    const std::string peak_op = c.peak_at == 0 ? std::string("at the start") : "in " + c.events[c.peak_at - 1]->op;
    body += fmt::format("<g class=\"mem-peak\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#b00000\" "
                        "stroke-dasharray=\"4,3\"/><circle cx=\"{3}\" cy=\"{1}\" r=\"3\" fill=\"#b00000\"/>"
                        "<text x=\"{4}\" y=\"{5}\" fill=\"#b00000\" font-size=\"11\">peak {6} at {7} µs, {8}</text></g>\n",
                        num(kPlotLeft), num(y_of(static_cast<double>(c.peak))), num(kPlotRight), num(peak_x),
                        num(std::min(peak_x + 6, kPlotRight - 330)), num(y_of(static_cast<double>(c.peak)) - 5),
                        escape(format_memory(c.peak)),
                        us((c.peak_at == 0 ? view_from : c.events[c.peak_at - 1]->ts_ns) - origin), escape(peak_op));
    // One tick per event under the chart.
    for (const MemEvent* m : c.events) {
      const double x = x_of(m->ts_ns);
      const bool alloc = m->bytes > 0;
      body += fmt::format("<line class=\"mem-ev\" data-op=\"{}\" data-bytes=\"{}\" data-ts=\"{}\" x1=\"{}\" y1=\"{}\" "
                          "x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1.2\"><title>{} {} in {} at {} µs</title></line>\n",
                          escape(m->op), m->bytes, us(m->ts_ns - origin), num(x), num(chart_bottom + (alloc ? kTickRow : 2)),
                          num(x), num(chart_bottom + (alloc ? 2 : kTickRow)), alloc ? "#2e7d32" : "#c62828",
                          alloc ? "allocation of" : "free of", escape(format_memory(alloc ? m->bytes : -m->bytes)),
                          escape(m->op), us(m->ts_ns - origin));
    }
    // The key: each band, what it allocated.
    double ly = chart_bottom + kTickRow + 32;
    for (size_t b = 0; b < c.bands.size(); ++b) {
      const Band& band = c.bands[b];
      const bool is_before = band.op == kBeforeBand;
      const char* fill = is_before ? "#d9d9d9" : kBandFills[(b - (c.bands[0].op == kBeforeBand ? 1 : 0)) % 10];
      const double lx = 10 + static_cast<double>(b % 2) * 590;
      const std::string words =
          is_before ? fmt::format("{}, freed in the view: {}", band.op, format_memory(c.before))
                    : fmt::format("{}: {} allocation{}, {}", band.op, band.allocations, band.allocations == 1 ? "" : "s",
                                  format_memory(band.allocated));
      body += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"11\" fill=\"{}\" stroke=\"#555555\" "
                          "stroke-width=\"0.5\"/><text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n",
                          num(lx), num(ly - 9), fill, num(lx + 20), num(ly), escape(words));
      if (b % 2 == 1 || b + 1 == c.bands.size()) ly += 16;
    }
    body += "</g>\n";
    y = ly + 18;
  }
  const double height = y;
  emit("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  emit(fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                   "font-family=\"{2}\" font-size=\"{3}\">\n",
                   num(kWidth), num(height), kFont, kFontSize));
  emit(fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", num(kWidth), num(height)));
  emit(fmt::format("<text x=\"10\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{}: memory</text>\n",
                   escape(short_path(opt.path))));
  emit(fmt::format("<text x=\"10\" y=\"34\" font-size=\"11\">{}, {} µs to {} µs from {}: bytes live of the blocks "
                   "allocated or freed in the view, by the op that allocated them</text>\n",
                   escape(scope), us(view_from - origin), us(view_to - origin),
                   opt.step ? "the step's start" : "the first event"));
  emit(body);
  emit("</svg>\n");
  std::string what = fmt::format("memory, {}, {} us to {} us:", scope, us(view_from - origin), us(view_to - origin));
  for (size_t i = 0; i < charts.size(); ++i)
    what += fmt::format("{} {} {} event{}, peak {}", i ? ";" : "", charts[i].device, charts[i].events.size(),
                        charts[i].events.size() == 1 ? "" : "s", format_memory(charts[i].peak));
  return write_output(opt, out, what);
}

// The number after an option: a whole one for --step, microseconds for --from-us/--to-us (within
// +-ts::trace::kMaxViewUs of time 0), each through the checked parsers of tools/trace_file.h.
bool parse_number(const std::string& option, const std::string& text, Options* opt, std::string* why) {
  if (option == "--step") {
    int64_t value = 0;
    const std::string problem = ts::trace::parse_whole_number(text, 0, INT64_MAX, &value);
    if (problem.empty()) opt->step = value;
    else *why = fmt::format("--step: {} (the N of ProfilerStep#N)", problem);
    return problem.empty();
  }
  double value = 0;
  const std::string problem = ts::trace::parse_microseconds(text, &value);
  if (problem.empty()) (option == "--from-us" ? opt->from_us : opt->to_us) = value;
  else *why = fmt::format("{}: {} (e.g. 560 or 12.5)", option, problem);
  return problem.empty();
}

int run(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      fmt::print("{}", kHelp);
      return 0;
    }
    if (arg == "--memory") {
      opt.memory = true;
    } else if (arg == "--step" || arg == "--from-us" || arg == "--to-us" || arg == "-o") {
      if (i + 1 >= argc) {
        return bad_usage(fmt::format("{} needs a value after it ({}), got nothing", arg,
                                     arg == "--step" ? "a step number" : arg == "-o" ? "a file name, or - for stdout"
                                                                                     : "microseconds"));
      }
      const std::string value = argv[++i];
      if (arg == "-o") {
        if (value.empty()) return bad_usage("-o needs a file name (or - for stdout), got ''");
        opt.out = value;
      } else if (std::string why; !parse_number(arg, value, &opt, &why)) {
        return bad_usage(why);
      }
    } else if (arg.starts_with("-")) {
      return bad_usage(fmt::format("unknown option '{}'", arg));
    } else if (!opt.path.empty()) {
      return bad_usage(fmt::format("one trace at a time, got '{}' and '{}'", opt.path, arg));
    } else {
      opt.path = arg;
    }
  }
  if (opt.path.empty()) return bad_usage("no trace given (the first argument that is not an option is the trace)");

  const Trace trace = ts::trace::load_trace(opt.path, opt.memory);
  if (opt.memory) return draw_memory(opt, trace);
  const std::vector<Slice>& s = trace.slices;
  const size_t n = s.size();

  // ---- which events ----
  std::vector<bool> keep(n, false);
  int64_t origin = 0;
  std::string scope = "whole trace";
  if (opt.step) {
    const std::string wanted = fmt::format("ProfilerStep#{}", *opt.step);
    const Slice* step = nullptr;
    std::vector<std::string> have;
    for (const Slice& e : s) {
      if (!ts::trace::is_step(e)) continue;
      have.push_back(e.name.substr(12));
      if (e.name == wanted && step == nullptr) step = &e;
    }
    if (step == nullptr)
      return fail(fmt::format("{} has no {} (its steps: {})", opt.path, wanted,
                              have.empty() ? "none" : fmt::format("{}", fmt::join(have, " "))));
    origin = step->start_ns;
    scope = wanted;
    std::map<int64_t, bool> launches, annotations;  // correlation ids; External ids of annotations
    for (size_t i = 0; i < n; ++i) {
      const Slice& e = s[i];
      if (ts::trace::on_gpu_lane(e.cat) || e.cat == "Trace") continue;
      if (e.start_ns < step->start_ns || e.end_ns > step->end_ns) continue;
      if (ts::trace::is_step(e) && &e != step) continue;
      keep[i] = true;
      if (e.correlation >= 0) launches[e.correlation] = true;
      if (e.cat == "user_annotation" && e.external_id >= 0) annotations[e.external_id] = true;
    }
    for (size_t i = 0; i < n; ++i) {
      const Slice& e = s[i];
      if (e.cat == "gpu_user_annotation") keep[i] = e.external_id >= 0 && annotations.contains(e.external_id);
      else if (ts::trace::on_gpu_lane(e.cat)) keep[i] = e.correlation >= 0 && launches.contains(e.correlation);
    }
  } else {
    bool first = true;
    for (size_t i = 0; i < n; ++i) {
      if (s[i].cat == "Trace") continue;  // the profiler's own span ("PyTorch Profiler (0)")
      keep[i] = true;
      origin = first ? s[i].start_ns : std::min(origin, s[i].start_ns);
      first = false;
    }
  }
  int64_t last_end = origin;
  for (size_t i = 0; i < n; ++i)
    if (keep[i]) last_end = std::max(last_end, s[i].end_ns);
  const int64_t view_from = origin + (opt.from_us ? std::llround(*opt.from_us * 1000.0) : 0);
  const int64_t view_to = opt.to_us ? origin + std::llround(*opt.to_us * 1000.0) : last_end;
  if (view_to <= view_from)
    return fail(fmt::format("empty view: from {} us to {} us", us(view_from - origin), us(view_to - origin)));
  size_t drawn_count = 0;
  for (size_t i = 0; i < n; ++i) {
    keep[i] = keep[i] && s[i].start_ns <= view_to && s[i].end_ns >= view_from;
    drawn_count += keep[i];
  }
  if (drawn_count == 0) return fail(fmt::format("{}: no events to draw in {}", opt.path, scope));

  // ---- lanes and rows ----
  struct Lane {
    std::pair<std::string, std::string> key;
    ts::trace::LaneInfo info;
    int rows = 1;
    double top = 0, height = 0;
  };
  std::vector<int> depth(n, 0);
  std::map<std::pair<std::string, std::string>, int> rows;
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    for (int p = s[i].parent; p >= 0; p = s[static_cast<size_t>(p)].parent) depth[i] += keep[static_cast<size_t>(p)];
    int& r = rows[{s[i].pid, s[i].tid}];
    r = std::max(r, depth[i] + 1);
  }
  std::vector<Lane> lanes;
  for (const auto& [key, r] : rows) lanes.push_back({key, trace.lanes.at(key), r});
  std::stable_sort(lanes.begin(), lanes.end(), [](const Lane& a, const Lane& b) {
    return std::tie(a.info.process_sort, a.key.first, a.info.thread_sort, a.key.second) <
           std::tie(b.info.process_sort, b.key.first, b.info.thread_sort, b.key.second);
  });
  std::map<std::pair<std::string, std::string>, size_t> lane_of;
  double y = kLanesTop;
  for (size_t l = 0; l < lanes.size(); ++l) {
    lanes[l].top = y;
    lanes[l].height = std::max(lanes[l].rows, 2) * kRow + 4;
    y += lanes[l].height + kLaneGap;
    lane_of[lanes[l].key] = l;
  }
  const double lanes_bottom = y - kLaneGap;

  const double span = static_cast<double>(view_to - view_from);
  const auto x_of = [&](int64_t t) {
    return kPlotLeft + static_cast<double>(t - view_from) * (kPlotRight - kPlotLeft) / span;
  };
  const auto box_top = [&](size_t i) {
    return lanes[lane_of[{s[i].pid, s[i].tid}]].top + 2 + depth[i] * kRow + (kRow - kBox) / 2;
  };

  // Colour key: the styles drawn, in a fixed order.
  std::vector<std::string> keys;
  const std::vector<std::string> key_order{"ProfilerStep#N",
                                           "user annotation (record_function)",
                                           "op (cpu_op)",
                                           "runtime / driver call",
                                           "kernel",
                                           "memcpy",
                                           "memset",
                                           "GPU annotation (span of its GPU work)",
                                           "sync (waiting for the GPU)",
                                           "other"};
  std::map<std::string, const char*> fill_of_key;
  for (size_t i = 0; i < n; ++i)
    if (keep[i]) fill_of_key[style_of(s[i]).key] = style_of(s[i]).fill;

  // Flows whose two ends are drawn: the launch call and the GPU work sharing the flow's id.
  struct Arrow {
    int64_t id;
    double x1, y1, x2, y2;
  };
  std::vector<Arrow> arrows;
  {
    // (pid, tid, correlation) -> the drawn slices. A flow's id is its correlation, plus k * 2^32 for
    // the k-th piece of GPU work of one launch (a graph launch's kernels); its "f" end is at the start
    // of the piece it points to.
    std::map<std::tuple<std::string, std::string, int64_t>, std::vector<size_t>> by_correlation;
    for (size_t i = 0; i < n; ++i)
      if (keep[i] && s[i].correlation >= 0) by_correlation[std::make_tuple(s[i].pid, s[i].tid, s[i].correlation)].push_back(i);
    for (const ts::trace::Flow& f : trace.flows) {
      const int64_t correlation = f.id & 0xffffffffLL;
      const auto from = by_correlation.find({f.from_pid, f.from_tid, correlation});
      const auto to = by_correlation.find({f.to_pid, f.to_tid, correlation});
      if (from == by_correlation.end() || to == by_correlation.end()) continue;
      if (f.from_ns < view_from || f.from_ns > view_to || f.to_ns < view_from || f.to_ns > view_to) continue;
      const auto piece = std::find_if(to->second.begin(), to->second.end(), [&](size_t i) { return s[i].start_ns == f.to_ns; });
      const size_t target = piece != to->second.end() ? *piece : to->second.front();
      arrows.push_back({f.id, x_of(f.from_ns), box_top(from->second.front()) + kBox, x_of(f.to_ns), box_top(target)});
    }
  }

  const double legend_top = lanes_bottom + 18;
  size_t legend_items = 0;
  for (const std::string& k : key_order) legend_items += fill_of_key.contains(k);
  legend_items += arrows.empty() ? 0 : 1;
  const double height = legend_top + 18.0 * static_cast<double>((legend_items + 2) / 3) + 10;

  // ---- output ----
  std::string out;
  const auto emit = [&](const std::string& text) { out += text; };
  emit("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  emit(fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                   "font-family=\"{2}\" font-size=\"{3}\">\n",
                   num(kWidth), num(height), kFont, kFontSize));
  emit("<defs><marker id=\"arrow\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" markerWidth=\"6\" markerHeight=\"6\" "
       "orient=\"auto\"><path d=\"M0,0 L6,3 L0,6 z\" fill=\"#333333\"/></marker></defs>\n");
  emit(fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", num(kWidth), num(height)));
  emit(fmt::format("<text x=\"10\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{}</text>\n",
                   escape(short_path(opt.path))));
  emit(fmt::format("<text x=\"10\" y=\"34\" font-size=\"11\">{}: {} events, {} µs to {} µs from {}</text>\n",
                   escape(scope), drawn_count, us(view_from - origin), us(view_to - origin),
                   opt.step ? "the step's start" : "the first event"));

  // Time axis: labels above a line, light grid lines down through the lanes.
  const double step_us = tick_step(span / 1000.0);
  const double first_tick = std::ceil(static_cast<double>(view_from - origin) / 1000.0 / step_us - 1e-9) * step_us;
  emit("<g class=\"axis\" font-size=\"10\" fill=\"#444444\">\n");
  emit(fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">µs</text>\n", num(kPlotLeft - 6), num(kAxisTop + 8)));
  for (int k = 0;; ++k) {
    const double t_us = first_tick + k * step_us;
    const auto t_ns = origin + static_cast<int64_t>(std::llround(t_us * 1000.0));
    if (t_ns > view_to) break;
    const double x = x_of(t_ns);
    emit(fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e6e6e6\"/>", num(x), num(kAxisTop + 14),
                     num(lanes_bottom)));
    emit(fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#444444\"/>", num(x), num(kAxisTop + 10),
                     num(kAxisTop + 16)));
    emit(fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(x), num(kAxisTop + 6),
                     tick_label(t_us, step_us)));
  }
  emit(fmt::format("<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"#444444\"/>\n", num(kPlotLeft),
                   num(kPlotRight), num(kAxisTop + 16)));
  emit("</g>\n");

  // Lanes: a band, the names on the left, then the boxes in (start, -end) order.
  for (const Lane& lane : lanes) {
    const std::string label = lane.info.process_label.empty() ? "pid " + lane.key.first : lane.info.process_label;
    const std::string thread = lane.info.thread_name.empty() ? "tid " + lane.key.second : lane.info.thread_name;
    emit(fmt::format("<g class=\"lane\" data-pid=\"{}\" data-tid=\"{}\">\n", escape(lane.key.first),
                     escape(lane.key.second)));
    emit(fmt::format("<rect x=\"4\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f6f6f6\"/>\n", num(lane.top),
                     num(kWidth - 8), num(lane.height)));
    emit(fmt::format("<text x=\"10\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\">{}</text>\n", num(lane.top + 14),
                     kLabelFontSize, escape(fit(label, kLabelWidth - 10, kLabelCharWidth))));
    emit(fmt::format("<text x=\"10\" y=\"{}\" font-size=\"{}\">{}</text>\n", num(lane.top + 14 + kRow),
                     kLabelFontSize, escape(fit(thread, kLabelWidth - 10, kLabelCharWidth))));
    emit("</g>\n");
  }
  for (const Lane& lane : lanes) {
    for (size_t i = 0; i < n; ++i) {
      const Slice& e = s[i];
      if (!keep[i] || e.pid != lane.key.first || e.tid != lane.key.second) continue;
      const double x1 = x_of(std::max(e.start_ns, view_from)), x2 = x_of(std::min(e.end_ns, view_to));
      const double w = std::max(x2 - x1, 1.0);
      const double top = box_top(i);
      const Style st = style_of(e);
      emit(fmt::format("<g class=\"ev\" data-name=\"{}\" data-cat=\"{}\" data-ts=\"{}\" data-dur=\"{}\">"
                       "<title>{} ({}): {} µs at {} µs</title>",
                       escape(e.name), escape(e.cat), us(e.start_ns - origin), us(e.duration_ns()), escape(e.name),
                       escape(e.cat), us(e.duration_ns()), us(e.start_ns - origin)));
      emit(fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#555555\" "
                       "stroke-width=\"0.5\"/>",
                       num(x1), num(top), num(w), num(kBox), st.fill));
      const std::string text = fit(label_of(e), w - 4, kCharWidth);
      if (!text.empty())
        emit(fmt::format("<text x=\"{}\" y=\"{}\">{}</text>", num(x1 + 2), num(top + kBox - 4), escape(text)));
      emit("</g>\n");
    }
  }
  for (const Arrow& a : arrows) {
    const double bend = std::max(12.0, (a.y2 - a.y1) / 2);
    emit(fmt::format("<path class=\"flow\" data-id=\"{}\" d=\"M{},{} C{},{} {},{} {},{}\" fill=\"none\" "
                     "stroke=\"#333333\" stroke-width=\"0.8\" stroke-opacity=\"0.7\" marker-end=\"url(#arrow)\"/>\n",
                     a.id, num(a.x1), num(a.y1), num(a.x1), num(a.y1 + bend), num(a.x2), num(a.y2 - bend), num(a.x2),
                     num(a.y2)));
  }

  // Colour key, three to a line.
  emit("<g class=\"legend\" font-size=\"11\">\n");
  size_t item = 0;
  const auto place = [&](double* x, double* yy) {
    *x = 10 + static_cast<double>(item % 3) * 390;
    *yy = legend_top + static_cast<double>(item / 3) * 18;
    ++item;
  };
  for (const std::string& k : key_order) {
    if (!fill_of_key.contains(k)) continue;
    double x = 0, yy = 0;
    place(&x, &yy);
    emit(fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"11\" fill=\"{}\" stroke=\"#555555\" "
                     "stroke-width=\"0.5\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                     num(x), num(yy - 9), fill_of_key[k], num(x + 20), num(yy), escape(k)));
  }
  if (!arrows.empty()) {
    double x = 0, yy = 0;
    place(&x, &yy);
    emit(fmt::format("<path d=\"M{},{} L{},{}\" stroke=\"#333333\" stroke-width=\"0.8\" marker-end=\"url(#arrow)\"/>"
                     "<text x=\"{}\" y=\"{}\">flow: launch call to its GPU work (ac2g)</text>\n",
                     num(x), num(yy - 4), num(x + 14), num(yy - 4), num(x + 20), num(yy)));
  }
  emit("</g>\n</svg>\n");

  return write_output(opt, out,
                      fmt::format("timeline, {}, {} us to {} us: {} event{} on {} lane{}, {} flow arrow{}", scope,
                                  us(view_from - origin), us(view_to - origin), drawn_count, drawn_count == 1 ? "" : "s",
                                  lanes.size(), lanes.size() == 1 ? "" : "s", arrows.size(),
                                  arrows.size() == 1 ? "" : "s"));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ts::trace::Error& e) {  // a trace it cannot read: one line
    return fail(e.what());
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
