// ops/attention/attention_cuda_flash_v3.cu: rung 3 of scaled_dot_product_attention on CUDA: flash
// attention on Hopper's own instructions (the FlashAttention-3 forward pass, sm_90a). The
// instructions are explained once, in ops/cuda_hopper.cuh.
//
// What changed from rung 2 (attention_cuda_flash_v2.cu, mma.sync), one technique at a time (each
// is a step of FlashV3Step, measured in ops/attention/README.md):
//   wgmma     both products on wgmma, a warpgroup (128 threads) at a time: S = Q K^T with Q and K
//             read by the tensor cores straight from shared memory (m64nBc k16: no ldmatrix, no
//             fragments), O += P V with P from registers (the softmax's output, rounded to 16 bits:
//             the S accumulator layout is the register A operand's) and V from shared memory.
//             The copies move to TMA: one thread of a producer warpgroup asks for whole Q, K, V
//             tiles, which land swizzled (the layout wgmma reads), zero-filled past S, L and D,
//             counted by mbarriers. Consumer warpgroups own 64 of the block's Br queries each;
//             setmaxnreg gives the producer's registers to them (24 each for the producer).
//   ring      K and V tiles of Bc keys come through a ring of stages (4 for D = 64, 2 above):
//             the producer runs that many tiles ahead of the consumers, who give each stage back
//             as soon as its product is done (K after S = Q K^T, V after P V).
//   overlap   within a warpgroup (FlashAttention-3's intra-warpgroup pipelining): issue S_j =
//             Q K_j^T and O += P_{j-1} V_{j-1} back to back, wait only for S_j, and run the
//             softmax of tile j while the tensor cores still multiply P_{j-1} V_{j-1}. O's
//             rescale waits for that product (at D = 256 it runs under S_{j+1} instead); P_j
//             waits in registers for the next iteration.
//   pingpong  between the consumer warpgroups: named barriers make them take turns at issuing
//             their products, so that one warpgroup's softmax (exp2 on the special function
//             units) runs under another's GEMMs and the tensor cores never wait for all of them
//             to finish a softmax at once.
// Every step runs on a persistent grid: one block per SM loops over (query block, batch * head)
//   items, the longest (causal) first, and the producer loads the next item's Q, K and V while
//   the consumers finish this one (Q is given back after its last product, through an mbarrier).
// The tensor maps of q, k and v go by value, as __grid_constant__ arguments (448 bytes with the
//   problem). Placed in device memory instead, they cost a fence and a read per map at the kernel's
//   start: 0.6 us of GPU time at tutorial 04's shape (ops/attention/README.md, "On the host").
// The block shape (launch_for): Br = 192 queries (three consumers) or 128 (two); Bc = 128 keys,
//   176 at D = 96 and 128 without the mask, 112 at D = 192, 80 at D = 256 (shared memory).
// The roles, in the order a reader meets them below:
//   V3Config       what a kernel instance fixes: head dim, panels, Br, Bc, stages, bytes
//   V3Shared       the block's shared memory: the Q tile, the K and V rings, their mbarriers
//   TileScheduler  which items a block does, and in which order
//   produce        the producer warpgroup's one thread: every TMA load of the block
//   TurnTaking     the ping-pong between consumers (named barriers)
//   OnlineSoftmax  the running max and sum of a thread's two rows, P in place of S
//   ConditionalSoftmax  the same with O rescaled only when the max has moved far (D = 256)
//   Consumer       a consumer warpgroup: the products, the masks, its main loop per item, and
//                  the epilogue (out = O / l)
// Unchanged from v2: the online softmax in exp2 with scale*log2(e) folded into one FFMA, the
//   running max/sum per row (a row is spread over the 4 threads of a quad: two shuffles), causal
//   tiles past the block's last query never loaded. New here: the key tiles are visited from the
//   last one down, so that only the first one or two of an item's iterations pay for masking
//   (the causal diagonal, the end of L); and at D = 256, O is rescaled only on the tiles where a
//   row's max passes the exponent's base by more than 8 in log2 units (FlashAttention-4's
//   conditional rescale, ConditionalSoftmax).
// Supports: bf16, f16 on a compute capability 9.0 GPU; head dims 64, 96, 128, 192, 256 (the
//   steps before pingpong: 64 and 128); any S, L, B, H; q, k, v with a unit last stride, other
//   strides multiples of 8 elements (TMA's 16 bytes) or 0 (a dim broadcast), data 16-byte aligned.
//   At D = 96, Q and K ride in two 64-column panels, the second half zero-filled by TMA (S = Q K^T
//   reads only the 96 real columns), and V in three 32-column panels with the 64-byte swizzle:
//   O += P V multiplies the 96 real columns (an MN-major operand comes in whole panels, so 128
//   with 64-column ones).
// Cost:  4*B*H*S*L*D FLOPs (causal about half); bytes: q and out once, K and V once per block of
//        Br queries, as v2: (2*S*D + 2*L*D*ceil(S/Br)) * B*H * sizeof(T).
// Try:   ./build/release/ts_bench --filter /flash_v3   (tests: ts_tests -tc='cuda: flash*')
#include <cuda.h>
#include <math_constants.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ops/attention/attention_flash_problem.h"
#include "ops/cuda_common.cuh"
#include "ops/cuda_hopper.cuh"

