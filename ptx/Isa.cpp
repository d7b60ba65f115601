#include "ptx/Isa.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

namespace quantc::ptx {

namespace {

struct TypeInfo {
  ValueType type;
  std::string_view name;
  unsigned bits;
};

constexpr std::array kTypes = {
#define QUANTC_ROW(name, text, bits) TypeInfo{ValueType::name, text, bits},
    QUANTC_PTX_TYPES(QUANTC_ROW)
#undef QUANTC_ROW
};

constexpr std::array kOpcodeNames = {
#define QUANTC_ROW(name, text) std::string_view(text),
    QUANTC_PTX_OPCODES(QUANTC_ROW)
#undef QUANTC_ROW
};

template <class Enum>
struct Spelling {
  std::string_view text;
  Enum value;
};

constexpr std::array<Spelling<Rounding>, 8> kRoundings = {{{"rn", Rounding::Nearest},
                                                           {"rz", Rounding::Zero},
                                                           {"rm", Rounding::Down},
                                                           {"rp", Rounding::Up},
                                                           {"rni", Rounding::NearestInt},
                                                           {"rzi", Rounding::ZeroInt},
                                                           {"rmi", Rounding::DownInt},
                                                           {"rpi", Rounding::UpInt}}};
constexpr std::array<Spelling<Compare>, 18> kCompares = {{{"eq", Compare::Eq},   {"ne", Compare::Ne},   {"lt", Compare::Lt},
                                                          {"le", Compare::Le},   {"gt", Compare::Gt},   {"ge", Compare::Ge},
                                                          {"lo", Compare::Lo},   {"ls", Compare::Ls},   {"hi", Compare::Hi},
                                                          {"hs", Compare::Hs},   {"equ", Compare::Equ}, {"neu", Compare::Neu},
                                                          {"ltu", Compare::Ltu}, {"leu", Compare::Leu}, {"gtu", Compare::Gtu},
                                                          {"geu", Compare::Geu}, {"num", Compare::Num}, {"nan", Compare::Nan}}};
constexpr std::array<Spelling<BoolOp>, 3> kBoolOps = {{{"and", BoolOp::And}, {"or", BoolOp::Or}, {"xor", BoolOp::Xor}}};
constexpr std::array<Spelling<MulMode>, 3> kMulModes = {{{"lo", MulMode::Lo}, {"hi", MulMode::Hi}, {"wide", MulMode::Wide}}};
constexpr std::array<Spelling<StateSpace>, 7> kSpaces = {{{"global", StateSpace::Global},
                                                          {"shared", StateSpace::Shared},
                                                          {"shared::cta", StateSpace::Shared},
                                                          {"local", StateSpace::Local},
                                                          {"param", StateSpace::Param},
                                                          {"param::entry", StateSpace::Param},
                                                          {"const", StateSpace::Const}}};
constexpr std::array<Spelling<ShuffleMode>, 4> kShuffleModes = {
    {{"up", ShuffleMode::Up}, {"down", ShuffleMode::Down}, {"bfly", ShuffleMode::Butterfly}, {"idx", ShuffleMode::Index}}};
constexpr std::array<Spelling<VoteMode>, 4> kVoteModes = {
    {{"all", VoteMode::All}, {"any", VoteMode::Any}, {"uni", VoteMode::Uni}, {"ballot", VoteMode::Ballot}}};
constexpr std::array<Spelling<PermuteMode>, 6> kPermuteModes = {{{"f4e", PermuteMode::F4e},
                                                                 {"b4e", PermuteMode::B4e},
                                                                 {"rc8", PermuteMode::Rc8},
                                                                 {"ecl", PermuteMode::Ecl},
                                                                 {"ecr", PermuteMode::Ecr},
                                                                 {"rc16", PermuteMode::Rc16}}};
constexpr std::array<Spelling<AtomicOp>, 10> kAtomicOps = {{{"add", AtomicOp::Add},
                                                            {"min", AtomicOp::Min},
                                                            {"max", AtomicOp::Max},
                                                            {"inc", AtomicOp::Inc},
                                                            {"dec", AtomicOp::Dec},
                                                            {"and", AtomicOp::And},
                                                            {"or", AtomicOp::Or},
                                                            {"xor", AtomicOp::Xor},
                                                            {"exch", AtomicOp::Exch},
                                                            {"cas", AtomicOp::Cas}}};
constexpr std::array<Spelling<TestProperty>, 6> kTestProperties = {{{"finite", TestProperty::Finite},
                                                                    {"infinite", TestProperty::Infinite},
                                                                    {"number", TestProperty::Number},
                                                                    {"notanumber", TestProperty::NotANumber},
                                                                    {"normal", TestProperty::Normal},
                                                                    {"subnormal", TestProperty::Subnormal}}};
constexpr std::array<Spelling<ShiftDirection>, 2> kShiftDirections = {
    {{"l", ShiftDirection::Left}, {"r", ShiftDirection::Right}}};
constexpr std::array<Spelling<MmaShape>, 1> kMmaShapes = {{{"m16n8k16", MmaShape::M16n8k16}}};
constexpr std::array<Spelling<LoadMatrixShape>, 1> kLoadMatrixShapes = {{{"m8n8", LoadMatrixShape::M8n8}}};

/// Cache, eviction and memory-model qualifiers: they do not change what one thread
/// computes, so they are accepted and not kept (except .nc, which selects the
/// read-only data path and is rendered).
constexpr std::array<std::string_view, 35> kCacheQualifiers = {
    "ca", "cg", "cs", "lu", "cv", "wb", "wt", "weak", "volatile", "relaxed", "acquire", "release", "acq_rel",
    "sc", "cta", "gpu", "sys", "cluster", "gl", "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first",
    "L1::evict_last", "L1::no_allocate", "L2::evict_normal", "L2::evict_first", "L2::evict_last", "L2::64B",
    "L2::128B", "L2::256B", "L2::cache_hint", "proxy", "async", "alias", "mmio"};

constexpr std::array<Spelling<MemoryOrder>, 5> kMemoryOrders = {{{"relaxed", MemoryOrder::Relaxed},
                                                                  {"acquire", MemoryOrder::Acquire},
                                                                  {"release", MemoryOrder::Release},
                                                                  {"acq_rel", MemoryOrder::AcqRel},
                                                                  {"sc", MemoryOrder::Sc}}};
/// "gl" is membar's spelling of the GPU scope.
constexpr std::array<Spelling<MemoryScope>, 5> kMemoryScopes = {{{"cta", MemoryScope::Cta},
                                                                  {"cluster", MemoryScope::Cluster},
                                                                  {"gpu", MemoryScope::Gpu},
                                                                  {"gl", MemoryScope::Gpu},
                                                                  {"sys", MemoryScope::Sys}}};

template <class Enum, std::size_t N>
std::optional<Enum> find(const std::array<Spelling<Enum>, N>& table, std::string_view text) {
  for (const auto& entry : table) {
    if (entry.text == text) return entry.value;
  }
  return std::nullopt;
}

template <class Enum, std::size_t N>
std::string_view spell(const std::array<Spelling<Enum>, N>& table, Enum value) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.text;
  }
  return "?";
}

