#include "runtime/backends/Backend.h"

#include <fmt/format.h>

#include <algorithm>

namespace quantc::runtime {

std::string_view to_string(KernelForm form) { return form == KernelForm::Ir ? "IR" : "PTX"; }

std::string_view to_string(LaunchTiming timing) {
  return timing == LaunchTiming::BackToBack ? "back-to-back" : "isolated";
}

std::optional<LaunchTiming> parse_launch_timing(std::string_view text) {
  for (LaunchTiming timing : {LaunchTiming::Isolated, LaunchTiming::BackToBack}) {
    if (text == to_string(timing)) return timing;
  }
  return std::nullopt;
}

double KernelTimes::median() const {
  if (microseconds.empty()) return 0;
  std::vector<double> sorted = microseconds;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t middle = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

double KernelTimes::min() const {
  return microseconds.empty() ? 0 : *std::min_element(microseconds.begin(), microseconds.end());
}

namespace {

std::string describe_argument(const PtxArgument& argument, const std::vector<NamedBuffer>& buffers) {
  if (argument.is_buffer()) {
    if (argument.buffer >= buffers.size()) return fmt::format("buffer #{}", argument.buffer);
    const NamedBuffer& named = buffers[argument.buffer];
    return fmt::format("buffer '{}' ({} x {})", named.name, named.buffer.count(), ir::to_string(named.buffer.element));
  }
  return fmt::format("scalar {} ({} bytes)", argument.label.empty() ? fmt::format("{:#x}", argument.bits) : argument.label,
                     argument.bytes);
}

const ptx::Entry& find_entry(const std::vector<ptx::Entry>& entries, const std::string& name) {
  if (entries.empty()) throw RuntimeError("the PTX module has no .entry (no kernel to launch)");
  if (name.empty()) {
    if (entries.size() == 1) return entries.front();
    throw RuntimeError(fmt::format("the PTX module has {} entries ({}); name the one to launch (quantc: --entry NAME)",
                                   entries.size(), ptx::entry_names(entries)));
  }
  for (const ptx::Entry& entry : entries) {
    if (entry.name == name) return entry;
  }
  throw RuntimeError(fmt::format("the PTX module has no entry '{}'; its entries: {}", name, ptx::entry_names(entries)));
}

}  // namespace

ptx::Entry check_ptx_launch(const PtxLaunch& launch, const std::vector<NamedBuffer>& buffers) {
  std::vector<ptx::Entry> entries;
  try {
    entries = ptx::read_entries(launch.ptx);
  } catch (const ptx::PtxSyntaxError& error) {
    throw RuntimeError(error.what());
  }
  const ptx::Entry& entry = find_entry(entries, launch.entry);
  for (int axis = 0; axis < 3; ++axis) {
    if (launch.grid[axis] == 0 || launch.block[axis] == 0) {
      throw RuntimeError(fmt::format("kernel {}: grid ({}, {}, {}) and block ({}, {}, {}) need every dimension >= 1",
                                     entry.name, launch.grid[0], launch.grid[1], launch.grid[2], launch.block[0],
                                     launch.block[1], launch.block[2]));
    }
  }
  std::string signature;
  for (const ptx::EntryParameter& parameter : entry.parameters) {
    signature += fmt::format("{}{} {}", signature.empty() ? "" : ", ", parameter.spelling(), parameter.name);
  }
  if (launch.arguments.size() != entry.parameters.size()) {
    throw RuntimeError(fmt::format("kernel {} takes {} parameter{} ({}), {} argument{} given", entry.name,
                                   entry.parameters.size(), entry.parameters.size() == 1 ? "" : "s",
                                   signature.empty() ? "none" : signature, launch.arguments.size(),
                                   launch.arguments.size() == 1 ? " was" : "s were"));
  }
  for (std::size_t i = 0; i < entry.parameters.size(); ++i) {
    const ptx::EntryParameter& parameter = entry.parameters[i];
    const PtxArgument& argument = launch.arguments[i];
    const std::string where = fmt::format("kernel {} parameter {} ('{}', {})", entry.name, i, parameter.name,
                                          parameter.spelling());
    if (argument.is_buffer()) {
      if (argument.buffer >= buffers.size()) {
        throw RuntimeError(fmt::format("{}: argument {} names buffer #{}, but {} buffer{} given", where, i,
                                       argument.buffer, buffers.size(), buffers.size() == 1 ? " was" : "s were"));
      }
      if (!parameter.holds_pointer()) {
        throw RuntimeError(fmt::format("{}: argument {} is {}, but a buffer needs a .u64 or .b64 pointer parameter; "
                                       "give a scalar of {} bytes instead",
                                       where, i, describe_argument(argument, buffers), parameter.bytes()));
      }
      continue;
    }
    if (argument.bytes != parameter.bytes()) {
      throw RuntimeError(fmt::format("{}: argument {} is a {}, but the parameter holds {} bytes{}", where, i,
                                     describe_argument(argument, buffers), parameter.bytes(),
                                     parameter.holds_pointer() ? " (a pointer: give a buffer)" : ""));
    }
  }
  return entry;
}

RunReport Backend::launch_ptx(const PtxLaunch&, std::vector<NamedBuffer>&, const RunOptions&) {
  throw RuntimeError(fmt::format("backend '{}' runs {}, not PTX; launch PTX on a PTX backend", name(),
                                 to_string(form())));
}

BackendKernel compile_to_ptx(const ir::Program& program, const CompileOptions& options, ptx::Target default_target) {
  const ptx::Target target = options.target.value_or(default_target);
  lower::CompiledKernel compiled = lower::compile(program, lower::CompileOptions(target, options.passes));
  return BackendKernel{std::move(compiled.program), std::move(compiled.ptx), target};
}

void require_ptx(const Backend& backend, const BackendKernel& kernel) {
  if (kernel.ptx.empty()) {
    throw RuntimeError(fmt::format("backend '{}' runs PTX, but kernel '{}' has none; compile it with this backend "
                                   "(Backend::compile) or set BackendKernel::ptx",
                                   backend.name(), kernel.program.name));
  }
}

}  // namespace quantc::runtime
