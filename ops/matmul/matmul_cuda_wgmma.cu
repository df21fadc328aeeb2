// ops/matmul/matmul_cuda_wgmma.cu: rung 5 of mm, bmm and addmm, and rung 1 of linear_geglu:
// Hopper's own GEMM path (sm_90a). The instructions it uses are explained once, in
// ops/cuda_hopper.cuh.
//
// What changed from rung 4 (matmul_cuda_mma.cu, mma.sync):
//   - the copies: no thread computes an address or issues a load. One producer thread asks the
//     TMA engine for whole tiles (A 128 x 64, B 64 x 256) that land in shared memory already
//     swizzled, zero-filled past the matrix's edges, and counted by an mbarrier;
//   - the math: wgmma.mma_async, one instruction per 64 x 256 x 16 block per warpgroup, reads A
//     and B from shared memory itself (no ldmatrix, no fragments in registers) and runs
//     asynchronously: a consumer issues a stage's four wgmmas, then waits only for the stage
//     before it, and gives that stage back to the producer;
//   - warp specialization: warpgroup 0 is the producer (one thread issues the TMA loads, the
//     rest idle), warpgroups 1 and 2 are consumers with 128 f32 accumulators per thread;
//     setmaxnreg moves registers from the producer (40 per thread) to the consumers (232);
//   - two schedules of the consumers (Schedule): cooperative, both on one 128 x 256 output tile,
//     64 rows each, or ping-pong, each on 128 x 128 tiles of its own, the block's tiles taken in
//     turn, so that one consumer's epilogue runs while the other multiplies;
//   - a ring of shared-memory stages (as many as fit beside the staged output: 3 of 48 KiB
//     cooperative, 5 of 32 KiB ping-pong, one more each for the GeGLU): the producer runs ahead
//     by that many k-steps, across tile boundaries, so the next tile's loads overlap this tile's
//     epilogue;
//   - the epilogue leaves through TMA too: each consumer writes its rows into shared memory
//     in the store's swizzled layout, one thread hands them to the copy engine, and the
//     warpgroup starts its next tile while they are written (rows that break TMA's 16-byte rule
//     are stored from registers instead);
//   - a persistent grid: one block per SM loops over output tiles, in groups of 16 tile rows that
//     walk their tile columns together (the tiles in flight share their A rows and B columns in
//     L2).
// The roles, in the order a reader meets them below:
//   Tiling             the tile, ring and staging sizes of a schedule and an epilogue
//   WgmmaShared        the block's shared memory: the ring of A and B stages, their full and empty
//                      mbarriers, and the staged output tiles; RingSlot, a place in the ring
//   TileScheduler      which output tile a block (or a ping-pong consumer) does next (the grouped,
//                      persistent order)
//   produce            the producer's one thread: every TMA load of the block
//   Turns              the ping-pong's order: which consumer issues its products next
//   Consumer           a consumer warpgroup: mainloop (a tile's wgmmas over its k-steps, stages
//                      given back), the epilogues' values (linear_pair, geglu_pair), and the two
//                      ways out (store_tma, store_registers)
//   gemm_wgmma_kernel  the block: barriers, then warpgroup 0 produces and warpgroups 1, 2 consume
// The GeGLU epilogue (linear_geglu): B's rows are kBN / 2 rows of the gate half of the weight and
//   the same rows of the up half, so every thread holds gate and up for the same outputs (the
//   accumulators of columns c and kBN / 2 + c) and writes gelu_tanh(gate) * up: a 128 x 128 tile
//   of the activation (128 x 64 ping-pong), the [tokens, 2*hidden] product never reaching memory.
// Supports: bf16, f16 on a compute capability 9.0 GPU; A with unit column stride, B either with
//   unit column stride ([K, N] rows) or unit row stride (a t() view: K contiguous); rows and
//   batches 16-byte aligned (strides multiples of 8 elements, TMA's rule); any M, N, K > 0.
// Cost:  2*M*N*K FLOPs; A is read N/256 times (N/128 ping-pong) and B M/128 times from L2, once
//   from memory at best.
// Try:   TS_VARIANT=mm/cuda/wgmma ./build/dev/ts_tests -tc='cuda*'   ts_ladder --op mm
#include <cuda.h>

#include <cstdint>

#include "ops/cuda_common.cuh"
#include "ops/cuda_hopper.cuh"
#include "ops/elementwise/gelu_math.h"
#include "ops/matmul/matmul.h"
#include "ops/matmul/matmul_cuda.h"

