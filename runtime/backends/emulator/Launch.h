// Internal to the PTX emulator: the state of one launch (CTAs, warps, memory, counters)
// and the signature every instruction's semantics has.
//
// The semantics of each row of ptx/InstructionTable.h is a function
// `execute_<semantics>(Launch&, const Instruction&, active lanes, Warp&)`: declared
// below from the table itself, defined in Semantics.cpp (arithmetic, logic, conversion,
// moves) or Emulator.cpp (memory, warp-level operations, barriers), and called through
// kSemantics, indexed by the row. A row whose function is missing does not link.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/Arithmetic.h"
#include "runtime/backends/emulator/Emulator.h"

namespace quantc::runtime::emulator::detail {

constexpr std::uint64_t width_mask(unsigned bits) { return bits >= 64 ? ~0ull : ((1ull << bits) - 1); }
constexpr std::int64_t sign_extend(std::uint64_t value, unsigned bits) {
  if (bits >= 64) return static_cast<std::int64_t>(value);
  unsigned shift = 64 - bits;
  return static_cast<std::int64_t>(value << shift) >> shift;
}

/// Calls f(lane) for every set bit of `mask`; a full warp takes a plain counted loop
/// the compiler can unroll and vectorize.
template <class F>
inline void for_each_lane(std::uint32_t mask, F&& f) {
  if (mask == 0xffffffffu) {
    for (unsigned lane = 0; lane < 32; ++lane) f(lane);
    return;
  }
  for (std::uint32_t m = mask; m; m &= m - 1) f(static_cast<unsigned>(std::countr_zero(m)));
}

/// A set of threads of one warp at one program counter.
struct Group {
  std::uint32_t pc;
  std::uint32_t mask;
};

struct Warp {
  std::uint32_t index = 0;
  std::uint32_t existing = 0;  // lanes that hold a thread of the CTA
  std::uint32_t exited = 0;
  std::vector<Group> groups;      // sorted by pc, descending: back() is the lowest pc
  std::vector<Group> at_barrier;  // parked at bar.sync, resuming at `pc`
  std::uint64_t* registers = nullptr;
  /// Per register slot: 1 while it is the destination of a global load in flight
  /// (LaunchCounters::global_load_batches); `pending_slots` lists the set ones.
  std::uint8_t* pending = nullptr;
  std::vector<std::uint32_t> pending_slots;
  std::uint8_t pending_level = 0;  // CacheLevel: the slowest of the loads in flight
  /// cp.async copies not yet in shared memory: the open group, then the committed groups,
  /// oldest first; they land at the cp.async.wait_group that covers them. Groups are kept
  /// per warp, so commit_group and wait_group must run on all of the warp's live threads.
  struct AsyncCopy {
    std::uint8_t* destination;
    const std::uint8_t* source;
    unsigned bytes;
  };
  /// A committed group and the warp's round trips on copies (async_round_trips) when it
  /// was committed: a group committed during round trip r overlaps it and costs a round
  /// trip of its own only where it lands at a wait after that one.
  struct AsyncGroup {
    std::vector<AsyncCopy> copies;
    std::uint32_t epoch = 0;
  };
  std::vector<AsyncCopy> async_open;
  std::vector<AsyncGroup> async_committed;
  std::uint8_t async_level = 0;  // CacheLevel: the slowest source of the copies in flight
  /// The warp's waits on copies that cost a round trip so far. A wait costs one where it
  /// lands a group committed after the warp's last such wait began (epoch >= round trips):
  /// groups all committed up front cost one round trip; a ring of R stages refilled one a
  /// k-step costs one every R - 1 stages (R - 1 in flight a round trip, Little's law).
  std::uint32_t async_round_trips = 0;
};

/// Where a global load finds its data (LaunchCounters::global_load_batches_*), slowest last.
enum class CacheLevel : std::uint8_t { L1, L2, Dram };

/// Register `slot` of a warp: 32 lanes of 64-bit words.
inline std::uint64_t* reg(const Warp& warp, std::uint32_t slot) { return warp.registers + std::size_t(slot) * 32; }

/// An error of one lane's computation (e.g. an operand type the semantics does not
/// take); the scheduler reports it with the instruction, thread and PTX line.
struct LaneFault : std::runtime_error {
  LaneFault(unsigned lane, const std::string& message) : std::runtime_error(message), lane(lane) {}
  unsigned lane;
};

// Lane loops over an instruction's register operands: d = f(a[, b[, c[, e]]]).
template <class F>
void unary(const Instruction& in, std::uint32_t active, Warp& warp, F&& f) {
  std::uint64_t* d = reg(warp, in.operands[0].regs[0]);
  const std::uint64_t* a = reg(warp, in.operands[1].regs[0]);
  for_each_lane(active, [&](unsigned lane) { d[lane] = f(a[lane]); });
}
template <class F>
void binary(const Instruction& in, std::uint32_t active, Warp& warp, F&& f) {
  std::uint64_t* d = reg(warp, in.operands[0].regs[0]);
  const std::uint64_t* a = reg(warp, in.operands[1].regs[0]);
  const std::uint64_t* b = reg(warp, in.operands[2].regs[0]);
  for_each_lane(active, [&](unsigned lane) { d[lane] = f(a[lane], b[lane]); });
}
template <class F>
void ternary(const Instruction& in, std::uint32_t active, Warp& warp, F&& f) {
  std::uint64_t* d = reg(warp, in.operands[0].regs[0]);
  const std::uint64_t* a = reg(warp, in.operands[1].regs[0]);
  const std::uint64_t* b = reg(warp, in.operands[2].regs[0]);
  const std::uint64_t* c = reg(warp, in.operands[3].regs[0]);
  for_each_lane(active, [&](unsigned lane) { d[lane] = f(a[lane], b[lane], c[lane]); });
}
template <class F>
void quaternary(const Instruction& in, std::uint32_t active, Warp& warp, F&& f) {
  std::uint64_t* d = reg(warp, in.operands[0].regs[0]);
  const std::uint64_t* a = reg(warp, in.operands[1].regs[0]);
  const std::uint64_t* b = reg(warp, in.operands[2].regs[0]);
  const std::uint64_t* c = reg(warp, in.operands[3].regs[0]);
  const std::uint64_t* e = reg(warp, in.operands[4].regs[0]);
  for_each_lane(active, [&](unsigned lane) { d[lane] = f(a[lane], b[lane], c[lane], e[lane]); });
}

/// f32/f64 register values: .ftz flushes subnormal inputs and results to signed zero;
/// NaN results are the canonical NaN, the IR's own (ir/Arithmetic.h), so emulated PTX and
/// the reference interpreter produce the same bits.
inline float load_f32(std::uint64_t bits, bool ftz) {
  auto word = static_cast<std::uint32_t>(bits);
  if (ftz && (word & 0x7f800000u) == 0) word &= 0x80000000u;
  return std::bit_cast<float>(word);
}
inline std::uint64_t store_f32(float value, bool ftz) {
  constexpr ir::arith::FloatFormat kFormat = ir::arith::FloatFormat::binary32();
  std::uint32_t word = std::bit_cast<std::uint32_t>(value);
  if (ir::arith::is_nan_encoding(word, kFormat)) return kFormat.canonical_nan();
  if (ftz && (word & 0x7f800000u) == 0) word &= 0x80000000u;
  return word;
}
inline double load_f64(std::uint64_t bits) { return std::bit_cast<double>(bits); }
inline std::uint64_t store_f64(double value) {
  constexpr ir::arith::FloatFormat kFormat = ir::arith::FloatFormat::binary64();
  std::uint64_t word = std::bit_cast<std::uint64_t>(value);
  if (ir::arith::is_nan_encoding(word, kFormat)) return kFormat.canonical_nan();
  return word;
}

class Launch {
 public:
  Launch(const Kernel& kernel, const LaunchConfig& config, std::vector<DeviceBuffer>& buffers,
         std::vector<std::uint8_t> parameters, const LaunchOptions& options);
  LaunchCounters run();

