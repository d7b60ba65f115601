// quantc ops [--json]: the registered ops with their parameters and buffers.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ir/ops/BufferShape.h"
#include "ir/ops/Registry.h"
#include "ir/ops/Spec.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {
namespace {

void print_ops_text() {
  for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) {
    fmt::print("{}\n  {}\n  layout: {}\n  seed: {}\n  params:\n", op.name, op.summary, op.layout, op.seed);
    for (const ir::ops::ParamSpec& param : op.params) {
      std::string also;
      for (const std::string& alias : param.aliases) also += (also.empty() ? " [also \"" : ", \"") + alias + "\"";
      if (!also.empty()) also += "]";
      fmt::print("    {:<12} {:<6} {}{}{}{}\n", param.name, ir::ops::to_string(param.type), param.description,
                 param.constraint.empty() ? "" : " (" + param.constraint + ")",
                 param.default_value.empty() ? "" : " [default " + param.default_value + "]", also);
    }
    fmt::print("  buffers (binding order):\n");
    for (const ir::ops::BufferSpec& buffer : op.buffers) {
      // Activation-typed buffers hold the "activation" parameter's type.
      const std::string element =
          buffer.activation_typed ? "activation (f32|f16|bf16)" : std::string(ir::to_string(buffer.element));
      fmt::print("    {:<12} {:<8} {:<4} {}\n", buffer.name, buffer.role, element, ir::ops::shape_formula_text(buffer));
    }
  }
}

}  // namespace

void add_ops_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("ops", "List the registered ops, their parameters and buffers");
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "Print machine-readable JSON");
  command->callback([json] {
    if (!*json) return print_ops_text();
    nlohmann::json ops = nlohmann::json::array();
    for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) ops.push_back(ir::ops::op_json(op));
    fmt::print("{}\n", ops.dump(2));
  });
}

}  // namespace quantc::tools