namespace ts {

namespace {

// ---- V3Config: what a kernel instance fixes ------------------------------------------------

// Registers per thread after setmaxnreg: the producer keeps 24, the consumers share the rest of
// the SM's 64K (a multiple of 8): 24 * 128 + 160 * 384 and 24 * 128 + 240 * 256 <= 65536.
[[maybe_unused]] constexpr uint32_t kProducerRegs = 24;
[[maybe_unused]] __host__ __device__ constexpr uint32_t consumer_regs(int consumers) {
  return consumers == 3 ? 160 : 240;
}
constexpr int kPanel = 64;  // columns per 128-byte swizzle row: a D = 128 tile of Q or K is two panels

// The steps as compile-time switches.
struct StepTraits {
  bool ring, overlap, pingpong;
};
__host__ __device__ constexpr StepTraits traits(FlashV3Step step) {
  return {step >= FlashV3Step::ring, step >= FlashV3Step::overlap, step >= FlashV3Step::pingpong};
}

// A block: consumer warpgroups of 64 queries each (one wgmma M) and K/V tiles of Bc keys (one
// m64nBc product per warpgroup for S). K/V stages: 4 at D = 64, 2 above (a third fits beside
// 128-key tiles at D = 128 and measured no faster on the H200: the products do not wait for the
// loads), from the ring step on; one before. Shared memory: Q [panels][Br][64], the K ring
// [stages][panels][Bc][64], the V ring [stages][V panels][Bc][64, or 32 at D = 96], the barriers,
// and 1 KiB to align the tiles to 1024 bytes (the 128-byte swizzle's period).
template <typename T, int D, FlashV3Step kStep, int kConsumersN, int kBcN>
struct V3Config {
  using Elem = T;
  static constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  static constexpr StepTraits kTraits = traits(kStep);
  static constexpr int kHeadDim = D;
  static constexpr int kPanels = (D + kPanel - 1) / kPanel;
  static constexpr int kDimsQK = kPanels * kPanel;  // columns of the Q and K tiles: D = 96 pads to 128
  // V's panels: one 128-byte swizzle row of 64 columns; at D = 96 one 64-byte row of 32, so that
  // P V's N is the 96 real columns (N counts whole panels of an MN-major operand).
  static constexpr int kSwizzleV = D == 96 ? 64 : 128;
  static constexpr int kPanelV = kSwizzleV / 2;
  static constexpr int kPanelsV = D / kPanelV;
  static constexpr int kDimsO = D;  // columns of the V tiles and of O
  static constexpr int kConsumers = kConsumersN;
  static constexpr int kThreads = 128 * (1 + kConsumersN);
  static constexpr int kBr = 64 * kConsumersN, kBc = kBcN;
  static constexpr int kStages = kTraits.ring ? (D == 64 ? 4 : 2) : 1;
  static constexpr int kScoreRegs = kBcN / 2;  // a thread's share of the warpgroup's 64 x Bc scores
  // The online softmax (Consumer::Softmax): O rescaled only when the running base moves at D = 256,
  // where O's rescale is 128 FMULs a tile per thread against 40 exponentials (ConditionalSoftmax);
  // on every tile below (OnlineSoftmax), which measured as fast or faster there
  // (ops/attention/README.md, "The conditional rescale at D = 256").
  static constexpr bool kConditionalRescale = D == 256;
  // Where O's rescale runs in the overlapped main loop: after P V's wait (before the next
  // iteration's products are issued), or, at D = 256, under the next S on the tensor cores (after
  // S_it's issue, before P_{it-1} V_{it-1}'s), as FlashAttention-3 does above D = 128. Measured
  // both ways at every head dim (ops/attention/README.md, "Where O's rescale runs").
  static constexpr bool kRescaleUnderS = D == 256;
  static constexpr uint32_t kBytesQ = static_cast<uint32_t>(kBr) * kDimsQK * 2;
  static constexpr uint32_t kBytesK = static_cast<uint32_t>(kBc) * kDimsQK * 2;
  static constexpr uint32_t kBytesV = static_cast<uint32_t>(kBc) * kDimsO * 2;
  static constexpr size_t kBarriers = 2 + 4 * kStages;
  static constexpr size_t kSmemBytes =
      kBytesQ + kStages * (kBytesK + kBytesV) + kBarriers * sizeof(uint64_t) + 1024;
  static_assert(D % 16 == 0 && kBc % 16 == 0, "k-steps of 16 dims, P's fragments of 16 keys");
  static_assert(D % kPanelV == 0, "V in whole panels");
  static_assert(kBytesK % 1024 == 0 && kBytesV % 1024 == 0 && (kBc * kPanelV * 2) % 1024 == 0,
                "every tile and V panel starts on a swizzle period");
  static_assert(kSmemBytes <= 227 * 1024, "an H100/H200 block has at most 227 KiB of shared memory");
};

// One call as the kernel sees it. The tensor maps carry the pointers and strides; a broadcast
// head or batch (stride 0) is a dim of size 1 in its map, stepped by 0 (the *_step fields).
struct V3Args {
  int S = 0, L = 0, H = 0;
  int BH = 0, q_blocks = 0;  // (batch, head) pairs; query blocks of Br per pair
  int q_head_step = 1, q_batch_step = 1, k_head_step = 1, k_batch_step = 1, v_head_step = 1, v_batch_step = 1;
  float scale_log2 = 0;   // |scale| * log2(e)
  bool negate = false;    // scale < 0: the scores are negated, the softmax taken with |scale|
  bool causal = false;
  void* out = nullptr;    // contiguous [B, H, S, D]
};

// 2^x on the special function unit (relative error ~2^-22); ex2(-inf) = +0.
[[maybe_unused]] __device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// ---- V3Shared: the block's shared memory ----------------------------------------------------

// The ring position of iteration `it`: its stage, and the parity of that stage's phase.
struct RingSlot {
  int stage;
  uint32_t parity;
};

// The tiles and their mbarriers. full: TMA -> consumers, the tile has landed (the producer's
// arrive_expect_tx and the bytes); empty: consumers -> producer, done reading it (lane 0 of every
// consumer warp).
template <class Cfg>
struct V3Shared {
  using T = typename Cfg::Elem;
  T* q_tile;
  T* k_ring;
  T* v_ring;
  uint64_t *q_full, *q_empty, *k_full, *k_empty, *v_full, *v_empty;

