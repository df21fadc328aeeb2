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
//             tiles, which land swizzled (the layout wgmma reads), zero-filled past S and L,
//             counted by mbarriers. Consumer warpgroups own 64 of the block's Br queries each;
//             setmaxnreg gives the producer's registers to them (24 each for the producer).
//   ring      K and V tiles of Bc keys come through a ring of stages (4 for D = 64, 2 for
//             D = 128): the producer runs that many tiles ahead of the consumers, who give each
//             stage back as soon as its product is done (K after S = Q K^T, V after P V).
//   overlap   within a warpgroup (FlashAttention-3's intra-warpgroup pipelining): issue S_j =
//             Q K_j^T and O += P_{j-1} V_{j-1} back to back, wait only for S_j, and run the
//             softmax of tile j while the tensor cores still multiply P_{j-1} V_{j-1}. O's
//             rescale waits for that product; P_j waits in registers for the next iteration.
//   pingpong  between the consumer warpgroups: named barriers make them take turns at issuing
//             their products, so that one warpgroup's softmax (exp2 on the special function
//             units) runs under another's GEMMs and the tensor cores never wait for all of them
//             to finish a softmax at once.
// Every step runs on a persistent grid: one block per SM loops over (query block, batch * head)
//   items, the longest (causal) first, and the producer loads the next item's Q, K and V while
//   the consumers finish this one (Q is given back after its last product, through an mbarrier).
// The block shape (launch_for): Br = 192 queries (three consumers) or 128 (two), Bc = 128 keys,
//   or 176 at D = 128 without the mask.
// Unchanged from v2: the online softmax in exp2 with scale*log2(e) folded into one FFMA, the
//   running max/sum per row (a row is spread over the 4 threads of a quad: two shuffles), causal
//   tiles past the block's last query never loaded. New here: the key tiles are visited from the
//   last one down, so that only the first one or two of an item's iterations pay for masking
//   (the causal diagonal, the end of L).
// Supports: bf16, f16 on a compute capability 9.0 GPU; head dims 64 and 128; any S, L, B, H;
//   q, k, v with a unit last stride, other strides multiples of 8 elements (TMA's 16 bytes) or 0
//   (a dim broadcast), data 16-byte aligned.
// Cost:  4*B*H*S*L*D FLOPs (causal about half); bytes: q and out once, K and V once per block of
//        Br queries, as v2: (2*S*D + 2*L*D*ceil(S/Br)) * B*H * sizeof(T).
// Try:   ./build/release/ts_bench --filter /flash_v3   (tests: ts_tests -tc='cuda: flash*')
#include <cuda.h>
#include <math_constants.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/attention/attention_flash_problem.h"
#include "ops/cuda_common.cuh"
#include "ops/cuda_hopper.cuh"

