#include "ptx/InstructionTable.h"

#include <fmt/format.h>

namespace quantc::ptx {

std::string_view to_string(Pipe pipe) {
  switch (pipe) {
#define QUANTC_CASE(name, text) \
  case Pipe::name:              \
    return text;
    QUANTC_PTX_PIPES(QUANTC_CASE)
#undef QUANTC_CASE
  }
  return "?";
}

const std::vector<InstructionForm>& instruction_forms() {
  static const std::vector<InstructionForm> forms = {
#define QUANTC_ROW(name, opcode, types, source_types, modifiers, operands, vectors, semantics, pipe, major, minor, sm) \
  InstructionForm{Form::name,     #name,   Opcode::opcode, types,        source_types, modifiers,                       \
                  operands,       vectors, #semantics,     Pipe::pipe,   PtxVersion{major, minor}, sm},
      QUANTC_PTX_FORMS(QUANTC_ROW)
#undef QUANTC_ROW
  };
  return forms;
}

const InstructionForm& form(Form form) { return instruction_forms()[static_cast<std::size_t>(form)]; }

const InstructionForm& find_form(const Mnemonic& mnemonic) {
  const bool has_source_type = mnemonic.source_type != ValueType::None;
  for (const InstructionForm& row : instruction_forms()) {
    if (row.opcode != mnemonic.opcode) continue;
    if (row.types == 0 ? mnemonic.type != ValueType::None : !contains(row.types, mnemonic.type)) continue;
    if (row.source_types == 0 ? has_source_type : !contains(row.source_types, mnemonic.source_type)) continue;
    if ((mnemonic.present & ~row.modifiers) != 0) continue;
    if (((row.vector_widths >> mnemonic.vector) & 1) == 0) continue;
    return row;
  }
  throw PtxSyntaxError(fmt::format("no instruction form '{}' (unsupported type, modifier or vector width)",
                                   to_string(mnemonic)));
}

bool target_supports(const Target& target, const InstructionForm& form) { return target.sm >= form.min_sm; }

}  // namespace quantc::ptx
