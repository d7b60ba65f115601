#include "ir/ops/Spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

namespace quantc::ir::ops {
namespace {

using nlohmann::json;

std::string known_ops(const OpRegistry& registry) {
  std::string names;
  for (const OpInfo& op : registry.all()) names += (names.empty() ? "" : ", ") + op.name;
  return names;
}

std::string known_keys(const OpInfo& op) {
  std::string keys = "op, target, opt_level, fp_contract";
  for (const ParamSpec& param : op.params) {
    keys += ", " + param.name;
    for (const std::string& alias : param.aliases) keys += " (or " + alias + ")";
  }
  return keys;
}

/// `value` for `param`, given under `key` (its name or an alias), which errors name.
ParamValue parse_value(const ParamSpec& param, const std::string& key, const json& value, const std::string& where) {
  switch (param.type) {
    case ParamType::U32: {
      if (!value.is_number_integer()) {
        throw SpecError(fmt::format("{}: \"{}\" must be a non-negative integer, got {}", where, key,
                                    value.dump()));
      }
      if (value.is_number_unsigned() && value.get<std::uint64_t>() <= std::numeric_limits<std::uint32_t>::max()) {
        return value.get<std::uint32_t>();
      }
      throw SpecError(fmt::format("{}: \"{}\" = {} is outside 0..4294967295 (u32); use a smaller dimension", where,
                                  key, value.dump()));
    }
    case ParamType::Bool:
      if (!value.is_boolean()) {
        throw SpecError(fmt::format("{}: \"{}\" must be true or false, got {}", where, key, value.dump()));
      }
      return value.get<bool>();
    case ParamType::Choice: {
      std::string options;
      for (const std::string& choice : param.choices) options += (options.empty() ? "" : ", ") + choice;
      if (value.is_string()) {
        for (const std::string& choice : param.choices) {
          if (choice == value.get<std::string>()) return choice;
        }
      }
      throw SpecError(fmt::format("{}: \"{}\" must be one of {}, got {}", where, key, options, value.dump()));
    }
  }
  throw SpecError("unreachable parameter type");
}

std::optional<std::string> optional_string(const json& object, const char* key, const std::string& where) {
  if (!object.contains(key)) return std::nullopt;
  if (!object[key].is_string()) {
    throw SpecError(fmt::format("{}: \"{}\" must be a string, got {}", where, key, object[key].dump()));
  }
  return object[key].get<std::string>();
}

}  // namespace

OpSpec parse_spec(const std::string& text, const std::string& source, const OpRegistry& registry) {
  // nlohmann's parser stops at a NUL byte as at the end of the input, which would
  // silently ignore everything after it.
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    throw SpecError(fmt::format("{}: NUL byte at offset {}; a spec is JSON text (was a binary file given?)", source,
                                nul));
  }
  json object;
  try {
    object = json::parse(text);
  } catch (const json::exception& error) {  // parse_error, or out_of_range for a number like 1e999
    throw SpecError(fmt::format("{}: malformed JSON: {}", source, error.what()));
  }
  if (!object.is_object()) throw SpecError(fmt::format("{}: a spec must be a JSON object, got {}", source, object.type_name()));
  if (!object.contains("op") || !object["op"].is_string()) {
    throw SpecError(fmt::format("{}: missing string key \"op\"; known ops: {}", source, known_ops(registry)));
  }
  OpSpec spec;
  std::string name = object["op"].get<std::string>();
  spec.op = registry.find(name);
  if (spec.op == nullptr) {
    throw SpecError(fmt::format("{}: unknown op \"{}\"; known ops: {}", source, name, known_ops(registry)));
  }
  spec.target = optional_string(object, "target", source);
  spec.opt_level = optional_string(object, "opt_level", source);
  spec.fp_contract = optional_string(object, "fp_contract", source);
  if (spec.fp_contract && *spec.fp_contract != "on" && *spec.fp_contract != "off") {
    throw SpecError(fmt::format("{}: \"fp_contract\" must be \"on\" or \"off\", got \"{}\"", source, *spec.fp_contract));
  }
  std::map<std::string, std::string> given_as;  // parameter -> the key that gave it
  for (const auto& [key, value] : object.items()) {
    if (key == "op" || key == "target" || key == "opt_level" || key == "fp_contract") continue;
    const ParamSpec* param = nullptr;
    for (const ParamSpec& candidate : spec.op->params) {
      if (candidate.name == key || std::find(candidate.aliases.begin(), candidate.aliases.end(), key) !=
                                       candidate.aliases.end()) {
        param = &candidate;
      }
    }
    if (param == nullptr) {
      throw SpecError(fmt::format("{}: unknown key \"{}\" for op {}; known keys: {}", source, key, name,
                                  known_keys(*spec.op)));
    }
    if (auto [at, inserted] = given_as.emplace(param->name, key); !inserted) {
      throw SpecError(fmt::format("{}: \"{}\" and \"{}\" both give {}'s \"{}\"; keep one", source, at->second, key,
                                  name, param->name));
    }
    spec.args.set(param->name, parse_value(*param, key, value, source));
  }
  for (const ParamSpec& param : spec.op->params) {
    if (spec.args.has(param.name)) continue;
    if (param.default_value.empty()) {
      throw SpecError(fmt::format("{}: op {} needs \"{}\" ({})", source, name, param.name, param.description));
    }
    spec.args.set(param.name, parse_value(param, param.name, json::parse(param.default_value), source));
  }
  return spec;
}