  // Memory and warp-level operations, for their semantics functions (Emulator.cpp).
  void load(const Instruction& in, std::uint32_t active, Warp& warp);
  void store(const Instruction& in, std::uint32_t active, Warp& warp);
  void atomic(const Instruction& in, std::uint32_t active, Warp& warp);
  void shuffle(const Instruction& in, std::uint32_t active, Warp& warp);
  void vote(const Instruction& in, std::uint32_t active, Warp& warp);
  void mma(const Instruction& in, std::uint32_t active, Warp& warp);
  /// Fails unless all 32 lanes run `what` (mma/ldmatrix .sync.aligned).
  void require_whole_warp(const Instruction& in, std::uint32_t active, const Warp& warp, std::string_view what);
  /// Fails unless every live lane of the warp runs `what` (cp.async group operations).
  void require_live_lanes(const Instruction& in, std::uint32_t active, const Warp& warp, std::string_view what);
  void load_matrix(const Instruction& in, std::uint32_t active, Warp& warp);
  void async_copy(const Instruction& in, std::uint32_t active, Warp& warp);
  void async_commit(const Instruction& in, std::uint32_t active, Warp& warp);
  void async_wait(const Instruction& in, std::uint32_t active, Warp& warp);
  void warp_barrier(const Instruction& in, std::uint32_t active, Warp& warp);
  /// cvta between the generic address space and .shared/.local.
  std::uint64_t generic_address(StateSpace space, std::uint64_t address, bool to_generic) const;