namespace ts {

namespace {

// A block: consumer warpgroups of 64 queries each (one wgmma M) and K/V tiles of kBc keys (one
// m64nBc product per warpgroup for S). launch_for() makes the choice per call.
__host__ __device__ constexpr int block_rows(int consumers) { return 64 * consumers; }
__host__ __device__ constexpr int block_threads(int consumers) { return 128 * (1 + consumers); }
// Registers per thread after setmaxnreg: the producer keeps 24, the consumers share the rest of
// the SM's 64K (a multiple of 8): 24 * 128 + 160 * 384 and 24 * 128 + 240 * 256 <= 65536.
[[maybe_unused]] constexpr uint32_t kProducerRegs = 24;
[[maybe_unused]] __host__ __device__ constexpr uint32_t consumer_regs(int consumers) { return consumers == 3 ? 160 : 240; }
constexpr int kPanel = 64;  // columns per 128-byte swizzle row: a D = 128 tile is two panels

// The steps as compile-time switches.
struct StepTraits {
  bool ring, overlap, pingpong;
};
__host__ __device__ constexpr StepTraits traits(FlashV3Step step) {
  return {step >= FlashV3Step::ring, step >= FlashV3Step::overlap, step >= FlashV3Step::pingpong};
}

// K/V stages: 4 at D = 64, 2 at D = 128 (a third fits beside 128-key tiles and measured no faster
// on the H200: the products do not wait for the loads), from the ring step on; one before.
__host__ __device__ constexpr int stages(int D, FlashV3Step step) {
  return traits(step).ring ? (D == 64 ? 4 : 2) : 1;
}

// Shared memory: Q [D/64 panels][Br][64], the K and V rings [stages][D/64 panels][Bc][64], the
// barriers, and 1 KiB to align the tiles to 1024 bytes (the 128-byte swizzle's period).
__host__ __device__ constexpr uint32_t tile_bytes(int rows, int D) { return static_cast<uint32_t>(rows) * D * 2; }
__host__ __device__ constexpr size_t smem_bytes(int D, FlashV3Step step, int consumers, int keys) {
  return tile_bytes(block_rows(consumers), D) + 2 * stages(D, step) * tile_bytes(keys, D) +
         (2 + 4 * stages(D, step)) * sizeof(uint64_t) + 1024;
}

// One call as the kernel sees it. The tensor maps carry the pointers and strides; a broadcast
// head or batch (stride 0) is a dim of size 1 in its map, stepped by 0 (the *_step fields).
struct V3Problem {
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

// The ring position of iteration `it`: its stage, and the parity of that stage's phase.
struct RingSlot {
  int stage;
  uint32_t parity;
};
template <int kStagesN>
__device__ __forceinline__ RingSlot slot(int it) {
  return {it % kStagesN, static_cast<uint32_t>((it / kStagesN) & 1)};
}

// One consumer warpgroup's rows: the online softmax state and O, in wgmma accumulator layout
// (thread: rows g and g + 8 of its warp's 16, as index r = 0, 1).
template <int D, int kBcN>
struct ConsumerState {
  float o[D / 2];       // O [64 x D] of the warpgroup, unnormalized: o[4i + 2r + e] = (row r, col 8i + 2t + e)
  float m[2];           // running max of the (negated when scale < 0) raw scores
  float l[2];           // running sum of P over this thread's columns (summed over the quad at the end)
  uint32_t p[kBcN / 16][4];  // P of the last tile as the A operand of O += P V, one entry per 16 keys
};

}  // namespace

// One block per SM, looping over items of Br queries of one (batch, head). Warpgroup 0 is the
// producer; warpgroups 1.. are consumers, 64 of the item's queries each.
template <typename T, int D, FlashV3Step kStep, int kConsumersN, int kBcN>
__device__ __forceinline__ void flash_fwd_v3_block(const CUtensorMap* map_q, const CUtensorMap* map_k,
                                                   const CUtensorMap* map_v, const V3Problem& p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace hopper;
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  constexpr StepTraits kTraits = traits(kStep);
  static_assert(smem_bytes(D, kStep, kConsumersN, kBcN) <= 227 * 1024,
                "an H100/H200 block has at most 227 KiB of shared memory");
  constexpr int kStagesN = stages(D, kStep);
  constexpr int kPanels = D / kPanel;
  constexpr int kBrN = block_rows(kConsumersN), kBc = kBcN, kS = kBcN / 2;  // kS: S accumulators per thread
  constexpr uint32_t kBytesQ = tile_bytes(kBrN, D), kBytesKV = tile_bytes(kBc, D);
  const float kNegInf = -CUDART_INF_F;

  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  T* q_tile = reinterpret_cast<T*>(smem);
  T* k_ring = reinterpret_cast<T*>(smem + kBytesQ);
  T* v_ring = reinterpret_cast<T*>(smem + kBytesQ + kStagesN * kBytesKV);
  uint64_t* q_full = reinterpret_cast<uint64_t*>(smem + kBytesQ + 2 * kStagesN * kBytesKV);
  uint64_t* q_empty = q_full + 1;
  uint64_t* k_full = q_empty + 1;         // TMA -> consumers: the stage's K has landed
  uint64_t* k_empty = k_full + kStagesN;  // consumers -> producer: done reading it
  uint64_t* v_full = k_empty + kStagesN;
  uint64_t* v_empty = v_full + kStagesN;

  if (threadIdx.x == 0) {
    mbarrier_init(q_full, 1);  // the producer's arrive_expect_tx (+ the bytes)
    mbarrier_init(q_empty, kConsumersN * 4);  // lane 0 of every consumer warp
    for (int s = 0; s < kStagesN; ++s) {
      mbarrier_init(&k_full[s], 1);
      mbarrier_init(&v_full[s], 1);
      mbarrier_init(&k_empty[s], kConsumersN * 4);
      mbarrier_init(&v_empty[s], kConsumersN * 4);
    }
    fence_barrier_init();
  }
  __syncthreads();

  // The work: one (query block, batch * head) pair per item, the longest query blocks first
  // (causal); the block takes items blockIdx.x, blockIdx.x + gridDim.x, ... (a persistent grid:
  // the next item's loads overlap this one's last products and its output).
  struct Work {
    int q0, bh, n_tiles;  // n_tiles key tiles, visited from the last down: tile n_tiles - 1 - it
  };
  auto work = [&](int w) {
    Work item;
    item.q0 = (p.q_blocks - 1 - w / p.BH) * kBrN;
    item.bh = w % p.BH;
    // With causal, keys past the block's last query are masked for every row: never loaded.
    const int kv_end = p.causal ? min(p.L, item.q0 + kBrN) : p.L;
    item.n_tiles = (kv_end + kBc - 1) / kBc;
    return item;
  };
  const int works = p.q_blocks * p.BH;

  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    // ---- producer: one thread issues every load of the block ----
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x != 0) return;
    int ring = 0;  // K/V tiles loaded so far: the ring position
    int q_loads = 0;
    for (int w = blockIdx.x; w < works; w += gridDim.x) {
      const Work item = work(w);
      if (item.n_tiles == 0) continue;
      const int b = item.bh / p.H, h = item.bh % p.H;
      const int qh = h * p.q_head_step, qb = b * p.q_batch_step;
      const int kh = h * p.k_head_step, kb = b * p.k_batch_step;
      const int vh = h * p.v_head_step, vb = b * p.v_batch_step;
      mbarrier_wait(q_empty, (q_loads & 1) ^ 1);  // every consumer is done with the last Q
      mbarrier_arrive_expect_tx(q_full, kBytesQ);
#pragma unroll
      for (int c = 0; c < kPanels; ++c)
        tma_load_4d(q_tile + c * kBrN * kPanel, map_q, q_full, c * kPanel, item.q0, qh, qb);
      ++q_loads;
      for (int it = 0; it < item.n_tiles; ++it) {
        const int key0 = (item.n_tiles - 1 - it) * kBc;
        const RingSlot s = slot<kStagesN>(ring + it);
        mbarrier_wait(&k_empty[s.stage], s.parity ^ 1);  // the consumers gave this stage back
        mbarrier_arrive_expect_tx(&k_full[s.stage], kBytesKV);
        T* k_tile = k_ring + s.stage * kBc * D;
#pragma unroll
        for (int c = 0; c < kPanels; ++c)
          tma_load_4d(k_tile + c * kBc * kPanel, map_k, &k_full[s.stage], c * kPanel, key0, kh, kb);
        mbarrier_wait(&v_empty[s.stage], s.parity ^ 1);
        mbarrier_arrive_expect_tx(&v_full[s.stage], kBytesKV);
        T* v_tile = v_ring + s.stage * kBc * D;
#pragma unroll
        for (int c = 0; c < kPanels; ++c)
          tma_load_4d(v_tile + c * kBc * kPanel, map_v, &v_full[s.stage], c * kPanel, key0, vh, vb);
      }
      ring += item.n_tiles;
    }
    return;
  }

