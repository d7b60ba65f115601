// The text side of PTX emission: virtual registers, labels, instruction formatting and
// the module header. The IR -> PTX walk lives in lower/LowerToPtx.cpp and calls into
// this class; nothing here knows about the IR.
//
// Modelled on tinygrad's PTX renderer (registers named from per-type counters and
// declared in one place, header filled in at the end) and LLVM NVPTX's output style
// (`%r<N>` declarations, `$L__` labels, tab-separated opcode and operands).
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ptx/InstructionTable.h"
#include "ptx/Target.h"

namespace quantc::ptx {

/// An instruction the chosen target cannot run, or a form the instruction table lacks.
class UnsupportedInstruction : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The PTX register kinds quantc declares. Each has its own counter and prefix:
/// Predicate `%p` (.pred), B16 `%h` (.b16, holds f16), B32 `%r` (.b32, holds
/// u8/i8/u16/u32/i32 — PTX has no 8-bit arithmetic registers), B64 `%rd` (.b64, holds
/// u64/i64 and addresses), F32 `%f` (.f32), F64 `%fd` (.f64).
enum class RegisterClass : std::uint8_t { Predicate, B16, B32, B64, F32, F64 };
inline constexpr std::size_t kRegisterClassCount = 6;

std::string_view register_prefix(RegisterClass register_class);       // "%p", "%h", "%r", ...
std::string_view register_declared_type(RegisterClass register_class);  // ".pred", ".b16", ...

/// The `.visible .entry` signature: kernel name, `.param .u64` names in order, and
/// the `.maxntid` (threads per CTA, x/y/z).
struct EntrySignature {
  std::string name;
  std::vector<std::string> parameter_names;
  std::array<std::uint32_t, 3> max_threads{1, 1, 1};
  /// Kernel-scope `.shared .align 16 .b8 name[bytes];` arrays, declared after the registers.
  struct SharedArray {
    std::string name;
    std::uint64_t bytes = 0;
  };
  std::vector<SharedArray> shared_arrays;
  /// `.minnctapersm` (CTAs resident per SM that ptxas fits the registers to), 0: none.
  std::uint32_t min_ctas_per_sm = 0;
};

/// Accumulates the body of one kernel and renders the whole module with `finish`.
/// Register numbers start at 1 per class and grow in allocation order, so the same
/// sequence of calls always gives the same text.
class PtxWriter {
 public:
  explicit PtxWriter(Target target);

  /// A fresh register of `register_class`, e.g. "%r7".
  std::string new_register(RegisterClass register_class);
  /// A fresh label "$L__<stem>_<N>" (N counts all labels); `stem` is an identifier.
  std::string new_label(std::string_view stem);

  /// Appends "\t<mnemonic> \t<operands>;" (operands joined by ", "). The mnemonic
  /// goes through the instruction table (ptx/InstructionTable.h): the module's
  /// `.version` rises to the form's minimum PTX ISA, and a form the target cannot run
  /// (or that the table lacks) throws UnsupportedInstruction naming both.
  void emit(const Mnemonic& mnemonic, const std::vector<std::string>& operands = {});
  /// The same, guarded: "\t@<predicate> ..." ("@!<predicate>" when `negate`).
  void emit_guarded(std::string_view predicate, bool negate, const Mnemonic& mnemonic,
                    const std::vector<std::string>& operands);
  void label(std::string_view name);
  /// Appends "\t// <text>" (newlines in `text` become spaces). `depth` indents the
  /// comment by two spaces a level so nested IR stays readable.
  void comment(std::string_view text, int depth = 0);
  void blank_line();

  /// Records that an instruction needs PTX ISA `version` (the module's `.version` is
  /// the maximum of this and the target's minimum). `reason` names the instruction.
  void require_version(PtxVersion version, std::string_view reason);
  /// The `.version` the module will declare.
  PtxVersion version() const;
  /// Why the version was raised above the target minimum (empty when it was not).
  const std::string& version_reason() const { return version_reason_; }

  /// The complete module: header comment (one "// " line per element of
  /// `header_comment`, between "//" lines), `.version`, `.target`, `.address_size 64`,
  /// the entry with its parameters and `.maxntid` (between the parameter list and
  /// `{`, without a semicolon), the register declarations, then the body without its
  /// dead instructions: an unguarded instruction of an arithmetic, conversion or move
  /// pipe whose destination register nothing reads (as an index the instruction
  /// selection folded into a load's [reg+imm] address leaves behind), removed until
  /// none is left, as LLVM's machine dead-code elimination does after selection.
  std::string finish(const EntrySignature& entry, const std::vector<std::string>& header_comment) const;

 private:
  Target target_;
  PtxVersion required_version_;
  std::string version_reason_;
  std::array<unsigned, kRegisterClassCount> register_counts_{};
  unsigned label_count_ = 0;
  /// One line of the body as written, with what dead-code elimination needs of it.
  struct BodyLine {
    std::string text;
    /// The register an instruction without side effects writes (empty: the line stays).
    std::string written;
    /// The registers the line reads (for a line that stays, every register it names).
    std::vector<std::string> read;
  };
  std::vector<BodyLine> body_;
};

/// PTX immediate spellings of constants: "0f3F800000" (f32 bits), "0d3FF0000000000000"
/// (f64 bits), and integers in decimal below 2^16 (negative ones with '-'), hex above.
std::string f32_immediate(std::uint32_t bits);
std::string f64_immediate(std::uint64_t bits);
std::string integer_immediate(std::int64_t value);
std::string unsigned_immediate(std::uint64_t value);

/// True when `name` is a valid PTX identifier ([a-zA-Z][a-zA-Z0-9_$]* or a leading
/// '_' / '$' followed by at least one such character).
bool is_ptx_identifier(std::string_view name);

}  // namespace quantc::ptx
