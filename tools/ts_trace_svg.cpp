// tools/ts_trace_svg.cpp: a Chrome trace drawn as a standalone SVG timeline, to read without a browser.
//
//   ts_trace_svg TRACE.json[.gz] [--step N] [--from-us A] [--to-us B] [-o OUT.svg]
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
// argument list. The same input gives the same bytes. Exits 1 with one line on stderr on a trace
// that cannot be read, a step it does not have, or an empty view.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

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
  std::string path, out;
  std::optional<int64_t> step;
  std::optional<double> from_us, to_us;
};

constexpr const char* kUsage = "ts_trace_svg TRACE.json[.gz] [--step N] [--from-us A] [--to-us B] [-o OUT.svg]";

int bad_usage(const std::string& message) {  // one line, exit 2
  fmt::print(stderr, "ts_trace_svg: {} (usage: {})\n", message, kUsage);
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

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    try {
      if (arg == "-h" || arg == "--help") {
        fmt::print("usage: {}\n", kUsage);
        return 0;
      }
      if (arg == "--step" && has_value) {
        size_t used = 0;
        const std::string v = argv[++i];
        opt.step = std::stoll(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
      } else if ((arg == "--from-us" || arg == "--to-us") && has_value) {
        size_t used = 0;
        const std::string v = argv[++i];
        const double value = std::stod(v, &used);
        if (used != v.size() || !std::isfinite(value)) throw std::invalid_argument(v);
        (arg == "--from-us" ? opt.from_us : opt.to_us) = value;
      } else if (arg == "-o" && has_value) {
        opt.out = argv[++i];
      } else if (arg.starts_with("-") || !opt.path.empty()) {
        return bad_usage(fmt::format("unexpected argument {}{}", arg, arg.starts_with("-") ? " (or no value after it)" : ""));
      } else {
        opt.path = arg;
      }
    } catch (const std::exception&) {
      return bad_usage(fmt::format("{} needs a number, got '{}'", arg, argv[i]));
    }
  }
  if (opt.path.empty()) return bad_usage("no trace given");

  Trace trace;
  std::string why;
  if (!ts::trace::load_trace(opt.path, &trace, &why)) return fail(why);
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
  for (const auto& [key, r] : rows) lanes.push_back({key, trace.lanes[key], r});
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
    std::map<std::tuple<std::string, std::string, int64_t>, size_t> by_correlation;  // (pid, tid, correlation)
    for (size_t i = 0; i < n; ++i)
      if (keep[i] && s[i].correlation >= 0) by_correlation.emplace(std::make_tuple(s[i].pid, s[i].tid, s[i].correlation), i);
    for (const ts::trace::Flow& f : trace.flows) {
      const auto from = by_correlation.find({f.from_pid, f.from_tid, f.id});
      const auto to = by_correlation.find({f.to_pid, f.to_tid, f.id});
      if (from == by_correlation.end() || to == by_correlation.end()) continue;
      if (f.from_ns < view_from || f.from_ns > view_to || f.to_ns < view_from || f.to_ns > view_to) continue;
      arrows.push_back({f.id, x_of(f.from_ns), box_top(from->second) + kBox, x_of(f.to_ns), box_top(to->second)});
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

  if (opt.out.empty()) {
    fmt::print("{}", out);
    return 0;
  }
  std::FILE* f = std::fopen(opt.out.c_str(), "wb");
  if (f == nullptr) return fail(fmt::format("cannot write {}", opt.out));
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  if (std::fclose(f) != 0 || !ok) return fail(fmt::format("cannot write {}", opt.out));
  return 0;
}
