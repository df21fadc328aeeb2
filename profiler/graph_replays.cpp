// profiler/graph_replays.cpp: captures written down, replays expanded (see the header).
#include "profiler/graph_replays.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "profiler/collector.h"
#include "profiler/op_args.h"
#include "tensor/cuda_graph.h"

namespace ts::profiler {

namespace {

using cuda::detail::GraphNodeKind;

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

// Nodes [0, chain.size()) in capture order; each belongs to the innermost op open when it was captured:
// ops come parent first, so an op's children overwrite its claim on their nodes.
void assign_nodes(CapturedGraph& g, std::span<const GraphNodeKind> chain) {
  std::vector<int32_t> owner(chain.size(), -1);
  for (int32_t i = 0; const CapturedOp& op : g.ops) {
    const auto end = std::min(op.nodes_end, static_cast<int64_t>(chain.size()));
    for (int64_t k = std::max<int64_t>(op.nodes_begin, 0); k < end; ++k) owner[static_cast<size_t>(k)] = i;
    ++i;
  }
  for (size_t k = 0; k < chain.size(); ++k) {
    if (chain[k] == GraphNodeKind::other) continue;
    g.nodes.push_back(chain[k] == GraphNodeKind::kernel   ? NodeKind::kernel
                      : chain[k] == GraphNodeKind::memcpy ? NodeKind::memcpy
                                                          : NodeKind::memset);
    g.node_op.push_back(owner[k]);
  }
}

void on_capture_begin(uint64_t graph) {
  tl_capture = {.graph = graph, .log = std::make_shared<CapturedGraph>(), .open = {}};
  detail::capture_started();
}

void on_capture_end(uint64_t graph, std::span<const GraphNodeKind> chain, bool is_chain) {
  if (tl_capture.graph == graph && tl_capture.log != nullptr) {
    CapturedGraph& g = *tl_capture.log;
    g.chain = is_chain;
    if (is_chain) assign_nodes(g, chain);
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

bool same_kind(NodeKind node, EventKind event) {
  return (node == NodeKind::kernel && event == EventKind::kernel) ||
         (node == NodeKind::memcpy && event == EventKind::memcpy) ||
         (node == NodeKind::memset && event == EventKind::memset);
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
  bool matches = g.chain && work.size() == g.nodes.size();
  for (size_t n = 0; matches && n < work.size(); ++n)
    matches = same_kind(g.nodes[n], rec.events[static_cast<size_t>(work[n])].kind);
  if (!matches) {
    ++rec.device_activity.graph_replays_unmatched;
    return;
  }
  for (size_t n = 0; n < work.size(); ++n)
    if (const int32_t op = g.node_op[n]; op >= 0)
      rec.events[static_cast<size_t>(work[n])].id = rec.events[static_cast<size_t>(first + op)].id;
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
