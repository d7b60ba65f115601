#include "ptx/PtxasReport.h"

#include <algorithm>
#include <regex>

namespace quantc::ptx {

namespace {

FunctionResources& find_or_add(std::vector<FunctionResources>& functions, const std::string& name) {
  for (FunctionResources& function : functions) {
    if (function.function == name) return function;
  }
  FunctionResources added;
  added.function = name;
  functions.push_back(std::move(added));
  return functions.back();
}

}  // namespace

std::vector<FunctionResources> parse_ptxas_report(std::string_view log) {
  static const std::regex compiling(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex properties(R"(Function properties for (\S+))");
  static const std::regex stack(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex shared(R"((\d+) bytes smem)");
  std::vector<FunctionResources> functions;
  std::string current;     // the entry being compiled ("Used N registers" belongs to it)
  std::string properties_of;  // the function whose stack line comes next
  std::size_t begin = 0;
  while (begin <= log.size()) {
    std::size_t end = log.find('\n', begin);
    if (end == std::string_view::npos) end = log.size();
    const std::string line(log.substr(begin, end - begin));
    begin = end + 1;
    std::smatch match;
    if (std::regex_search(line, match, compiling)) {
      current = match[1];
      find_or_add(functions, current).target = match[2];
    } else if (std::regex_search(line, match, properties)) {
      properties_of = match[1];
      find_or_add(functions, properties_of);
    } else if (std::regex_search(line, match, stack) && !properties_of.empty()) {
      FunctionResources& function = find_or_add(functions, properties_of);
      function.stack_frame_bytes = std::stoi(match[1]);
      function.spill_store_bytes = std::stoi(match[2]);
      function.spill_load_bytes = std::stoi(match[3]);
    } else if (std::regex_search(line, match, used) && !current.empty()) {
      FunctionResources& function = find_or_add(functions, current);
      function.registers = std::stoi(match[1]);
      if (std::regex_search(line, match, shared)) function.static_shared_bytes = std::stoi(match[1]);
    }
  }
  return functions;
}

ResourceTotals total_resources(const std::vector<FunctionResources>& functions) {
  ResourceTotals totals;
  for (const FunctionResources& function : functions) {
    totals.registers = std::max(totals.registers, function.registers);
    totals.spill_store_bytes += static_cast<std::uint64_t>(function.spill_store_bytes);
    totals.spill_load_bytes += static_cast<std::uint64_t>(function.spill_load_bytes);
  }
  return totals;
}

}  // namespace quantc::ptx
