#include "lower/LowerToPtx.h"

#include "ir/Verifier.h"
#include "lower/InstructionSelection.h"
#include "lower/Legalize.h"

namespace quantc::lower {

std::string lower_to_ptx(const ir::Program& program, const ptx::Target& target) {
  ir::verify_or_throw(program);
  return lower_verified_to_ptx(program, target);
}

std::string lower_verified_to_ptx(const ir::Program& program, const ptx::Target& target) {
  ptx::parse_target(target.name());  // std::invalid_argument listing the supported targets
  return select_instructions(legalize(program, target), target);
}

}  // namespace quantc::lower
