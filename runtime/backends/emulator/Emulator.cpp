// The executor: CTAs, warps, reconvergence, barriers, memory and the warp-level
// operations (PTX ISA 8.x chapter 9). The arithmetic semantics of each instruction form
// are in Semantics.cpp; see Emulator.h for the model and the errors.
#include "runtime/backends/emulator/Emulator.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "ir/Mma.h"
#include "runtime/backends/emulator/Launch.h"

namespace quantc::runtime::emulator {

namespace detail {
namespace {

// Generic address windows: buffer i at (i+1) << 32; .shared and .local windows above.
constexpr std::uint64_t kBufferShift = 32;
constexpr std::uint64_t kSharedWindow = 0xFF00'0000'0000ull;
constexpr std::uint64_t kLocalWindow = 0xFE00'0000'0000ull;
constexpr std::uint64_t kWindowSize = 1ull << 32;

std::uint64_t read_bytes(const std::uint8_t* bytes, unsigned size) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes, size);  // little-endian host, like the device
  return value;
}

void insert_group(std::vector<Group>& groups, Group group) {
  auto it = groups.begin();
  while (it != groups.end() && it->pc > group.pc) ++it;
  if (it != groups.end() && it->pc == group.pc) it->mask |= group.mask;
  else groups.insert(it, group);
}

/// The subroutine a Pipe::Emulated instruction expands into.
Subroutine subroutine_of(const Instruction& in) {
  switch (in.form->form) {
    case ptx::Form::IntDiv:
    case ptx::Form::IntRem:
      return ptx::bit_width(in.type) > 32 ? Subroutine::DivRem64 : Subroutine::DivRem32;
    case ptx::Form::F32Div:
      return (in.approx || in.full) ? Subroutine::F32DivFast : Subroutine::F32Div;
    case ptx::Form::F64Sqrt:
      return Subroutine::F64Sqrt;
    default:  // F64Div, F64Rcp
      return Subroutine::F64Div;
  }
}

/// The pipe an instruction is counted on: its table row's, except integer-to-integer
/// cvt, which the row puts on Conversion with every other cvt. On the GPU a truncation
/// (cvt.u32.u64: use the low register) or a 32 -> 64-bit zero extension (cvt.u64.u32: pair
/// with the zero register) is no instruction at all, so it counts as a Move, which the cost
/// model treats as free; a sign extension or an 8/16-bit extension or saturation is one
/// integer ALU instruction (SHF/SGXT/LOP3/IMNMX), not an I2I conversion.
ptx::Pipe counted_pipe(const Instruction& in) {
  if (in.opcode != Opcode::Cvt || ptx::is_float(in.type) || ptx::is_float(in.source_type)) return in.form->pipe;
  const unsigned to = ptx::bit_width(in.type), from = ptx::bit_width(in.source_type);
  if (in.saturate) return ptx::Pipe::Integer;
  if (to <= from) return ptx::Pipe::Move;
  if (from == 32 && ptx::is_unsigned_integer(in.source_type)) return ptx::Pipe::Move;
  return ptx::Pipe::Integer;
}

std::string lane_list(std::uint32_t mask) {
  std::string text;
  for_each_lane(mask, [&](unsigned lane) { text += (text.empty() ? "" : ",") + std::to_string(lane); });
  return text;
}

}  // namespace

Launch::Launch(const Kernel& kernel, const LaunchConfig& config, std::vector<DeviceBuffer>& buffers,
               std::vector<std::uint8_t> parameters, const LaunchOptions& options)
    : kernel_(kernel), config_(config), buffers_(buffers), parameters_(std::move(parameters)), options_(options) {
  touched_.resize(buffers_.size());
  sector_state_.resize(buffers_.size());
  counters_.buffers.resize(buffers_.size());
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    counters_.buffers[i].name = buffers_[i].name;
    touched_[i].assign(buffers_[i].bytes.size(), 0);
    sector_state_[i].assign((buffers_[i].bytes.size() + 31) / 32, 0);
  }
  threads_per_cta_ = config.block[0] * config.block[1] * config.block[2];
  warps_per_cta_ = (threads_per_cta_ + 31) / 32;
}

