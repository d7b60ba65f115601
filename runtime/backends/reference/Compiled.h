// Internal to the reference interpreter: a Program compiled into statement and lane
// kernel trees, with every variable resolved to a register.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "ir/Program.h"
#include "runtime/backends/reference/Machine.h"

namespace quantc::runtime::reference::detail {

/// A compiled statement. `exec` runs it for the invocations in `active` (sorted lane
/// indices); a statement that executes Return removes the returning lanes from
/// `active` before it returns.
class StmtNode {
 public:
  virtual ~StmtNode() = default;
  virtual void exec(Machine& machine, std::vector<std::uint32_t>& active) const = 0;
  bool may_return = false;  // the subtree contains a Return
};

struct CompiledProgram {
  struct BuiltinRegister {
    std::uint32_t reg;
    ir::BuiltinKind kind;
    unsigned axis;
  };
  std::vector<std::unique_ptr<ExprNode>> expressions;  // owns every node of the trees
  std::unique_ptr<StmtNode> entry;
  std::uint32_t register_count = 0;
  std::vector<std::pair<std::uint32_t, Word>> constants;  // registers holding one value in every lane
  std::vector<BuiltinRegister> builtins;                  // refilled for each workgroup
};

/// Compiles `program` for buffers laid out as `buffers` (binding order). Throws
/// RuntimeError for an undeclared buffer or variable, or an unsupported expression.
CompiledProgram compile(const ir::Program& program, const std::vector<BufferView>& buffers);

}  // namespace quantc::runtime::reference::detail