  __device__ __forceinline__ explicit V3Shared(uint8_t* raw) {
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t{1023});
    q_tile = reinterpret_cast<T*>(smem);
    k_ring = reinterpret_cast<T*>(smem + Cfg::kBytesQ);
    v_ring = reinterpret_cast<T*>(smem + Cfg::kBytesQ + Cfg::kStages * Cfg::kBytesK);
    q_full = reinterpret_cast<uint64_t*>(smem + Cfg::kBytesQ + Cfg::kStages * (Cfg::kBytesK + Cfg::kBytesV));
    q_empty = q_full + 1;
    k_full = q_empty + 1;
    k_empty = k_full + Cfg::kStages;
    v_full = k_empty + Cfg::kStages;
    v_empty = v_full + Cfg::kStages;
  }
  // One thread, before the block's __syncthreads.
  __device__ __forceinline__ void init_barriers() const {
    hopper::mbarrier_init(q_full, 1);
    hopper::mbarrier_init(q_empty, Cfg::kConsumers * 4);
    for (int s = 0; s < Cfg::kStages; ++s) {
      hopper::mbarrier_init(&k_full[s], 1);
      hopper::mbarrier_init(&v_full[s], 1);
      hopper::mbarrier_init(&k_empty[s], Cfg::kConsumers * 4);
      hopper::mbarrier_init(&v_empty[s], Cfg::kConsumers * 4);
    }
    hopper::fence_barrier_init();
  }
  __device__ __forceinline__ T* k_tile(int stage) const { return k_ring + stage * Cfg::kBc * Cfg::kDimsQK; }
  __device__ __forceinline__ T* v_tile(int stage) const { return v_ring + stage * Cfg::kBc * Cfg::kDimsO; }
  __device__ __forceinline__ static RingSlot slot(int it) {
    return {it % Cfg::kStages, static_cast<uint32_t>((it / Cfg::kStages) & 1)};
  }
};

// ---- TileScheduler: which items a block does ------------------------------------------------

// An item: Br queries from q0 of one (batch, head), against n_tiles key tiles, visited from the
// last down (iteration it reads tile n_tiles - 1 - it).
struct WorkItem {
  int q0, bh, n_tiles;
};

// One (query block, batch * head) pair per item, the longest query blocks first (causal); the
// block takes items blockIdx.x, blockIdx.x + gridDim.x, ... (a persistent grid: the next item's
// loads overlap this one's last products and its output).
template <class Cfg>
struct TileScheduler {
  const V3Args& args;
  __device__ __forceinline__ int first() const { return blockIdx.x; }
  __device__ __forceinline__ int next(int w) const { return w + gridDim.x; }
  __device__ __forceinline__ bool done(int w) const { return w >= args.q_blocks * args.BH; }
  __device__ __forceinline__ WorkItem item(int w) const {
    WorkItem it;
    it.q0 = (args.q_blocks - 1 - w / args.BH) * Cfg::kBr;
    it.bh = w % args.BH;
    // With causal, keys past the block's last query are masked for every row: never loaded.
    const int kv_end = args.causal ? min(args.L, it.q0 + Cfg::kBr) : args.L;
    it.n_tiles = (kv_end + Cfg::kBc - 1) / Cfg::kBc;
    return it;
  }
};

// ---- produce: the producer's one thread -------------------------------------------------------

// Every load of the block, in the order the consumers read them: an item's Q once every consumer
// gave the last one back, then its K and V tiles through the ring, each stage once given back.
template <class Cfg>
__device__ __forceinline__ void produce(const V3Shared<Cfg>& sh, const TileScheduler<Cfg>& sched, const V3Args& args,
                                        const CUtensorMap* map_q, const CUtensorMap* map_k, const CUtensorMap* map_v) {
  using namespace hopper;
  using T = typename Cfg::Elem;
  int ring = 0;  // K/V tiles loaded so far: the ring position
  int q_loads = 0;
  for (int w = sched.first(); !sched.done(w); w = sched.next(w)) {
    const WorkItem item = sched.item(w);
    if (item.n_tiles == 0) continue;
    const int b = item.bh / args.H, h = item.bh % args.H;
    const int qh = h * args.q_head_step, qb = b * args.q_batch_step;
    const int kh = h * args.k_head_step, kb = b * args.k_batch_step;
    const int vh = h * args.v_head_step, vb = b * args.v_batch_step;
    mbarrier_wait(sh.q_empty, (q_loads & 1) ^ 1);  // every consumer is done with the last Q
    mbarrier_arrive_expect_tx(sh.q_full, Cfg::kBytesQ);
#pragma unroll
    for (int c = 0; c < Cfg::kPanels; ++c)
      tma_load_4d(sh.q_tile + c * Cfg::kBr * kPanel, map_q, sh.q_full, c * kPanel, item.q0, qh, qb);
    ++q_loads;
    for (int it = 0; it < item.n_tiles; ++it) {
      const int key0 = (item.n_tiles - 1 - it) * Cfg::kBc;
      const RingSlot s = V3Shared<Cfg>::slot(ring + it);
      mbarrier_wait(&sh.k_empty[s.stage], s.parity ^ 1);  // the consumers gave this stage back
      mbarrier_arrive_expect_tx(&sh.k_full[s.stage], Cfg::kBytesK);
      T* k_tile = sh.k_tile(s.stage);
#pragma unroll
      for (int c = 0; c < Cfg::kPanels; ++c)
        tma_load_4d(k_tile + c * Cfg::kBc * kPanel, map_k, &sh.k_full[s.stage], c * kPanel, key0, kh, kb);
      mbarrier_wait(&sh.v_empty[s.stage], s.parity ^ 1);
      mbarrier_arrive_expect_tx(&sh.v_full[s.stage], Cfg::kBytesV);
      T* v_tile = sh.v_tile(s.stage);
#pragma unroll
      for (int c = 0; c < Cfg::kPanelsV; ++c)
        tma_load_4d(v_tile + c * Cfg::kBc * Cfg::kPanelV, map_v, &sh.v_full[s.stage], c * Cfg::kPanelV, key0, vh,
                    vb);
    }
    ring += item.n_tiles;
  }
}

// ---- TurnTaking: the ping-pong between consumers ----------------------------------------------

// Barrier 1 + c is consumer c's turn to issue its products; the consumer before it (c - 1,
// cyclically) opens it once done issuing its own. Consumer 0 goes first: the last consumer opens
// its turn at the start, and consumer 0 takes that last opening at the end. Without the step,
// every call is a no-op.
template <class Cfg>
struct TurnTaking {
  static constexpr bool kOn = Cfg::kTraits.pingpong;
  static constexpr uint32_t kTurnThreads = 2 * 128;
  int consumer;
  __device__ __forceinline__ uint32_t mine() const { return 1 + consumer; }
  __device__ __forceinline__ uint32_t next() const { return 1 + (consumer + 1) % Cfg::kConsumers; }
  __device__ __forceinline__ void start() const {
    if (kOn && consumer == Cfg::kConsumers - 1) hopper::named_barrier_arrive(1, kTurnThreads);
  }
  __device__ __forceinline__ void wait_mine() const {
    if constexpr (kOn) hopper::named_barrier_sync(mine(), kTurnThreads);
  }
  __device__ __forceinline__ void pass() const {
    if constexpr (kOn) hopper::named_barrier_arrive(next(), kTurnThreads);
  }
  __device__ __forceinline__ void finish() const {
    if (kOn && consumer == 0) hopper::named_barrier_sync(mine(), kTurnThreads);
  }
};

// ---- OnlineSoftmax: a thread's two rows -------------------------------------------------------

// 1 / (a row's sum over its quad, from this thread's share l), or 0 for a row that saw no key (as
// the safe softmax gives).
__device__ __forceinline__ float inverse_quad_sum(float l) {
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  return l == 0.0f ? 0.0f : 1.0f / l;
}

// The running max (of the raw scores, negated when scale < 0) and sum of P of the thread's rows g
// and g + 8 of its warp's 16 (index r = 0, 1); the sum covers this thread's columns only (the quad
// adds its four at the end). Scores in wgmma accumulator layout: s[4i + 2r + e] is (row r,
// column 8i + 2t + e). O is rescaled on every tile.
template <class Cfg>
struct OnlineSoftmax {
  static constexpr int kScoreRegs = Cfg::kScoreRegs;
  float m[2];
  float l[2];

