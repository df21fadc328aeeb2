// profiler/graph_replays.cpp: captures written down, replays expanded (see the header).
#include "profiler/graph_replays.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "profiler/collector.h"
#include "profiler/op_args.h"
#include "tensor/cuda_graph.h"

namespace ts::profiler {

namespace {

using cuda::detail::GraphNodeKind;
using cuda::detail::GraphNodes;

// The graph this thread is capturing, while it does.
struct Capture {
  uint64_t graph = 0;
  std::shared_ptr<CapturedGraph> log;
  std::vector<int32_t> open;  // indices of the ops still open, innermost last
};
thread_local Capture tl_capture;
thread_local detail::ScopeToken tl_replay;  // the replay this thread is launching (replays do not nest)

std::mutex g_graphs_mutex;
std::unordered_map<uint64_t, std::shared_ptr<const CapturedGraph>> g_graphs;  // captured graphs still alive

// Each node belongs to the innermost op open when it was captured: ops come parent first, so an op's
// children overwrite its claim on their nodes.
void assign_nodes(CapturedGraph& g, const GraphNodes& nodes) {
  const auto n = static_cast<int64_t>(nodes.kinds.size());
  g.node_op.assign(nodes.kinds.size(), -1);
  for (int32_t i = 0; const CapturedOp& op : g.ops) {
    for (int64_t k = std::max<int64_t>(op.nodes_begin, 0); k < std::min(op.nodes_end, n); ++k)
      g.node_op[static_cast<size_t>(k)] = i;
    ++i;
  }
  for (const GraphNodeKind kind : nodes.kinds)
    g.nodes.push_back(kind == GraphNodeKind::kernel   ? NodeKind::kernel
                      : kind == GraphNodeKind::memcpy ? NodeKind::memcpy
                      : kind == GraphNodeKind::memset ? NodeKind::memset
                                                      : NodeKind::other);
  g.after = nodes.after;
  g.known = true;
}

void on_capture_begin(uint64_t graph) {
  tl_capture = {.graph = graph, .log = std::make_shared<CapturedGraph>(), .open = {}};
  detail::capture_started();
}

void on_capture_end(uint64_t graph, const GraphNodes& nodes) {
  if (tl_capture.graph == graph && tl_capture.log != nullptr) {
    CapturedGraph& g = *tl_capture.log;
    if (nodes.known) assign_nodes(g, nodes);
    std::lock_guard lock(g_graphs_mutex);
    g_graphs[graph] = std::move(tl_capture.log);
  }
  tl_capture = {};
  detail::capture_stopped();
}

void on_capture_abort(uint64_t graph) {
  if (tl_capture.graph == graph) tl_capture = {};
  detail::capture_stopped();
}

void on_replay_begin(uint64_t graph) {
  tl_replay = {};
  if (detail::session_active()) tl_replay = detail::replay_begin(detail::captured_graph(graph));
}

void on_replay_end(uint64_t) { detail::replay_end(std::exchange(tl_replay, {})); }

void on_destroyed(uint64_t graph) {
  std::lock_guard lock(g_graphs_mutex);
  g_graphs.erase(graph);
}

constexpr cuda::detail::GraphObserver kObserver{.capture_begin = on_capture_begin,
                                                .capture_end = on_capture_end,
                                                .capture_abort = on_capture_abort,
                                                .replay_begin = on_replay_begin,
                                                .replay_end = on_replay_end,
                                                .destroyed = on_destroyed};
// Installed before main: a graph captured before any profiler starts is written down too.
[[maybe_unused]] const bool g_installed = [] {
  cuda::detail::set_graph_observer(&kObserver);
  return true;
}();

const char* kind_name(NodeKind node) {
  switch (node) {
    case NodeKind::kernel: return "kernel";
    case NodeKind::memcpy: return "memcpy";
    case NodeKind::memset: return "memset";
    case NodeKind::other: break;
  }
  return "other";
}

const char* kind_name(EventKind event) {
  return event == EventKind::kernel ? "kernel" : event == EventKind::memcpy ? "memcpy" : "memset";
}

// A record of its own kind; failing that, a copy or set node that ran as a kernel (CUPTI then reports
// a kernel, "memcpy128", "memset32", where the eager op's call gave a Memcpy or Memset record).
bool same_kind(NodeKind node, EventKind event) {
  return (node == NodeKind::kernel && event == EventKind::kernel) ||
         (node == NodeKind::memcpy && event == EventKind::memcpy) ||
         (node == NodeKind::memset && event == EventKind::memset);
}
bool ran_as_kernel(NodeKind node, EventKind event) {
  return (node == NodeKind::memcpy || node == NodeKind::memset) && event == EventKind::kernel;
}

// The op each of a replay's GPU records (`work`, in start order) belongs to, found by replaying the
// graph's dependencies (graph_replays.h); "" and `op_of` filled, or why not.
std::string match(const Recording& rec, const CapturedGraph& g, const std::vector<int32_t>& work,
                  std::vector<int32_t>& op_of) {
  const size_t n = g.nodes.size();
  size_t gpu_nodes = 0;
  for (const NodeKind kind : g.nodes) gpu_nodes += kind != NodeKind::other;
  const auto listed = [](size_t count, auto&& name_of) {
    std::string s;
    for (size_t k = 0; k < count && k < 12; ++k) s += fmt::format("{}{}", k == 0 ? "" : " ", name_of(k));
    return count > 12 ? s + " ..." : s;
  };
  const auto kind_of = [&](size_t k) { return rec.events[static_cast<size_t>(work[k])].kind; };
  const std::string shapes =
      fmt::format("{} nodes ({}), {} GPU records ({})", gpu_nodes,
                  listed(n, [&](size_t k) { return kind_name(g.nodes[k]); }), work.size(),
                  listed(work.size(), [&](size_t k) { return kind_name(kind_of(k)); }));
  if (!g.known) return "the graph's nodes could not be read";
  std::vector<uint32_t> waits(n, 0);
  for (const std::vector<uint32_t>& next : g.after)
    for (const uint32_t j : next) ++waits[j];
  std::vector<uint32_t> ready;
  const auto finish = [&](uint32_t i) {
    for (const uint32_t j : g.after[i])
      if (--waits[j] == 0) ready.push_back(j);
  };
  const auto drain_others = [&] {  // nodes that run no GPU work are done as soon as they are ready
    for (bool found = true; found;) {
      found = false;
      for (size_t r = 0; r < ready.size() && !found; ++r)
        if (g.nodes[ready[r]] == NodeKind::other) {
          const uint32_t i = ready[r];
          ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(r));
          finish(i);
          found = true;
        }
    }
  };
  for (uint32_t i = 0; i < n; ++i)
    if (waits[i] == 0) ready.push_back(i);
  op_of.assign(work.size(), -1);
  for (size_t k = 0; k < work.size(); ++k) {
    drain_others();
    std::vector<size_t> candidates;  // indices into `ready`
    for (const auto fits : {same_kind, ran_as_kernel}) {
      for (size_t r = 0; r < ready.size(); ++r)
        if (fits(g.nodes[ready[r]], kind_of(k))) candidates.push_back(r);
      if (!candidates.empty()) break;
    }
    if (candidates.empty())
      return fmt::format("{}: record {} ({}) is the work of no node ready then", shapes, k + 1, kind_name(kind_of(k)));
    const int32_t op = g.node_op[ready[candidates[0]]];
    for (const size_t r : candidates)
      if (g.node_op[ready[r]] != op)
        return fmt::format("{}: record {} ({}) could be the work of nodes of two ops", shapes, k + 1,
                           kind_name(kind_of(k)));
    // Nodes of one op and kind: which of them ran does not change whose work it is.
    const uint32_t i = ready[candidates[0]];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(candidates[0]));
    finish(i);
    op_of[k] = op;
  }
  drain_others();
  if (!ready.empty() || work.size() != gpu_nodes) return shapes;
  return "";
}

