// The executor: warps, reconvergence, barriers, memory and every instruction's
// semantics (PTX ISA 8.x chapter 9). See Emulator.h for the model and the errors.
#include "runtime/backends/emulator/Emulator.h"

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "runtime/backends/emulator/FloatRounding.h"

namespace quantc::runtime::emulator {

LaunchCounters& LaunchCounters::operator+=(const LaunchCounters& o) {
  warp_instructions += o.warp_instructions;
  integer_instructions += o.integer_instructions;
  float_instructions += o.float_instructions;
  conversion_instructions += o.conversion_instructions;
  memory_instructions += o.memory_instructions;
  shuffle_instructions += o.shuffle_instructions;
  control_instructions += o.control_instructions;
  thread_instructions += o.thread_instructions;
  global_load_requests += o.global_load_requests;
  global_store_requests += o.global_store_requests;
  global_load_sectors += o.global_load_sectors;
  global_store_sectors += o.global_store_sectors;
  shared_load_requests += o.shared_load_requests;
  shared_store_requests += o.shared_store_requests;
  unique_global_bytes_read += o.unique_global_bytes_read;
  unique_global_bytes_written += o.unique_global_bytes_written;
  barriers += o.barriers;
  ctas += o.ctas;
  threads += o.threads;
  return *this;
}

namespace {

// Generic address windows: buffer i at (i+1) << 32; .shared and .local windows above.
constexpr std::uint64_t kBufferShift = 32;
constexpr std::uint64_t kSharedWindow = 0xFF00'0000'0000ull;
constexpr std::uint64_t kLocalWindow = 0xFE00'0000'0000ull;
constexpr std::uint64_t kWindowSize = 1ull << 32;

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

/// Sets the host rounding mode for directed-rounding float arithmetic and restores
/// round-to-nearest afterwards. The translation unit is built with -frounding-math.
class ScopedRounding {
 public:
  explicit ScopedRounding(Rounding rounding) {
    int mode = FE_TONEAREST;
    if (rounding == Rounding::Zero) mode = FE_TOWARDZERO;
    else if (rounding == Rounding::Down) mode = FE_DOWNWARD;
    else if (rounding == Rounding::Up) mode = FE_UPWARD;
    changed_ = mode != FE_TONEAREST;
    if (changed_) std::fesetround(mode);
    // Operands are loaded from the register file after this point and results stored
    // to it before the destructor: the memory barriers pin the arithmetic in between.
    asm volatile("" ::: "memory");
  }
  ~ScopedRounding() {
    asm volatile("" ::: "memory");
    if (changed_) std::fesetround(FE_TONEAREST);
  }
  ScopedRounding(const ScopedRounding&) = delete;
  ScopedRounding& operator=(const ScopedRounding&) = delete;

 private:
  bool changed_ = false;
};

// f32 values: flush-to-zero on input/output with .ftz; NaN results are the canonical
// NaN 0x7fffffff (PTX ISA 9.7.3: "NaN results are canonical").
inline float load_f32(std::uint64_t bits, bool ftz) {
  auto word = static_cast<std::uint32_t>(bits);
  if (ftz && (word & 0x7f800000u) == 0) word &= 0x80000000u;
  return std::bit_cast<float>(word);
}
inline std::uint64_t store_f32(float value, bool ftz) {
  std::uint32_t word = std::bit_cast<std::uint32_t>(value);
  if ((word & 0x7fffffffu) > 0x7f800000u) return 0x7fffffffu;
  if (ftz && (word & 0x7f800000u) == 0) word &= 0x80000000u;
  return word;
}
inline double load_f64(std::uint64_t bits, bool) { return std::bit_cast<double>(bits); }
inline std::uint64_t store_f64(double value, bool) {
  std::uint64_t word = std::bit_cast<std::uint64_t>(value);
  if ((word & ~(1ull << 63)) > 0x7ff0000000000000ull) return FloatFormat::binary64().canonical_nan();
  return word;
}

template <class T>
inline T saturate_unit(T value) {  // .sat on floats: clamp to [0, 1], NaN -> 0
  if (std::isnan(value)) return T(0);
  return std::min(std::max(value, T(0)), T(1));
}

bool compare_float(double a, double b, Compare compare) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (compare) {
    case Compare::Eq: return !unordered && a == b;
    case Compare::Ne: return !unordered && a != b;
    case Compare::Lt: return !unordered && a < b;
    case Compare::Le: return !unordered && a <= b;
    case Compare::Gt: return !unordered && a > b;
    case Compare::Ge: return !unordered && a >= b;
    case Compare::Equ: return unordered || a == b;
    case Compare::Neu: return unordered || a != b;
    case Compare::Ltu: return unordered || a < b;
    case Compare::Leu: return unordered || a <= b;
    case Compare::Gtu: return unordered || a > b;
    case Compare::Geu: return unordered || a >= b;
    case Compare::Num: return !unordered;
    case Compare::Nan: return unordered;
    case Compare::Lo: case Compare::Ls: case Compare::Hi: case Compare::Hs: return false;
  }
  return false;
}

bool compare_integer(std::uint64_t a, std::uint64_t b, ValueType type, Compare compare) {
  unsigned bits = bit_width(type);
  std::uint64_t ua = a & width_mask(bits), ub = b & width_mask(bits);
  std::int64_t sa = sign_extend(a, bits), sb = sign_extend(b, bits);
  bool is_signed = is_signed_integer(type);
  switch (compare) {
    case Compare::Eq: return ua == ub;
    case Compare::Ne: return ua != ub;
    case Compare::Lt: return is_signed ? sa < sb : ua < ub;
    case Compare::Le: return is_signed ? sa <= sb : ua <= ub;
    case Compare::Gt: return is_signed ? sa > sb : ua > ub;
    case Compare::Ge: return is_signed ? sa >= sb : ua >= ub;
    case Compare::Lo: return ua < ub;
    case Compare::Ls: return ua <= ub;
    case Compare::Hi: return ua > ub;
    case Compare::Hs: return ua >= ub;
    default: return false;
  }
}

bool combine(bool value, BoolOp op, bool c) {
  switch (op) {
    case BoolOp::None: return value;
    case BoolOp::And: return value && c;
    case BoolOp::Or: return value || c;
    case BoolOp::Xor: return value != c;
  }
  return value;
}

FloatFormat format_of(ValueType type) {
  switch (type) {
    case ValueType::F16: case ValueType::F16x2: return FloatFormat::binary16();
    case ValueType::BF16: case ValueType::BF16x2: return FloatFormat::bfloat16();
    case ValueType::F64: return FloatFormat::binary64();
    default: return FloatFormat::binary32();
  }
}

long double decode_float(std::uint64_t bits, ValueType type, bool ftz) {
  switch (type) {
    case ValueType::F16: return half_to_float(static_cast<std::uint16_t>(bits));
    case ValueType::BF16: return bfloat16_to_float(static_cast<std::uint16_t>(bits));
    case ValueType::F32: return load_f32(bits, ftz);
    default: return load_f64(bits, false);
  }
}

/// Rounds to an integral value (cvt .rni/.rzi/.rmi/.rpi), exactly.
long double round_integral(long double value, Rounding rounding) {
  if (std::isnan(value) || std::isinf(value)) return value;
  long double floor_value = std::floor(value);
  switch (rounding) {
    case Rounding::ZeroInt: case Rounding::Zero: case Rounding::None: return std::trunc(value);
    case Rounding::DownInt: case Rounding::Down: return floor_value;
    case Rounding::UpInt: case Rounding::Up: return std::ceil(value);
    case Rounding::NearestInt: case Rounding::Nearest: {
      long double fraction = value - floor_value;
      if (fraction > 0.5L) return floor_value + 1;
      if (fraction < 0.5L) return floor_value;
      return std::fmod(floor_value, 2.0L) == 0 ? floor_value : floor_value + 1;
    }
  }
  return value;
}

/// Float -> integer with PTX's saturation to the destination range (NaN -> 0).
std::uint64_t float_to_integer(long double value, ValueType destination) {
  if (std::isnan(value)) return 0;
  unsigned bits = bit_width(destination);
  if (is_signed_integer(destination)) {
    long double low = -std::ldexp(1.0L, static_cast<int>(bits) - 1);
    long double high = std::ldexp(1.0L, static_cast<int>(bits) - 1);
    if (value < low) return static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::min() >> (64 - bits)) & width_mask(bits);
    if (value >= high) return width_mask(bits - 1);
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(value)) & width_mask(bits);
  }
  if (value <= 0) return 0;
  if (value >= std::ldexp(1.0L, static_cast<int>(bits))) return width_mask(bits);
  return static_cast<std::uint64_t>(value);
}

