#include "lower/LowerToPtx.h"

#include "ir/IR.h"

namespace quantc::lower {

std::string lower_to_ptx(const ir::Program&, const ptx::Target&) {
  throw ir::IRError("lower_to_ptx: not implemented yet");
}

}  // namespace quantc::lower