std::vector<std::string_view> split_dots(std::string_view word) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= word.size()) {
    std::size_t dot = word.find('.', start);
    if (dot == std::string_view::npos) dot = word.size();
    parts.push_back(word.substr(start, dot - start));
    start = dot + 1;
  }
  return parts;
}

/// The opcode's own mode words (shfl .idx, vote .ballot, prmt .f4e, atom .add, testp
/// .finite, shf .l); nullopt when `part` is not one of them.
std::optional<std::uint8_t> opcode_mode(Opcode opcode, std::string_view part) {
  auto as_mode = [](auto value) -> std::optional<std::uint8_t> {
    if (!value) return std::nullopt;
    return static_cast<std::uint8_t>(*value);
  };
  switch (opcode) {
    case Opcode::Shfl: return as_mode(find(kShuffleModes, part));
    case Opcode::Vote: return as_mode(find(kVoteModes, part));
    case Opcode::Prmt: return as_mode(find(kPermuteModes, part));
    case Opcode::Atom:
    case Opcode::Red: return as_mode(find(kAtomicOps, part));
    case Opcode::Testp: return as_mode(find(kTestProperties, part));
    case Opcode::Shf: return as_mode(find(kShiftDirections, part));
    case Opcode::Mma: return as_mode(find(kMmaShapes, part));
    case Opcode::Ldmatrix: return as_mode(find(kLoadMatrixShapes, part));
    default: return std::nullopt;
  }
}