  __device__ __forceinline__ void reset() {
    m[0] = m[1] = -CUDART_INF_F;
    l[0] = l[1] = 0.0f;
  }
  // A tile's scores, masked: new max, the factor that rescales O and l, P in place of S. Returns
  // true: O must be multiplied by rescale[r].
  __device__ __forceinline__ bool update(float (&s)[kScoreRegs], float scale_log2, float (&rescale)[2]) {
    const float kNegInf = -CUDART_INF_F;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // fmaxf ignores NaN: a NaN score reaches the output through P and l.
      float m_new = m[r];
#pragma unroll
      for (int i = 0; i < Cfg::kBc / 8; ++i) m_new = fmaxf(m_new, fmaxf(s[4 * i + 2 * r], s[4 * i + 2 * r + 1]));
      m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 1));
      m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 2));
      // No visible key yet (m_new = -inf): subtract 0, so that exp2(-inf) = 0 rather than exp2(NaN).
      const float m_base = m_new == kNegInf ? 0.0f : m_new * scale_log2;
      rescale[r] = exp2_approx(m[r] * scale_log2 - m_base);  // 0 while m[r] = -inf
      m[r] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int i = 0; i < Cfg::kBc / 8; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& x = s[4 * i + 2 * r + e];
          x = exp2_approx(fmaf(x, scale_log2, -m_base));
          sum += x;
        }
      l[r] = l[r] * rescale[r] + sum;
    }
    return true;
  }
  __device__ __forceinline__ float inverse_sum(int r) const { return inverse_quad_sum(l[r]); }
};

// Folds v[0..N) into v[0] with `op` pairwise: pairs, then pairs of pairs, log2(N) dependent steps
// with the rest overlapping in the pipelines, where a chain would wait N - 1 times.
template <int N, class Op>
__device__ __forceinline__ float tree_fold(float (&v)[N], Op op) {
#pragma unroll
  for (int w = 1; w < N; w *= 2)
#pragma unroll
    for (int i = 0; i + w < N; i += 2 * w) v[i] = op(v[i], v[i + w]);
  return v[0];
}

// OnlineSoftmax with FlashAttention-4's conditional rescale: P = exp2(s * scale_log2 - base)
// against a running base (log2 units) that moves up to the row's max only when some row of the
// warp sees a score more than kSlack above its base; most tiles then leave O and l alone. P stays
// <= 2^kSlack, far from f16's and float's limits, and out = O / l is the same softmax whatever
// the base. A row's max and sum are folded pairwise (tree_fold).
template <class Cfg>
struct ConditionalSoftmax {
  static constexpr int kScoreRegs = Cfg::kScoreRegs;
  static constexpr int kPairs = Cfg::kBc / 8;  // a row's scores in this thread: kPairs pairs
  static constexpr float kSlack = 8.0f;
  float base[2];  // -inf before any key
  float l[2];

  __device__ __forceinline__ void reset() {
    base[0] = base[1] = -CUDART_INF_F;
    l[0] = l[1] = 0.0f;
  }
  // A tile's masked scores: P in place of S, l updated. Returns whether the base moved; then O
  // must be multiplied by rescale[r] (0 for a row that had seen no key before).
  __device__ __forceinline__ bool update(float (&s)[kScoreRegs], float scale_log2, float (&rescale)[2]) {
    const float kNegInf = -CUDART_INF_F;
    float top[2];  // the tile's max per row, in log2 units
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float part[kPairs];
#pragma unroll
      for (int i = 0; i < kPairs; ++i) part[i] = fmaxf(s[4 * i + 2 * r], s[4 * i + 2 * r + 1]);
      // fmaxf ignores NaN: a NaN score reaches the output through P and l.
      float m = tree_fold(part, [](float a, float b) { return fmaxf(a, b); });
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      top[r] = m * scale_log2;  // scale_log2 > 0: -inf stays -inf
    }
    const bool move = __any_sync(0xffffffffu, top[0] > base[0] + kSlack || top[1] > base[1] + kSlack);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (move) {
        const float moved = fmaxf(base[r], top[r]);
        // A row that has seen no key yet (moved = -inf) subtracts 0: exp2(-inf) = 0, not exp2(NaN).
        rescale[r] = exp2_approx(base[r] - (moved == kNegInf ? 0.0f : moved));  // 0 while base = -inf
        base[r] = moved;
      }
      const float b = base[r] == kNegInf ? 0.0f : base[r];
      float part[kPairs];
#pragma unroll
      for (int i = 0; i < kPairs; ++i) {
        float& x0 = s[4 * i + 2 * r];
        float& x1 = s[4 * i + 2 * r + 1];
        x0 = exp2_approx(fmaf(x0, scale_log2, -b));
        x1 = exp2_approx(fmaf(x1, scale_log2, -b));
        part[i] = x0 + x1;
      }
      const float sum = tree_fold(part, [](float a, float c) { return a + c; });
      l[r] = move ? fmaf(l[r], rescale[r], sum) : l[r] + sum;
    }
    return move;
  }
  __device__ __forceinline__ float inverse_sum(int r) const { return inverse_quad_sum(l[r]); }
};

// ---- Consumer: a consumer warpgroup -----------------------------------------------------------

// 64 of the item's queries: its products, the masks, the main loop and the epilogue. The thread
// holds rows g and g + 8 of its warp's 16 (r = 0, 1), O in accumulator layout (o[4i + 2r + e] is
// (row r, column 8i + 2t + e)), and P of the last tile as the A operand of O += P V.
template <class Cfg>
struct Consumer {
  using T = typename Cfg::Elem;
  static constexpr int kScoreRegs = Cfg::kScoreRegs;

  const V3Shared<Cfg>& sh;
  const V3Args& args;
  int index;                 // which consumer: rows 64 * index.. of the item
  int lane, g, t;            // g = lane / 4 (the row), t = lane % 4 (the column pair)
  int warp_row;              // the warp's first row in the warpgroup's 64
  int row_first = 0;         // the warpgroup's first query in the current item
  int my_row[2] = {0, 0};    // this thread's two queries
  float o[Cfg::kDimsO / 2];  // O [64 x kDimsO], unnormalized
  uint32_t p_frag[Cfg::kBc / 16][4];  // P: keys 16k..16k+15 as the A fragment k of O += P V
  using Softmax = std::conditional_t<Cfg::kConditionalRescale, ConditionalSoftmax<Cfg>, OnlineSoftmax<Cfg>>;
  Softmax softmax;
  // The wgmma descriptors of this consumer's Q rows and of stage 0's K and V tiles, made once; a
  // product advances them to its stage and k-step (hopper::smem_descriptor_advance).
  static constexpr uint32_t kRowBytesV = Cfg::kSwizzleV;  // a V panel's row: one swizzle row
  uint64_t q_desc, k_desc, v_desc;

