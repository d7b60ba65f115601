#include "tools/CommandSupport.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>

namespace quantc::tools {

std::string read_text_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw CommandError(fmt::format("cannot read '{}': no such file or not readable", path));
  return std::string(std::istreambuf_iterator<char>(file), {});
}

ir::ops::OpSpec load_spec(const std::string& path) { return ir::ops::parse_spec(read_text_file(path), path); }

ptx::Target resolve_target(const std::optional<std::string>& command_line, const ir::ops::OpSpec& spec) {
  try {
    if (command_line) return ptx::parse_target(*command_line);
    if (spec.target) return ptx::parse_target(*spec.target);
  } catch (const std::invalid_argument& error) {
    throw CommandError(error.what());
  }
  return ptx::default_target();
}

std::optional<ptx::Target> requested_target(const std::optional<std::string>& command_line,
                                            const ir::ops::OpSpec& spec) {
  if (!command_line && !spec.target) return std::nullopt;
  return resolve_target(command_line, spec);
}

void PipelineFlags::add_to(CLI::App& command) {
  command.add_option("-O", level, "Optimization level 0, 1 or 2 (-O0 none, -O1 fold+dce, -O2 everything; default 2)");
  command.add_option("--fp-contract", fp_contract,
                     "on (default): -O2 fuses a*b+c into fma; off: every product is rounded (nvcc --fmad=false)")
      ->check(CLI::IsMember({"on", "off"}));
  command.add_option("--passes", passes, "Run exactly these passes, comma-separated, instead of an -O pipeline");
  command.add_flag("--print-ir-after-all", print_ir_after_all, "Print the IR to stderr after every pass that changed it");
  command.add_option("--print-ir-after", print_ir_after, "Print the IR to stderr after pass NAME (repeatable)");
  command.add_flag("--time-passes", time_passes, "Print per-pass wall time and IR size before/after to stderr");
  command.add_flag("--verify-each", verify_each, "Run the IR verifier after every pass");
}

lower::PassOptions PipelineFlags::pass_options(const ir::ops::OpSpec* spec) const {
  lower::PassOptions options;
  try {
    if (level) {
      options.level = lower::parse_optimization_level(*level);
    } else if (spec != nullptr && spec->opt_level) {
      options.level = lower::parse_optimization_level(*spec->opt_level);
    }
    if (fp_contract) {
      options.fp_contract = *fp_contract == "on";
    } else if (spec != nullptr && spec->fp_contract) {
      options.fp_contract = *spec->fp_contract == "on";
    }
    if (!passes.empty()) options.passes = lower::parse_pass_list(passes);
    for (const std::string& name : print_ir_after) lower::parse_pass_list(name);  // validates the name
  } catch (const lower::PassError& error) {
    throw CommandError(error.what());
  }
  options.print_ir_after_all = print_ir_after_all;
  options.print_ir_after = print_ir_after;
  options.time_passes = time_passes;
  options.verify_each = verify_each;
  if (observes_pipeline()) options.log = &std::cerr;
  return options;
}

std::pair<std::string, std::string> split_binding(const std::string& text, const std::string& option) {
  auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
    throw CommandError(fmt::format("{} expects NAME=FILE.npy, got '{}'", option, text));
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

std::string format_buffer(const std::string& label, const runtime::HostBuffer& buffer) {
  const std::size_t count = buffer.count();
  std::string values;
  for (std::size_t i = 0; i < count; ++i) {
    if (count > 12 && i == 8) {
      values += " ...";
      i = count - 4;
    }
    values += fmt::format("{}{:g}", i == 0 ? "" : " ", runtime::element_as_double(buffer, i));
  }
  return fmt::format("{} ({} x {}): [{}]\n", label, count, ir::to_string(buffer.element), values);
}

}  // namespace quantc::tools