namespace ts {

namespace {

constexpr int kBK = 64;  // k per stage: one 128-byte swizzle row of 16-bit values
constexpr int kConsumers = 2;
constexpr int kThreadsWg = 128 * (1 + kConsumers);
[[maybe_unused]] constexpr int kGroupM = 16;  // tile rows per group of the tile order
constexpr size_t kSmemLimit = 227 * 1024;     // an H100/H200 block's shared memory

enum class Epilogue { linear, geglu };

// How the two consumer warpgroups share the output (WgmmaSchedule without `automatic`).
//   cooperative: both on one 128 x 256 tile, 64 rows each (one m64n256k16 per 16 k). Their
//     epilogues run at the same time, and while they do the tensor cores wait.
//   pingpong: each on a 128 x 128 tile of its own (two m64n128k16 per 16 k), the block's tiles
//     taken in turn. The producer fills the ring in tile order, so one consumer's main loop runs
//     while the other stores its tile and waits for its next one: the epilogues hide under the
//     other's multiplies, at the cost of a smaller tile (more loads per FLOP from L2).
enum class Schedule { cooperative, pingpong };

// The shapes a schedule and an epilogue imply.
template <Schedule kSched, Epilogue kEpi>
struct Tiling {
  static constexpr bool kPingPong = kSched == Schedule::pingpong;
  static constexpr int kBM = 128;                  // output tile rows
  static constexpr int kBN = kPingPong ? 128 : 256;  // B rows (K-major) or columns (MN-major) per tile: the wgmma's N
  static constexpr int kOutCols = kEpi == Epilogue::geglu ? kBN / 2 : kBN;  // output columns per tile
  static constexpr int kConsumerRows = kPingPong ? kBM : kBM / kConsumers;  // a consumer's rows of its tile
  static constexpr int kMBlocks = kConsumerRows / 64;                      // its m64 wgmmas per 16 k
  static constexpr int kReaders = kPingPong ? 1 : kConsumers;              // consumers reading each stage
  static constexpr uint32_t kBytesA = kBM * kBK * 2;                       // 16 KiB
  static constexpr uint32_t kBytesB = kBN * kBK * 2;                       // 32 or 16 KiB
  // The output staged for its TMA store: each consumer's rows of its tile, as boxes of 64 x 64.
  static constexpr uint32_t kBytesOut = kConsumers * kConsumerRows * kOutCols * 2;
  // As many stages as fit beside it, the barriers and 1 KiB to align everything to 1024 bytes (the
  // 128-byte swizzle's period): cooperative 3 (4 for the GeGLU's half-width output), ping-pong 5 (6).
  static constexpr int kStages = static_cast<int>((kSmemLimit - kBytesOut - 1024 - 256) / (kBytesA + kBytesB));
  static constexpr size_t kSmemBytes =
      kStages * (kBytesA + kBytesB) + kBytesOut + 2 * kStages * sizeof(uint64_t) + 1024;
  static_assert(kSmemBytes <= kSmemLimit, "the ring, the staged output and the barriers fit a block");
};

struct WgmmaProblem {
  int M = 0, N = 0, K = 0, batches = 1;  // N: output columns (hidden for the GeGLU epilogue)
  int tiles_m = 0, tiles_n = 0;
  int up_row = 0;          // GeGLU: the weight row where the up half starts
  bool tma_store = false;  // the output's rows are 16-byte aligned: tiles leave through TMA
  void* out = nullptr;
  int64_t out_batch = 0, out_row = 0;
  const void* c = nullptr;  // addmm's C (broadcast strides), or nullptr
  int64_t c_batch = 0, c_row = 0, c_col = 0;
  bool c_pairs = false;  // C's columns are contiguous and its rows 4-byte aligned: two read at once
  float alpha = 1, beta = 0;
};

// ---- WgmmaShared: the block's shared memory --------------------------------------------------

// The ring of stages and their mbarriers, and the staged output. full: TMA -> consumers, the
// stage's A and B have landed (the producer's arrive_expect_tx and the bytes); empty: consumers ->
// producer, done reading it (lane 0 of every warp of the consumers that read it).
template <typename T, Schedule kSched, Epilogue kEpi>
struct WgmmaShared {
  using Tile = Tiling<kSched, kEpi>;
  static constexpr int kStages = Tile::kStages;
  T* ring_a;        // [kStages][kBM rows][kBK]
  T* ring_b;        // [kStages][kBN x kBK]
  T* staged_out;    // [kConsumers][boxes][64][64]
  uint64_t* full;   // [kStages]
  uint64_t* empty;  // [kStages]