  // ---- consumers ----
  setmaxnreg_inc<consumer_regs(kConsumersN)>();
  const int consumer = warpgroup - 1;
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  // Ping-pong: barrier 1 + c is consumer c's turn to issue its products; the consumer before it
  // (c - 1, cyclically) opens it once done issuing its own. Consumer 0 goes first.
  constexpr uint32_t kTurnThreads = 2 * 128;
  const uint32_t my_turn = 1 + consumer, next_turn = 1 + (consumer + 1) % kConsumersN;
  if (kTraits.pingpong && consumer == kConsumersN - 1) named_barrier_arrive(1, kTurnThreads);

  ConsumerState<D, kBcN> st;
  int row_first = 0;         // the warpgroup's first query in the current item
  int my_row[2] = {0, 0};    // this thread's two queries

  // S = Q K^T for the stage's K tile: D/16 wgmmas, k = 16 dims each. Q's and K's rows are K-major
  // 128-byte swizzle rows: dims 16k.. of panel k / 4 start 32 bytes further per step.
  const T* q_rows = q_tile + consumer * 64 * kPanel;
  auto issue_s = [&](float (&s)[kS], int stage) {
    const T* k_tile = k_ring + stage * kBc * D;
#pragma unroll
    for (int k = 0; k < D / 16; ++k) {
      const int panel = k / 4, within = (k % 4) * 16;
      wgmma_m64nNk16_ss<kBf16, kBc>(s, smem_descriptor(q_rows + panel * kBrN * kPanel + within, 16, 1024),
                                 smem_descriptor(k_tile + panel * kBc * kPanel + within, 16, 1024), k > 0);
    }
  };
  // O += P V: Bc/16 wgmmas, 16 keys each. V is MN-major: 16 keys are 16 rows of 128 bytes (2 KiB
  // on), the head dim's panels one Bc-row panel apart (the descriptor's leading offset).
  auto issue_pv = [&](int stage) {
    const T* v_tile = v_ring + stage * kBc * D;
#pragma unroll
    for (int k = 0; k < kBc / 16; ++k)
      wgmma_m64nNk16_rs<kBf16, D>(st.o, st.p[k], smem_descriptor(v_tile + k * 16 * kPanel, kBc * kPanel * 2, 1024), 1);
  };
  // Masks (keys at or past L, and with causal keys j > i) on the tiles that need them, then the
  // online softmax of tile `tile`: new max, the factor that rescales O and l, P in place of S.
  // Returns the rescale factors; O is rescaled and P packed by the caller, once the product
  // reading and writing them is done.
  auto softmax = [&](float (&s)[kS], int tile, float (&rescale)[2]) {
    if (p.negate) {
#pragma unroll
      for (int i = 0; i < kS; ++i) s[i] = -s[i];
    }
    const int key0 = tile * kBc;
    if (key0 + kBc > p.L || (p.causal && key0 + kBc - 1 > row_first)) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        int end = p.L - key0;  // this row sees the tile's columns c < end
        if (p.causal) end = min(end, my_row[r] - key0 + 1);
#pragma unroll
        for (int i = 0; i < kBc / 8; ++i)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (8 * i + 2 * t + e >= end) s[4 * i + 2 * r + e] = kNegInf;
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // fmaxf ignores NaN: a NaN score reaches the output through P and l.
      float m_new = st.m[r];
#pragma unroll
      for (int i = 0; i < kBc / 8; ++i) m_new = fmaxf(m_new, fmaxf(s[4 * i + 2 * r], s[4 * i + 2 * r + 1]));
      m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 1));
      m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 2));
      // No visible key yet (m_new = -inf): subtract 0, so that exp2(-inf) = 0 rather than exp2(NaN).
      const float m_base = m_new == kNegInf ? 0.0f : m_new * p.scale_log2;
      rescale[r] = exp2_approx(st.m[r] * p.scale_log2 - m_base);  // 0 while st.m[r] = -inf
      st.m[r] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int i = 0; i < kBc / 8; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& x = s[4 * i + 2 * r + e];
          x = exp2_approx(fmaf(x, p.scale_log2, -m_base));
          sum += x;
        }
      st.l[r] = st.l[r] * rescale[r] + sum;
    }
  };
  // P as the A operand of P V: keys 16k..16k+15 are accumulators 8k..8k+7 (see wgmma_m64nNk16_rs).
  auto pack_p = [&](const float (&s)[kS]) {
#pragma unroll
    for (int k = 0; k < kBc / 16; ++k) {
      st.p[k][0] = pack2<T>(s[8 * k + 0], s[8 * k + 1]);
      st.p[k][1] = pack2<T>(s[8 * k + 2], s[8 * k + 3]);
      st.p[k][2] = pack2<T>(s[8 * k + 4], s[8 * k + 5]);
      st.p[k][3] = pack2<T>(s[8 * k + 6], s[8 * k + 7]);
    }
  };
  auto rescale_o = [&](const float (&rescale)[2]) {
#pragma unroll
    for (int i = 0; i < D / 8; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) st.o[4 * i + e] *= rescale[e / 2];
  };
  auto release = [&](uint64_t* bar) {
    if (lane == 0) mbarrier_arrive(bar);
  };

  float s[kS];