  __device__ __forceinline__ Consumer(const V3Shared<Cfg>& shared, const V3Args& a, int consumer)
      : sh(shared), args(a), index(consumer) {
    lane = threadIdx.x % 32;
    g = lane / 4;
    t = lane % 4;
    warp_row = ((threadIdx.x / 32) % 4) * 16;
    // K-major Q and K: 128-byte rows, 8-row groups 1024 bytes apart. MN-major V: panels one Bc-row
    // panel apart (the leading offset), 8-row groups a swizzle period apart (the stride).
    q_desc = hopper::smem_descriptor(sh.q_tile + index * 64 * kPanel, 16, 1024);
    k_desc = hopper::smem_descriptor(sh.k_tile(0), 16, 1024);
    v_desc = hopper::smem_descriptor<Cfg::kSwizzleV>(sh.v_tile(0), Cfg::kBc * kRowBytesV, 8 * kRowBytesV);
  }

  __device__ __forceinline__ void start(const WorkItem& item) {
    row_first = item.q0 + index * 64;
    my_row[0] = row_first + warp_row + g;
    my_row[1] = my_row[0] + 8;
#pragma unroll
    for (int i = 0; i < Cfg::kDimsO / 2; ++i) o[i] = 0.0f;
    softmax.reset();
  }

  // S = Q K^T for the stage's K tile: D/16 wgmmas, k = 16 dims each (D = 96: the real columns
  // only). Q's and K's rows are K-major 128-byte swizzle rows: dims 16k.. of panel k / 4 start 32
  // bytes further per step.
  __device__ __forceinline__ void issue_qk(float (&s)[kScoreRegs], int stage) const {
    using hopper::smem_descriptor_advance;
    const uint64_t k_stage = smem_descriptor_advance(k_desc, stage * Cfg::kBytesK);
#pragma unroll
    for (int k = 0; k < Cfg::kHeadDim / 16; ++k) {
      const int panel = k / 4, within = (k % 4) * 16;
      hopper::wgmma_m64nNk16_ss<Cfg::kBf16, Cfg::kBc>(
          s, smem_descriptor_advance(q_desc, (panel * Cfg::kBr * kPanel + within) * sizeof(T)),
          smem_descriptor_advance(k_stage, (panel * Cfg::kBc * kPanel + within) * sizeof(T)), k > 0);
    }
  }
  // O += P V: Bc/16 wgmmas, 16 keys each. V is MN-major: 16 keys are 16 rows of each panel (128
  // bytes a row, 64 at D = 96), 16 rows further per step.
  __device__ __forceinline__ void issue_pv(int stage) {
    using hopper::smem_descriptor_advance;
    const uint64_t v_stage = smem_descriptor_advance(v_desc, stage * Cfg::kBytesV);
#pragma unroll
    for (int k = 0; k < Cfg::kBc / 16; ++k)
      hopper::wgmma_m64nNk16_rs<Cfg::kBf16, Cfg::kDimsO>(
          o, p_frag[k], smem_descriptor_advance(v_stage, k * 16 * kRowBytesV), 1);
  }
  // The scores of tile `tile` as the softmax sees them: negated when scale < 0, and -inf at keys
  // at or past L and (causal) keys j > i, on the tiles that have such keys.
  __device__ __forceinline__ void mask(float (&s)[kScoreRegs], int tile) const {
    if (args.negate) {
#pragma unroll
      for (int i = 0; i < kScoreRegs; ++i) s[i] = -s[i];
    }
    const int key0 = tile * Cfg::kBc;
    if (key0 + Cfg::kBc > args.L || (args.causal && key0 + Cfg::kBc - 1 > row_first)) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        int end = args.L - key0;  // this row sees the tile's columns c < end
        if (args.causal) end = min(end, my_row[r] - key0 + 1);
#pragma unroll
        for (int i = 0; i < Cfg::kBc / 8; ++i)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (8 * i + 2 * t + e >= end) s[4 * i + 2 * r + e] = -CUDART_INF_F;
      }
    }
  }
  // P as the A operand of P V: keys 16k..16k+15 are accumulators 8k..8k+7 (see wgmma_m64nNk16_rs).
  __device__ __forceinline__ void pack_p(const float (&s)[kScoreRegs]) {
#pragma unroll
    for (int k = 0; k < Cfg::kBc / 16; ++k) {
      p_frag[k][0] = pack2<T>(s[8 * k + 0], s[8 * k + 1]);
      p_frag[k][1] = pack2<T>(s[8 * k + 2], s[8 * k + 3]);
      p_frag[k][2] = pack2<T>(s[8 * k + 4], s[8 * k + 5]);
      p_frag[k][3] = pack2<T>(s[8 * k + 6], s[8 * k + 7]);
    }
  }
  __device__ __forceinline__ void rescale_o(const float (&rescale)[2]) {
#pragma unroll
    for (int i = 0; i < Cfg::kDimsO / 8; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[4 * i + e] *= rescale[e / 2];
  }
  __device__ __forceinline__ void release(uint64_t* bar) const {
    if (lane == 0) hopper::mbarrier_arrive(bar);
  }

  // The main loop of an item of n tiles, from ring position `ring`, one product at a time (the
  // steps wgmma and ring): S, wait, softmax, rescale O, P V, wait.
  __device__ __forceinline__ void mainloop_serial(float (&s)[kScoreRegs], int n, int ring) {
    using namespace hopper;
    for (int it = 0; it < n; ++it) {
      const RingSlot sl = V3Shared<Cfg>::slot(ring + it);
      mbarrier_wait(&sh.k_full[sl.stage], sl.parity);
      wgmma_fence();
      issue_qk(s, sl.stage);
      wgmma_commit();
      wgmma_wait<0>();
      fence_accumulators(s);
      release(&sh.k_empty[sl.stage]);
      if (it == n - 1) release(sh.q_empty);  // Q's last product is done: the next item's Q may load
      float rescale[2];
      mask(s, n - 1 - it);
      if (softmax.update(s, args.scale_log2, rescale)) rescale_o(rescale);
      pack_p(s);
      mbarrier_wait(&sh.v_full[sl.stage], sl.parity);
      wgmma_fence();
      issue_pv(sl.stage);
      wgmma_commit();
      wgmma_wait<0>();
      fence_accumulators(o);
      fence_operands(p_frag);
      release(&sh.v_empty[sl.stage]);
    }
  }

  // The main loop with the softmax under the tensor cores (the steps overlap and pingpong), n > 0:
  // the first tile's S alone; then iteration it issues S_it and P_{it-1} V_{it-1}, and runs the
  // softmax of S_it under the latter; the last P V ends the item.
  __device__ __forceinline__ void mainloop_overlapped(float (&s)[kScoreRegs], int n, int ring,
                                                      const TurnTaking<Cfg>& turns) {
    using namespace hopper;
    const RingSlot first = V3Shared<Cfg>::slot(ring);
    turns.wait_mine();
    mbarrier_wait(&sh.k_full[first.stage], first.parity);
    wgmma_fence();
    issue_qk(s, first.stage);
    wgmma_commit();
    turns.pass();
    wgmma_wait<0>();
    fence_accumulators(s);
    release(&sh.k_empty[first.stage]);
    if (n == 1) release(sh.q_empty);
    float rescale[2];
    mask(s, n - 1);
    softmax.update(s, args.scale_log2, rescale);  // O is still 0: nothing to rescale
    bool moved = false;  // the last update moved the base: O owes a rescale (done under S: kRescaleUnderS)
    pack_p(s);
    for (int it = 1; it < n; ++it) {
      const RingSlot sl = V3Shared<Cfg>::slot(ring + it), prev = V3Shared<Cfg>::slot(ring + it - 1);
      turns.wait_mine();
      mbarrier_wait(&sh.k_full[sl.stage], sl.parity);
      wgmma_fence();
      issue_qk(s, sl.stage);
      wgmma_commit();
      if (Cfg::kRescaleUnderS && moved) rescale_o(rescale);  // to P_{it-1}'s base, while S_it multiplies
      mbarrier_wait(&sh.v_full[prev.stage], prev.parity);
      if constexpr (Cfg::kRescaleUnderS) wgmma_fence();  // O was written since the fence above
      issue_pv(prev.stage);
      wgmma_commit();
      turns.pass();
      wgmma_wait<1>();  // S_it is done; P_{it-1} V_{it-1} may still run
      fence_accumulators(s);
      release(&sh.k_empty[sl.stage]);
      if (it == n - 1) release(sh.q_empty);
      mask(s, n - 1 - it);
      moved = softmax.update(s, args.scale_log2, rescale);
      wgmma_wait<0>();  // O and P belonged to that product until now
      fence_accumulators(o);
      fence_operands(p_frag);
      release(&sh.v_empty[prev.stage]);
      if (!Cfg::kRescaleUnderS && moved) rescale_o(rescale);
      pack_p(s);
    }
    if (Cfg::kRescaleUnderS && moved) rescale_o(rescale);
    const RingSlot last = V3Shared<Cfg>::slot(ring + n - 1);
    mbarrier_wait(&sh.v_full[last.stage], last.parity);
    wgmma_fence();
    issue_pv(last.stage);
    wgmma_commit();
    wgmma_wait<0>();
    fence_accumulators(o);
    fence_operands(p_frag);
    release(&sh.v_empty[last.stage]);
  }

  // The epilogue: out = O / l, the item's D real columns of this thread's rows below S.
  __device__ __forceinline__ void store(const WorkItem& item) const {
    T* out = static_cast<T*>(args.out) + (static_cast<int64_t>(item.bh) * args.S) * Cfg::kHeadDim;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float inv_l = softmax.inverse_sum(r);
      if (my_row[r] >= args.S) continue;
      T* out_row = out + static_cast<int64_t>(my_row[r]) * Cfg::kHeadDim + 2 * t;
#pragma unroll
      for (int i = 0; i < Cfg::kHeadDim / 8; ++i)  // 4 bytes per lane; a quad writes 16 contiguous bytes
        *reinterpret_cast<uint32_t*>(out_row + 8 * i) =
            pack2<T>(o[4 * i + 2 * r] * inv_l, o[4 * i + 2 * r + 1] * inv_l);
    }
  }
};