  __device__ __forceinline__ explicit WgmmaShared(uint8_t* raw) {
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t{1023});
    ring_a = reinterpret_cast<T*>(smem);
    ring_b = reinterpret_cast<T*>(smem + kStages * Tile::kBytesA);
    staged_out = reinterpret_cast<T*>(smem + kStages * (Tile::kBytesA + Tile::kBytesB));
    full = reinterpret_cast<uint64_t*>(smem + kStages * (Tile::kBytesA + Tile::kBytesB) + Tile::kBytesOut);
    empty = full + kStages;
  }
  // One thread, before the block's __syncthreads.
  __device__ __forceinline__ void init_barriers() const {
    for (int s = 0; s < kStages; ++s) {
      hopper::mbarrier_init(&full[s], 1);                     // the producer's arrive_expect_tx (+ the bytes)
      hopper::mbarrier_init(&empty[s], Tile::kReaders * 4);  // lane 0 of every warp that reads it
    }
    hopper::fence_barrier_init();
  }
  __device__ __forceinline__ T* stage_a(int stage) const { return ring_a + stage * Tile::kBM * kBK; }
  __device__ __forceinline__ T* stage_b(int stage) const { return ring_b + stage * Tile::kBN * kBK; }
};

// A position in the ring: the stage and the parity of its current pass (0, 1, 0, ...). The
// producer and the consumers each keep one and move it the same way.
template <int kStages>
struct RingSlot {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void next() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
  __device__ __forceinline__ void skip(int steps) {  // `steps` k-steps another consumer reads
    const int to = stage + steps;
    stage = to % kStages;
    phase ^= static_cast<uint32_t>(to / kStages) & 1;
  }
};

// ---- TileScheduler: which output tile a block does next ----------------------------------------

struct TileOrigin {
  int batch, m0, n0;  // the tile's batch, first row and first output column
};

// A block takes tiles blockIdx.x, blockIdx.x + gridDim.x, ... of one order (a persistent grid).
// Within a batch the order goes by groups of kGroupM tile rows (the last group may be shorter),
// each group a tile column at a time, down that column's rows: the tiles in flight at once, one
// per SM, share their A rows and B columns in L2. The producer and each consumer walk their own
// copy: the producer every tile of the block, a cooperative consumer the same, a ping-pong
// consumer every other one (its turns).
template <Schedule kSched, Epilogue kEpi>
struct TileScheduler {
  using Tile = Tiling<kSched, kEpi>;
  int tiles_m, tiles_n;  // tiles per column and per row of one batch
  int tiles;             // in all batches
  int tile = 0;          // this block's current tile
  int stride = 0;        // to the next one this walker takes