std::string_view mode_spelling(const Mnemonic& mnemonic) {
  switch (mnemonic.opcode) {
    case Opcode::Shfl: return spell(kShuffleModes, static_cast<ShuffleMode>(mnemonic.mode));
    case Opcode::Vote: return spell(kVoteModes, static_cast<VoteMode>(mnemonic.mode));
    case Opcode::Prmt: return spell(kPermuteModes, static_cast<PermuteMode>(mnemonic.mode));
    case Opcode::Atom:
    case Opcode::Red: return spell(kAtomicOps, static_cast<AtomicOp>(mnemonic.mode));
    case Opcode::Testp: return spell(kTestProperties, static_cast<TestProperty>(mnemonic.mode));
    case Opcode::Shf: return spell(kShiftDirections, static_cast<ShiftDirection>(mnemonic.mode));
    case Opcode::Mma: return spell(kMmaShapes, static_cast<MmaShape>(mnemonic.mode));
    case Opcode::Ldmatrix: return spell(kLoadMatrixShapes, static_cast<LoadMatrixShape>(mnemonic.mode));
    default: return "";
  }
}

bool takes_comparison(Opcode opcode) { return opcode == Opcode::Setp || opcode == Opcode::Set; }

}  // namespace

unsigned bit_width(ValueType type) {
  for (const TypeInfo& info : kTypes) {
    if (info.type == type) return info.bits;
  }
  return 0;
}

bool is_signed_integer(ValueType type) {
  return type == ValueType::S8 || type == ValueType::S16 || type == ValueType::S32 || type == ValueType::S64;
}

bool is_unsigned_integer(ValueType type) {
  return type == ValueType::U8 || type == ValueType::U16 || type == ValueType::U32 || type == ValueType::U64;
}

bool is_half(ValueType type) {
  return type == ValueType::F16 || type == ValueType::F16x2 || type == ValueType::BF16 || type == ValueType::BF16x2;
}

bool is_float(ValueType type) { return is_half(type) || type == ValueType::F32 || type == ValueType::F64; }

std::string_view to_string(ValueType type) {
  for (const TypeInfo& info : kTypes) {
    if (info.type == type) return info.name;
  }
  return "";
}

std::optional<ValueType> parse_value_type(std::string_view text) {
  for (const TypeInfo& info : kTypes) {
    if (info.name == text) return info.type;
  }
  return std::nullopt;
}

std::string_view to_string(Opcode opcode) { return kOpcodeNames[static_cast<std::size_t>(opcode)]; }