// One replay: its captured ops as children of events[replay] (no CPU time: they start and end where
// the replay starts), then its GPU work `work` charged to them node by node when it matches the graph.
void expand(Recording& rec, int32_t replay, const CapturedGraph& g, std::vector<int32_t>& work) {
  const int64_t at = rec.events[static_cast<size_t>(replay)].start_ns;
  const int64_t tid = rec.events[static_cast<size_t>(replay)].tid;
  const auto first = static_cast<int32_t>(rec.events.size());
  for (const CapturedOp& op : g.ops) {
    Event& e = rec.events.emplace_back();
    e.kind = EventKind::cpu_op;
    e.name = op.name;
    e.start_ns = e.end_ns = at;
    e.id = detail::new_external_id();
    e.tid = tid;
    e.parent = op.parent >= 0 ? first + op.parent : replay;
    e.variant = op.variant;
    if (rec.record_shapes) e.inputs = op.inputs;
    if (rec.with_flops) e.flops = op.flops;
    if (rec.with_stack) e.call_site = op.call_site;
  }
  if (!rec.use_cuda) return;
  std::stable_sort(work.begin(), work.end(), [&rec](int32_t a, int32_t b) {
    return rec.events[static_cast<size_t>(a)].start_ns < rec.events[static_cast<size_t>(b)].start_ns;
  });
  std::vector<int32_t> op_of;
  if (std::string why = match(rec, g, work, op_of); !why.empty()) {
    if (rec.device_activity.graph_replays_unmatched++ == 0) rec.device_activity.first_unmatched_replay = std::move(why);
    return;
  }
  for (size_t k = 0; k < work.size(); ++k)
    if (op_of[k] >= 0) rec.events[static_cast<size_t>(work[k])].id = rec.events[static_cast<size_t>(first + op_of[k])].id;
}

}  // namespace