/// Integer -> integer with .sat: clamps to the destination range.
std::uint64_t saturate_integer(std::uint64_t raw, ValueType source, ValueType destination) {
  unsigned source_bits = bit_width(source), bits = bit_width(destination);
  bool source_signed = is_signed_integer(source);
  // The source value as a 65-bit-safe pair: signed values as int64, unsigned as uint64.
  if (source_signed) {
    std::int64_t value = sign_extend(raw, source_bits);
    if (is_signed_integer(destination)) {
      std::int64_t low = bits >= 64 ? std::numeric_limits<std::int64_t>::min() : -(std::int64_t(1) << (bits - 1));
      std::int64_t high = bits >= 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t(1) << (bits - 1)) - 1;
      return static_cast<std::uint64_t>(std::clamp(value, low, high)) & width_mask(bits);
    }
    if (value < 0) return 0;
    return std::min(static_cast<std::uint64_t>(value), width_mask(bits));
  }
  std::uint64_t value = raw & width_mask(source_bits);
  std::uint64_t high = is_signed_integer(destination) ? width_mask(bits - 1) : width_mask(bits);
  return std::min(value, high);
}

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
};

void insert_group(std::vector<Group>& groups, Group group) {
  auto it = groups.begin();
  while (it != groups.end() && it->pc > group.pc) ++it;
  if (it != groups.end() && it->pc == group.pc) it->mask |= group.mask;
  else groups.insert(it, group);
}

std::string lane_list(std::uint32_t mask) {
  std::string text;
  for_each_lane(mask, [&](unsigned lane) { text += (text.empty() ? "" : ",") + std::to_string(lane); });
  return text;
}

class Launch {
 public:
  Launch(const Kernel& kernel, const LaunchConfig& config, std::vector<DeviceBuffer>& buffers,
         std::vector<std::uint8_t> parameters, const LaunchOptions& options)
      : kernel_(kernel), config_(config), buffers_(buffers), parameters_(std::move(parameters)), options_(options) {
    touched_.resize(buffers_.size());
    for (std::size_t i = 0; i < buffers_.size(); ++i) touched_[i].assign(buffers_[i].bytes.size(), 0);
    threads_per_cta_ = config.block[0] * config.block[1] * config.block[2];
    warps_per_cta_ = (threads_per_cta_ + 31) / 32;
  }

  LaunchCounters run() {
    for (std::uint32_t z = 0; z < config_.grid[2]; ++z)
      for (std::uint32_t y = 0; y < config_.grid[1]; ++y)
        for (std::uint32_t x = 0; x < config_.grid[0]; ++x) run_cta({x, y, z});
    for (const auto& flags : touched_)
      for (std::uint8_t flag : flags) {
        counters_.unique_global_bytes_read += (flag & 1);
        counters_.unique_global_bytes_written += (flag >> 1) & 1;
      }
    counters_.ctas = std::uint64_t(config_.grid[0]) * config_.grid[1] * config_.grid[2];
    counters_.threads = counters_.ctas * threads_per_cta_;
    return counters_;
  }

 private:
  // ----- scheduling -------------------------------------------------------------------