#pragma unroll
  for (int i = 0; i < kS; ++i) s[i] = 0.0f;
  int ring = 0;  // K/V tiles consumed so far: the ring position, as the producer's
  int q_loads = 0;
  for (int w = blockIdx.x; w < works; w += gridDim.x) {
    const Work item = work(w);
    const int n = item.n_tiles;
    row_first = item.q0 + consumer * 64;
    my_row[0] = row_first + warp * 16 + g;
    my_row[1] = my_row[0] + 8;
#pragma unroll
    for (int i = 0; i < D / 2; ++i) st.o[i] = 0.0f;
    st.m[0] = st.m[1] = kNegInf;
    st.l[0] = st.l[1] = 0.0f;
    if (n > 0) mbarrier_wait(q_full, q_loads++ & 1);

    if constexpr (!kTraits.overlap) {
      // One product at a time: S, wait, softmax, rescale O, P V, wait.
      for (int it = 0; it < n; ++it) {
        const RingSlot sl = slot<kStagesN>(ring + it);
        mbarrier_wait(&k_full[sl.stage], sl.parity);
        wgmma_fence();
        issue_s(s, sl.stage);
        wgmma_commit();
        wgmma_wait<0>();
        fence_accumulators(s);
        release(&k_empty[sl.stage]);
        if (it == n - 1) release(q_empty);  // Q's last product is done: the next item's Q may load
        float rescale[2];
        softmax(s, n - 1 - it, rescale);
        rescale_o(rescale);
        pack_p(s);
        mbarrier_wait(&v_full[sl.stage], sl.parity);
        wgmma_fence();
        issue_pv(sl.stage);
        wgmma_commit();
        wgmma_wait<0>();
        fence_accumulators(st.o);
        fence_operands(st.p);
        release(&v_empty[sl.stage]);
      }
    } else if (n > 0) {
      // The first tile: S alone. Then iteration it issues S_it and P_{it-1} V_{it-1}, and runs
      // the softmax of S_it under the latter; the last P V ends the item.
      const RingSlot first = slot<kStagesN>(ring);
      if constexpr (kTraits.pingpong) named_barrier_sync(my_turn, kTurnThreads);
      mbarrier_wait(&k_full[first.stage], first.parity);
      wgmma_fence();
      issue_s(s, first.stage);
      wgmma_commit();
      if constexpr (kTraits.pingpong) named_barrier_arrive(next_turn, kTurnThreads);
      wgmma_wait<0>();
      fence_accumulators(s);
      release(&k_empty[first.stage]);
      if (n == 1) release(q_empty);
      float rescale[2];
      softmax(s, n - 1, rescale);  // O is still 0: nothing to rescale
      pack_p(s);
      for (int it = 1; it < n; ++it) {
        const RingSlot sl = slot<kStagesN>(ring + it), prev = slot<kStagesN>(ring + it - 1);
        if constexpr (kTraits.pingpong) named_barrier_sync(my_turn, kTurnThreads);
        mbarrier_wait(&k_full[sl.stage], sl.parity);
        wgmma_fence();
        issue_s(s, sl.stage);
        wgmma_commit();
        mbarrier_wait(&v_full[prev.stage], prev.parity);
        issue_pv(prev.stage);
        wgmma_commit();
        if constexpr (kTraits.pingpong) named_barrier_arrive(next_turn, kTurnThreads);
        wgmma_wait<1>();  // S_it is done; P_{it-1} V_{it-1} may still run
        fence_accumulators(s);
        release(&k_empty[sl.stage]);
        if (it == n - 1) release(q_empty);
        softmax(s, n - 1 - it, rescale);
        wgmma_wait<0>();  // O and P belonged to that product until now
        fence_accumulators(st.o);
        fence_operands(st.p);
        release(&v_empty[prev.stage]);
        rescale_o(rescale);
        pack_p(s);
      }
      const RingSlot last = slot<kStagesN>(ring + n - 1);
      mbarrier_wait(&v_full[last.stage], last.parity);
      wgmma_fence();
      issue_pv(last.stage);
      wgmma_commit();
      wgmma_wait<0>();
      fence_accumulators(st.o);
      fence_operands(st.p);
      release(&v_empty[last.stage]);
    }
    ring += n;

    // out = O / l. Each thread summed only its own columns of P: add the quad's four partial sums.
    T* out = static_cast<T*>(p.out) + (static_cast<int64_t>(item.bh) * p.S) * D;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l_row = st.l[r];
      l_row += __shfl_xor_sync(0xffffffffu, l_row, 1);
      l_row += __shfl_xor_sync(0xffffffffu, l_row, 2);
      const float inv_l = l_row == 0.0f ? 0.0f : 1.0f / l_row;  // no visible key: 0, as the safe softmax gives
      if (my_row[r] >= p.S) continue;
      T* out_row = out + static_cast<int64_t>(my_row[r]) * D + 2 * t;
#pragma unroll
      for (int i = 0; i < D / 8; ++i)  // 4 bytes per lane; a quad writes 16 contiguous bytes
        *reinterpret_cast<uint32_t*>(out_row + 8 * i) =
            pack2<T>(st.o[4 * i + 2 * r] * inv_l, st.o[4 * i + 2 * r + 1] * inv_l);
    }
  }
  if constexpr (kTraits.pingpong)
    if (consumer == 0) named_barrier_sync(my_turn, kTurnThreads);  // the last consumer's opening arrival