  __device__ __forceinline__ explicit TileScheduler(const WgmmaProblem& problem)
      : tiles_m(problem.tiles_m),
        tiles_n(problem.tiles_n),
        tiles(problem.tiles_m * problem.tiles_n * problem.batches) {}
  // The block's tiles from its `first`-th, then every `every`-th: (0, 1) all of them.
  __device__ __forceinline__ void start(int first, int every) {
    tile = blockIdx.x + first * gridDim.x;
    stride = every * gridDim.x;
  }
  __device__ __forceinline__ bool has_tile() const { return tile < tiles; }
  __device__ __forceinline__ void advance() { tile += stride; }
  __device__ __forceinline__ TileOrigin origin() const {
    const int per_batch = tiles_m * tiles_n;
    TileOrigin at;
    at.batch = tile / per_batch;
    const int in_batch = tile % per_batch;
    const int group = in_batch / (kGroupM * tiles_n);
    const int first_m = group * kGroupM;
    const int rows_in_group = min(tiles_m - first_m, kGroupM);
    const int in_group = in_batch % (kGroupM * tiles_n);
    at.m0 = (first_m + in_group % rows_in_group) * Tile::kBM;
    at.n0 = (in_group / rows_in_group) * Tile::kOutCols;
    return at;
  }
};

// ---- produce: the producer warpgroup's one thread ----------------------------------------------

// Every load of the block, in the order the consumers read them: for each tile and k-step, wait
// until the consumers gave the next stage back, announce its bytes on its full barrier, and ask
// the TMA engine for the k-step's A (128 x 64) and B (64 x kBN).
template <typename T, bool kBKMajor, Schedule kSched, Epilogue kEpi>
__device__ __forceinline__ void produce(const WgmmaShared<T, kSched, kEpi>& sh, TileScheduler<kSched, kEpi> sched,
                                        const WgmmaProblem& problem, int k_steps, const CUtensorMap* map_a,
                                        const CUtensorMap* map_b) {
  using namespace hopper;
  using Tile = Tiling<kSched, kEpi>;
  RingSlot<Tile::kStages> slot;  // the next stage to fill
  for (sched.start(0, 1); sched.has_tile(); sched.advance()) {
    const TileOrigin at = sched.origin();
    for (int ks = 0; ks < k_steps; ++ks) {
      uint64_t* full = &sh.full[slot.stage];
      mbarrier_wait(&sh.empty[slot.stage], slot.phase ^ 1);  // the consumers gave this stage back
      mbarrier_arrive_expect_tx(full, Tile::kBytesA + Tile::kBytesB);
      const int k0 = ks * kBK;
      tma_load_3d(sh.stage_a(slot.stage), map_a, full, k0, at.m0, at.batch);
      T* tile_b = sh.stage_b(slot.stage);
      if constexpr (kBKMajor) {  // two boxes of kBN / 2 B rows (n) x 64 k
        const int second = kEpi == Epilogue::geglu ? problem.up_row + at.n0 : at.n0 + Tile::kBN / 2;
        tma_load_3d(tile_b, map_b, full, k0, at.n0, at.batch);
        tma_load_3d(tile_b + (Tile::kBN / 2) * kBK, map_b, full, k0, second, at.batch);
      } else {  // boxes of 64 k rows x 64 n columns, side by side in n
#pragma unroll
        for (int j = 0; j < Tile::kBN / 64; ++j)
          tma_load_3d(tile_b + j * kBK * 64, map_b, full, at.n0 + 64 * j, k0, at.batch);
      }
      slot.next();
    }
  }
}

// ---- Turns: the ping-pong's order ---------------------------------------------------------------

// Tile j of a block is ping-pong consumer j % 2's, and its products are issued only once tile
// j - 1's all were: named barrier 3 + c is consumer c's turn, opened by the other consumer when it
// has issued its tile's last k-step (consumer 1 opens consumer 0's first turn at the start). Beside
// keeping one consumer's products on the tensor cores at a time, the order keeps a consumer from
// waiting on a stage more than one pass ahead of the producer: an mbarrier wait knows a pass only by
// its parity, so a wait for pass w returns at once while the barrier is still in pass w - 1.
struct Turns {
  static constexpr uint32_t kThreads = 2 * 128;  // one consumer syncs, the other arrives
  int consumer;
  __device__ __forceinline__ void start() const {
    if (consumer == 1) hopper::named_barrier_arrive(3, kThreads);
  }
  __device__ __forceinline__ void wait_mine() const { hopper::named_barrier_sync(3 + consumer, kThreads); }
  __device__ __forceinline__ void pass() const { hopper::named_barrier_arrive(3 + (1 - consumer), kThreads); }
};

// ---- Consumer: a consumer warpgroup's main loop and epilogues ----------------------------------

// Two 16-bit outputs at out[0] and out[1] (columns col and col + 1 of N), those inside the matrix.
template <typename T>
__device__ __forceinline__ void store_pair(T* out, int col, int N, float v0, float v1) {
  if (col + 1 < N && (N % 2) == 0) {  // two 16-bit values in one aligned 32-bit store
    *reinterpret_cast<uint32_t*>(out) = pack2<T>(v0, v1);
  } else {
    if (col < N) out[0] = from_float<T>(v0);
    if (col + 1 < N) out[1] = from_float<T>(v1);
  }
}

// Consumer `index` (warpgroup 1 + index) computes kConsumerRows rows of each of its tiles: rows
// 64 * index .. 64 * index + 63 of the block's tile (cooperative), or all 128 of its own tile
// (ping-pong, as two blocks of 64). Its accumulators d[mb][...] hold row block mb (rows 64 * mb ..
// of its part): thread (warp, lane) has rows warp*16 + lane_row (half 0) and + 8 (half 1) of the
// block, columns 8i + 2 * lane_col and 8i + 2 * lane_col + 1 in d[mb][4i + 2 * half] and
// d[mb][4i + 2 * half + 1].
template <typename T, bool kBKMajor, Schedule kSched, Epilogue kEpi>
struct Consumer {
  using Tile = Tiling<kSched, kEpi>;
  static constexpr int kPairs = Tile::kOutCols / 8;  // output pairs per row and block: 32, 16 or 8
  static constexpr int kAcc = Tile::kBN / 2;         // accumulators per row block: 128 or 64
  using Accumulators = float[Tile::kMBlocks][kAcc];

  const WgmmaShared<T, kSched, kEpi>& sh;
  const WgmmaProblem& problem;
  int index;               // which consumer
  int first_row;           // its first row within a tile: 64 * index (cooperative), 0 (ping-pong)
  int warp, lane;          // within the warpgroup
  int lane_row, lane_col;  // lane / 4 (the row within 8), lane % 4 (the column pair within 8)
  RingSlot<Tile::kStages> slot;  // the next stage to read: the one the producer filled in the same order

  __device__ __forceinline__ Consumer(const WgmmaShared<T, kSched, kEpi>& shared, const WgmmaProblem& prob,
                                      int consumer)
      : sh(shared), problem(prob), index(consumer) {
    first_row = Tile::kPingPong ? 0 : 64 * index;
    warp = (threadIdx.x / 32) % 4;
    lane = threadIdx.x % 32;
    lane_row = lane / 4;
    lane_col = lane % 4;
  }

  // Hands stage `done` back to the producer (-1: none yet): lane 0 of each warp arrives.
  __device__ __forceinline__ void give_back(int done) const {
    if (done >= 0 && lane == 0) hopper::mbarrier_arrive(&sh.empty[done]);
  }
  // Ping-pong: past the stages of the other consumer's tile, which come next in the ring.
  __device__ __forceinline__ void skip_turn(int k_steps) { slot.skip((kConsumers - 1) * k_steps); }