Mnemonic parse_mnemonic(std::string_view text) {
  std::vector<std::string_view> parts = split_dots(text);
  Mnemonic m;
  // The opcode is the longest spelling whose dot-separated words begin the mnemonic
  // ("bar.warp" over "bar", "cp.async.wait_group" over "cp.async").
  static const std::vector<std::vector<std::string_view>> kOpcodeWords = [] {
    std::vector<std::vector<std::string_view>> words;
    for (std::string_view name : kOpcodeNames) words.push_back(split_dots(name));
    return words;
  }();
  std::size_t first_modifier = 0;
  for (std::size_t i = 0; i < kOpcodeWords.size(); ++i) {
    const std::vector<std::string_view>& words = kOpcodeWords[i];
    if (words.size() <= first_modifier || words.size() > parts.size()) continue;
    if (std::equal(words.begin(), words.end(), parts.begin())) {
      m.opcode = static_cast<Opcode>(i);
      first_modifier = words.size();
    }
  }
  if (first_modifier == 0) throw PtxSyntaxError(fmt::format("unsupported instruction '{}' in '{}'", parts[0], text));
  if (m.opcode == Opcode::Ldu) m.space = StateSpace::Global;
  unsigned type_count = 0;
  unsigned layout_words = 0;  // mma: .row, then .col
  for (std::size_t i = first_modifier; i < parts.size(); ++i) {
    std::string_view part = parts[i];
    auto unknown = [&] {
      return PtxSyntaxError(fmt::format("unsupported modifier '.{}' in '{}'", part, text));
    };
    // Opcode-specific words first: atom's .and is an operation, setp's .and a bool op.
    if (auto mode = opcode_mode(m.opcode, part)) {
      m.mode = *mode;
      m.present |= kMode;
      continue;
    }
    if (auto type = parse_value_type(part)) {
      if (type_count == 0) m.type = *type;
      else if (type_count == 1) m.source_type = *type;
      else if (m.opcode != Opcode::Mma || type_count > 3) throw PtxSyntaxError(fmt::format("more than two types in '{}'", text));
      else if (*type != (type_count == 2 ? m.source_type : m.type))
        throw PtxSyntaxError(fmt::format("'{}': quantc takes mma with B's type equal to A's and C's to D's", text));
      ++type_count;
      continue;
    }
    if (m.opcode == Opcode::CpAsync && (part == "ca" || part == "cg")) {
      m.cache_global = part == "cg";
      m.present |= kCache;
      continue;
    }
    if (m.opcode == Opcode::CpAsync && part == "global" && m.space == StateSpace::Shared) {
      m.global_source = true;  // .shared.global: destination, then source
      continue;
    }
    if (m.opcode == Opcode::Ldmatrix && (part == "x1" || part == "x2" || part == "x4" || part == "trans")) {
      if (part == "trans") m.transpose = true;
      else m.matrices = static_cast<std::uint8_t>(part[1] - '0');
      m.present |= kMode;
      continue;
    }
    if (m.opcode == Opcode::Mma && (part == "row" || part == "col")) {
      // .row.col, in that order: the one layout pair m16n8k16 with f16/bf16 inputs allows.
      if (layout_words != (part == "row" ? 0u : 1u))
        throw PtxSyntaxError(fmt::format("'{}': mma takes .row.col (A row-major, B column-major)", text));
      ++layout_words;
      continue;
    }
    if (takes_comparison(m.opcode)) {
      if (auto compare = find(kCompares, part)) {
        m.compare = *compare;
        m.present |= kCompare;
        continue;
      }
      if (auto bool_op = find(kBoolOps, part)) {
        m.bool_op = *bool_op;
        m.present |= kBoolOp;
        continue;
      }
    }
    if (auto rounding = find(kRoundings, part)) {
      m.rounding = *rounding;
      m.present |= *rounding >= Rounding::NearestInt ? kIntRounding : kRounding;
      continue;
    }
    if (auto mode = find(kMulModes, part)) {
      m.mul_mode = *mode;
      m.present |= kMulMode;
      continue;
    }
    if (auto space = find(kSpaces, part)) {
      m.space = *space;
      m.present |= kSpace;
      continue;
    }
    if (part == "v2" || part == "v4") {
      m.vector = static_cast<std::uint8_t>(part[1] - '0');
      m.present |= kVector;
      continue;
    }
    if (part == "nc") {
      m.non_coherent = true;
      m.present |= kCache;
      continue;
    }
    if (auto order = find(kMemoryOrders, part)) m.memory_order = *order;
    if (auto scope = find(kMemoryScopes, part)) m.memory_scope = *scope;
    bool cache = false;
    for (std::string_view qualifier : kCacheQualifiers) cache = cache || qualifier == part;
    if (cache) {
      m.present |= kCache;
      continue;
    }
    if (part == "ftz") m.ftz = true, m.present |= kFtz;
    else if (part == "sat") m.saturate = true, m.present |= kSat;
    else if (part == "satfinite") m.saturate_finite = true, m.present |= kSatFinite;
    else if (part == "approx") m.approx = true, m.present |= kApprox;
    else if (part == "full") m.full = true, m.present |= kFull;
    else if (part == "NaN") m.propagate_nan = true, m.present |= kNan;
    else if (part == "relu") m.relu = true, m.present |= kRelu;
    else if (part == "sync") m.sync = true, m.present |= kSync;
    else if (part == "aligned") m.aligned = true, m.present |= kSync;
    else if (part == "uni") m.uniform = true, m.present |= kUniform;
    else if (part == "to") m.to_generic = false, m.present |= kTo;
    else if (part == "wrap" || part == "clamp") m.clamp = part == "clamp", m.present |= kClamp;
    else if (part == "shiftamt") m.clamp = true, m.present |= kClamp;
    else throw unknown();
  }
  if (m.opcode == Opcode::Mma) {
    if (layout_words != 2 || type_count != 4)
      throw PtxSyntaxError(fmt::format("'{}': mma needs .row.col and four types (D, A, B, C)", text));
    m.row_col = true;
  }
  if (m.opcode == Opcode::Ldmatrix && m.matrices == 0)
    throw PtxSyntaxError(fmt::format("'{}': ldmatrix needs .x1, .x2 or .x4", text));
  if (m.opcode == Opcode::CpAsync && (m.space != StateSpace::Shared || !m.global_source))
    throw PtxSyntaxError(fmt::format("'{}': quantc takes cp.async from .global to .shared (.shared.global)", text));
  return m;
}