  void run_cta(std::array<std::uint32_t, 3> ctaid) {
    ctaid_ = ctaid;
    shared_.assign(kernel_.static_shared_bytes, 0);
    dynamic_shared_.assign(config_.dynamic_shared_bytes, 0);
    local_.assign(std::size_t(warps_per_cta_) * 32 * kernel_.local_bytes, 0);
    const std::size_t warp_registers = std::size_t(kernel_.register_count) * 32;
    registers_.assign(warp_registers * warps_per_cta_, 0);
    std::vector<Warp> warps(warps_per_cta_);
    for (std::uint32_t w = 0; w < warps_per_cta_; ++w) {
      Warp& warp = warps[w];
      warp.index = w;
      std::uint32_t lanes = std::min<std::uint32_t>(32, threads_per_cta_ - w * 32);
      warp.existing = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1);
      warp.registers = registers_.data() + warp_registers * w;
      initialize_registers(warp);
      warp.groups.push_back({0, warp.existing});
    }
    while (true) {
      for (Warp& warp : warps)
        if (!warp.groups.empty()) run_warp(warp);
      bool waiting = false;
      for (Warp& warp : warps) waiting = waiting || !warp.at_barrier.empty();
      if (!waiting) break;
      ++counters_.barriers;
      for (Warp& warp : warps) {
        for (Group group : warp.at_barrier) insert_group(warp.groups, group);
        warp.at_barrier.clear();
      }
    }
  }

  void initialize_registers(Warp& warp) {
    for (const auto& [slot, value] : kernel_.constants) std::fill_n(warp.registers + slot * 32, 32, value);
    for (const auto& [slot, special] : kernel_.special_slots) {
      std::uint64_t* values = warp.registers + slot * 32;
      for (unsigned lane = 0; lane < 32; ++lane) values[lane] = special_value(special, warp, lane);
    }
  }

  std::array<std::uint32_t, 3> thread_index(std::uint32_t warp, unsigned lane) const {
    std::uint32_t linear = warp * 32 + lane;
    return {linear % config_.block[0], (linear / config_.block[0]) % config_.block[1],
            linear / (config_.block[0] * config_.block[1])};
  }

  std::uint64_t special_value(SpecialRegister special, const Warp& warp, unsigned lane) const {
    auto tid = thread_index(warp.index, lane);
    switch (special) {
      case SpecialRegister::TidX: return tid[0];
      case SpecialRegister::TidY: return tid[1];
      case SpecialRegister::TidZ: return tid[2];
      case SpecialRegister::NtidX: return config_.block[0];
      case SpecialRegister::NtidY: return config_.block[1];
      case SpecialRegister::NtidZ: return config_.block[2];
      case SpecialRegister::CtaidX: return ctaid_[0];
      case SpecialRegister::CtaidY: return ctaid_[1];
      case SpecialRegister::CtaidZ: return ctaid_[2];
      case SpecialRegister::NctaidX: return config_.grid[0];
      case SpecialRegister::NctaidY: return config_.grid[1];
      case SpecialRegister::NctaidZ: return config_.grid[2];
      case SpecialRegister::LaneId: return lane;
      case SpecialRegister::WarpId: return warp.index;
      case SpecialRegister::NwarpId: return warps_per_cta_;
      case SpecialRegister::WarpSize: return 32;
      case SpecialRegister::LanemaskEq: return 1u << lane;
      case SpecialRegister::LanemaskLt: return (1u << lane) - 1;
      case SpecialRegister::LanemaskLe: return lane == 31 ? 0xffffffffu : ((2u << lane) - 1);
      case SpecialRegister::LanemaskGt: return lane == 31 ? 0u : ~((2u << lane) - 1);
      case SpecialRegister::LanemaskGe: return ~((1u << lane) - 1);
      case SpecialRegister::Clock: case SpecialRegister::Clock64: return 0;
      case SpecialRegister::SmId: case SpecialRegister::GridId: return 0;
      case SpecialRegister::NsmId: return 1;
    }
    return 0;
  }

  void run_warp(Warp& warp) {
    const Instruction* code = kernel_.code.data();
    while (!warp.groups.empty()) {
      Group group = warp.groups.back();
      const Instruction& in = code[group.pc];
      count(in);
      std::uint32_t active = group.mask;
      if (in.guard >= 0) {
        const std::uint64_t* predicate = warp.registers + std::size_t(in.guard) * 32;
        std::uint32_t guard_mask = 0;
        for_each_lane(active, [&](unsigned lane) {
          if (((predicate[lane] & 1) != 0) != in.guard_negate) guard_mask |= 1u << lane;
        });
        active = guard_mask;
      }
      counters_.thread_instructions += static_cast<unsigned>(std::popcount(active));
      switch (in.opcode) {
        case Opcode::Bra: {
          warp.groups.pop_back();
          if (std::uint32_t fall_through = group.mask & ~active) insert_group(warp.groups, {group.pc + 1, fall_through});
          if (active) insert_group(warp.groups, {static_cast<std::uint32_t>(in.operands[0].offset), active});
          continue;
        }
        case Opcode::Ret: case Opcode::Exit: {
          warp.exited |= active;
          warp.groups.pop_back();
          if (std::uint32_t rest = group.mask & ~active) insert_group(warp.groups, {group.pc + 1, rest});
          continue;
        }
        case Opcode::Bar: {
          warp.groups.pop_back();
          if (std::uint32_t rest = group.mask & ~active) insert_group(warp.groups, {group.pc + 1, rest});
          if (active) insert_group(warp.at_barrier, {group.pc + 1, active});
          continue;
        }
        default:
          execute(in, active, warp);
          break;
      }
      Group& current = warp.groups.back();
      ++current.pc;
      std::size_t size = warp.groups.size();
      if (size >= 2 && warp.groups[size - 2].pc == current.pc) {
        warp.groups[size - 2].mask |= current.mask;
        warp.groups.pop_back();
      }
    }
  }

  void count(const Instruction& in) {
    if (++counters_.warp_instructions > options_.max_warp_instructions)
      throw RuntimeError(fmt::format("PTX emulator: kernel {} exceeded {} warp instructions (runaway loop?) at line {}: {}",
                                     kernel_.name, options_.max_warp_instructions, in.line, text(in)));
    switch (in.klass) {
      case InstructionClass::Integer: ++counters_.integer_instructions; break;
      case InstructionClass::Float: ++counters_.float_instructions; break;
      case InstructionClass::Conversion: ++counters_.conversion_instructions; break;
      case InstructionClass::Memory: ++counters_.memory_instructions; break;
      case InstructionClass::Shuffle: ++counters_.shuffle_instructions; break;
      case InstructionClass::Control: ++counters_.control_instructions; break;
    }
  }

  const std::string& text(const Instruction& in) const {
    return kernel_.source_text[static_cast<std::size_t>(&in - kernel_.code.data())];
  }

  [[noreturn]] void fail(const Instruction& in, std::uint32_t warp, unsigned lane, const std::string& message) const {
    auto tid = thread_index(warp, lane);
    throw RuntimeError(fmt::format("PTX emulator: {} — thread ctaid=({},{},{}) tid=({},{},{}), kernel {}, PTX line {}: {}",
                                   message, ctaid_[0], ctaid_[1], ctaid_[2], tid[0], tid[1], tid[2], kernel_.name,
                                   in.line, text(in)));
  }

  [[noreturn]] void fail_warp(const Instruction& in, std::uint32_t warp, const std::string& message) const {
    throw RuntimeError(fmt::format("PTX emulator: {} — warp {} of ctaid=({},{},{}), kernel {}, PTX line {}: {}", message,
                                   warp, ctaid_[0], ctaid_[1], ctaid_[2], kernel_.name, in.line, text(in)));
  }

  // ----- memory -----------------------------------------------------------------------

  struct Access {
    std::uint8_t* bytes;
    StateSpace space;
    std::size_t buffer;    // global only
    std::uint64_t offset;  // global only: byte offset in the buffer
  };

  Access resolve(const Instruction& in, const Warp& warp, unsigned lane, StateSpace space, std::uint64_t address,
                 unsigned size, bool store) {
    const char* kind = store ? "store" : "load";
    if (space == StateSpace::Generic) {
      if (address >= kSharedWindow && address < kSharedWindow + kWindowSize) {
        space = StateSpace::Shared;
        address -= kSharedWindow;
      } else if (address >= kLocalWindow && address < kLocalWindow + kWindowSize) {
        space = StateSpace::Local;
        address -= kLocalWindow;
      } else {
        space = StateSpace::Global;
      }
    }
    if (address % size != 0 && space != StateSpace::Param)
      fail(in, warp.index, lane, fmt::format("misaligned {}-byte {} at address 0x{:x}", size, kind, address));
    switch (space) {
      case StateSpace::Global: {
        std::uint64_t index = (address >> kBufferShift);
        std::uint64_t offset = address & (kWindowSize - 1);
        if (index == 0 || index > buffers_.size())
          fail(in, warp.index, lane,
               fmt::format("out-of-bounds global {} of {} bytes at address 0x{:x}, which is not inside any buffer", kind,
                           size, address));
        DeviceBuffer& buffer = buffers_[index - 1];
        if (offset + size > buffer.bytes.size())
          fail(in, warp.index, lane,
               fmt::format("out-of-bounds global {} of {} bytes at address 0x{:x}: byte offset {} in buffer {} '{}' of {} bytes",
                           kind, size, address, offset, index - 1, buffer.name, buffer.bytes.size()));
        return {buffer.bytes.data() + offset, space, index - 1, offset};
      }
      case StateSpace::Shared: {
        if (address >= kDynamicSharedBase) {
          std::uint64_t offset = address - kDynamicSharedBase;
          if (offset + size > dynamic_shared_.size())
            fail(in, warp.index, lane,
                 fmt::format("out-of-bounds dynamic shared {} of {} bytes at offset {} (dynamic shared size {} bytes)", kind,
                             size, offset, dynamic_shared_.size()));
          return {dynamic_shared_.data() + offset, space, 0, 0};
        }
        if (address + size > shared_.size())
          fail(in, warp.index, lane,
               fmt::format("out-of-bounds shared {} of {} bytes at shared address 0x{:x} (static shared size {} bytes)",
                           kind, size, address, shared_.size()));
        return {shared_.data() + address, space, 0, 0};
      }
      case StateSpace::Local: {
        if (address + size > kernel_.local_bytes)
          fail(in, warp.index, lane,
               fmt::format("out-of-bounds local {} of {} bytes at local address 0x{:x} (local size {} bytes)", kind, size,
                           address, kernel_.local_bytes));
        std::size_t base = (std::size_t(warp.index) * 32 + lane) * kernel_.local_bytes;
        return {local_.data() + base + address, space, 0, 0};
      }
      case StateSpace::Param: {
        if (store) fail(in, warp.index, lane, "store to the read-only kernel parameter space");
        if (address + size > parameters_.size())
          fail(in, warp.index, lane,
               fmt::format("out-of-bounds parameter load of {} bytes at offset {} (parameters are {} bytes)", size, address,
                           parameters_.size()));
        return {parameters_.data() + address, space, 0, 0};
      }
      default:
        fail(in, warp.index, lane, "unsupported state space");
    }
  }

  /// Global-memory coalescing bookkeeping for one warp-level request.
  struct Request {
    std::array<std::uint64_t, 128> sectors{};
    unsigned count = 0;
    bool global = false;
    void add(std::uint64_t address, unsigned bytes) {
      global = true;
      for (std::uint64_t sector = address / 32; sector <= (address + bytes - 1) / 32 && count < sectors.size(); ++sector)
        sectors[count++] = sector;
    }
    std::uint64_t unique() {
      std::sort(sectors.begin(), sectors.begin() + count);
      return static_cast<std::uint64_t>(std::unique(sectors.begin(), sectors.begin() + count) - sectors.begin());
    }
  };

  void finish_request(Request& request, bool load, bool store, StateSpace space) {
    if (request.global) {
      std::uint64_t sectors = request.unique();
      if (load) { ++counters_.global_load_requests; counters_.global_load_sectors += sectors; }
      if (store) { ++counters_.global_store_requests; counters_.global_store_sectors += sectors; }
    } else if (space == StateSpace::Shared) {
      if (load) ++counters_.shared_load_requests;
      if (store) ++counters_.shared_store_requests;
    }
  }

  void mark(const Access& access, unsigned size, std::uint8_t flag) {
    if (access.space != StateSpace::Global) return;
    std::uint8_t* flags = touched_[access.buffer].data() + access.offset;
    for (unsigned i = 0; i < size; ++i) flags[i] |= flag;
  }

  static std::uint64_t read_bytes(const std::uint8_t* bytes, unsigned size) {
    std::uint64_t value = 0;
    std::memcpy(&value, bytes, size);  // little-endian host, like the device
    return value;
  }

  void execute_load(const Instruction& in, std::uint32_t active, Warp& warp) {
    const unsigned size = bit_width(in.type) / 8;
    const unsigned bits = bit_width(in.type);
    const Operand& destination = in.operands[0];
    const Operand& address = in.operands[1];
    const std::uint64_t* base = reg(warp, address.regs[0]);
    Request request;
    for_each_lane(active, [&](unsigned lane) {
      std::uint64_t start = base[lane] + static_cast<std::uint64_t>(address.offset);
      // Vector accesses must be aligned to their whole size (PTX ISA 5.4.5).
      resolve(in, warp, lane, in.space, start, size * in.vector, false);
      for (unsigned e = 0; e < in.vector; ++e) {
        Access access = resolve(in, warp, lane, in.space, start + e * size, size, false);
        std::uint64_t value = read_bytes(access.bytes, size);
        if (is_signed_integer(in.type)) value = static_cast<std::uint64_t>(sign_extend(value, bits));
        reg(warp, destination.regs[e])[lane] = value;
        if (access.space == StateSpace::Global) {
          mark(access, size, 1);
          request.add(start + e * size, size);
        }
      }
    });
    finish_request(request, true, false, in.space);
  }

  void execute_store(const Instruction& in, std::uint32_t active, Warp& warp) {
    const unsigned size = bit_width(in.type) / 8;
    const Operand& address = in.operands[0];
    const Operand& source = in.operands[1];
    const std::uint64_t* base = reg(warp, address.regs[0]);
    Request request;
    for_each_lane(active, [&](unsigned lane) {
      std::uint64_t start = base[lane] + static_cast<std::uint64_t>(address.offset);
      resolve(in, warp, lane, in.space, start, size * in.vector, true);
      for (unsigned e = 0; e < in.vector; ++e) {
        Access access = resolve(in, warp, lane, in.space, start + e * size, size, true);
        std::uint64_t value = reg(warp, source.regs[e])[lane];
        std::memcpy(access.bytes, &value, size);
        if (access.space == StateSpace::Global) {
          mark(access, size, 2);
          request.add(start + e * size, size);
        }
      }
    });
    finish_request(request, false, true, in.space);
  }

  void execute_atomic(const Instruction& in, std::uint32_t active, Warp& warp) {
    const bool returns = in.opcode == Opcode::Atom;
    const unsigned size = bit_width(in.type) / 8;
    const unsigned bits = bit_width(in.type);
    const Operand& address = in.operands[returns ? 1 : 0];
    const std::uint64_t* base = reg(warp, address.regs[0]);
    const std::uint64_t* b = reg(warp, in.operands[returns ? 2 : 1].regs[0]);
    const std::uint64_t* c = in.operand_count > 3 ? reg(warp, in.operands[3].regs[0]) : nullptr;
    auto op = static_cast<AtomicOp>(in.mode);
    Request request;
    for_each_lane(active, [&](unsigned lane) {
      std::uint64_t at = base[lane] + static_cast<std::uint64_t>(address.offset);
      Access access = resolve(in, warp, lane, in.space, at, size, true);
      std::uint64_t old = read_bytes(access.bytes, size);
      std::uint64_t value = b[lane] & width_mask(bits);
      std::uint64_t result = old;
      bool is_signed = is_signed_integer(in.type);
      switch (op) {
        case AtomicOp::Add:
          if (in.type == ValueType::F32) result = store_f32(load_f32(old, true) + load_f32(value, true), true);
          else if (in.type == ValueType::F64) result = store_f64(load_f64(old, false) + load_f64(value, false), false);
          else result = old + value;
          break;
        case AtomicOp::Min:
          if (is_float(in.type)) fail(in, warp.index, lane, "atom.min on floats is not supported");
          result = is_signed ? (sign_extend(value, bits) < sign_extend(old, bits) ? value : old) : std::min(old, value);
          break;
        case AtomicOp::Max:
          if (is_float(in.type)) fail(in, warp.index, lane, "atom.max on floats is not supported");
          result = is_signed ? (sign_extend(value, bits) > sign_extend(old, bits) ? value : old) : std::max(old, value);
          break;
        case AtomicOp::Inc: result = old >= value ? 0 : old + 1; break;
        case AtomicOp::Dec: result = (old == 0 || old > value) ? value : old - 1; break;
        case AtomicOp::And: result = old & value; break;
        case AtomicOp::Or: result = old | value; break;
        case AtomicOp::Xor: result = old ^ value; break;
        case AtomicOp::Exch: result = value; break;
        case AtomicOp::Cas: result = old == value ? (c[lane] & width_mask(bits)) : old; break;
      }
      std::memcpy(access.bytes, &result, size);
      if (returns) reg(warp, in.operands[0].regs[0])[lane] = is_signed ? static_cast<std::uint64_t>(sign_extend(old, bits)) : old;
      if (access.space == StateSpace::Global) {
        mark(access, size, 3);
        request.add(at, size);
      }
    });
    finish_request(request, true, true, in.space);
  }

  // ----- warp-level -------------------------------------------------------------------

  std::uint32_t uniform_mask(const Instruction& in, const Warp& warp, std::uint32_t active, const Operand& operand) {
    const std::uint64_t* values = reg(warp, operand.regs[0]);
    auto first = static_cast<unsigned>(std::countr_zero(active));
    auto mask = static_cast<std::uint32_t>(values[first]);
    for_each_lane(active, [&](unsigned lane) {
      if (static_cast<std::uint32_t>(values[lane]) != mask)
        fail(in, warp.index, lane, fmt::format("member mask 0x{:08x} differs from lane {}'s 0x{:08x}",
                                               static_cast<std::uint32_t>(values[lane]), first, mask));
    });
    return mask;
  }

  /// The member mask must name exactly the non-exited threads executing the
  /// instruction (lanes past the end of a partial last warp hold no thread and are ignored).
  void check_members(const Instruction& in, const Warp& warp, std::uint32_t active, std::uint32_t members) {
    std::uint32_t required = members & warp.existing & ~warp.exited;
    if (active & ~members)
      fail_warp(in, warp.index,
                fmt::format("lanes {} execute it but are not named in member mask 0x{:08x}", lane_list(active & ~members),
                            members));
    if (required & ~active)
      fail_warp(in, warp.index,
                fmt::format("member mask 0x{:08x} names lanes {} that do not execute it (executing lanes: 0x{:08x}); "
                            "divergent warp-synchronous operations are undefined behaviour on hardware",
                            members, lane_list(required & ~active), active));
  }

  void execute_shuffle(const Instruction& in, std::uint32_t active, Warp& warp) {
    if (!active) return;
    std::uint32_t members = uniform_mask(in, warp, active, in.operands[4]);
    check_members(in, warp, active, members);
    std::array<std::uint64_t, 32> source{};
    const std::uint64_t* a = reg(warp, in.operands[1].regs[0]);
    const std::uint64_t* b = reg(warp, in.operands[2].regs[0]);
    const std::uint64_t* c = reg(warp, in.operands[3].regs[0]);
    std::copy_n(a, 32, source.begin());
    std::uint64_t* d = reg(warp, in.operands[0].regs[0]);
    std::uint64_t* p = in.predicate_destination >= 0 ? reg(warp, static_cast<std::uint32_t>(in.predicate_destination)) : nullptr;
    auto mode = static_cast<ShuffleMode>(in.mode);
    for_each_lane(active, [&](unsigned lane) {
      // PTX ISA 9.7.9.6 (shfl.sync): c packs the clamp value (bits 4:0) and the
      // segment mask (bits 12:8).
      std::int32_t b_value = static_cast<std::int32_t>(b[lane] & 0x1f);
      std::int32_t clamp = static_cast<std::int32_t>(c[lane] & 0x1f);
      std::int32_t segment_mask = static_cast<std::int32_t>((c[lane] >> 8) & 0x1f);
      std::int32_t self = static_cast<std::int32_t>(lane);
      std::int32_t max_lane = (self & segment_mask) | (clamp & ~segment_mask);
      std::int32_t min_lane = self & segment_mask;
      std::int32_t j = self;
      bool in_range = false;
      switch (mode) {
        case ShuffleMode::Up: j = self - b_value; in_range = j >= max_lane; break;
        case ShuffleMode::Down: j = self + b_value; in_range = j <= max_lane; break;
        case ShuffleMode::Butterfly: j = self ^ b_value; in_range = j <= max_lane; break;
        case ShuffleMode::Index: j = min_lane | (b_value & ~segment_mask); in_range = j <= max_lane; break;
      }
      if (!in_range) j = self;
      if (!((active >> j) & 1))
        fail(in, warp.index, lane, fmt::format("shfl.sync reads lane {}, which does not execute it (its value is undefined)", j));
      d[lane] = source[static_cast<unsigned>(j)] & 0xffffffffu;
      if (p) p[lane] = in_range ? 1 : 0;
    });
  }

  void execute_vote(const Instruction& in, std::uint32_t active, Warp& warp) {
    if (!active) return;
    std::uint32_t members = uniform_mask(in, warp, active, in.operands[2]);
    check_members(in, warp, active, members);
    const Operand& predicate = in.operands[1];
    const std::uint64_t* a = reg(warp, predicate.regs[0]);
    std::uint32_t ballot = 0;
    for_each_lane(active, [&](unsigned lane) {
      if (((a[lane] & 1) != 0) != predicate.negate) ballot |= 1u << lane;
    });
    std::uint64_t* d = reg(warp, in.operands[0].regs[0]);
    std::uint64_t result = 0;
    switch (static_cast<VoteMode>(in.mode)) {
      case VoteMode::Ballot: result = ballot; break;
      case VoteMode::Any: result = ballot != 0; break;
      case VoteMode::All: result = ballot == active; break;
      case VoteMode::Uni: result = ballot == active || ballot == 0; break;
    }
    for_each_lane(active, [&](unsigned lane) { d[lane] = result; });
  }

  // ----- helpers for the arithmetic ---------------------------------------------------

  static std::uint64_t* reg(const Warp& warp, std::uint32_t slot) { return warp.registers + std::size_t(slot) * 32; }

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

  /// Runs a float operation on f32 or f64 with the instruction's rounding, .ftz, .sat.
  template <class F>
  void float_unary(const Instruction& in, std::uint32_t active, Warp& warp, F&& f) {
    ScopedRounding rounding(in.rounding);
    if (in.type == ValueType::F32)
      unary(in, active, warp, [&](std::uint64_t a) {
        float r = f(load_f32(a, in.ftz));
        return store_f32(in.saturate ? saturate_unit(r) : r, in.ftz);
      });
    else
      unary(in, active, warp, [&](std::uint64_t a) {
        double r = f(load_f64(a, false));
        return store_f64(in.saturate ? saturate_unit(r) : r, false);
      });
  }
  template <class F>
  void float_binary(const Instruction& in, std::uint32_t active, Warp& warp, F&& f) {
    ScopedRounding rounding(in.rounding);
    if (in.type == ValueType::F32)
      binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
        float r = f(load_f32(a, in.ftz), load_f32(b, in.ftz));
        return store_f32(in.saturate ? saturate_unit(r) : r, in.ftz);
      });
    else
      binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
        double r = f(load_f64(a, false), load_f64(b, false));
        return store_f64(in.saturate ? saturate_unit(r) : r, false);
      });
  }

  void require_float(const Instruction& in, const Warp& warp, std::uint32_t active) {
    if (in.type != ValueType::F32 && in.type != ValueType::F64)
      fail(in, warp.index, static_cast<unsigned>(std::countr_zero(active | (1u << 31))),
           fmt::format("{} is not supported for .{}", text(in), to_string(in.type)));
  }

  // ----- instruction dispatch -----------------------------------------------------------

  void execute(const Instruction& in, std::uint32_t active, Warp& warp) {
    const unsigned bits = bit_width(in.type);
    const std::uint64_t mask = width_mask(bits);
    const bool is_signed = is_signed_integer(in.type);
    const bool floating = in.type == ValueType::F32 || in.type == ValueType::F64;
    switch (in.opcode) {
      case Opcode::Add:
        if (floating) return float_binary(in, active, warp, [](auto a, auto b) { return a + b; });
        if (in.saturate && in.type == ValueType::S32)
          return binary(in, active, warp, [](std::uint64_t a, std::uint64_t b) {
            std::int64_t r = sign_extend(a, 32) + sign_extend(b, 32);
            return static_cast<std::uint64_t>(std::clamp<std::int64_t>(r, INT32_MIN, INT32_MAX)) & 0xffffffffu;
          });
        return binary(in, active, warp, [mask](std::uint64_t a, std::uint64_t b) { return (a + b) & mask; });
      case Opcode::Sub:
        if (floating) return float_binary(in, active, warp, [](auto a, auto b) { return a - b; });
        if (in.saturate && in.type == ValueType::S32)
          return binary(in, active, warp, [](std::uint64_t a, std::uint64_t b) {
            std::int64_t r = sign_extend(a, 32) - sign_extend(b, 32);
            return static_cast<std::uint64_t>(std::clamp<std::int64_t>(r, INT32_MIN, INT32_MAX)) & 0xffffffffu;
          });
        return binary(in, active, warp, [mask](std::uint64_t a, std::uint64_t b) { return (a - b) & mask; });
      case Opcode::Mul:
        if (floating) return float_binary(in, active, warp, [](auto a, auto b) { return a * b; });
        return binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) { return multiply(in, a, b, bits, is_signed); });
      case Opcode::Mad:
        if (floating) return execute_fma(in, active, warp);
        return ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
          unsigned result_bits = in.mul_mode == MulMode::Wide ? 2 * bits : bits;
          std::uint64_t product = multiply(in, a, b, bits, is_signed);
          if (in.saturate && in.type == ValueType::S32 && in.mul_mode == MulMode::Hi) {
            std::int64_t r = sign_extend(product, 32) + sign_extend(c, 32);
            return static_cast<std::uint64_t>(std::clamp<std::int64_t>(r, INT32_MIN, INT32_MAX)) & 0xffffffffu;
          }
          return (product + c) & width_mask(result_bits);
        });
      case Opcode::Fma:
        require_float(in, warp, active);
        return execute_fma(in, active, warp);
      case Opcode::Div:
        if (floating) return execute_float_divide(in, active, warp);
        return binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) -> std::uint64_t {
          if ((b & mask) == 0) return mask;  // undefined in PTX; hardware returns all ones
          if (is_signed) {
            std::int64_t sa = sign_extend(a, bits), sb = sign_extend(b, bits);
            if (sb == -1) return static_cast<std::uint64_t>(0 - static_cast<std::uint64_t>(sa)) & mask;
            return static_cast<std::uint64_t>(sa / sb) & mask;
          }
          return (a & mask) / (b & mask);
        });
      case Opcode::Rem:
        return binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) -> std::uint64_t {
          if ((b & mask) == 0) return a & mask;
          if (is_signed) {
            std::int64_t sa = sign_extend(a, bits), sb = sign_extend(b, bits);
            if (sb == -1) return 0;
            return static_cast<std::uint64_t>(sa % sb) & mask;
          }
          return (a & mask) % (b & mask);
        });
      case Opcode::Abs:
        if (floating)  // clears the sign bit (of the flushed value with .ftz); NaN payloads kept
          return unary(in, active, warp, [&](std::uint64_t a) -> std::uint64_t {
            if (in.type == ValueType::F32) return std::bit_cast<std::uint32_t>(load_f32(a, in.ftz)) & 0x7fffffffu;
            return a & ~(1ull << 63);
          });
        return unary(in, active, warp, [&](std::uint64_t a) {
          std::int64_t v = sign_extend(a, bits);
          return static_cast<std::uint64_t>(v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v)) & mask;
        });
      case Opcode::Neg:
        if (floating)
          return unary(in, active, warp, [&](std::uint64_t a) -> std::uint64_t {
            if (in.type == ValueType::F32) return std::bit_cast<std::uint32_t>(load_f32(a, in.ftz)) ^ 0x80000000u;
            return a ^ (1ull << 63);
          });
        return unary(in, active, warp, [mask](std::uint64_t a) { return (0 - a) & mask; });
      case Opcode::Min: case Opcode::Max:
        if (floating) return execute_float_min_max(in, active, warp);
        return binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
          bool less = is_signed ? sign_extend(a, bits) < sign_extend(b, bits) : (a & mask) < (b & mask);
          bool take_a = (in.opcode == Opcode::Min) == less;
          return (take_a ? a : b) & mask;
        });
      case Opcode::Popc:
        return unary(in, active, warp, [mask](std::uint64_t a) { return std::uint64_t(std::popcount(a & mask)); });
      case Opcode::Clz:
        return unary(in, active, warp, [bits, mask](std::uint64_t a) {
          return std::uint64_t(std::countl_zero(a & mask) - (64 - static_cast<int>(bits)));
        });
      case Opcode::Brev:
        return unary(in, active, warp, [bits](std::uint64_t a) {
          std::uint64_t r = 0;
          for (unsigned i = 0; i < bits; ++i) r |= ((a >> i) & 1) << (bits - 1 - i);
          return r;
        });
      case Opcode::Bfind:
        return unary(in, active, warp, [&](std::uint64_t a) -> std::uint64_t {
          std::uint64_t v = a & mask;
          if (is_signed && ((v >> (bits - 1)) & 1)) v = ~v & mask;  // first bit that differs from the sign
          if (v == 0) return 0xffffffffu;
          unsigned position = 63 - static_cast<unsigned>(std::countl_zero(v));
          return in.clamp ? (bits - 1 - position) : position;
        });
      case Opcode::Shl:
        return binary(in, active, warp, [bits, mask](std::uint64_t a, std::uint64_t b) {
          std::uint32_t amount = static_cast<std::uint32_t>(b);
          return amount >= bits ? 0 : (a << amount) & mask;
        });
      case Opcode::Shr:
        return binary(in, active, warp, [bits, mask, is_signed](std::uint64_t a, std::uint64_t b) {
          std::uint32_t amount = std::min(static_cast<std::uint32_t>(b), bits);
          if (is_signed) {
            std::int64_t v = sign_extend(a, bits);
            return static_cast<std::uint64_t>(v >> std::min(amount, 63u)) & mask;
          }
          return amount >= bits ? 0 : ((a & mask) >> amount);
        });
      case Opcode::And:
        return binary(in, active, warp, [mask](std::uint64_t a, std::uint64_t b) { return a & b & mask; });
      case Opcode::Or:
        return binary(in, active, warp, [mask](std::uint64_t a, std::uint64_t b) { return (a | b) & mask; });
      case Opcode::Xor:
        return binary(in, active, warp, [mask](std::uint64_t a, std::uint64_t b) { return (a ^ b) & mask; });
      case Opcode::Not:
        return unary(in, active, warp, [mask](std::uint64_t a) { return ~a & mask; });
      case Opcode::Cnot:
        return unary(in, active, warp, [mask](std::uint64_t a) { return std::uint64_t((a & mask) == 0); });
      case Opcode::Lop3:
        return quaternary(in, active, warp, [](std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t lut) {
          // PTX ISA 9.7.8.6: bit i of the result is lut[(a_i << 2) | (b_i << 1) | c_i].
          std::uint32_t r = 0;
          for (unsigned minterm = 0; minterm < 8; ++minterm) {
            if (!((lut >> minterm) & 1)) continue;
            std::uint32_t ta = (minterm & 4) ? std::uint32_t(a) : ~std::uint32_t(a);
            std::uint32_t tb = (minterm & 2) ? std::uint32_t(b) : ~std::uint32_t(b);
            std::uint32_t tc = (minterm & 1) ? std::uint32_t(c) : ~std::uint32_t(c);
            r |= ta & tb & tc;
          }
          return std::uint64_t(r);
        });
      case Opcode::Prmt:
        return ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
          return permute(static_cast<PermuteMode>(in.mode), std::uint32_t(a), std::uint32_t(b), std::uint32_t(c));
        });
      case Opcode::Bfe:
        return ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) -> std::uint64_t {
          // PTX ISA 9.7.8.9: fields past the msb read the sign bit (signed) or zero.
          unsigned position = b & 0xff, length = c & 0xff, msb = bits - 1;
          if (length == 0) return 0;
          std::uint64_t sign = is_signed ? ((a >> std::min(position + length - 1, msb)) & 1) : 0;
          std::uint64_t r = 0;
          for (unsigned i = 0; i <= msb; ++i) {
            std::uint64_t bit = (i < length && position + i <= msb) ? ((a >> (position + i)) & 1) : sign;
            r |= bit << i;
          }
          return r;
        });
      case Opcode::Bfi:
        return quaternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
          unsigned position = c & 0xff, length = d & 0xff, msb = bits - 1;
          std::uint64_t r = b & mask;
          for (unsigned i = 0; i < length && position + i <= msb; ++i)
            r = (r & ~(1ull << (position + i))) | (((a >> i) & 1) << (position + i));
          return r;
        });
      case Opcode::Shf:
        return ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) -> std::uint64_t {
          std::uint32_t amount = in.clamp ? std::min<std::uint32_t>(std::uint32_t(c), 32) : (std::uint32_t(c) & 31);
          std::uint64_t pair = ((b & 0xffffffffu) << 32) | (a & 0xffffffffu);
          if (in.mode == 0) return amount == 32 ? (a & 0xffffffffu) : ((pair << amount) >> 32) & 0xffffffffu;
          return amount == 32 ? (b & 0xffffffffu) : (pair >> amount) & 0xffffffffu;
        });
      case Opcode::Dp4a: case Opcode::Dp2a:
        return ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
          bool a_signed = is_signed_integer(in.type), b_signed = is_signed_integer(in.source_type);
          std::int64_t sum = static_cast<std::int64_t>(sign_extend(c, 32));
          if (!a_signed && !b_signed) sum = static_cast<std::int64_t>(c & 0xffffffffu);
          if (in.opcode == Opcode::Dp4a) {
            for (unsigned i = 0; i < 4; ++i) {
              std::uint64_t ab = (a >> (8 * i)) & 0xff, bb = (b >> (8 * i)) & 0xff;
              sum += (a_signed ? sign_extend(ab, 8) : std::int64_t(ab)) * (b_signed ? sign_extend(bb, 8) : std::int64_t(bb));
            }
          } else {
            unsigned first_byte = in.mul_mode == MulMode::Hi ? 2 : 0;
            for (unsigned i = 0; i < 2; ++i) {
              std::uint64_t ah = (a >> (16 * i)) & 0xffff, bb = (b >> (8 * (first_byte + i))) & 0xff;
              sum += (a_signed ? sign_extend(ah, 16) : std::int64_t(ah)) * (b_signed ? sign_extend(bb, 8) : std::int64_t(bb));
            }
          }
          return static_cast<std::uint64_t>(sum) & 0xffffffffu;
        });
      case Opcode::Rcp:
        require_float(in, warp, active);
        // rcp.approx is computed correctly rounded (within the ISA's approximation bound).
        return float_unary(in, active, warp, [](auto a) { return decltype(a)(1) / a; });
      case Opcode::Sqrt:
        require_float(in, warp, active);
        return float_unary(in, active, warp, [](auto a) { return std::sqrt(a); });
      case Opcode::Rsqrt:
        require_float(in, warp, active);
        return float_unary(in, active, warp, [](auto a) { return decltype(a)(1.0L / std::sqrt(static_cast<long double>(a))); });
      case Opcode::Ex2:
        require_float(in, warp, active);
        return float_unary(in, active, warp, [](auto a) { return std::exp2(a); });
      case Opcode::Lg2:
        require_float(in, warp, active);
        return float_unary(in, active, warp, [](auto a) { return std::log2(a); });
      case Opcode::Sin:
        require_float(in, warp, active);
        return float_unary(in, active, warp, [](auto a) { return std::sin(a); });
      case Opcode::Cos:
        require_float(in, warp, active);
        return float_unary(in, active, warp, [](auto a) { return std::cos(a); });
      case Opcode::Tanh:
        require_float(in, warp, active);
        return float_unary(in, active, warp, [](auto a) { return std::tanh(a); });
      case Opcode::Copysign:
        require_float(in, warp, active);
        return binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
          std::uint64_t sign_bit = in.type == ValueType::F32 ? 0x80000000ull : (1ull << 63);
          return ((b & ~sign_bit) | (a & sign_bit)) & mask;
        });
      case Opcode::Testp:
        require_float(in, warp, active);
        return unary(in, active, warp, [&](std::uint64_t a) {
          double v = in.type == ValueType::F32 ? double(load_f32(a, false)) : load_f64(a, false);
          int kind = in.type == ValueType::F32 ? std::fpclassify(load_f32(a, false)) : std::fpclassify(v);
          bool result = false;
          switch (static_cast<TestProperty>(in.mode)) {
            case TestProperty::Finite: result = std::isfinite(v); break;
            case TestProperty::Infinite: result = std::isinf(v); break;
            case TestProperty::Number: result = !std::isnan(v); break;
            case TestProperty::NotANumber: result = std::isnan(v); break;
            case TestProperty::Normal: result = kind == FP_NORMAL; break;
            case TestProperty::Subnormal: result = kind == FP_SUBNORMAL; break;
          }
          return std::uint64_t(result);
        });
      case Opcode::Setp: return execute_setp(in, active, warp);
      case Opcode::Set: return execute_set(in, active, warp);
      case Opcode::Selp:
        return ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
          bool p = ((c & 1) != 0) != in.operands[3].negate;
          return p ? a : b;
        });
      case Opcode::Mov: return execute_move(in, active, warp);
      case Opcode::Cvt: return execute_convert(in, active, warp);
      case Opcode::Cvta:
        return unary(in, active, warp, [&](std::uint64_t a) -> std::uint64_t {
          std::uint64_t window = in.space == StateSpace::Shared ? kSharedWindow : in.space == StateSpace::Local ? kLocalWindow : 0;
          return in.to_generic ? a + window : a - window;
        });
      case Opcode::Ld: return execute_load(in, active, warp);
      case Opcode::St: return execute_store(in, active, warp);
      case Opcode::Atom: case Opcode::Red: return execute_atomic(in, active, warp);
      case Opcode::Shfl: return execute_shuffle(in, active, warp);
      case Opcode::Vote: return execute_vote(in, active, warp);
      case Opcode::Activemask:
        return unary(in, active, warp, [active](std::uint64_t) { return std::uint64_t(active); });
      case Opcode::BarWarpSync:
        if (active) check_members(in, warp, active, uniform_mask(in, warp, active, in.operands[0]));
        return;
      case Opcode::Nop: return;
      case Opcode::Bra: case Opcode::Ret: case Opcode::Exit: case Opcode::Bar: return;  // handled by run_warp
    }
  }

  static std::uint64_t multiply(const Instruction& in, std::uint64_t a, std::uint64_t b, unsigned bits, bool is_signed) {
    const std::uint64_t mask = width_mask(bits);
    switch (in.mul_mode) {
      case MulMode::Lo: return (a * b) & mask;
      case MulMode::Wide:
        if (is_signed) return static_cast<std::uint64_t>(sign_extend(a, bits) * sign_extend(b, bits)) & width_mask(2 * bits);
        return ((a & mask) * (b & mask)) & width_mask(2 * bits);
      case MulMode::Hi:
        if (bits == 64) {
          if (is_signed)
            return static_cast<std::uint64_t>(
                (static_cast<__int128>(static_cast<std::int64_t>(a)) * static_cast<std::int64_t>(b)) >> 64);
          return static_cast<std::uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
        }
        if (is_signed) return static_cast<std::uint64_t>((sign_extend(a, bits) * sign_extend(b, bits)) >> bits) & mask;
        return (((a & mask) * (b & mask)) >> bits) & mask;
    }
    return 0;
  }

  static std::uint64_t permute(PermuteMode mode, std::uint32_t a, std::uint32_t b, std::uint32_t c) {
    std::uint64_t source = (std::uint64_t(b) << 32) | a;
    auto byte = [&](unsigned index) { return std::uint32_t((source >> (8 * (index & 7))) & 0xff); };
    std::uint32_t result = 0;
    if (mode == PermuteMode::Generic) {
      for (unsigned i = 0; i < 4; ++i) {
        unsigned selector = (c >> (4 * i)) & 0xf;
        std::uint32_t value = byte(selector & 7);
        if (selector & 8) value = (value & 0x80) ? 0xff : 0x00;
        result |= value << (8 * i);
      }
      return result;
    }
    // PTX ISA 9.7.9.7 table: source byte for result bytes 0..3, by c[1:0].
    static const std::uint8_t table[6][4][4] = {
        {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},  // f4e
        {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},  // b4e
        {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},  // rc8
        {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},  // ecl
        {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},  // ecr
        {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},  // rc16
    };
    const auto& row = table[static_cast<unsigned>(mode) - 1][c & 3];
    for (unsigned i = 0; i < 4; ++i) result |= byte(row[i]) << (8 * i);
    return result;
  }

  void execute_fma(const Instruction& in, std::uint32_t active, Warp& warp) {
    ScopedRounding rounding(in.rounding);
    if (in.type == ValueType::F32)
      return ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
        float r = std::fma(load_f32(a, in.ftz), load_f32(b, in.ftz), load_f32(c, in.ftz));
        return store_f32(in.saturate ? saturate_unit(r) : r, in.ftz);
      });
    return ternary(in, active, warp, [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
      double r = std::fma(load_f64(a, false), load_f64(b, false), load_f64(c, false));
      return store_f64(in.saturate ? saturate_unit(r) : r, false);
    });
  }

  void execute_float_divide(const Instruction& in, std::uint32_t active, Warp& warp) {
    if (in.type == ValueType::F32 && in.approx) {
      // div.approx.f32 = a * (1/b); PTX ISA 9.7.3.8: for 2^126 < |b| < 2^128 the result is 0.
      return binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
        float x = load_f32(a, in.ftz), y = load_f32(b, in.ftz);
        float reciprocal = 1.0f / y;
        if (std::isfinite(y) && std::fabs(y) > 0x1p126f) reciprocal = std::copysign(0.0f, y);
        return store_f32(x * reciprocal, in.ftz);
      });
    }
    // div.full.f32 (max 2 ulp error) and div.rn/rz/rm/rp: the correctly rounded quotient.
    float_binary(in, active, warp, [](auto a, auto b) { return a / b; });
  }

  void execute_float_min_max(const Instruction& in, std::uint32_t active, Warp& warp) {
    // PTX ISA 9.7.3.10/11: a NaN operand is ignored unless .NaN; two NaNs give the
    // canonical NaN; -0.0 is smaller than +0.0.
    bool is_min = in.opcode == Opcode::Min;
    auto pick = [&](auto x, auto y) {
      using T = decltype(x);
      if (std::isnan(x) || std::isnan(y)) {
        if (in.propagate_nan || (std::isnan(x) && std::isnan(y))) return std::numeric_limits<T>::quiet_NaN();
        return std::isnan(x) ? y : x;
      }
      if (x == y) return (std::signbit(x) == is_min) ? x : y;
      return ((x < y) == is_min) ? x : y;
    };
    if (in.type == ValueType::F32)
      return binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
        return store_f32(pick(load_f32(a, in.ftz), load_f32(b, in.ftz)), in.ftz);
      });
    binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
      return store_f64(pick(load_f64(a, false), load_f64(b, false)), false);
    });
  }

  bool evaluate_compare(const Instruction& in, ValueType type, std::uint64_t a, std::uint64_t b) const {
    if (type == ValueType::F32) return compare_float(load_f32(a, in.ftz), load_f32(b, in.ftz), in.compare);
    if (type == ValueType::F64) return compare_float(load_f64(a, false), load_f64(b, false), in.compare);
    return compare_integer(a, b, type, in.compare);
  }

  void execute_setp(const Instruction& in, std::uint32_t active, Warp& warp) {
    std::uint64_t* p = reg(warp, in.operands[0].regs[0]);
    std::uint64_t* q = in.predicate_destination >= 0 ? reg(warp, static_cast<std::uint32_t>(in.predicate_destination)) : nullptr;
    const std::uint64_t* a = reg(warp, in.operands[1].regs[0]);
    const std::uint64_t* b = reg(warp, in.operands[2].regs[0]);
    const std::uint64_t* c = in.operand_count > 3 ? reg(warp, in.operands[3].regs[0]) : nullptr;
    bool c_negate = in.operand_count > 3 && in.operands[3].negate;
    for_each_lane(active, [&](unsigned lane) {
      bool t = evaluate_compare(in, in.type, a[lane], b[lane]);
      bool cv = c ? (((c[lane] & 1) != 0) != c_negate) : false;
      p[lane] = combine(t, in.bool_op, cv);
      if (q) q[lane] = combine(!t, in.bool_op, cv);
    });
  }

  void execute_set(const Instruction& in, std::uint32_t active, Warp& warp) {
    std::uint64_t* d = reg(warp, in.operands[0].regs[0]);
    const std::uint64_t* a = reg(warp, in.operands[1].regs[0]);
    const std::uint64_t* b = reg(warp, in.operands[2].regs[0]);
    const std::uint64_t* c = in.operand_count > 3 ? reg(warp, in.operands[3].regs[0]) : nullptr;
    bool c_negate = in.operand_count > 3 && in.operands[3].negate;
    std::uint64_t true_value = in.type == ValueType::F32 ? 0x3f800000u : width_mask(bit_width(in.type));
    for_each_lane(active, [&](unsigned lane) {
      bool t = evaluate_compare(in, in.source_type, a[lane], b[lane]);
      bool cv = c ? (((c[lane] & 1) != 0) != c_negate) : false;
      d[lane] = combine(t, in.bool_op, cv) ? true_value : 0;
    });
  }

  void execute_move(const Instruction& in, std::uint32_t active, Warp& warp) {
    const Operand& destination = in.operands[0];
    const Operand& source = in.operands[1];
    const unsigned bits = bit_width(in.type);
    if (destination.kind == Operand::Kind::Vector) {  // mov.b64 {lo, hi}, wide: unpack
      unsigned element_bits = bits / destination.count;
      const std::uint64_t* a = reg(warp, source.regs[0]);
      for_each_lane(active, [&](unsigned lane) {
        std::uint64_t value = a[lane];
        for (unsigned e = 0; e < destination.count; ++e)
          reg(warp, destination.regs[e])[lane] = (value >> (e * element_bits)) & width_mask(element_bits);
      });
      return;
    }
    std::uint64_t* d = reg(warp, destination.regs[0]);
    if (source.kind == Operand::Kind::Vector) {  // mov.b64 wide, {lo, hi}: pack
      unsigned element_bits = bits / source.count;
      for_each_lane(active, [&](unsigned lane) {
        std::uint64_t value = 0;
        for (unsigned e = 0; e < source.count; ++e)
          value |= (reg(warp, source.regs[e])[lane] & width_mask(element_bits)) << (e * element_bits);
        d[lane] = value;
      });
      return;
    }
    const std::uint64_t* a = reg(warp, source.regs[0]);
    const std::uint64_t mask = width_mask(bits);
    const bool negate = source.negate;
    for_each_lane(active, [&](unsigned lane) { d[lane] = negate ? ((a[lane] & 1) ^ 1) : (a[lane] & mask); });
  }

  void execute_convert(const Instruction& in, std::uint32_t active, Warp& warp) {
    const ValueType to = in.type, from = in.source_type;
    if (to == ValueType::F16x2 || to == ValueType::BF16x2) {  // cvt.rn.f16x2.f32 d, a, b: d = {a (high), b (low)}
      return binary(in, active, warp, [&](std::uint64_t a, std::uint64_t b) {
        FloatFormat format = format_of(to);
        std::uint64_t high = round_to_format(load_f32(a, in.ftz), format, in.rounding, false);
        std::uint64_t low = round_to_format(load_f32(b, in.ftz), format, in.rounding, false);
        if (in.saturate) {
          high = round_to_format(saturate_unit<long double>(load_f32(a, in.ftz)), format, in.rounding, false);
          low = round_to_format(saturate_unit<long double>(load_f32(b, in.ftz)), format, in.rounding, false);
        }
        return (high << 16) | low;
      });
    }
    const bool from_float = is_float(from), to_float = is_float(to);
    const unsigned to_bits = bit_width(to), from_bits = bit_width(from);
    unary(in, active, warp, [&](std::uint64_t a) -> std::uint64_t {
      if (from_float) {
        long double value = decode_float(a, from, in.ftz);
        if (to_float) {
          if (in.rounding >= Rounding::NearestInt) value = round_integral(value, in.rounding);
          if (in.saturate) value = saturate_unit(value);
          Rounding rounding = in.rounding >= Rounding::NearestInt ? Rounding::Nearest : in.rounding;
          bool flush = in.ftz && to == ValueType::F32;
          return round_to_format(value, format_of(to), rounding, flush);
        }
        std::uint64_t integer = float_to_integer(round_integral(value, in.rounding), to);
        return is_signed_integer(to) ? static_cast<std::uint64_t>(sign_extend(integer, to_bits)) : integer;
      }
      if (to_float) {
        long double value = is_signed_integer(from) ? static_cast<long double>(sign_extend(a, from_bits))
                                                    : static_cast<long double>(a & width_mask(from_bits));
        if (in.saturate) value = saturate_unit(value);
        return round_to_format(value, format_of(to), in.rounding, in.ftz && to == ValueType::F32);
      }
      // A destination narrower than its register is sign- or zero-extended per the
      // destination type (PTX ISA 9.7.9.21); consumers read only the bits they need.
      std::uint64_t value = in.saturate ? saturate_integer(a, from, to)
                                        : (is_signed_integer(from) ? static_cast<std::uint64_t>(sign_extend(a, from_bits))
                                                                   : (a & width_mask(from_bits)));
      return is_signed_integer(to) ? static_cast<std::uint64_t>(sign_extend(value, to_bits)) : value & width_mask(to_bits);
    });
  }

  const Kernel& kernel_;
  const LaunchConfig& config_;
  std::vector<DeviceBuffer>& buffers_;
  std::vector<std::uint8_t> parameters_;
  const LaunchOptions& options_;
  std::vector<std::vector<std::uint8_t>> touched_;  // per global byte: 1 read, 2 written
  std::uint32_t threads_per_cta_ = 0;
  std::uint32_t warps_per_cta_ = 0;
  std::array<std::uint32_t, 3> ctaid_{};
  std::vector<std::uint8_t> shared_;
  std::vector<std::uint8_t> dynamic_shared_;
  std::vector<std::uint8_t> local_;
  std::vector<std::uint64_t> registers_;
  LaunchCounters counters_;
};