  __device__ __forceinline__ void fence(Accumulators& d) const {
#pragma unroll
    for (int mb = 0; mb < Tile::kMBlocks; ++mb) hopper::fence_accumulators(d[mb]);
  }

  // One tile's k-loop: d = this consumer's rows of A times B. Each k-step's wgmmas are one group;
  // waiting until at most that group is in flight means the previous stage's group is done and
  // that stage can go back to the producer while this one multiplies. `issued()` runs once the
  // last k-step's products are issued (the ping-pong passes the turn there).
  template <typename Issued>
  __device__ __forceinline__ void mainloop(Accumulators& d, int k_steps, Issued issued) {
    using namespace hopper;
#pragma unroll
    for (int mb = 0; mb < Tile::kMBlocks; ++mb)
#pragma unroll
      for (int i = 0; i < kAcc; ++i) d[mb][i] = 0.0f;
    fence(d);  // the zeros are written before the first wgmma_fence, not moved past it
    int previous = -1;
    for (int ks = 0; ks < k_steps; ++ks) {
      mbarrier_wait(&sh.full[slot.stage], slot.phase);  // this stage's A and B have landed
      const T* a = sh.stage_a(slot.stage) + first_row * kBK;
      const T* bt = sh.stage_b(slot.stage);
      wgmma_fence();
#pragma unroll
      for (int k = 0; k < kBK / 16; ++k) {
        // k advances 16 elements: 32 bytes along a K-major row (the swizzle is applied by the
        // hardware on the final address), or 16 rows of 128 bytes of the MN-major tile.
        const uint64_t desc_b = kBKMajor ? smem_descriptor(bt + 16 * k, 16, 1024)
                                         : smem_descriptor(bt + 16 * k * 64, kBK * 128, 1024);
#pragma unroll
        for (int mb = 0; mb < Tile::kMBlocks; ++mb) {
          const uint64_t desc_a = smem_descriptor(a + mb * 64 * kBK + 16 * k, 16, 1024);
          constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
          wgmma_m64nNk16_ss<kBf16, Tile::kBN, kBKMajor ? 0 : 1>(d[mb], desc_a, desc_b, 1);
        }
      }
      wgmma_commit();
      fence(d);
      wgmma_wait<1>();  // the previous stage's group is done: give its buffers back
      give_back(previous);
      previous = slot.stage;
      slot.next();
    }
    issued();
    wgmma_wait<0>();
    give_back(previous);
    fence(d);
  }

  // The linear epilogue (mm, bmm, addmm): alpha * (A B) + beta * C at output (row, col), C read
  // only where there is one and inside the matrix, two columns at once where they are contiguous
  // (a bias row).
  __device__ __forceinline__ float2 linear_pair(const float (&d)[kAcc], const TileOrigin& at, int half, int i,
                                                int row, int col) const {
    float v0 = problem.alpha * d[4 * i + 2 * half];
    float v1 = problem.alpha * d[4 * i + 2 * half + 1];
    if (problem.c != nullptr && row < problem.M) {
      const T* c_of_row = static_cast<const T*>(problem.c) + at.batch * problem.c_batch + row * problem.c_row;
      if (problem.c_pairs && col + 1 < problem.N) {  // col is even: the pair is 4-byte aligned
        const float2 c = unpack2<T>(*reinterpret_cast<const uint32_t*>(c_of_row + col));
        v0 += problem.beta * c.x;
        v1 += problem.beta * c.y;
      } else {
        if (col < problem.N) v0 += problem.beta * to_float(c_of_row[col * problem.c_col]);
        if (col + 1 < problem.N) v1 += problem.beta * to_float(c_of_row[(col + 1) * problem.c_col]);
      }
    }
    return make_float2(v0, v1);
  }
  // The GeGLU epilogue (linear_geglu): gelu_tanh(gate) * up, the gate in accumulator pair i and
  // the up in pair i + kPairs (kOutCols columns on).
  __device__ __forceinline__ float2 geglu_pair(const float (&d)[kAcc], int half, int i) const {
    return make_float2(gelu_tanh_fast_f32(d[4 * i + 2 * half]) * d[4 * (i + kPairs) + 2 * half],
                       gelu_tanh_fast_f32(d[4 * i + 2 * half + 1]) * d[4 * (i + kPairs) + 2 * half + 1]);
  }
  // The two output values of accumulator pair (half, i) of a row block, at output (row, col).
  __device__ __forceinline__ float2 value_pair(const float (&d)[kAcc], const TileOrigin& at, int half, int i, int row,
                                               int col) const {
    if constexpr (kEpi == Epilogue::geglu) {
      return geglu_pair(d, half, i);
    } else {
      return linear_pair(d, at, half, i, row, col);
    }
  }

