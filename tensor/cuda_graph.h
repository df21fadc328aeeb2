// tensor/cuda_graph.h: capture the GPU work of a region once, then replay it as one launch.
//
//   ts::cuda::Graph graph;
//   Tensor y = step(x);                      // once eagerly first: first-use costs (cuBLAS's handle,
//                                            // module loading) stay out of the capture
//   {
//     ts::cuda::GraphCapture capture(graph); // this thread's ops are recorded, not run
//     y = step(x);                           // y comes from the graph's own memory
//   }                                        // the capture ends and is instantiated
//   ts::copy_(x, next);                      // new values into the captured input...
//   graph.replay();                          // ...and y holds step(next)
//
// A capture holds every kernel and device-to-device copy the region's ops launch on this thread,
// with the addresses of their tensors. A replay runs them again on those addresses: inputs are read
// where they were at capture (copy new values into them), outputs written where they were. What
// cannot be recorded is refused with a ts::Error naming the call, and the capture is abandoned:
// reading a cuda tensor on the host (item(), to_vector(), printing, to(cpu)), a copy from or to the
// CPU, a synchronize. The region's tensors come from the graph's own pool of the caching allocator
// (tensor/cuda_allocator.h), so every replay uses the same memory and allocates nothing; it is
// given back when the graph is destroyed, except what tensors made in the capture still hold, which
// stays valid while they live. A build without the CUDA toolkit has this API, and refuses it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace ts::cuda {

class Graph {
 public:
  Graph();
  ~Graph();  // abandons a capture still under way; frees the graph and its pool
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // From capture_begin to capture_end, this thread's ops are recorded into the graph. A graph
  // is captured once; capture_begin refuses a second capture, and one while this thread already
  // captures another graph.
  void capture_begin();
  void capture_end();    // ts::Error when the region did something a graph cannot hold
  void capture_abort();  // ends a capture without keeping it (no-op when none is under way)

  // Runs the captured work on the stream ops launch on, in order with eager work before and after.
  void replay();

  bool captured() const;      // capture_end succeeded: replay() may be called
  int64_t node_count() const; // the graph's nodes: kernels, copies, sets
  uint64_t id() const { return id_; }  // unique in the process, never 0: how a profiler names it

 private:
  struct State;
  void release() noexcept;  // destroys what state_ holds and gives the pool back
  std::unique_ptr<State> state_;
  uint64_t id_;
};

// Whether this thread is capturing a graph now (its ops are recorded, not run).
bool is_capturing();

// A capture of one scope: begins in the constructor; ends (capture_end) in the destructor, which
// may therefore throw, or is abandoned when the scope is left by an exception.
class GraphCapture {
 public:
  explicit GraphCapture(Graph& graph);
  ~GraphCapture() noexcept(false);
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

 private:
  Graph& graph_;
  int exceptions_;  // std::uncaught_exceptions() when the scope began
};

namespace detail {

// What a profiler learns of graphs, so that it can charge a replay's GPU work to the ops that were
// captured (profiler/graph_replays.h); the runtime knows nothing of what it does with it. Every
// call comes on the thread named, and none may throw.
enum class GraphNodeKind : uint8_t { kernel, memcpy, memset, other };
// A captured graph's nodes, in the order the capture added them: each node's kind and the nodes that
// wait on it (indices into `kinds`). `known` false, the rest empty, when the runtime could not read them.
struct GraphNodes {
  bool known = false;
  std::vector<GraphNodeKind> kinds;
  std::vector<std::vector<uint32_t>> after;
};
struct GraphObserver {
  void (*capture_begin)(uint64_t graph);  // the capturing thread, once the capture is under way
  void (*capture_end)(uint64_t graph, const GraphNodes& nodes);  // instantiated (the capturing thread)
  void (*capture_abort)(uint64_t graph);  // the capture was abandoned (any thread)
  void (*replay_begin)(uint64_t graph);   // around the launch of one replay (the replaying thread)
  void (*replay_end)(uint64_t graph);
  void (*destroyed)(uint64_t graph);      // a captured graph is gone: its id is not used again
};
// Installs (or with nullptr removes) the one observer.
void set_graph_observer(const GraphObserver* observer);

// The nodes this thread's capture holds so far (each op's launches add some), or -1 when this
// thread captures nothing or the capture was invalidated.
int64_t captured_node_count();

}  // namespace detail

}  // namespace ts::cuda
