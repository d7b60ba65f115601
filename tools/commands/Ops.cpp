// quantc ops [--json]: the registered ops with their parameters and buffers.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ir/ops/BufferShape.h"
#include "ir/ops/Registry.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {
namespace {

std::string_view param_type_name(ir::ops::ParamType type) {
  switch (type) {
    case ir::ops::ParamType::U32:
      return "u32";
    case ir::ops::ParamType::Bool:
      return "bool";
    case ir::ops::ParamType::Choice:
      return "choice";
  }
  return "?";
}

nlohmann::json op_to_json(const ir::ops::OpInfo& op) {
  nlohmann::json params = nlohmann::json::array();
  for (const ir::ops::ParamSpec& param : op.params) {
    nlohmann::json entry = {{"name", param.name},
                            {"type", param_type_name(param.type)},
                            {"description", param.description},
                            {"constraint", param.constraint}};
    entry["default"] = param.default_value.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(param.default_value);
    if (!param.choices.empty()) entry["choices"] = param.choices;
    entry["aliases"] = param.aliases;
    params.push_back(entry);
  }
  nlohmann::json buffers = nlohmann::json::array();
  for (const ir::ops::BufferSpec& buffer : op.buffers) {
    nlohmann::json entry = {{"name", buffer.name},
                            {"role", buffer.role},
                            {"element", ir::to_string(buffer.element)},
                            {"count", buffer.count_formula},
                            {"shape", buffer.shape.empty() ? std::vector<std::string>{buffer.count_formula} : buffer.shape}};
    // "element" is then the default activation's; the buffer holds the "activation" parameter's type.
    if (buffer.activation_typed) entry["element_from"] = "activation";
    buffers.push_back(entry);
  }
  return {{"name", op.name},   {"summary", op.summary}, {"layout", op.layout},
          {"seed", op.seed},   {"params", params},      {"buffers", buffers}};
}

void print_ops_text() {
  for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) {
    fmt::print("{}\n  {}\n  layout: {}\n  seed: {}\n  params:\n", op.name, op.summary, op.layout, op.seed);
    for (const ir::ops::ParamSpec& param : op.params) {
      std::string also;
      for (const std::string& alias : param.aliases) also += (also.empty() ? " [also \"" : ", \"") + alias + "\"";
      if (!also.empty()) also += "]";
      fmt::print("    {:<12} {:<6} {}{}{}{}\n", param.name, param_type_name(param.type), param.description,
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
    for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) ops.push_back(op_to_json(op));
    fmt::print("{}\n", ops.dump(2));
  });
}

}  // namespace quantc::tools