std::vector<std::uint8_t> marshal_parameters(const Kernel& kernel, const std::vector<DeviceBuffer>& buffers,
                                             const std::vector<KernelArgument>& arguments) {
  if (arguments.size() != kernel.parameters.size())
    throw RuntimeError(fmt::format("PTX emulator: kernel {} takes {} parameters but {} arguments were given", kernel.name,
                                   kernel.parameters.size(), arguments.size()));
  std::vector<std::uint8_t> bytes(kernel.parameter_bytes, 0);
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const KernelParameter& parameter = kernel.parameters[i];
    std::uint64_t value = 0;
    if (const auto* pointer = std::get_if<PointerArgument>(&arguments[i])) {
      if (parameter.size != 8)
        throw RuntimeError(fmt::format("PTX emulator: kernel {} parameter {} ('{}') is {} bytes; a pointer needs .u64",
                                       kernel.name, i, parameter.name, parameter.size));
      if (pointer->buffer >= buffers.size())
        throw RuntimeError(fmt::format("PTX emulator: argument {} names buffer {} but only {} buffers exist", i,
                                       pointer->buffer, buffers.size()));
      value = ((pointer->buffer + 1) << kBufferShift) + pointer->byte_offset;
    } else {
      value = std::get<ScalarArgument>(arguments[i]).bits;
    }
    std::memcpy(bytes.data() + parameter.offset, &value, std::min<std::uint32_t>(parameter.size, 8));
  }
  return bytes;
}

}  // namespace