std::string OpSpec::canonical_json() const {
  json object = json::object();
  object["op"] = op->name;
  for (const auto& [name, value] : args.values()) {
    std::visit([&, key = name](const auto& v) { object[key] = v; }, value);
  }
  if (target) object["target"] = *target;
  if (opt_level) object["opt_level"] = *opt_level;
  if (fp_contract) object["fp_contract"] = *fp_contract;
  return object.dump();  // nlohmann's object keys are sorted, so the text is canonical
}

bool has_tensor_core_mma(const std::string& target) {
  constexpr unsigned kTensorCoreSm = 80;
  if (target.rfind("sm_", 0) != 0) return false;
  unsigned sm = 0;
  for (std::size_t i = 3; i < target.size() && std::isdigit(static_cast<unsigned char>(target[i])); ++i) {
    sm = sm * 10 + unsigned(target[i] - '0');
  }
  return sm >= kTensorCoreSm;
}

Program build_program(const OpSpec& spec, const std::optional<std::string>& target) {
  const OpArgs& args = spec.args;
  const std::optional<std::string>& for_target = target ? target : spec.target;
  const bool batch = args.has("m") && args.u32("m") > 1;
  if (for_target && has_tensor_core_mma(*for_target) && batch && args.has("schedule") &&
      args.choice("schedule") == "auto") {
    OpArgs fast = args;
    fast.set("schedule", std::string("fast"));
    try {
      return spec.op->build(fast);
    } catch (const OpError&) {
      // no fast schedule for these parameters: the op's own "auto"
    }
  }
  return spec.op->build(args);
}

std::string_view to_string(ParamType type) {
  switch (type) {
    case ParamType::U32: return "u32";
    case ParamType::Bool: return "bool";
    case ParamType::Choice: return "choice";
  }
  return "?";
}

nlohmann::json op_json(const OpInfo& op) {
  nlohmann::json params = nlohmann::json::array();
  for (const ParamSpec& param : op.params) {
    nlohmann::json entry = {{"name", param.name},
                            {"type", to_string(param.type)},
                            {"description", param.description},
                            {"constraint", param.constraint}};
    entry["default"] = param.default_value.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(param.default_value);
    if (!param.choices.empty()) entry["choices"] = param.choices;
    entry["aliases"] = param.aliases;
    params.push_back(entry);
  }
  nlohmann::json buffers = nlohmann::json::array();
  for (const BufferSpec& buffer : op.buffers) {
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

}  // namespace quantc::ir::ops