#else
  __trap();  // built for another architecture: supports() keeps calls away
#endif
}

// flash_v3's kernels, one per dtype, head dim and block shape (Br queries x Bc keys), named for
// the trace; the earlier steps are instances of the template below.
#define TS_FLASH_V3_KERNEL(NAME, T, D, CONSUMERS, KEYS)                                                            \
  __global__ void __launch_bounds__(block_threads(CONSUMERS), 1)                                                    \
      NAME(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,                    \
           const __grid_constant__ CUtensorMap map_v, V3Problem p) {                                                \
    flash_fwd_v3_block<T, D, FlashV3Step::pingpong, CONSUMERS, KEYS>(&map_q, &map_k, &map_v, p);                    \
  }
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d64_192x128, __nv_bfloat16, 64, 3, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d64_192x128, __half, 64, 3, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d64_128x128, __nv_bfloat16, 64, 2, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d64_128x128, __half, 64, 2, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d128_128x128, __nv_bfloat16, 128, 2, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d128_128x128, __half, 128, 2, 128)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_bf16_d128_128x176, __nv_bfloat16, 128, 2, 176)
TS_FLASH_V3_KERNEL(ts_flash_attn_fwd_v3_f16_d128_128x176, __half, 128, 2, 176)
#undef TS_FLASH_V3_KERNEL