  // Registers -> this consumer's staging (the TMA store's swizzled boxes of 64 x 64) -> one thread
  // hands the boxes to the copy engine and the warpgroup goes on to its next tile while they are
  // written out.
  __device__ __forceinline__ void store_tma(const Accumulators& d, const CUtensorMap* map_out,
                                            const TileOrigin& at) const {
    using namespace hopper;
    constexpr int kBoxesPerRow = Tile::kOutCols / 64;
    T* staged = sh.staged_out + index * Tile::kConsumerRows * Tile::kOutCols;
    const bool leader = threadIdx.x % 128 == 0;
    if (leader) tma_store_wait_read();   // the previous tile's boxes have left
    named_barrier_sync(1 + index, 128);  // ... and everyone knows it
#pragma unroll
    for (int mb = 0; mb < Tile::kMBlocks; ++mb)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = warp * 16 + lane_row + 8 * half;  // row within the block of 64
#pragma unroll
        for (int i = 0; i < kPairs; ++i) {
          const float2 v =
              value_pair(d[mb], at, half, i, at.m0 + first_row + 64 * mb + r, at.n0 + 8 * i + 2 * lane_col);
          // Box (mb, i / 8), 16-byte chunk i % 8 of row r, swizzled as the tensor map reads it.
          const int offset = (mb * kBoxesPerRow + i / 8) * 64 * 64 + r * 64 + (((i % 8) ^ (r % 8)) * 8) + 2 * lane_col;
          *reinterpret_cast<uint32_t*>(staged + offset) = pack2<T>(v.x, v.y);
        }
      }
    fence_proxy_async_shared();          // the generic-proxy writes above, before the copy engine reads
    named_barrier_sync(1 + index, 128);  // every thread's part is written
    if (leader) {
#pragma unroll
      for (int mb = 0; mb < Tile::kMBlocks; ++mb) {
        const int row = at.m0 + first_row + 64 * mb;
        if (row < problem.M)
#pragma unroll
          for (int box = 0; box < kBoxesPerRow; ++box)
            if (at.n0 + 64 * box < problem.N)
              tma_store_3d(map_out, staged + (mb * kBoxesPerRow + box) * 64 * 64, at.n0 + 64 * box, row, at.batch);
      }
      tma_store_commit();
    }
  }

  // Rows whose length breaks TMA's 16-byte rule: registers -> global, 2 columns per store.
  __device__ __forceinline__ void store_registers(const Accumulators& d, const TileOrigin& at) const {
    T* out = static_cast<T*>(problem.out) + at.batch * problem.out_batch;
#pragma unroll
    for (int mb = 0; mb < Tile::kMBlocks; ++mb)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = at.m0 + first_row + 64 * mb + warp * 16 + lane_row + 8 * half;
        if (row >= problem.M) continue;
#pragma unroll
        for (int i = 0; i < kPairs; ++i) {
          const int col = at.n0 + 8 * i + 2 * lane_col;
          const float2 v = value_pair(d[mb], at, half, i, row, col);
          store_pair(out + row * problem.out_row + col, col, problem.N, v.x, v.y);
        }
      }
  }
};

// ---- the kernel ----------------------------------------------------------------------------------

// One block per SM (fewer when there are fewer tiles), looping over output tiles. Warpgroup 0 is
// the producer (one thread of it issues every load); warpgroups 1 and 2 are the consumers: 64 of
// each tile's 128 rows each (cooperative), or every other tile of the block each (ping-pong).
template <typename T, bool kBKMajor, Schedule kSched, Epilogue kEpi>
__global__ void __launch_bounds__(kThreadsWg, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      const __grid_constant__ CUtensorMap map_out, WgmmaProblem problem) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tile = Tiling<kSched, kEpi>;
  extern __shared__ uint8_t smem_raw[];
  const WgmmaShared<T, kSched, kEpi> sh(smem_raw);
  if (threadIdx.x == 0) sh.init_barriers();
  __syncthreads();
  const int warpgroup = threadIdx.x / 128;
  const int k_steps = (problem.K + kBK - 1) / kBK;
  TileScheduler<kSched, kEpi> sched(problem);
  if (warpgroup == 0) {
    hopper::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) produce<T, kBKMajor>(sh, sched, problem, k_steps, &map_a, &map_b);
  } else {
    hopper::setmaxnreg_inc<232>();
    // The consumers' tile loop reads `problem` as the kernel's own parameter, which no store can
    // change: the compiler keeps its fields out of the loop and specializes the epilogue on C.
    const int index = warpgroup - 1;
    Consumer<T, kBKMajor, kSched, kEpi> consumer(sh, problem, index);
    typename Consumer<T, kBKMajor, kSched, kEpi>::Accumulators d;  // 128 f32 per thread
    auto epilogue = [&](const TileOrigin& at) {
      if (problem.tma_store) {
        consumer.store_tma(d, &map_out, at);
      } else {
        consumer.store_registers(d, at);
      }
    };
    if constexpr (Tile::kPingPong) {
      // The block's tiles j = index, index + 2, ...; after them, the turn that follows the block's
      // last tile (j == tiles of the block) is taken and left, so that every opening is taken.
      const Turns turns{index};
      const int grid = static_cast<int>(gridDim.x);
      const int block_tiles = (sched.tiles - static_cast<int>(blockIdx.x) + grid - 1) / grid;
      consumer.slot.skip(index * k_steps);  // consumer 1's first tile is the block's second
      turns.start();
      sched.start(index, kConsumers);
      for (int j = index; j <= block_tiles; j += kConsumers, sched.advance()) {
        turns.wait_mine();  // tile j - 1's products are all issued
        if (j == block_tiles) break;
        const TileOrigin at = sched.origin();
        consumer.mainloop(d, k_steps, [&] { turns.pass(); });
        consumer.skip_turn(k_steps);
        epilogue(at);
      }
    } else {
      for (sched.start(0, 1); sched.has_tile(); sched.advance()) {
        const TileOrigin at = sched.origin();
        consumer.mainloop(d, k_steps, [] {});
        epilogue(at);
      }
    }
    if (problem.tma_store && threadIdx.x % 128 == 0) hopper::tma_store_wait_read();  // shared memory outlives the reads
  }
