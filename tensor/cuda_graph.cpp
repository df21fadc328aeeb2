// tensor/cuda_graph.cpp: ts::cuda::Graph (see the header) on CUDA's stream capture.
//
// CUDA cannot capture the legacy default stream that ops launch on, so a capture gives this thread
// a stream of its own (non-blocking: eager work elsewhere does not join the capture), switches
// current_stream() to it (tensor/cuda_check.h) and opens the graph's pool in the caching
// allocator. The capture runs in CUDA's global mode, as PyTorch's does: a call that would break it
// fails at once; the allocator makes its segments with the checks relaxed.
#include "tensor/cuda_graph.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <exception>
#include <unordered_map>
#include <vector>

#include "tensor/cuda_allocator.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_device.h"
#include "tensor/error.h"

namespace ts::cuda {

namespace {

std::atomic<const detail::GraphObserver*> g_observer{nullptr};
std::atomic<uint64_t> g_next_graph_id{1};

// Calls the observer's Hook with `args` when an observer is installed.
template <auto Hook, typename... Args>
void notify(Args&&... args) {
  if (const detail::GraphObserver* observer = g_observer.load(std::memory_order_acquire))
    if (observer->*Hook != nullptr) (observer->*Hook)(std::forward<Args>(args)...);
}

detail::GraphNodeKind node_kind(cudaGraphNodeType type) {
  switch (type) {
    case cudaGraphNodeTypeKernel: return detail::GraphNodeKind::kernel;
    case cudaGraphNodeTypeMemcpy: return detail::GraphNodeKind::memcpy;
    case cudaGraphNodeTypeMemset: return detail::GraphNodeKind::memset;
    default: return detail::GraphNodeKind::other;
  }
}

// The nodes that wait on `node` (`out` null: only how many). CUDA 13 also gives each edge's data, and
// refuses to leave it out (cudaErrorLossyQuery) where an edge has some: a library's kernel launched
// to start before the one it waits on ends (programmatic dependent launch, as cuBLASLt's split-K
// kernels are) makes such an edge. Either kind of edge orders the two nodes' starts.
cudaError_t dependents(cudaGraphNode_t node, cudaGraphNode_t* out, size_t* count) {
#if CUDART_VERSION >= 13000
  if (out == nullptr) return cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, count);
  std::vector<cudaGraphEdgeData> edges(*count);
  return cudaGraphNodeGetDependentNodes(node, out, edges.data(), count);
#else
  return cudaGraphNodeGetDependentNodes(node, out, count);
#endif
}

// The graph's nodes in the order cudaGraphGetNodes lists them, the order the capture added them, with
// each node's dependents. `known` false when a query fails (the profiler then charges the replays to
// the replay, and says so); nothing here throws.
detail::GraphNodes read_nodes(cudaGraph_t graph, size_t count) {
  detail::GraphNodes g;
  std::vector<cudaGraphNode_t> all(count);
  size_t n = count;
  if (count > 0 && (cudaGraphGetNodes(graph, all.data(), &n) != cudaSuccess || n != count)) {
    (void)cudaGetLastError();
    return {};
  }
  std::unordered_map<cudaGraphNode_t, uint32_t> index;
  for (uint32_t i = 0; i < n; ++i) index.emplace(all[i], i);
  g.kinds.resize(n);
  g.after.resize(n);
  std::vector<cudaGraphNode_t> next;
  for (size_t i = 0; i < n; ++i) {
    cudaGraphNodeType type{};
    size_t m = 0;
    bool ok = cudaGraphNodeGetType(all[i], &type) == cudaSuccess && dependents(all[i], nullptr, &m) == cudaSuccess;
    next.resize(m);
    ok = ok && (m == 0 || dependents(all[i], next.data(), &m) == cudaSuccess);
    for (size_t k = 0; ok && k < m; ++k) {
      const auto it = index.find(next[k]);
      ok = it != index.end();
      if (ok) g.after[i].push_back(it->second);
    }
    if (!ok) {
      (void)cudaGetLastError();
      return {};
    }
    g.kinds[i] = node_kind(type);
  }
  g.known = true;
  return g;
}

}  // namespace

void detail::set_graph_observer(const GraphObserver* observer) { g_observer.store(observer); }

