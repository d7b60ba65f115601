#include "ptx/PtxWriter.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace quantc::ptx {

namespace {
constexpr std::array<std::string_view, kRegisterClassCount> kPrefixes = {"%p", "%h", "%r", "%rd", "%f", "%fd"};
constexpr std::array<std::string_view, kRegisterClassCount> kDeclaredTypes = {".pred", ".b16", ".b32",
                                                                              ".b64",  ".f32", ".f64"};
}  // namespace

std::string_view register_prefix(RegisterClass register_class) {
  return kPrefixes[static_cast<std::size_t>(register_class)];
}

std::string_view register_declared_type(RegisterClass register_class) {
  return kDeclaredTypes[static_cast<std::size_t>(register_class)];
}

PtxWriter::PtxWriter(Target target) : target_(target), required_version_(target.min_ptx_version()) {}

std::string PtxWriter::new_register(RegisterClass register_class) {
  unsigned number = ++register_counts_[static_cast<std::size_t>(register_class)];
  return fmt::format("{}{}", register_prefix(register_class), number);
}

std::string PtxWriter::new_label(std::string_view stem) { return fmt::format("$L__{}_{}", stem, ++label_count_); }

namespace {
std::string join_operands(const std::vector<std::string>& operands) {
  std::string text;
  for (const std::string& operand : operands) {
    if (!text.empty()) text += ", ";
    text += operand;
  }
  return text;
}
}  // namespace

namespace {

/// The form of `mnemonic`, checked against the target (the emitter's only way to an
/// instruction, so nothing the target cannot run is ever written).
const InstructionForm& checked_form(const Mnemonic& mnemonic, const Target& target) {
  const InstructionForm* form = nullptr;
  try {
    form = &find_form(mnemonic);
  } catch (const PtxSyntaxError& error) {
    throw UnsupportedInstruction(fmt::format("cannot emit {}", error.what()));
  }
  if (!target_supports(target, *form)) {
    throw UnsupportedInstruction(fmt::format("'{}' needs sm_{} (PTX ISA {}); target {} cannot run it",
                                             to_string(mnemonic), form->min_sm, form->min_ptx.to_string(),
                                             target.name()));
  }
  return *form;
}

/// Whether an instruction of `pipe` only computes its destination from its sources:
/// arithmetic, conversions and moves, not memory, shuffles, control or mma.
bool computes_only(Pipe pipe) {
  switch (pipe) {
    case Pipe::Fp32:
    case Pipe::Fp16:
    case Pipe::Fp64:
    case Pipe::Integer:
    case Pipe::IntegerMultiply:
    case Pipe::Special:
    case Pipe::Emulated:
    case Pipe::Conversion:
    case Pipe::Move:
      return true;
    case Pipe::Shuffle:
    case Pipe::Memory:
    case Pipe::Control:
    case Pipe::Tensor:
      return false;
  }
  return false;
}

/// The virtual registers (`%<letters><digits>`, as new_register names them) an operand
/// names: itself, or those of an address `[%rd3+16]` or a vector `{%f1, %f2}`. Special
/// registers such as %tid.x have no digits and are not counted.
void append_registers(std::string_view operand, std::vector<std::string>& registers) {
  const auto is_lower = [](char c) { return c >= 'a' && c <= 'z'; };
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  for (std::size_t i = operand.find('%'); i != std::string_view::npos; i = operand.find('%', i + 1)) {
    std::size_t end = i + 1;
    while (end < operand.size() && is_lower(operand[end])) ++end;
    const std::size_t digits = end;
    while (end < operand.size() && is_digit(operand[end])) ++end;
    if (digits > i + 1 && end > digits) registers.emplace_back(operand.substr(i, end - i));
  }
}

/// A plain virtual register operand ("%r7"), not an address, vector or special register.
bool is_virtual_register(std::string_view operand) {
  std::vector<std::string> named;
  append_registers(operand, named);
  return named.size() == 1 && named.front() == operand;
}

}  // namespace

void PtxWriter::emit(const Mnemonic& mnemonic, const std::vector<std::string>& operands) {
  const InstructionForm& form = checked_form(mnemonic, target_);
  std::string text = to_string(mnemonic);
  require_version(form.min_ptx, text);
  BodyLine line;
  line.text = operands.empty() ? fmt::format("\t{};\n", text) : fmt::format("\t{} \t{};\n", text, join_operands(operands));
  const bool removable = computes_only(form.pipe) && !operands.empty() && is_virtual_register(operands.front());
  if (removable) line.written = operands.front();
  for (std::size_t i = removable ? 1 : 0; i < operands.size(); ++i) append_registers(operands[i], line.read);
  body_.push_back(std::move(line));
}