#else
  __trap();  // built for another architecture: supports() keeps calls away
#endif
}

// ---- host ------------------------------------------------------------------------------------

template <typename T, bool kBKMajor, Schedule kSched, Epilogue kEpi>
void launch_wgmma_typed(const GemmProblem& g, WgmmaProblem problem, int device, const char* what) {
  using Tile = Tiling<kSched, kEpi>;
  problem.tiles_m = static_cast<int>(ceil_div(g.M, Tile::kBM));
  problem.tiles_n = static_cast<int>(ceil_div(g.N, Tile::kOutCols));
  // A: (batch, M rows, K cols); B: K-major (batch, N rows, K cols) or MN-major (batch, K rows, N cols).
  using hopper::tensor_map_spec_16bit;
  const CUtensorMap map_a =
      hopper::make_tensor_map(tensor_map_spec_16bit(g.a, g.batch, g.M, g.K, g.a_row, g.a_batch, Tile::kBM, kBK, what));
  const int64_t b_rows = kEpi == Epilogue::geglu ? 2 * g.N : g.N;
  const CUtensorMap map_b = hopper::make_tensor_map(
      kBKMajor ? tensor_map_spec_16bit(g.b, g.batch, b_rows, g.K, g.b_col, g.b_batch, Tile::kBN / 2, kBK, what)
               : tensor_map_spec_16bit(g.b, g.batch, g.K, g.N, g.b_row, g.b_batch, kBK, 64, what));
  auto kernel = gemm_wgmma_kernel<T, kBKMajor, kSched, kEpi>;
  static std::atomic<uint64_t> allowed;  // devices this instance may use its shared memory on
  allow_smem(kernel, Tile::kSmemBytes, device, allowed);
  const int sms = hopper::properties(device).multiprocessors;
  const int tiles = problem.tiles_m * problem.tiles_n * problem.batches;
  // The output in boxes of 64 x 64; when its rows break TMA's alignment rule the kernel stores
  // from registers and this map (of A, a valid stand-in) is never used.
  const CUtensorMap map_out =
      problem.tma_store ? hopper::make_tensor_map(
                              tensor_map_spec_16bit(g.out, g.batch, g.M, g.N, g.out_row, g.out_batch, 64, 64, what))
                        : map_a;
  launch_with_smem(kernel, dim3(static_cast<unsigned>(std::min(tiles, sms))), dim3(kThreadsWg), Tile::kSmemBytes,
                   map_a, map_b, map_out, problem);
}

// The schedule of a call: the one a WgmmaScheduleOverride names, else cooperative (ping-pong
// measured slower at every size tried: ops/matmul/README.md).
Schedule schedule_of() {
  return wgmma_schedule_override() == WgmmaSchedule::pingpong ? Schedule::pingpong : Schedule::cooperative;
}

