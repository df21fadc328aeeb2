// profiler/graph_replays.h: the ops a CUDA graph holds, recorded when it is captured, and each
// replay of it the profiler sees, turned back into those ops' rows.
//
// A replay is one cudaGraphLaunch, and CUPTI stamps every kernel it runs with that call's
// correlation: left alone, the table would charge the whole graph to the launch, as PyTorch's
// does (its kernels under cudaGraphLaunch, no op above them). So while a thread captures a graph
// (tensor/cuda_graph.h), every op it runs is also written down here, profiler or not: its name,
// arguments, call site and parent, and the capture's node count when it began and when it ended.
// A replay runs the graph's nodes in an order its dependencies allow; a capture on one stream makes
// a chain (each node waits on the one before it), so the k-th kernel, copy or set of a replay is the
// k-th such node. In general each GPU record, in start order, is the work of a node that is ready
// (all it waits on done) and of its kind, and belongs to the innermost op that was open when that
// node was captured; when ready nodes of its kind belong to different ops, which one ran cannot be
// told, and the replay is not charged.
//
// While a profiler records, each replay is a cpu_op "ts::cuda::Graph::replay" around its launch.
// When the profiler stops, expand_graph_replays() gives each replay a subtree of the captured ops,
// each with no CPU time (none of it ran on the host) and the GPU work of its nodes, so that
// key_averages of a replayed step reads like the eager one, with a row for the replay and one for
// its cudaGraphLaunch. A replay whose GPU work does not match its graph's nodes (a kind or a count
// differs, or an ambiguity as above) keeps its work on the replay's row and is counted in
// DeviceActivityInfo::graph_replays_unmatched: never guessed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "profiler/event.h"
#include "profiler/recorded_op.h"

namespace ts::profiler {

// An op as its capture saw it.
struct CapturedOp {
  const char* name = nullptr;
  const char* variant = nullptr;  // the kernel variant it chose ("mm/cuda/cublas")
  std::vector<InputMeta> inputs{};  // its arguments, as record_shapes keeps them
  CallSite call_site{};           // the user's line (an op called by another op inherits it)
  int64_t flops = 0;
  int32_t parent = -1;            // index in CapturedGraph::ops of the enclosing op; -1: none
  int64_t nodes_begin = 0, nodes_end = 0;  // the capture's node count when it began and ended
};

// What a node runs: a GPU record for a kernel, copy or set (a copy or set may run as a kernel); none
// for the others (empty, event and child-graph nodes).
enum class NodeKind : uint8_t { kernel, memcpy, memset, other };

struct CapturedGraph {
  std::vector<CapturedOp> ops;      // in the order they began: a parent before its children
  bool known = false;               // the nodes below were read from the graph
  std::vector<NodeKind> nodes;      // every node, in the order the capture added them
  std::vector<std::vector<uint32_t>> after;  // per node, the nodes that wait on it
  std::vector<int32_t> node_op;     // per node: the innermost op open when it was captured (-1: none)
};

// Name of a replay's event.
inline constexpr const char* kGraphReplayName = "ts::cuda::Graph::replay";

namespace detail {

// The capture hooks of op_begin/op_end (collector.cpp): while this thread captures a graph, the op
// is written down in it; returns its index there, or -1 when the thread captures nothing.
int32_t captured_op_begin(const RecordedOp& op);
void captured_op_end(const RecordedOp& op, int32_t index);

// The graph a replay of `graph_id` runs (null when it was captured before the observer knew of it).
std::shared_ptr<const CapturedGraph> captured_graph(uint64_t graph_id);

}  // namespace detail

// Adds the captured ops of every replay in rec.graph_replays as children of its event and charges the
// replay's GPU work to them, node by node (see above); the events are then re-sorted. Run once, after
// the device source appended its events; empties rec.graph_replays.
void expand_graph_replays(Recording& rec);

}  // namespace ts::profiler
