#include "ir/ops/Registry.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/ops/DequantMatmul.h"
#include "ir/ops/Int4Packed.h"
#include "ir/ops/Linear4Bit.h"
#include "ir/ops/Nf4Gemm.h"
#include "ir/ops/Quantize.h"

namespace quantc::ir::ops {

namespace {
template <class T>
const T& get_arg(const std::map<std::string, ParamValue>& values, const std::string& name, const char* type) {
  auto found = values.find(name);
  if (found == values.end()) throw OpError(fmt::format("Fix: missing parameter \"{}\"", name));
  if (const T* value = std::get_if<T>(&found->second)) return *value;
  throw OpError(fmt::format("Fix: parameter \"{}\" must be {}", name, type));
}
}  // namespace

std::uint32_t OpArgs::u32(const std::string& name) const { return get_arg<std::uint32_t>(values_, name, "a u32"); }
bool OpArgs::boolean(const std::string& name) const { return get_arg<bool>(values_, name, "a bool"); }
const std::string& OpArgs::choice(const std::string& name) const {
  return get_arg<std::string>(values_, name, "a string");
}

const OpRegistry& OpRegistry::builtin() {
  static const OpRegistry registry = [] {
    OpRegistry result;
    // One line per op family; each family's header documents its ops.
    for (OpInfo& info : linear_4bit_ops()) result.add(std::move(info));
    for (OpInfo& info : int4_packed_ops()) result.add(std::move(info));
    for (OpInfo& info : dequant_matmul_ops()) result.add(std::move(info));
    for (OpInfo& info : quantize_ops()) result.add(std::move(info));
    for (OpInfo& info : nf4_gemm_ops()) result.add(std::move(info));
    return result;
  }();
  return registry;
}

const OpInfo* OpRegistry::find(const std::string& name) const {
  for (const OpInfo& op : ops_) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

void OpRegistry::add(OpInfo info) {
  if (find(info.name) != nullptr) throw OpError(fmt::format("op \"{}\" registered twice", info.name));
  ops_.push_back(std::move(info));
  std::sort(ops_.begin(), ops_.end(), [](const OpInfo& a, const OpInfo& b) { return a.name < b.name; });
}

}  // namespace quantc::ir::ops
