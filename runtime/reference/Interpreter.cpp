#include "runtime/reference/Interpreter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <numeric>

#include "ir/Verifier.h"

#include "runtime/reference/Compiled.h"

namespace quantc::runtime::reference {
namespace {

using detail::BufferView;
using detail::CompiledProgram;
using detail::Machine;
using detail::Word;

std::vector<BufferView> view_buffers(const ir::Program& program, BufferSet& buffers) {
  std::vector<BufferView> views;
  for (const ir::BufferDecl& decl : program.buffers) {
    HostBuffer& host = buffers.at(decl.name);
    views.push_back(BufferView{decl.name, host.bytes.data(), decl.count, decl.element, ir::byte_size(decl.element)});
  }
  return views;
}

/// Builtin values for every lane of the workgroup `machine.workgroup_id`.
void fill_builtins(const CompiledProgram& compiled, Machine& machine) {
  const auto& size = machine.workgroup_size;
  for (const auto& builtin : compiled.builtins) {
    Word* values = machine.reg(builtin.reg);
    for (std::uint32_t lane = 0; lane < machine.lanes; ++lane) {
      const std::uint32_t local[3] = {lane % size[0], lane / size[0] % size[1], lane / (size[0] * size[1])};
      std::uint32_t value = 0;
      switch (builtin.kind) {
        case ir::BuiltinKind::LocalId: value = local[builtin.axis]; break;
        case ir::BuiltinKind::WorkgroupId: value = machine.workgroup_id[builtin.axis]; break;
        case ir::BuiltinKind::InvocationId:
          value = machine.workgroup_id[builtin.axis] * size[builtin.axis] + local[builtin.axis];
          break;
        case ir::BuiltinKind::SubgroupLocalId: value = lane % 32; break;
        case ir::BuiltinKind::SubgroupSize: value = 32; break;
      }
      values[lane] = detail::put(value);
    }
  }
}

void report(const ir::Program& program, const Machine& machine, std::uint64_t workgroups, RunStatistics& out) {
  const auto& counters = machine.counters;
  out = RunStatistics{};
  out.workgroups = workgroups;
  out.invocations = workgroups * machine.lanes;
  out.global_loads = counters.global_loads;
  out.global_stores = counters.global_stores;
  out.subgroup_shuffles = counters.subgroup_shuffles;
  out.subgroup_reductions = counters.subgroup_reductions;
  out.subgroup_ballots = counters.subgroup_ballots;
  out.arithmetic_ops = counters.arithmetic_ops;
  for (std::size_t i = 0; i < program.buffers.size(); ++i) {
    out.loads_per_buffer[program.buffers[i].name] = counters.loads_per_buffer[i];
    out.stores_per_buffer[program.buffers[i].name] = counters.stores_per_buffer[i];
  }
}

}  // namespace

void run(const ir::Program& program, BufferSet& buffers, const RunOptions& options) {
  check_buffers(program, buffers);
  // Hand-assembled programs skip ProgramBuilder's verification; an ill-formed one
  // (say, a store to a read-only buffer) must be rejected, not half executed.
  if (std::vector<std::string> problems = ir::verify(program); !problems.empty()) {
    throw RuntimeError(fmt::format("program '{}' is not well formed: {}; fix the IR (ir::verify lists every problem)",
                                   program.name, fmt::join(problems, "; ")));
  }
  Machine machine;
  machine.buffers = view_buffers(program, buffers);
  const CompiledProgram compiled = detail::compile(program, machine.buffers);

  machine.workgroup_size = program.workgroup_size;
  machine.lanes = program.invocations_per_workgroup();
  machine.registers.assign(std::size_t{compiled.register_count} * machine.lanes, 0);
  machine.returned.assign(machine.lanes, 0);
  machine.counters.loads_per_buffer.assign(program.buffers.size(), 0);
  machine.counters.stores_per_buffer.assign(program.buffers.size(), 0);
  for (const auto& [reg, value] : compiled.constants) {
    std::fill_n(machine.reg(reg), machine.lanes, value);
  }

  std::vector<std::uint32_t> all_lanes(machine.lanes), active;
  std::iota(all_lanes.begin(), all_lanes.end(), 0u);
  std::uint64_t workgroups = 0;
  const auto& count = program.workgroup_count;
  try {
    for (std::uint32_t z = 0; z < count[2]; ++z) {
      for (std::uint32_t y = 0; y < count[1]; ++y) {
        for (std::uint32_t x = 0; x < count[0]; ++x) {
          machine.workgroup_id = {x, y, z};
          fill_builtins(compiled, machine);
          std::fill(machine.returned.begin(), machine.returned.end(), 0);
          active = all_lanes;
          compiled.entry->exec(machine, active);
          ++workgroups;
        }
      }
    }
  } catch (...) {
    if (options.statistics) report(program, machine, workgroups, *options.statistics);
    throw;
  }
  if (options.statistics) report(program, machine, workgroups, *options.statistics);
}

}  // namespace quantc::runtime::reference