LaunchCounters launch(const Module& module, const std::string& kernel_name, const LaunchConfig& config,
                      std::vector<DeviceBuffer>& buffers, const std::vector<KernelArgument>& arguments,
                      const LaunchOptions& options) {
  const Kernel* kernel = module.find(kernel_name);
  if (!kernel) {
    std::string names;
    for (const Kernel& k : module.kernels) names += (names.empty() ? "" : ", ") + k.name;
    throw RuntimeError(fmt::format("PTX emulator: no kernel '{}' in the module (it has: {})", kernel_name, names));
  }
  std::uint64_t threads = std::uint64_t(config.block[0]) * config.block[1] * config.block[2];
  if (threads == 0 || threads > 1024 || config.grid[0] == 0 || config.grid[1] == 0 || config.grid[2] == 0)
    throw RuntimeError(fmt::format("PTX emulator: invalid launch of {}: grid ({},{},{}) block ({},{},{}); blocks hold 1..1024 "
                                   "threads and every dimension must be at least 1",
                                   kernel_name, config.grid[0], config.grid[1], config.grid[2], config.block[0],
                                   config.block[1], config.block[2]));
  if (kernel->max_threads) {
    const auto& limit = *kernel->max_threads;
    if (threads > std::uint64_t(limit[0]) * limit[1] * limit[2])
      throw RuntimeError(fmt::format("PTX emulator: block of {} threads exceeds kernel {}'s .maxntid {},{},{}", threads,
                                     kernel_name, limit[0], limit[1], limit[2]));
  }
  if (buffers.size() + 1 >= (kLocalWindow >> kBufferShift))
    throw RuntimeError("PTX emulator: too many device buffers");
  for (const DeviceBuffer& buffer : buffers)
    if (buffer.bytes.size() >= kWindowSize)
      throw RuntimeError(fmt::format("PTX emulator: buffer '{}' is larger than 4 GiB", buffer.name));
  Launch state(*kernel, config, buffers, marshal_parameters(*kernel, buffers, arguments), options);
  return state.run();
}