 private:
  struct Access {
    std::uint8_t* bytes;
    StateSpace space;
    std::size_t buffer;    // global only
    std::uint64_t offset;  // global only: byte offset in the buffer
  };
  /// Global-memory coalescing bookkeeping for one warp-level request.
  struct Request {
    std::array<std::uint64_t, 128> sectors;  // the first `count` are set
    unsigned count = 0;
    /// The lanes' accesses as [address, address + bytes): up to 32 lanes x 4 elements.
    std::array<std::pair<std::uint64_t, std::uint64_t>, 128> spans;  // the first `span_count` are set
    unsigned span_count = 0;
    bool global = false;
    /// The lanes' shared-memory accesses (bank conflicts): a lane's whole access, vector
    /// included, as (lane, shared byte offset, bytes).
    struct SharedAccess {
      std::uint8_t lane;
      std::uint8_t bytes;
      std::uint32_t offset;
    };
    std::array<SharedAccess, 32> shared;  // the first `shared_count` are set
    unsigned shared_count = 0;
    std::uint64_t unique();
    /// The shared-memory wavefronts of the request and its phases with accesses (their
    /// conflict-free wavefronts): LaunchCounters::shared_load_wavefronts.
    std::pair<std::uint64_t, std::uint64_t> shared_wavefronts() const;
  };

  void run_cta(std::array<std::uint32_t, 3> ctaid);
  void initialize_registers(Warp& warp);
  std::array<std::uint32_t, 3> thread_index(std::uint32_t warp, unsigned lane) const;
  std::uint64_t special_value(SpecialRegister special, const Warp& warp, unsigned lane) const;
  void run_warp(Warp& warp);
  void count(const Instruction& in, std::uint32_t active);
  /// Whether `in` reads or writes a register some global load in flight will write.
  bool touches_pending(const Instruction& in, const Warp& warp) const;
  /// The warp waits for its loads in flight: one load batch ends.
  void end_load_batch(Warp& warp);
  void count_load_batch(CacheLevel level);
  const std::string& text(const Instruction& in) const;
  [[noreturn]] void fail(const Instruction& in, std::uint32_t warp, unsigned lane, const std::string& message) const;
  [[noreturn]] void fail_warp(const Instruction& in, std::uint32_t warp, const std::string& message) const;

  Access resolve(const Instruction& in, const Warp& warp, unsigned lane, StateSpace space, std::uint64_t address,
                 unsigned size, bool store);
  /// Counts the request; for a global one, returns where a load finds its data and
  /// updates the sectors' cache state.
  CacheLevel finish_request(const Instruction& in, Request& request, bool load, bool store, StateSpace space);
  /// Adds one lane's global access of `bytes` at `address` to `request`.
  void add_to_request(Request& request, std::uint64_t address, unsigned bytes);
  /// Adds lane `lane`'s shared access (its whole vector: `bytes` at `access`) to `request`.
  void add_shared_to_request(Request& request, unsigned lane, const Access& access, unsigned bytes) const;
  void mark(const Access& access, unsigned size, std::uint8_t flag);
  std::uint32_t uniform_mask(const Instruction& in, const Warp& warp, std::uint32_t active, const Operand& operand);
  /// The member mask must name exactly the non-exited threads executing the
  /// instruction (lanes past the end of a partial last warp hold no thread and are ignored).
  void check_members(const Instruction& in, const Warp& warp, std::uint32_t active, std::uint32_t members);

  const Kernel& kernel_;
  const LaunchConfig& config_;
  std::vector<DeviceBuffer>& buffers_;
  std::vector<std::uint8_t> parameters_;
  const LaunchOptions& options_;
  /// Per global byte, the ways the launch touched it: read, written, and read before the
  /// launch wrote it (a DRAM read; later reads of written bytes hit L2).
  std::vector<std::vector<std::uint8_t>> touched_;
  static constexpr std::uint8_t kByteRead = 1, kByteWritten = 2, kByteReadFromDram = 4;
  /// Per global 32-byte sector: 0 never touched, kStoredSector after a store, else
  /// 1 + the linear index of the CTA that last loaded it (CacheLevel of later loads).
  std::vector<std::vector<std::uint32_t>> sector_state_;
  static constexpr std::uint32_t kStoredSector = 0xffffffffu;
  std::uint32_t cta_linear_ = 0;
  std::uint32_t threads_per_cta_ = 0;
  std::uint32_t warps_per_cta_ = 0;
  std::array<std::uint32_t, 3> ctaid_{};
  std::vector<std::uint8_t> shared_;
  /// Per instruction of the kernel (empty until a request conflicts): its shared-memory
  /// requests that met bank conflicts, their wavefronts and conflicts.
  std::vector<SharedConflictSite> shared_sites_;
  std::vector<std::uint8_t> dynamic_shared_;
  std::vector<std::uint8_t> local_;
  std::vector<std::uint64_t> registers_;
  std::vector<std::uint8_t> pending_;  // Warp::pending of every warp of the CTA
  LaunchCounters counters_;
};

/// What one instruction form does to the active lanes of a warp.
using Semantics = void (*)(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp);

#define QUANTC_DECLARE_SEMANTICS(name, opcode, types, source_types, modifiers, operands, vectors, semantics, ...) \
  void execute_##semantics(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp);
QUANTC_PTX_FORMS(QUANTC_DECLARE_SEMANTICS)
#undef QUANTC_DECLARE_SEMANTICS

/// The semantics of every form, indexed by ptx::Form (Semantics.cpp).
extern const Semantics kSemantics[];

}  // namespace quantc::runtime::emulator::detail