template <typename T, int D, FlashV3Step kStep, int kConsumersN, int kBcN>
__global__ void __launch_bounds__(block_threads(kConsumersN), 1)
    ts_flash_attn_fwd_v3_step(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                              const __grid_constant__ CUtensorMap map_v, V3Problem p) {
  flash_fwd_v3_block<T, D, kStep, kConsumersN, kBcN>(&map_q, &map_k, &map_v, p);
}

namespace {

using V3Kernel = void (*)(CUtensorMap, CUtensorMap, CUtensorMap, V3Problem);

// The kernel of (dtype, head dim, step, block shape), its shape, its shared memory, and the flag
// that records on which devices it may use that much.
struct V3Launch {
  V3Kernel kernel;
  int block_rows, threads, keys;
  size_t smem;
  std::atomic<uint64_t>* allowed;
};

template <typename T, int D, FlashV3Step kStep, int kConsumersN, int kBcN>
V3Launch launch_of() {
  static std::atomic<uint64_t> allowed;
  V3Kernel kernel = nullptr;
  if constexpr (kStep != FlashV3Step::pingpong) {
    kernel = ts_flash_attn_fwd_v3_step<T, D, kStep, kConsumersN, kBcN>;
  } else {
    constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
    if constexpr (D == 64 && kConsumersN == 3)
      kernel = bf16 ? ts_flash_attn_fwd_v3_bf16_d64_192x128 : ts_flash_attn_fwd_v3_f16_d64_192x128;
    else if constexpr (D == 64)
      kernel = bf16 ? ts_flash_attn_fwd_v3_bf16_d64_128x128 : ts_flash_attn_fwd_v3_f16_d64_128x128;
    else if constexpr (kBcN == 128)
      kernel = bf16 ? ts_flash_attn_fwd_v3_bf16_d128_128x128 : ts_flash_attn_fwd_v3_f16_d128_128x128;
    else
      kernel = bf16 ? ts_flash_attn_fwd_v3_bf16_d128_128x176 : ts_flash_attn_fwd_v3_f16_d128_128x176;
  }
  return {kernel, block_rows(kConsumersN), block_threads(kConsumersN), kBcN, smem_bytes(D, kStep, kConsumersN, kBcN),
          &allowed};
}

template <typename T, int D, int kConsumersN, int kBcN>
V3Launch launch_of(FlashV3Step step) {
  switch (step) {
    case FlashV3Step::wgmma: return launch_of<T, D, FlashV3Step::wgmma, kConsumersN, kBcN>();
    case FlashV3Step::ring: return launch_of<T, D, FlashV3Step::ring, kConsumersN, kBcN>();
    case FlashV3Step::overlap: return launch_of<T, D, FlashV3Step::overlap, kConsumersN, kBcN>();
    case FlashV3Step::pingpong: break;
  }
  return launch_of<T, D, FlashV3Step::pingpong, kConsumersN, kBcN>();
}

// The block shape of a call, as measured on the H200 (ops/attention/README.md):
//   D = 64: three consumers (192 queries; +7% at S = 4096 over two, the softmax being large next
//     to the small products) unless that pads more than 1/16 of the queries (S = 1024: 1152 rows
//     for 1024), then two (128 queries);
//   D = 128: two consumers (registers), and without the causal mask 176 keys per tile (fewer
//     iterations, each with the same fixed cost: barriers, shuffles, the wait for S), with it 128.
template <typename T>
V3Launch launch_for(int64_t D, int64_t S, bool causal, FlashV3Step step) {
  if (D == 64) {
    const int64_t padded = ceil_div(S, block_rows(3)) * block_rows(3) - S;
    if (padded * 16 <= S) return launch_of<T, 64, 3, 128>(step);
    return launch_of<T, 64, 2, 128>(step);
  }
  if (causal) return launch_of<T, 128, 2, 128>(step);
  return launch_of<T, 128, 2, 176>(step);
}

// The map of a [B, H, rows, D] input read in boxes of `box_rows` x 64; a broadcast or single
// head (batch) becomes a dim of size 1, its step returned in *head_step (*batch_step).
CUtensorMap input_map(const Tensor& x, int box_rows, int* head_step, int* batch_step, const char* what) {
  const int64_t B = x.shape()[0], H = x.shape()[1];
  const bool one_batch = B == 1 || x.strides()[0] == 0, one_head = H == 1 || x.strides()[1] == 0;
  *batch_step = one_batch ? 0 : 1;
  *head_step = one_head ? 0 : 1;
  return hopper::make_tensor_map_16bit_4d(x.data_ptr(), one_batch ? 1 : B, one_head ? 1 : H, x.shape()[2],
                                          x.shape()[3], x.strides()[0], x.strides()[1], x.strides()[2], box_rows,
                                          kPanel, what);
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

bool sdpa_cuda_flash_v3_supports(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs&,
                                 std::string* why) {
  if (!flash_common_supports("flash_v3", q, k, v, why)) return false;
  if (!flash_tensor_core_supports("flash_v3", "TMA", q, k, v, why)) return false;
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
  V3Problem p;
  p.BH = static_cast<int>(fp.B * fp.H);
  p.q_blocks = static_cast<int>(q_blocks);
  p.S = static_cast<int>(fp.S);
  p.L = static_cast<int>(fp.L);
  p.H = static_cast<int>(fp.H);
  p.scale_log2 = std::fabs(fp.scale) * 1.4426950408889634f;  // exp(x * scale) = exp2(x * scale * log2(e))
  p.negate = fp.scale < 0;
  p.causal = fp.causal;
  p.out = out.data_ptr();
  const CUtensorMap map_q = input_map(q, l.block_rows, &p.q_head_step, &p.q_batch_step, "sdpa flash_v3 (q)");
  // L = 0: no key is ever loaded, and a map of zero rows does not exist: q's stands in.
  const CUtensorMap map_k = fp.L > 0 ? input_map(k, l.keys, &p.k_head_step, &p.k_batch_step, "sdpa flash_v3 (k)") : map_q;
  const CUtensorMap map_v = fp.L > 0 ? input_map(v, l.keys, &p.v_head_step, &p.v_batch_step, "sdpa flash_v3 (v)") : map_q;
  allow_smem(l.kernel, l.smem, q.device().index, *l.allowed);
  // A persistent grid: one block per SM (one fits), each looping over its share of the work.
  const int64_t blocks = std::min<int64_t>(works, hopper::properties(q.device().index).multiprocessors);
  launch_with_smem(l.kernel, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(l.threads)), l.smem,
                   map_q, map_k, map_v, p);
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