namespace detail {

int32_t captured_op_begin(const RecordedOp& op) {
  Capture& c = tl_capture;
  if (c.log == nullptr) return -1;
  std::vector<CapturedOp>& ops = c.log->ops;
  const auto index = static_cast<int32_t>(ops.size());
  CapturedOp& o = ops.emplace_back();
  o.name = op.name();
  record_inputs(op, o.inputs);
  o.parent = c.open.empty() ? -1 : c.open.back();
  // An op called by another op (matmul -> mm) shows the user's line, as in a profiled eager run.
  o.call_site = o.parent >= 0 ? ops[static_cast<size_t>(o.parent)].call_site : CallSite::from(op.call_site());
  o.nodes_begin = o.nodes_end = cuda::detail::captured_node_count();
  c.open.push_back(index);
  return index;
}

void captured_op_end(const RecordedOp& op, int32_t index) {
  Capture& c = tl_capture;
  if (c.log == nullptr || static_cast<size_t>(index) >= c.log->ops.size()) return;  // the capture ended first
  CapturedOp& o = c.log->ops[static_cast<size_t>(index)];
  o.nodes_end = std::max(cuda::detail::captured_node_count(), o.nodes_begin);
  if ((o.variant = op.variant_name()) != nullptr) o.flops = op.flops();
  if (const auto it = std::find(c.open.begin(), c.open.end(), index); it != c.open.end()) c.open.erase(it, c.open.end());
}

std::shared_ptr<const CapturedGraph> captured_graph(uint64_t graph_id) {
  std::lock_guard lock(g_graphs_mutex);
  const auto it = g_graphs.find(graph_id);
  return it != g_graphs.end() ? it->second : nullptr;
}

}  // namespace detail

void expand_graph_replays(Recording& rec) {
  if (rec.graph_replays.empty()) return;
  struct Found {
    int32_t event = -1;
    std::vector<int32_t> work;
  };
  std::unordered_map<uint64_t, Found> found;
  for (const GraphReplay& r : rec.graph_replays)
    if (r.graph != nullptr) found.emplace(r.id, Found{});
  for (int32_t i = 0; const Event& e : rec.events) {
    const auto it = e.id != 0 ? found.find(e.id) : found.end();
    if (it != found.end()) {
      if (e.kind == EventKind::cpu_op) it->second.event = i;
      if (e.kind == EventKind::kernel || e.kind == EventKind::memcpy || e.kind == EventKind::memset)
        it->second.work.push_back(i);
    }
    ++i;
  }
  for (const GraphReplay& r : rec.graph_replays) {
    const auto it = r.graph != nullptr ? found.find(r.id) : found.end();
    if (it != found.end() && it->second.event >= 0) expand(rec, it->second.event, *r.graph, it->second.work);
  }
  rec.graph_replays.clear();
  detail::sort_events(rec.events);
}

}  // namespace ts::profiler