// A consumer warpgroup's whole life: its items, one after another, each through the main loop of
// its step and the epilogue.
template <class Cfg>
__device__ __forceinline__ void consume(const V3Shared<Cfg>& sh, const TileScheduler<Cfg>& sched, const V3Args& args,
                                        int consumer) {
  Consumer<Cfg> c(sh, args, consumer);
  const TurnTaking<Cfg> turns{consumer};
  turns.start();
  float s[Cfg::kScoreRegs];
#pragma unroll
  for (int i = 0; i < Cfg::kScoreRegs; ++i) s[i] = 0.0f;
  int ring = 0;  // K/V tiles consumed so far: the ring position, as the producer's
  int q_loads = 0;
  for (int w = sched.first(); !sched.done(w); w = sched.next(w)) {
    const WorkItem item = sched.item(w);
    c.start(item);
    if (item.n_tiles > 0) hopper::mbarrier_wait(sh.q_full, q_loads++ & 1);
    if constexpr (!Cfg::kTraits.overlap)
      c.mainloop_serial(s, item.n_tiles, ring);
    else if (item.n_tiles > 0)
      c.mainloop_overlapped(s, item.n_tiles, ring, turns);
    ring += item.n_tiles;
    c.store(item);
  }
  turns.finish();
}

}  // namespace

// One block per SM, looping over items of Br queries of one (batch, head). Warpgroup 0 is the
// producer (one thread of it issues every load); warpgroups 1.. are consumers, 64 of the item's
// queries each.
template <class Cfg>
__device__ __forceinline__ void flash_fwd_v3_block(const CUtensorMap* map_q, const CUtensorMap* map_k,
                                                   const CUtensorMap* map_v, const V3Args& args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  const V3Shared<Cfg> sh(smem_raw);
  if (threadIdx.x == 0) sh.init_barriers();
  __syncthreads();
  const TileScheduler<Cfg> sched{args};
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    hopper::setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) produce<Cfg>(sh, sched, args, map_q, map_k, map_v);
    return;
  }
  hopper::setmaxnreg_inc<consumer_regs(Cfg::kConsumers)>();
  consume<Cfg>(sh, sched, args, warpgroup - 1);
#else
  __trap();  // built for another architecture: supports() keeps calls away
#endif
}