void PtxWriter::emit_guarded(std::string_view predicate, bool negate, const Mnemonic& mnemonic,
                             const std::vector<std::string>& operands) {
  const InstructionForm& form = checked_form(mnemonic, target_);
  std::string text = to_string(mnemonic);
  require_version(form.min_ptx, text);
  BodyLine line;
  line.text = fmt::format("\t@{}{} {} \t{};\n", negate ? "!" : "", predicate, text, join_operands(operands));
  append_registers(predicate, line.read);
  for (const std::string& operand : operands) append_registers(operand, line.read);
  body_.push_back(std::move(line));
}

void PtxWriter::label(std::string_view name) { body_.push_back({fmt::format("{}:\n", name), {}, {}}); }

void PtxWriter::comment(std::string_view text, int depth) {
  std::string line(text);
  std::replace(line.begin(), line.end(), '\n', ' ');
  body_.push_back(
      {fmt::format("\t// {}{}\n", std::string(static_cast<std::size_t>(std::max(depth, 0)) * 2, ' '), line), {}, {}});
}

void PtxWriter::blank_line() { body_.push_back({"\n", {}, {}}); }

void PtxWriter::require_version(PtxVersion version, std::string_view reason) {
  if (version > required_version_) {
    required_version_ = version;
    version_reason_ = std::string(reason);
  }
}

PtxVersion PtxWriter::version() const { return required_version_; }

std::string PtxWriter::finish(const EntrySignature& entry, const std::vector<std::string>& header_comment) const {
  std::string text;
  text += "//\n";
  for (const std::string& line : header_comment) text += fmt::format("// {}\n", line);
  text += "//\n\n";
  text += fmt::format(".version {}\n", version().to_string());
  text += fmt::format(".target {}\n", target_.name());
  text += ".address_size 64\n\n";
  text += fmt::format("\t// .globl\t{}\n", entry.name);
  text += fmt::format(".visible .entry {}(\n", entry.name);
  for (std::size_t i = 0; i < entry.parameter_names.size(); ++i) {
    text += fmt::format("\t.param .u64 {}{}\n", entry.parameter_names[i],
                        i + 1 < entry.parameter_names.size() ? "," : "");
  }
  text += ")\n";
  // PTX ISA "Performance-Tuning Directives": .maxntid sits between the parameter list
  // and the body, and takes no semicolon.
  text += fmt::format(".maxntid {}, {}, {}\n", entry.max_threads[0], entry.max_threads[1], entry.max_threads[2]);
  if (entry.min_ctas_per_sm != 0) text += fmt::format(".minnctapersm {}\n", entry.min_ctas_per_sm);
  text += "{\n";
  for (std::size_t i = 0; i < kRegisterClassCount; ++i) {
    if (register_counts_[i] == 0) continue;
    // Registers are numbered from 1, so `<count + 1>` declares %x0 .. %x<count>.
    text += fmt::format("\t.reg {} \t{}<{}>;\n", kDeclaredTypes[i], kPrefixes[i], register_counts_[i] + 1);
  }
  for (const EntrySignature::SharedArray& array : entry.shared_arrays) {
    text += fmt::format("\t.shared .align 16 .b8 \t{}[{}];\n", array.name, array.bytes);
  }
  text += "\n";
  // Dead-code elimination: drop each line that writes a register no kept line reads,
  // until none is left (a removed line's reads may leave others unread).
  std::unordered_map<std::string, std::size_t> reads;
  for (const BodyLine& line : body_) {
    for (const std::string& read : line.read) ++reads[read];
  }
  std::vector<bool> kept(body_.size(), true);
  for (bool removed = true; removed;) {
    removed = false;
    for (std::size_t i = 0; i < body_.size(); ++i) {
      if (!kept[i] || body_[i].written.empty() || reads[body_[i].written] != 0) continue;
      kept[i] = false;
      removed = true;
      for (const std::string& read : body_[i].read) --reads[read];
    }
  }
  for (std::size_t i = 0; i < body_.size(); ++i) {
    if (kept[i]) text += body_[i].text;
  }
  text += "}\n";
  return text;
}

std::string f32_immediate(std::uint32_t bits) { return fmt::format("0f{:08X}", bits); }

std::string f64_immediate(std::uint64_t bits) { return fmt::format("0d{:016X}", bits); }

std::string integer_immediate(std::int64_t value) {
  if (value >= -65536 && value < 65536) return fmt::format("{}", value);
  if (value < 0) return fmt::format("{}", value);
  return fmt::format("0x{:X}", value);
}

std::string unsigned_immediate(std::uint64_t value) {
  if (value < 65536) return fmt::format("{}", value);
  return fmt::format("0x{:X}", value);
}

bool is_ptx_identifier(std::string_view name) {
  if (name.empty()) return false;
  const auto is_letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  const auto is_follow = [&](char c) { return is_letter(c) || (c >= '0' && c <= '9') || c == '_' || c == '$'; };
  if (!std::all_of(name.begin() + 1, name.end(), is_follow)) return false;
  if (is_letter(name[0])) return true;
  return (name[0] == '_' || name[0] == '$') && name.size() > 1;
}

}  // namespace quantc::ptx