std::string to_string(const Mnemonic& m) {
  std::string text(to_string(m.opcode));
  auto add = [&](std::string_view part) {
    if (part.empty()) return;
    text += '.';
    text += part;
  };
  auto rounding = [&] {
    if (m.rounding != Rounding::None) add(spell(kRoundings, m.rounding));
  };
  auto types = [&] {
    add(to_string(m.type));
    add(to_string(m.source_type));
  };
  switch (m.opcode) {
    case Opcode::Ld:
    case Opcode::Ldu:
    case Opcode::St:
      if (m.opcode != Opcode::Ldu && m.space != StateSpace::Generic) add(spell(kSpaces, m.space));
      if (m.non_coherent) add("nc");
      if (m.vector > 1) add(fmt::format("v{}", m.vector));
      types();
      return text;
    case Opcode::Atom:
    case Opcode::Red:
      if (m.memory_order != MemoryOrder::None) add(spell(kMemoryOrders, m.memory_order));
      if (m.memory_scope != MemoryScope::None) add(spell(kMemoryScopes, m.memory_scope));
      if (m.space != StateSpace::Generic) add(spell(kSpaces, m.space));
      add(mode_spelling(m));
      types();
      return text;
    case Opcode::Cvta:
      if (!m.to_generic) add("to");
      add(spell(kSpaces, m.space));
      types();
      return text;
    case Opcode::Setp:
    case Opcode::Set:
      add(spell(kCompares, m.compare));
      if (m.bool_op != BoolOp::None) add(spell(kBoolOps, m.bool_op));
      if (m.ftz) add("ftz");
      types();
      return text;
    case Opcode::Shfl:
    case Opcode::Vote:
      add("sync");
      add(mode_spelling(m));
      types();
      return text;
    case Opcode::CpAsync:  // cp.async.cg.shared.global
      add(m.cache_global ? "cg" : "ca");
      add(spell(kSpaces, m.space));
      if (m.global_source) add("global");
      return text;
    case Opcode::CpAsyncCommit:
    case Opcode::CpAsyncWait:
      return text;
    case Opcode::Ldmatrix:  // ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
      add("sync");
      add("aligned");
      add(mode_spelling(m));
      add(fmt::format("x{}", m.matrices));
      if (m.transpose) add("trans");
      if (m.space != StateSpace::Generic) add(spell(kSpaces, m.space));
      types();
      return text;
    case Opcode::Mma:  // mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32: D, A, B, C
      add("sync");
      add("aligned");
      add(mode_spelling(m));
      if (m.row_col) {
        add("row");
        add("col");
      }
      types();
      add(to_string(m.source_type));
      add(to_string(m.type));
      return text;
    case Opcode::Prmt:
      types();
      if (m.present & kMode) add(mode_spelling(m));
      return text;
    case Opcode::Shf:
      add(mode_spelling(m));
      add(m.clamp ? "clamp" : "wrap");
      types();
      return text;
    case Opcode::Bfind:
      if (m.clamp) add("shiftamt");
      types();
      return text;
    case Opcode::Testp:
      add(mode_spelling(m));
      types();
      return text;
    case Opcode::Bar:
    case Opcode::BarWarp:
    case Opcode::Barrier:
      add("sync");
      if (m.aligned) add("aligned");
      return text;
    case Opcode::Bra:
    case Opcode::Ret:
      if (m.uniform) add("uni");
      return text;
    case Opcode::Fence:
      if (m.memory_order != MemoryOrder::None) add(spell(kMemoryOrders, m.memory_order));
      if (m.memory_scope != MemoryScope::None) add(spell(kMemoryScopes, m.memory_scope));
      return text;
    case Opcode::Membar:
      if (m.memory_scope == MemoryScope::Gpu) add("gl");
      else if (m.memory_scope != MemoryScope::None) add(spell(kMemoryScopes, m.memory_scope));
      return text;
    default:
      break;
  }
  // Arithmetic, conversion and the rest: rounding or approx/full, ftz, sat/satfinite, NaN, relu.
  // A state space or vector width has no place here, but one that was parsed is
  // rendered, so that find_form's error names the spelling that has no row.
  if (m.space != StateSpace::Generic) add(spell(kSpaces, m.space));
  if (m.non_coherent) add("nc");
  if (m.vector > 1) add(fmt::format("v{}", m.vector));
  if (m.mul_mode != MulMode::None) add(spell(kMulModes, m.mul_mode));
  if (m.approx) add("approx");
  if (m.full) add("full");
  rounding();
  if (m.ftz) add("ftz");
  if (m.saturate) add("sat");
  if (m.saturate_finite) add("satfinite");
  if (m.propagate_nan) add("NaN");
  if (m.relu) add("relu");
  types();
  return text;
}

}  // namespace quantc::ptx