// flash_v3's kernels, one per dtype, head dim and block shape (Br queries x Bc keys), named for
// the trace; the earlier steps are instances of the template below.
#define TS_FLASH_V3_KERNEL(NAME, T, D, CONSUMERS, KEYS)                                                            \
  __global__ void __launch_bounds__(V3Config<T, D, FlashV3Step::pingpong, CONSUMERS, KEYS>::kThreads, 1)            \
      NAME(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,                    \
           const __grid_constant__ CUtensorMap map_v, V3Args args) {                                                \
    flash_fwd_v3_block<V3Config<T, D, FlashV3Step::pingpong, CONSUMERS, KEYS>>(&map_q, &map_k, &map_v, args);       \
  }
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d64_192x128, __nv_bfloat16, 64, 3, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d64_192x128, __half, 64, 3, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d64_128x128, __nv_bfloat16, 64, 2, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d64_128x128, __half, 64, 2, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d96_128x128, __nv_bfloat16, 96, 2, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d96_128x128, __half, 96, 2, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d96_128x176, __nv_bfloat16, 96, 2, 176)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d96_128x176, __half, 96, 2, 176)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d128_128x128, __nv_bfloat16, 128, 2, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d128_128x128, __half, 128, 2, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d128_128x176, __nv_bfloat16, 128, 2, 176)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d128_128x176, __half, 128, 2, 176)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d192_128x112, __nv_bfloat16, 192, 2, 112)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d192_128x112, __half, 192, 2, 112)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d256_128x80, __nv_bfloat16, 256, 2, 80)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d256_128x80, __half, 256, 2, 80)
#undef TS_FLASH_V3_KERNEL

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    ts_flash_attn_fwd_v3_step(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                              const __grid_constant__ CUtensorMap map_v, V3Args args) {
  flash_fwd_v3_block<Cfg>(&map_q, &map_k, &map_v, args);
}

namespace {

using V3Kernel = void (*)(CUtensorMap, CUtensorMap, CUtensorMap, V3Args);

// The kernel of (dtype, head dim, step, block shape), its shape, the columns of its V panels, its
// shared memory, and the flag that records on which devices it may use that much.
struct V3Launch {
  V3Kernel kernel;
  int block_rows, threads, keys, v_panel;
  size_t smem;
  std::atomic<uint64_t>* allowed;
};

// The named kernel of a pingpong (= flash_v3) configuration.
template <typename T, int D, int kConsumersN, int kBcN>
V3Kernel named_kernel() {
  constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  if constexpr (D == 64 && kConsumersN == 3)
    return bf16 ? ts_flash_attn_fwd_v3_bf16_d64_192x128 : ts_flash_attn_fwd_v3_f16_d64_192x128;
  else if constexpr (D == 64)
    return bf16 ? ts_flash_attn_fwd_v3_bf16_d64_128x128 : ts_flash_attn_fwd_v3_f16_d64_128x128;
  else if constexpr (D == 96 && kBcN == 128)
    return bf16 ? ts_flash_attn_fwd_v3_bf16_d96_128x128 : ts_flash_attn_fwd_v3_f16_d96_128x128;
  else if constexpr (D == 96)
    return bf16 ? ts_flash_attn_fwd_v3_bf16_d96_128x176 : ts_flash_attn_fwd_v3_f16_d96_128x176;
  else if constexpr (D == 128 && kBcN == 128)
    return bf16 ? ts_flash_attn_fwd_v3_bf16_d128_128x128 : ts_flash_attn_fwd_v3_f16_d128_128x128;
  else if constexpr (D == 128)
    return bf16 ? ts_flash_attn_fwd_v3_bf16_d128_128x176 : ts_flash_attn_fwd_v3_f16_d128_128x176;
  else if constexpr (D == 192)
    return bf16 ? ts_flash_attn_fwd_v3_bf16_d192_128x112 : ts_flash_attn_fwd_v3_f16_d192_128x112;
  else {
    static_assert(D == 256, "a head dim with no named kernel");
    return bf16 ? ts_flash_attn_fwd_v3_bf16_d256_128x80 : ts_flash_attn_fwd_v3_f16_d256_128x80;
  }
}

template <typename T, int D, FlashV3Step kStep, int kConsumersN, int kBcN>
V3Launch launch_of() {
  using Cfg = V3Config<T, D, kStep, kConsumersN, kBcN>;
  static std::atomic<uint64_t> allowed;
  V3Kernel kernel = nullptr;
  if constexpr (kStep != FlashV3Step::pingpong)
    kernel = ts_flash_attn_fwd_v3_step<Cfg>;
  else
    kernel = named_kernel<T, D, kConsumersN, kBcN>();
  return {kernel, Cfg::kBr, Cfg::kThreads, kBcN, Cfg::kPanelV, Cfg::kSmemBytes, &allowed};
}

// The steps before pingpong exist for the head dims the walk from flash_v2 measures (64, 128);
// other head dims have flash_v3 alone.
template <typename T, int D, int kConsumersN, int kBcN>
V3Launch launch_of(FlashV3Step step) {
  if constexpr (D == 64 || D == 128) {
    switch (step) {
      case FlashV3Step::wgmma: return launch_of<T, D, FlashV3Step::wgmma, kConsumersN, kBcN>();
      case FlashV3Step::ring: return launch_of<T, D, FlashV3Step::ring, kConsumersN, kBcN>();
      case FlashV3Step::overlap: return launch_of<T, D, FlashV3Step::overlap, kConsumersN, kBcN>();
      case FlashV3Step::pingpong: break;
    }
  } else {
    TS_CHECK(step == FlashV3Step::pingpong,
             "sdpa flash_v3: the step {} is built for head dims 64 and 128, not {} (flash_v3 itself takes it)",
             flash_v3_step_name(step), D);
  }
  return launch_of<T, D, FlashV3Step::pingpong, kConsumersN, kBcN>();
}

// The block shape of a call, as measured on the H200 (ops/attention/README.md):
//   D = 64: three consumers (192 queries; +7% at S = 4096 over two, the softmax being large next
//     to the small products) unless that pads more than 1/16 of the queries (S = 1024: 1152 rows
//     for 1024), then two (128 queries);
//   D = 96, 128: two consumers (registers), and without the causal mask 176 keys per tile (fewer
//     iterations, each with the same fixed cost: barriers, shuffles, the wait for S), with it 128;
//   D = 192, 256: two consumers, the key tile as large as two stages of K and V allow beside Q in
//     227 KiB: 112 keys (D = 192), 80 (D = 256), FlashAttention-3's choices.
template <typename T>
V3Launch launch_for(int64_t D, int64_t S, bool causal, FlashV3Step step) {
  switch (D) {
    case 64: {
      const int64_t padded = ceil_div(S, 64 * 3) * (64 * 3) - S;
      if (padded * 16 <= S) return launch_of<T, 64, 3, 128>(step);
      return launch_of<T, 64, 2, 128>(step);
    }
    case 96: return causal ? launch_of<T, 96, 2, 128>(step) : launch_of<T, 96, 2, 176>(step);
    case 128: return causal ? launch_of<T, 128, 2, 128>(step) : launch_of<T, 128, 2, 176>(step);
    case 192: return launch_of<T, 192, 2, 112>(step);
    default: break;
  }
  TS_CHECK(D == 256, "sdpa flash_v3: head dim {} has no kernel (supports() refuses it)", D);
  return launch_of<T, 256, 2, 80>(step);
}

// The map of a [B, H, rows, D] input read in boxes of `box_rows` x `box_cols`, a box row one
// swizzle row (64 columns: 128 bytes, 32: 64); a broadcast or single head (batch) becomes a dim of
// size 1, its step returned in *head_step (*batch_step).
hopper::TensorMapSpec input_map(const Tensor& x, int box_rows, int box_cols, int* head_step, int* batch_step,
                                const char* what) {
  const int64_t B = x.shape()[0], H = x.shape()[1];
  const bool one_batch = B == 1 || x.strides()[0] == 0, one_head = H == 1 || x.strides()[1] == 0;
  *batch_step = one_batch ? 0 : 1;
  *head_step = one_head ? 0 : 1;
  hopper::TensorMapSpec spec = hopper::tensor_map_spec_16bit_4d(
      x.data_ptr(), one_batch ? 1 : B, one_head ? 1 : H, x.shape()[2], x.shape()[3], x.strides()[0], x.strides()[1],
      x.strides()[2], box_rows, box_cols, what);
  spec.swizzle_bytes = 2 * box_cols;
  return spec;
}

}  // namespace