int64_t detail::captured_node_count() {
  if (!capturing()) return -1;
  cudaStreamCaptureStatus status{};
  cudaGraph_t graph = nullptr;
#if CUDART_VERSION >= 13000
  const cudaError_t err = cudaStreamGetCaptureInfo(current_stream(), &status, nullptr, &graph);
#else
  const cudaError_t err = cudaStreamGetCaptureInfo_v2(current_stream(), &status, nullptr, &graph, nullptr, nullptr);
#endif
  size_t nodes = 0;
  if (err != cudaSuccess || status != cudaStreamCaptureStatusActive || graph == nullptr ||
      cudaGraphGetNodes(graph, nullptr, &nodes) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(nodes);
}

struct Graph::State {
  int device = 0;
  cudaStream_t stream = nullptr;  // the capture's stream; also names the graph's pool
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  int64_t nodes = 0;
  bool capturing = false;
};

// Safe on a partly made state.
void Graph::release() noexcept {
  State& s = *state_;
  if (s.exec != nullptr) {
    (void)cudaGraphExecDestroy(s.exec);
    notify<&detail::GraphObserver::destroyed>(id_);
  }
  if (s.graph != nullptr) (void)cudaGraphDestroy(s.graph);
  if (s.stream != nullptr) {
    end_graph_pool(s.device, s.stream);
    (void)cudaStreamDestroy(s.stream);
  }
  (void)cudaGetLastError();
  s = {};
}

Graph::Graph() : state_(std::make_unique<State>()), id_(g_next_graph_id.fetch_add(1)) {}

Graph::~Graph() {
  capture_abort();
  release();
}

void Graph::capture_begin() {
  State& s = *state_;
  TS_CHECK(!s.capturing && s.exec == nullptr,
           "Graph::capture_begin: this graph {}; a graph is captured once: make another ts::cuda::Graph",
           s.capturing ? "is being captured already" : "holds a capture already");
  TS_CHECK(!capturing(), "Graph::capture_begin: this thread is capturing another graph already; end that capture "
                         "first (graphs do not nest)");
  int device = 0;
  if (is_available()) TS_CUDA_CHECK(cudaGetDevice(&device));
  check_device_available(Device{DeviceType::cuda, device}, "Graph::capture_begin");
  s.device = device;
  TS_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  begin_graph_pool(device, s.stream);
  if (const cudaError_t err = cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeGlobal); err != cudaSuccess) {
    release();
    detail::cuda_fail(err, "cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal)", __FILE__, __LINE__);
  }
  s.capturing = true;
  detail::capture_stream = s.stream;
  notify<&detail::GraphObserver::capture_begin>(id_);
}

void Graph::capture_end() {
  State& s = *state_;
  TS_CHECK(s.capturing, "Graph::capture_end: this graph is not being captured (capture_begin first)");
  TS_CHECK(current_stream() == s.stream, "Graph::capture_end: called on another thread than capture_begin's; a "
                                         "capture begins and ends on one thread");
  detail::capture_stream = nullptr;
  s.capturing = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(s.stream, &graph);
  if (err != cudaSuccess) {
    notify<&detail::GraphObserver::capture_abort>(id_);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    release();
    fail("Graph::capture_end: CUDA could not capture the region: {} ({}): a call in it cannot be recorded into a "
         "graph (a CUDA call of code outside tensorscope's ops, or one on another thread)",
         cudaGetErrorString(err), cudaGetErrorName(err));
  }
  s.graph = graph;
  size_t nodes = 0;
  if (const cudaError_t e = cudaGraphGetNodes(graph, nullptr, &nodes); e != cudaSuccess) {
    notify<&detail::GraphObserver::capture_abort>(id_);
    release();
    detail::cuda_fail(e, "cudaGraphGetNodes(graph, nullptr, &nodes)", __FILE__, __LINE__);
  }
  s.nodes = static_cast<int64_t>(nodes);
  if (const cudaError_t e = cudaGraphInstantiate(&s.exec, graph, 0); e != cudaSuccess) {
    s.exec = nullptr;
    notify<&detail::GraphObserver::capture_abort>(id_);
    release();
    detail::cuda_fail(e, "cudaGraphInstantiate(&exec, graph, 0)", __FILE__, __LINE__);
  }
  notify<&detail::GraphObserver::capture_end>(id_, read_nodes(graph, nodes));
}

void Graph::capture_abort() {
  State& s = *state_;
  if (!s.capturing) return;
  if (current_stream() == s.stream) detail::capture_stream = nullptr;
  s.capturing = false;
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(s.stream, &graph);  // an invalidated capture still ends here
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  notify<&detail::GraphObserver::capture_abort>(id_);
  release();
}

void Graph::replay() {
  const State& s = *state_;
  TS_CHECK(s.exec != nullptr, "Graph::replay: {}", s.capturing ? "the capture is still under way (capture_end first)"
                                                               : "nothing captured (capture_begin, then capture_end)");
  check_not_capturing("Graph::replay", "graphs do not nest");
  set_device(s.device);
  notify<&detail::GraphObserver::replay_begin>(id_);
  const cudaError_t err = cudaGraphLaunch(s.exec, current_stream());
  notify<&detail::GraphObserver::replay_end>(id_);
  if (err != cudaSuccess) detail::cuda_fail(err, "cudaGraphLaunch(exec, stream)", __FILE__, __LINE__);
  if (launch_blocking()) TS_CUDA_CHECK(cudaStreamSynchronize(current_stream()));  // a fault names the replay
}

bool is_capturing() { return capturing(); }

bool Graph::captured() const { return state_->exec != nullptr; }
int64_t Graph::node_count() const { return state_->nodes; }

GraphCapture::GraphCapture(Graph& graph) : graph_(graph), exceptions_(std::uncaught_exceptions()) {
  graph.capture_begin();
}

GraphCapture::~GraphCapture() noexcept(false) {
  if (std::uncaught_exceptions() > exceptions_) {
    graph_.capture_abort();  // the scope is left by an exception: keep nothing, throw nothing more
    return;
  }
  graph_.capture_end();
}

}  // namespace ts::cuda