LaunchCounters Launch::run() {
  const std::uint64_t total = std::uint64_t(config_.grid[0]) * config_.grid[1] * config_.grid[2];
  std::uint64_t done = 0;
  for (std::uint32_t z = 0; z < config_.grid[2]; ++z)
    for (std::uint32_t y = 0; y < config_.grid[1]; ++y)
      for (std::uint32_t x = 0; x < config_.grid[0]; ++x) {
        run_cta({x, y, z});
        if (options_.progress) options_.progress(++done, total);
      }
  for (const auto& flags : touched_)
    for (std::uint8_t flag : flags) {
      counters_.unique_global_bytes_read += (flag & kByteRead) ? 1 : 0;
      counters_.unique_global_bytes_written += (flag & kByteWritten) ? 1 : 0;
    }
  for (const auto& flags : touched_) {
    for (std::size_t sector = 0; sector < flags.size(); sector += 32) {
      std::uint8_t any = 0;
      for (std::size_t i = sector; i < std::min(flags.size(), sector + 32); ++i) any |= flags[i];
      counters_.unique_global_sectors_read += (any & kByteReadFromDram) ? 1 : 0;
      counters_.unique_global_sectors_written += (any & kByteWritten) ? 1 : 0;
    }
  }
  for (std::size_t i = 0; i < shared_sites_.size(); ++i) {
    if (shared_sites_[i].bank_conflicts == 0) continue;
    SharedConflictSite site = shared_sites_[i];
    site.line = kernel_.code[i].line;
    site.instruction = kernel_.source_text[i];
    counters_.shared_conflict_sites.push_back(std::move(site));
  }
  keep_most_conflicted(counters_.shared_conflict_sites);
  counters_.ctas = std::uint64_t(config_.grid[0]) * config_.grid[1] * config_.grid[2];
  counters_.threads = counters_.ctas * threads_per_cta_;
  return counters_;
}

void Launch::run_cta(std::array<std::uint32_t, 3> ctaid) {
  ctaid_ = ctaid;
  cta_linear_ = (ctaid[2] * config_.grid[1] + ctaid[1]) * config_.grid[0] + ctaid[0];
  shared_.assign(kernel_.static_shared_bytes, 0);
  dynamic_shared_.assign(config_.dynamic_shared_bytes, 0);
  local_.assign(std::size_t(warps_per_cta_) * 32 * kernel_.local_bytes, 0);
  const std::size_t warp_registers = std::size_t(kernel_.register_count) * 32;
  registers_.assign(warp_registers * warps_per_cta_, 0);
  pending_.assign(std::size_t(kernel_.register_count) * warps_per_cta_, 0);
  std::vector<Warp> warps(warps_per_cta_);
  for (std::uint32_t w = 0; w < warps_per_cta_; ++w) {
    Warp& warp = warps[w];
    warp.index = w;
    std::uint32_t lanes = std::min<std::uint32_t>(32, threads_per_cta_ - w * 32);
    warp.existing = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1);
    warp.registers = registers_.data() + warp_registers * w;
    warp.pending = pending_.data() + std::size_t(kernel_.register_count) * w;
    initialize_registers(warp);
    warp.groups.push_back({0, warp.existing});
  }
  while (true) {
    for (Warp& warp : warps)
      if (!warp.groups.empty()) run_warp(warp);
    bool waiting = false;
    for (Warp& warp : warps) waiting = waiting || !warp.at_barrier.empty();
    if (!waiting) {
      for (Warp& warp : warps)
        if (!warp.pending_slots.empty()) end_load_batch(warp);  // exited with loads in flight
      break;
    }
    ++counters_.barriers;
    for (Warp& warp : warps) {
      for (Group group : warp.at_barrier) insert_group(warp.groups, group);
      warp.at_barrier.clear();
    }
  }
}

void Launch::initialize_registers(Warp& warp) {
  for (const auto& [slot, value] : kernel_.constants) std::fill_n(warp.registers + slot * 32, 32, value);
  for (const auto& [slot, special] : kernel_.special_slots) {
    std::uint64_t* values = warp.registers + slot * 32;
    for (unsigned lane = 0; lane < 32; ++lane) values[lane] = special_value(special, warp, lane);
  }
}

std::array<std::uint32_t, 3> Launch::thread_index(std::uint32_t warp, unsigned lane) const {
  std::uint32_t linear = warp * 32 + lane;
  return {linear % config_.block[0], (linear / config_.block[0]) % config_.block[1],
          linear / (config_.block[0] * config_.block[1])};
}