template <Epilogue kEpi>
void launch_wgmma(const GemmProblem& g, const Tensor& out, const char* what) {
  std::string why;  // dispatch asked already; a direct call must not reach a GPU without the code
  TS_CHECK(gpu_meets(sm90a, out.device(), &why), "{}: {}", what, why);
  WgmmaProblem problem;
  problem.M = static_cast<int>(g.M);
  problem.N = static_cast<int>(g.N);
  problem.K = static_cast<int>(g.K);
  problem.batches = static_cast<int>(g.batch);
  problem.up_row = static_cast<int>(g.N);
  problem.tma_store = reinterpret_cast<uintptr_t>(g.out) % 16 == 0 && (g.out_row * 2) % 16 == 0 &&
                      (g.batch == 1 || (g.out_batch * 2) % 16 == 0);
  problem.out = g.out;
  problem.out_batch = g.out_batch;
  problem.out_row = g.out_row;
  problem.c = g.c;
  problem.c_batch = 0;
  problem.c_row = g.c_row;
  problem.c_col = g.c_col;
  problem.c_pairs = g.c != nullptr && g.c_col == 1 && reinterpret_cast<uintptr_t>(g.c) % 4 == 0 && g.c_row % 2 == 0;
  problem.alpha = g.alpha;
  problem.beta = g.beta;
  const bool k_major = g.b_row == 1;
  const Schedule schedule = schedule_of();
  auto go = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int device = out.device().index;
    if (k_major) {
      if (schedule == Schedule::pingpong) {
        launch_wgmma_typed<T, true, Schedule::pingpong, kEpi>(g, problem, device, what);
      } else {
        launch_wgmma_typed<T, true, Schedule::cooperative, kEpi>(g, problem, device, what);
      }
    } else if constexpr (kEpi == Epilogue::linear) {
      if (schedule == Schedule::pingpong) {
        launch_wgmma_typed<T, false, Schedule::pingpong, kEpi>(g, problem, device, what);
      } else {
        launch_wgmma_typed<T, false, Schedule::cooperative, kEpi>(g, problem, device, what);
      }
    }
  };
  if (out.dtype() == DType::bf16) {
    go(TypeTag<__nv_bfloat16>{});
  } else {
    go(TypeTag<__half>{});
  }
}

// linear_geglu's GEMM: A = x folded to [rows, D] (x 2-D, or contiguous), B = W^T [D, 2H]; N is
// the output's width, H (the kernel reads B's columns n and H + n together).
GemmProblem geglu_problem(const Tensor& x, const Tensor& w) {
  GemmProblem g;
  g.K = x.shape()[x.dim() - 1];
  g.M = g.K == 0 ? 0 : x.numel() / g.K;
  g.N = w.shape()[0] / 2;
  g.a = x.data_ptr();
  g.a_row = x.dim() == 2 ? x.strides()[0] : g.K;
  g.a_col = x.strides()[x.dim() - 1];
  g.b = w.data_ptr();
  g.b_row = w.strides()[1];  // B's k step is W's column step
  g.b_col = w.strides()[0];
  return g;
}

}  // namespace

bool gemm_cuda_wgmma_supports(const OpCall& call, std::string* why) {
  return tensor_core_gemm_supports(call, "wgmma", why);  // the GPU: the rung row's sm90a
}

void mm_cuda_wgmma(const Tensor& a, const Tensor& b, Tensor& out) {
  launch_wgmma<Epilogue::linear>(gemm_problem(a, b, nullptr, 0, 1, out), out, "mm/cuda/wgmma");
}
void bmm_cuda_wgmma(const Tensor& a, const Tensor& b, Tensor& out) {
  launch_wgmma<Epilogue::linear>(gemm_problem(a, b, nullptr, 0, 1, out), out, "bmm/cuda/wgmma");
}
void addmm_cuda_wgmma(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out) {
  launch_wgmma<Epilogue::linear>(gemm_problem(a, b, &c, attrs.beta, attrs.alpha, out), out, "addmm/cuda/wgmma");
}

// x [*, D] (its leading dims fold into rows), weight [2H, D]: out [*, H] = gelu_tanh(x W[:H]^T) * (x W[H:]^T).
bool linear_geglu_cuda_wgmma_supports(const OpCall& call, std::string* why) {
  const Tensor& x = call.input(0);
  const Tensor& w = call.input(1);
  if (x.dtype() != DType::bf16 && x.dtype() != DType::f16) {
    if (why) *why = fmt::format("wgmma here takes bf16 or f16 operands, got {}", dtype_short_name(x.dtype()));
    return false;
  }
  if (x.dim() != 2 && !x.is_contiguous()) {
    if (why) *why = fmt::format("x of shape {} must be 2-D or contiguous (its leading dims fold into rows)", x.shape());
    return false;
  }
  // The rules of a GEMM of x [rows, D] by W^T [D, 2H], with W's rows K-contiguous.
  const GemmProblem g = geglu_problem(x, w);
  if (!tensor_core_operands_ok(g, why)) return false;
  if (g.b_row != 1) {
    if (why) *why = fmt::format("the weight's rows must be K-contiguous (unit column stride), got strides {}", w.strides());
    return false;
  }
  return true;
}

void linear_geglu_cuda_wgmma(const Tensor& x, const Tensor& w, Tensor& out) {
  GemmProblem g = geglu_problem(x, w);
  g.out = out.data_ptr();
  g.out_row = g.N;
  launch_wgmma<Epilogue::geglu>(g, out, "linear_geglu/cuda/wgmma");
}

}  // namespace ts