LaunchCounters run(const std::string& ptx_text, const ir::Program& program, BufferSet& buffers, const LaunchOptions& options) {
  check_buffers(program, buffers);
  Module module = parse_ptx(ptx_text);
  std::vector<const ir::BufferDecl*> ordered;
  for (const ir::BufferDecl& declaration : program.buffers) ordered.push_back(&declaration);
  std::stable_sort(ordered.begin(), ordered.end(), [](auto* a, auto* b) { return a->binding < b->binding; });
  std::vector<DeviceBuffer> device;
  std::vector<KernelArgument> arguments;
  for (const ir::BufferDecl* declaration_pointer : ordered) {
    const ir::BufferDecl& declaration = *declaration_pointer;
    device.push_back({declaration.name, buffers.at(declaration.name).bytes});
    arguments.push_back(PointerArgument{device.size() - 1, 0});
  }
  LaunchConfig config;
  config.grid = program.workgroup_count;
  config.block = program.workgroup_size;
  LaunchCounters counters = launch(module, program.name, config, device, arguments, options);
  for (std::size_t i = 0; i < ordered.size(); ++i)
    if (ordered[i]->is_output()) buffers.at(ordered[i]->name).bytes = std::move(device[i].bytes);
  return counters;
}

}  // namespace quantc::runtime::emulator