std::uint64_t Launch::special_value(SpecialRegister special, const Warp& warp, unsigned lane) const {
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

void Launch::run_warp(Warp& warp) {
  const Instruction* code = kernel_.code.data();
  while (!warp.groups.empty()) {
    Group group = warp.groups.back();
    const Instruction& in = code[group.pc];
    std::uint32_t active = group.mask;
    if (in.guard >= 0) {
      const std::uint64_t* predicate = warp.registers + std::size_t(in.guard) * 32;
      std::uint32_t guard_mask = 0;
      for_each_lane(active, [&](unsigned lane) {
        if (((predicate[lane] & 1) != 0) != in.guard_negate) guard_mask |= 1u << lane;
      });
      active = guard_mask;
    }
    count(in, active);
    if (!warp.pending_slots.empty() && touches_pending(in, warp)) end_load_batch(warp);
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
      case Opcode::Bar:
      case Opcode::Barrier: {
        warp.groups.pop_back();
        if (std::uint32_t rest = group.mask & ~active) insert_group(warp.groups, {group.pc + 1, rest});
        if (active) insert_group(warp.at_barrier, {group.pc + 1, active});
        continue;
      }
      default:
        try {
          kSemantics[static_cast<std::size_t>(in.form->form)](*this, in, active, warp);
        } catch (const LaneFault& fault) {
          fail(in, warp.index, fault.lane, fault.what());
        }
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

void Launch::count(const Instruction& in, std::uint32_t active) {
  if (++counters_.warp_instructions > options_.max_warp_instructions)
    throw RuntimeError(fmt::format("PTX emulator: kernel {} exceeded {} warp instructions (runaway loop?) at line {}: {}",
                                   kernel_.name, options_.max_warp_instructions, in.line, text(in)));
  const ptx::Pipe pipe = counted_pipe(in);
  ++counters_.pipe_instructions[static_cast<std::size_t>(pipe)];
  if (pipe == ptx::Pipe::Emulated) ++counters_.subroutine_instructions[static_cast<std::size_t>(subroutine_of(in))];
  else if (in.opcode == Opcode::Ld && in.space == StateSpace::Param) ++counters_.parameter_loads;
  counters_.thread_instructions += static_cast<unsigned>(std::popcount(active));
}

bool Launch::touches_pending(const Instruction& in, const Warp& warp) const {
  const std::uint8_t* pending = warp.pending;
  if (in.guard >= 0 && pending[in.guard]) return true;
  if (in.predicate_destination >= 0 && pending[in.predicate_destination]) return true;
  for (unsigned i = 0; i < in.operand_count; ++i) {
    const Operand& operand = in.operands[i];
    switch (operand.kind) {
      case Operand::Kind::Register:
      case Operand::Kind::Address:
        if (pending[operand.regs[0]]) return true;
        break;
      case Operand::Kind::Vector:
        for (unsigned r = 0; r < operand.count; ++r)
          if (pending[operand.regs[r]]) return true;
        break;
      case Operand::Kind::None:
      case Operand::Kind::Label:
        break;
    }
  }
  return false;
}

void Launch::count_load_batch(CacheLevel level) {
  ++counters_.global_load_batches;
  switch (level) {
    case CacheLevel::Dram: ++counters_.global_load_batches_dram; break;
    case CacheLevel::L2: ++counters_.global_load_batches_l2; break;
    case CacheLevel::L1: ++counters_.global_load_batches_l1; break;
  }
}

void Launch::end_load_batch(Warp& warp) {
  count_load_batch(static_cast<CacheLevel>(warp.pending_level));
  warp.pending_level = 0;
  for (std::uint32_t slot : warp.pending_slots) warp.pending[slot] = 0;
  warp.pending_slots.clear();
}

const std::string& Launch::text(const Instruction& in) const {
  return kernel_.source_text[static_cast<std::size_t>(&in - kernel_.code.data())];
}

void Launch::fail(const Instruction& in, std::uint32_t warp, unsigned lane, const std::string& message) const {
  auto tid = thread_index(warp, lane);
  throw RuntimeError(fmt::format("PTX emulator: {} — thread ctaid=({},{},{}) tid=({},{},{}), kernel {}, PTX line {}: {}",
                                 message, ctaid_[0], ctaid_[1], ctaid_[2], tid[0], tid[1], tid[2], kernel_.name,
                                 in.line, text(in)));
}

void Launch::fail_warp(const Instruction& in, std::uint32_t warp, const std::string& message) const {
  throw RuntimeError(fmt::format("PTX emulator: {} — warp {} of ctaid=({},{},{}), kernel {}, PTX line {}: {}", message,
                                 warp, ctaid_[0], ctaid_[1], ctaid_[2], kernel_.name, in.line, text(in)));
}

// ----- memory -----------------------------------------------------------------------

Launch::Access Launch::resolve(const Instruction& in, const Warp& warp, unsigned lane, StateSpace space, std::uint64_t address, unsigned size, bool store) {
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

void Launch::add_to_request(Request& request, std::uint64_t address, unsigned bytes) {
  request.global = true;
  if (request.span_count < request.spans.size()) request.spans[request.span_count++] = {address, address + bytes};
  for (std::uint64_t sector = address / 32; sector <= (address + bytes - 1) / 32 && request.count < request.sectors.size();
       ++sector)
    request.sectors[request.count++] = sector;
}

void Launch::add_shared_to_request(Request& request, unsigned lane, const Access& access, unsigned bytes) const {
  // Banks repeat every 128 bytes: a dynamic array's offsets count from its own start,
  // which the driver aligns (at least to 16 bytes; 128 assumed here).
  const bool is_static = access.bytes >= shared_.data() && access.bytes < shared_.data() + shared_.size();
  const std::uint8_t* base = is_static ? shared_.data() : dynamic_shared_.data();
  if (request.shared_count < request.shared.size())
    request.shared[request.shared_count++] = {static_cast<std::uint8_t>(lane), static_cast<std::uint8_t>(bytes),
                                              static_cast<std::uint32_t>(access.bytes - base)};
}

std::pair<std::uint64_t, std::uint64_t> Launch::Request::shared_wavefronts() const {
  constexpr unsigned kBanks = 32, kBankBytes = 4, kPhaseBytes = kBanks * kBankBytes;
  unsigned widest = 1;
  for (unsigned i = 0; i < shared_count; ++i) widest = std::max<unsigned>(widest, shared[i].bytes);
  const unsigned lanes_per_phase = std::min(32u, kPhaseBytes / std::max(widest, kBankBytes));
  std::uint64_t wavefronts = 0, phases = 0;
  for (unsigned first = 0; first < 32; first += lanes_per_phase) {
    std::array<std::uint32_t, kBanks> words;  // the phase's 4-byte words: 128 aligned bytes at most
    unsigned count = 0;
    for (unsigned i = 0; i < shared_count; ++i) {
      if (shared[i].lane < first || shared[i].lane >= first + lanes_per_phase) continue;
      for (std::uint32_t w = shared[i].offset / kBankBytes; w <= (shared[i].offset + shared[i].bytes - 1) / kBankBytes &&
                                                           count < words.size();
           ++w)
        words[count++] = w;
    }
    if (count == 0) continue;
    std::sort(words.begin(), words.begin() + count);
    count = static_cast<unsigned>(std::unique(words.begin(), words.begin() + count) - words.begin());
    std::array<std::uint32_t, kBanks> per_bank{};
    std::uint32_t most = 0;
    for (unsigned i = 0; i < count; ++i) most = std::max(most, ++per_bank[words[i] % kBanks]);
    wavefronts += most;
    ++phases;
  }
  return {wavefronts, phases};
}

std::uint64_t Launch::Request::unique() {
  std::sort(sectors.begin(), sectors.begin() + count);
  return static_cast<std::uint64_t>(std::unique(sectors.begin(), sectors.begin() + count) - sectors.begin());
}

CacheLevel Launch::finish_request(const Instruction& in, Request& request, bool load, bool store, StateSpace space) {
  CacheLevel level = CacheLevel::L1;
  if (request.global) {
    std::uint64_t sectors = request.unique();
    // The sorted distinct sectors' 128-byte lines (4 sectors each): the L1 wavefronts.
    std::uint64_t lines = 0;
    for (std::uint64_t i = 0; i < sectors; ++i) lines += i == 0 || request.sectors[i] / 4 != request.sectors[i - 1] / 4;
    if (load) {
      ++counters_.global_load_requests;
      counters_.global_load_sectors += sectors;
      counters_.global_load_wavefronts += lines;
    }
    if (store) {
      ++counters_.global_store_requests;
      counters_.global_store_sectors += sectors;
      counters_.global_store_wavefronts += lines;
    }
    // Distinct bytes per buffer (lanes reading the same address count once, as the
    // memory system serves them once): the union of the lanes' spans.
    std::sort(request.spans.begin(), request.spans.begin() + request.span_count);
    std::size_t previous_buffer = std::numeric_limits<std::size_t>::max();
    std::uint64_t covered_end = 0;
    for (unsigned i = 0; i < request.span_count; ++i) {
      auto [begin, end] = request.spans[i];
      const std::size_t buffer = (begin >> kBufferShift) - 1;
      BufferTraffic& traffic = counters_.buffers[buffer];
      if (buffer != previous_buffer) {
        if (load) ++traffic.load_requests;
        if (store) ++traffic.store_requests;
        previous_buffer = buffer;
        covered_end = 0;
      }
      begin = std::max(begin, covered_end);
      if (end <= begin) continue;
      if (load) traffic.load_bytes += end - begin;
      if (store) traffic.store_bytes += end - begin;
      covered_end = end;
    }
    const std::uint32_t mine = cta_linear_ + 1;
    for (std::uint64_t i = 0; i < sectors; ++i) {
      // Every buffer lives at (index + 1) << 32: its sectors are numbered from 0 there.
      const std::uint64_t sector = request.sectors[i];
      const std::size_t buffer = (sector >> (kBufferShift - 5)) - 1;
      if (load) ++counters_.buffers[buffer].load_sectors;
      if (store) ++counters_.buffers[buffer].store_sectors;
      std::uint32_t& state = sector_state_[buffer][sector & ((kWindowSize >> 5) - 1)];
      if (state == 0) level = CacheLevel::Dram;
      else if (state != mine && level == CacheLevel::L1) level = CacheLevel::L2;
      state = store ? kStoredSector : mine;
    }
  } else if (space == StateSpace::Shared || request.shared_count > 0) {
    if (load) ++counters_.shared_load_requests;
    if (store) ++counters_.shared_store_requests;
    const auto [wavefronts, phases] = request.shared_wavefronts();
    if (load) counters_.shared_load_wavefronts += wavefronts;
    if (store) counters_.shared_store_wavefronts += wavefronts;
    counters_.shared_bank_conflicts += wavefronts - phases;
    if (wavefronts > phases) {
      if (shared_sites_.empty()) shared_sites_.resize(kernel_.code.size());
      SharedConflictSite& site = shared_sites_[static_cast<std::size_t>(&in - kernel_.code.data())];
      site.requests += 1;
      site.wavefronts += wavefronts;
      site.bank_conflicts += wavefronts - phases;
    }
  }
  return level;
}

void Launch::mark(const Access& access, unsigned size, std::uint8_t flag) {
  if (access.space != StateSpace::Global) return;
  std::uint8_t* flags = touched_[access.buffer].data() + access.offset;
  // A read of a byte this launch has not written yet comes from DRAM; a read of one it
  // wrote is served by the write-back L2 that holds the write.
  const std::uint8_t from_dram = (flag & kByteRead) ? kByteReadFromDram : 0;
  for (unsigned i = 0; i < size; ++i) flags[i] |= flag | ((flags[i] & kByteWritten) ? 0 : from_dram);
}

void Launch::load(const Instruction& in, std::uint32_t active, Warp& warp) {
  const unsigned size = ptx::bit_width(in.type) / 8;
  const unsigned bits = ptx::bit_width(in.type);
  const Operand& destination = in.operands[0];
  const Operand& address = in.operands[1];
  const std::uint64_t* base = reg(warp, address.regs[0]);
  Request request;
  for_each_lane(active, [&](unsigned lane) {
    std::uint64_t start = base[lane] + static_cast<std::uint64_t>(address.offset);
    // Vector accesses must be aligned to their whole size (PTX ISA 5.4.5).
    const Access whole = resolve(in, warp, lane, in.space, start, size * in.vector, false);
    if (whole.space == StateSpace::Shared) add_shared_to_request(request, lane, whole, size * in.vector);
    for (unsigned e = 0; e < in.vector; ++e) {
      Access access = resolve(in, warp, lane, in.space, start + e * size, size, false);
      std::uint64_t value = read_bytes(access.bytes, size);
      if (ptx::is_signed_integer(in.type)) value = static_cast<std::uint64_t>(sign_extend(value, bits));
      reg(warp, destination.regs[e])[lane] = value;
      if (access.space == StateSpace::Global) {
        mark(access, size, kByteRead);
        add_to_request(request, start + e * size, size);
      }
    }
  });
  const CacheLevel level = finish_request(in, request, true, false, in.space);
  if (request.global) {
    warp.pending_level = std::max(warp.pending_level, static_cast<std::uint8_t>(level));
    for (unsigned e = 0; e < in.vector; ++e) {
      std::uint32_t slot = destination.regs[e];
      if (!warp.pending[slot]) {
        warp.pending[slot] = 1;
        warp.pending_slots.push_back(slot);
      }
    }
  }
}

void Launch::store(const Instruction& in, std::uint32_t active, Warp& warp) {
  const unsigned size = ptx::bit_width(in.type) / 8;
  const Operand& address = in.operands[0];
  const Operand& source = in.operands[1];
  const std::uint64_t* base = reg(warp, address.regs[0]);
  Request request;
  for_each_lane(active, [&](unsigned lane) {
    std::uint64_t start = base[lane] + static_cast<std::uint64_t>(address.offset);
    const Access whole = resolve(in, warp, lane, in.space, start, size * in.vector, true);
    if (whole.space == StateSpace::Shared) add_shared_to_request(request, lane, whole, size * in.vector);
    for (unsigned e = 0; e < in.vector; ++e) {
      Access access = resolve(in, warp, lane, in.space, start + e * size, size, true);
      std::uint64_t value = reg(warp, source.regs[e])[lane];
      std::memcpy(access.bytes, &value, size);
      if (access.space == StateSpace::Global) {
        mark(access, size, kByteWritten);
        add_to_request(request, start + e * size, size);
      }
    }
  });
  finish_request(in, request, false, true, in.space);
}

void Launch::atomic(const Instruction& in, std::uint32_t active, Warp& warp) {
  const bool returns = in.opcode == Opcode::Atom;
  const unsigned size = ptx::bit_width(in.type) / 8;
  const unsigned bits = ptx::bit_width(in.type);
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
    bool is_signed = ptx::is_signed_integer(in.type);
    switch (op) {
      case AtomicOp::Add:
        if (in.type == ValueType::F32) result = store_f32(load_f32(old, true) + load_f32(value, true), true);
        else if (in.type == ValueType::F64) result = store_f64(load_f64(old) + load_f64(value));
        else result = old + value;
        break;
      case AtomicOp::Min:
        if (ptx::is_float(in.type)) fail(in, warp.index, lane, "atom.min on floats is not supported");
        result = is_signed ? (sign_extend(value, bits) < sign_extend(old, bits) ? value : old) : std::min(old, value);
        break;
      case AtomicOp::Max:
        if (ptx::is_float(in.type)) fail(in, warp.index, lane, "atom.max on floats is not supported");
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
      mark(access, size, kByteRead | kByteWritten);
      add_to_request(request, at, size);
    } else if (access.space == StateSpace::Shared) {
      add_shared_to_request(request, lane, access, size);
    }
  });
  finish_request(in, request, true, true, in.space);
}

// ----- warp-level -------------------------------------------------------------------

std::uint32_t Launch::uniform_mask(const Instruction& in, const Warp& warp, std::uint32_t active, const Operand& operand) {
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

void Launch::check_members(const Instruction& in, const Warp& warp, std::uint32_t active, std::uint32_t members) {
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

void Launch::shuffle(const Instruction& in, std::uint32_t active, Warp& warp) {
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

void Launch::require_whole_warp(const Instruction& in, std::uint32_t active, const Warp& warp, std::string_view what) {
  if (active != 0xffffffffu)
    fail_warp(in, warp.index,
              fmt::format("{} needs all 32 threads of the warp, but only lanes {} execute it (undefined behaviour on "
                          "hardware)",
                          what, lane_list(active)));
}

void Launch::require_live_lanes(const Instruction& in, std::uint32_t active, const Warp& warp, std::string_view what) {
  if (const std::uint32_t live = warp.existing & ~warp.exited; active != live)
    fail_warp(in, warp.index, fmt::format("{} by lanes {} of live lanes {}: the emulator keeps the cp.async groups per "
                                          "warp, so every live thread of the warp must run it together",
                                          what, lane_list(active), lane_list(live)));
}

/// cp.async.{ca,cg}.shared.global: checks both addresses now, counts the global read as a
/// load request now, and copies at the cp.async.wait_group that covers its group (so a
/// program that reads the destination early sees the old bytes, unlike the interpreter).
void Launch::async_copy(const Instruction& in, std::uint32_t active, Warp& warp) {
  const Operand& destination = in.operands[0];
  const Operand& source = in.operands[1];
  const std::uint64_t* to = reg(warp, destination.regs[0]);
  const std::uint64_t* from = reg(warp, source.regs[0]);
  const std::uint64_t* sizes = reg(warp, in.operands[2].regs[0]);
  Request request;
  for_each_lane(active, [&](unsigned lane) {
    const auto bytes = static_cast<unsigned>(sizes[lane]);
    if (bytes != 4 && bytes != 8 && bytes != 16) fail(in, warp.index, lane, fmt::format("cp.async copies 4, 8 or 16 bytes, not {}", bytes));
    if (in.cache_global && bytes != 16) fail(in, warp.index, lane, fmt::format("cp.async.cg copies 16 bytes, not {}", bytes));
    const std::uint64_t to_address = to[lane] + static_cast<std::uint64_t>(destination.offset);
    const std::uint64_t from_address = from[lane] + static_cast<std::uint64_t>(source.offset);
    Access target = resolve(in, warp, lane, StateSpace::Shared, to_address, bytes, true);
    Access origin = resolve(in, warp, lane, StateSpace::Global, from_address, bytes, false);
    mark(origin, bytes, kByteRead);
    add_to_request(request, from_address, bytes);
    warp.async_open.push_back({target.bytes, origin.bytes, bytes});
  });
  const CacheLevel level = finish_request(in, request, true, false, StateSpace::Global);
  if (request.global) warp.async_level = std::max(warp.async_level, static_cast<std::uint8_t>(level));
}

void Launch::async_commit(const Instruction& in, std::uint32_t active, Warp& warp) {
  if (!active) return;
  require_live_lanes(in, active, warp, "cp.async.commit_group");
  warp.async_committed.push_back({std::move(warp.async_open), warp.async_round_trips});
  warp.async_open.clear();
}

void Launch::async_wait(const Instruction& in, std::uint32_t active, Warp& warp) {
  if (!active) return;
  require_live_lanes(in, active, warp, "cp.async.wait_group");
  const auto allowed = static_cast<std::size_t>(reg(warp, in.operands[0].regs[0])[std::countr_zero(active)]);
  // Whether a group that lands here was committed after the warp's last round trip on
  // copies began (else it was in flight during that one: Warp::async_round_trips).
  bool copied = false, new_round_trip = false;
  while (warp.async_committed.size() > allowed) {
    const Warp::AsyncGroup& group = warp.async_committed.front();
    for (const Warp::AsyncCopy& copy : group.copies) std::memcpy(copy.destination, copy.source, copy.bytes);
    if (!group.copies.empty()) {
      copied = true;
      new_round_trip = new_round_trip || group.epoch >= warp.async_round_trips;
    }
    warp.async_committed.erase(warp.async_committed.begin());
  }
  if (copied) {  // the warp waited on its copies: one load batch at their slowest level
    if (new_round_trip) {
      count_load_batch(static_cast<CacheLevel>(warp.async_level));
      ++warp.async_round_trips;
    }
    if (warp.async_committed.empty() && warp.async_open.empty()) warp.async_level = 0;
  }
}

/// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16: lanes 8i..8i+7 name the rows of
/// matrix i (16 aligned bytes of shared memory each), distributed as the interpreter does
/// (ir::mma::load_matrix_source).
void Launch::load_matrix(const Instruction& in, std::uint32_t active, Warp& warp) {
  if (!active) return;
  require_whole_warp(in, active, warp, "ldmatrix.sync.aligned");
  const Operand& destination = in.operands[0];
  const Operand& address = in.operands[1];
  const std::uint64_t* base = reg(warp, address.regs[0]);
  std::array<const std::uint8_t*, 32> rows{};
  Request request;  // one phase a matrix: its 8 rows of 16 bytes (Counters.h)
  for (unsigned r = 0; r < ir::mma::kMatrixRows * in.matrices; ++r) {
    const std::uint64_t start = base[r] + static_cast<std::uint64_t>(address.offset);
    const Access row = resolve(in, warp, r, in.space, start, 2 * ir::mma::kMatrixRowElements, false);
    rows[r] = row.bytes;
    add_shared_to_request(request, r, row, 2 * ir::mma::kMatrixRowElements);
  }
  for (unsigned m = 0; m < in.matrices; ++m) {
    std::uint64_t* d = reg(warp, destination.regs[m]);
    for (unsigned lane = 0; lane < 32; ++lane) {
      std::uint32_t word = 0;
      for (unsigned half = 0; half < 2; ++half) {
        const auto [row_lane, element] = ir::mma::load_matrix_source(lane, m, half, in.transpose);
        std::uint16_t bits;
        std::memcpy(&bits, rows[row_lane] + 2 * element, 2);
        word |= std::uint32_t{bits} << (16 * half);
      }
      d[lane] = word;
    }
  }
  finish_request(in, request, true, false, StateSpace::Shared);
}

/// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: the whole warp's fragments through
/// the one definition the interpreter uses (ir/Mma.h).
void Launch::mma(const Instruction& in, std::uint32_t active, Warp& warp) {
  if (!active) return;
  require_whole_warp(in, active, warp, "mma.sync.aligned");
  ir::mma::AFragments a;
  ir::mma::BFragments b;
  ir::mma::CFragments c;
  for (unsigned lane = 0; lane < 32; ++lane) {
    for (unsigned w = 0; w < ir::mma::kAWords; ++w) a[lane][w] = static_cast<std::uint32_t>(reg(warp, in.operands[1].regs[w])[lane]);
    for (unsigned w = 0; w < ir::mma::kBWords; ++w) b[lane][w] = static_cast<std::uint32_t>(reg(warp, in.operands[2].regs[w])[lane]);
    for (unsigned e = 0; e < ir::mma::kCElements; ++e)
      c[lane][e] = static_cast<std::uint32_t>(reg(warp, in.operands[3].regs[e])[lane]);
  }
  const ir::ScalarType input = in.source_type == ValueType::BF16 ? ir::ScalarType::BF16 : ir::ScalarType::F16;
  const ir::mma::CFragments d = ir::mma::multiply_accumulate(input, a, b, c);
  for (unsigned e = 0; e < ir::mma::kCElements; ++e) {
    std::uint64_t* destination = reg(warp, in.operands[0].regs[e]);
    for (unsigned lane = 0; lane < 32; ++lane) destination[lane] = d[lane][e];
  }
}

void Launch::vote(const Instruction& in, std::uint32_t active, Warp& warp) {
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

void Launch::warp_barrier(const Instruction& in, std::uint32_t active, Warp& warp) {
  if (active) check_members(in, warp, active, uniform_mask(in, warp, active, in.operands[0]));
}

std::uint64_t Launch::generic_address(StateSpace space, std::uint64_t address, bool to_generic) const {
  std::uint64_t window = space == StateSpace::Shared ? kSharedWindow : space == StateSpace::Local ? kLocalWindow : 0;
  return to_generic ? address + window : address - window;
}

// The semantics of the memory and warp-level forms.
void execute_Ld(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) { launch.load(in, active, warp); }
void execute_St(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) { launch.store(in, active, warp); }
void execute_Atom(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  launch.atomic(in, active, warp);
}
void execute_Red(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  launch.atomic(in, active, warp);
}
void execute_Shfl(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  launch.shuffle(in, active, warp);
}
void execute_Vote(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  launch.vote(in, active, warp);
}
void execute_Mma(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  launch.mma(in, active, warp);
}
void execute_Ldmatrix(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  launch.load_matrix(in, active, warp);
}
void execute_CpAsync(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  launch.async_copy(in, active, warp);
}
void execute_CpAsyncCommit(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  launch.async_commit(in, active, warp);
}
void execute_CpAsyncWait(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  launch.async_wait(in, active, warp);
}
void execute_BarWarpSync(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  launch.warp_barrier(in, active, warp);
}
void execute_Activemask(Launch&, const Instruction& in, std::uint32_t active, Warp& warp) {
  unary(in, active, warp, [active](std::uint64_t) { return std::uint64_t(active); });
}
void execute_Cvta(Launch& launch, const Instruction& in, std::uint32_t active, Warp& warp) {
  unary(in, active, warp, [&](std::uint64_t a) { return launch.generic_address(in.space, a, in.to_generic); });
}

}  // namespace detail

namespace {

using detail::Launch;
using detail::kBufferShift;
using detail::kLocalWindow;
using detail::kWindowSize;

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