const char* flash_v3_step_name(FlashV3Step step) {
  switch (step) {
    case FlashV3Step::wgmma: return "wgmma";
    case FlashV3Step::ring: return "ring";
    case FlashV3Step::overlap: return "overlap";
    case FlashV3Step::pingpong: return "pingpong";
  }
  return "?";
}

bool sdpa_cuda_flash_v3_supports(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs,
                                 std::string* why) {
  if (!flash_common_supports("flash_v3", q, k, v, attrs, why)) return false;
  if (!flash_tensor_core_supports("flash_v3", "TMA", {64, 96, 128, 192, 256}, q, k, v, why)) return false;
  // TMA coordinates and this kernel's row arithmetic are 32-bit.
  if (q.shape()[2] > (int64_t{1} << 30) || k.shape()[2] > (int64_t{1} << 30) ||
      q.shape()[0] * q.shape()[1] > std::numeric_limits<int>::max())
    return flash_refuse(why, fmt::format("sdpa flash_v3: q {} and k {} exceed 2^30 rows or 2^31 (batch, head) pairs",
                                         q.shape(), k.shape()));
  return flash_device_supports("flash_v3", q, k, v, why);  // the GPU: the rung row's sm90a
}

namespace {

// The launch of one step; the caller has asked sdpa_cuda_flash_v3_supports (dispatch, or the
// launchers below).
void launch_flash_v3(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out,
                     FlashV3Step step) {
  flash_check_out("flash_v3", q, out);
  TS_CHECK(aligned16(out.data_ptr()), "sdpa flash_v3: out's data must be 16-byte aligned");
  const FlashProblem fp = flash_problem(q, k, v, attrs, out);
  const bool bf16 = q.dtype() == DType::bf16;
  const V3Launch l = bf16 ? launch_for<__nv_bfloat16>(fp.D, fp.S, fp.causal, step)
                          : launch_for<__half>(fp.D, fp.S, fp.causal, step);
  const int64_t q_blocks = ceil_div(fp.S, l.block_rows);
  const int64_t works = q_blocks * fp.B * fp.H;
  if (works == 0) return;
  TS_CHECK(works <= std::numeric_limits<int>::max(), "sdpa flash_v3: {} blocks of {} queries exceed 2^31", works,
           l.block_rows);
  V3Args args;
  args.BH = static_cast<int>(fp.B * fp.H);
  args.q_blocks = static_cast<int>(q_blocks);
  args.S = static_cast<int>(fp.S);
  args.L = static_cast<int>(fp.L);
  args.H = static_cast<int>(fp.H);
  args.scale_log2 = std::fabs(fp.scale) * 1.4426950408889634f;  // exp(x * scale) = exp2(x * scale * log2(e))
  args.negate = fp.scale < 0;
  args.causal = fp.causal;
  args.out = out.data_ptr();
  std::array<hopper::TensorMapSpec, 3> specs;  // q, k, v
  specs[0] = input_map(q, l.block_rows, kPanel, &args.q_head_step, &args.q_batch_step, "sdpa flash_v3 (q)");
  // L = 0: no key is ever loaded, and a map of zero rows does not exist: q's stands in.
  specs[1] = fp.L > 0 ? input_map(k, l.keys, kPanel, &args.k_head_step, &args.k_batch_step, "sdpa flash_v3 (k)")
                      : specs[0];
  specs[2] = fp.L > 0
                 ? input_map(v, l.keys, l.v_panel, &args.v_head_step, &args.v_batch_step, "sdpa flash_v3 (v)")
                 : specs[0];
  // The maps go by value, as __grid_constant__ arguments: 384 of the launch's 448 bytes, read by the
  // TMA unit from the launch's parameters without a fence (ops/attention/README.md, "On the host").
  const CUtensorMap map_q = hopper::make_tensor_map(specs[0]), map_k = hopper::make_tensor_map(specs[1]),
                    map_v = hopper::make_tensor_map(specs[2]);
  allow_smem(l.kernel, l.smem, q.device().index, *l.allowed);
  // A persistent grid: one block per SM (one fits), each looping over its share of the work.
  const int64_t blocks = std::min<int64_t>(works, hopper::properties(q.device().index).multiprocessors);
  launch_with_smem(l.kernel, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(l.threads)), l.smem,
                   map_q, map_k, map_v, args);
}

}  // namespace

void sdpa_flash_v3(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  out = make_contiguous_tensor(q.shape(), {q.dtype(), q.device()});
  launch_flash_v3(q, k, v, attrs, out, FlashV3Step::pingpong);
}

void sdpa_cuda_flash_v3_step(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out,
                             FlashV3Step step) {
  std::string why;
  if (!sdpa_cuda_flash_v3_supports(q, k, v, attrs, &why)) fail("{}", why);
  TS_CHECK(gpu_meets(sm90a, q.device(), &why), "sdpa flash_v3: {}", why);  // dispatch asks it of the rung row
  launch_flash_v3(q, k, v, attrs, out, step);
}

void sdpa_cuda_flash_v3(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  sdpa_cuda_flash_v3_step(q, k, v, attrs, out, FlashV3Step::pingpong);
}

}  // namespace ts
