#include "runtime/backends/reference/Interpreter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <numeric>
#include <thread>

#include "ir/Verifier.h"

#include "runtime/backends/reference/Compiled.h"

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

/// One host thread's share of the grid: its own compiled program (whose statements
/// keep scratch lane lists) and its own registers.
struct Worker {
  Machine machine;
  CompiledProgram compiled;
  std::uint64_t workgroups = 0;
  std::exception_ptr error;
  std::uint64_t error_workgroup = 0;  // linear index of the workgroup that raised `error`
};

void prepare(const ir::Program& program, BufferSet& buffers, Worker& worker) {
  Machine& machine = worker.machine;
  machine.buffers = view_buffers(program, buffers);
  // Workgroup arrays follow the buffers; their storage belongs to this worker and is
  // zeroed before each workgroup (the emulator also starts every CTA with zeros).
  machine.shared.clear();
  for (const ir::SharedDecl& array : program.shared) machine.shared.emplace_back(array.byte_size(), 0);
  for (std::size_t a = 0; a < program.shared.size(); ++a) {
    const ir::SharedDecl& array = program.shared[a];
    machine.buffers.push_back(BufferView{array.name, machine.shared[a].data(), array.count, array.element,
                                         ir::byte_size(array.element), true});
  }
  worker.compiled = detail::compile(program, machine.buffers);
  machine.workgroup_size = program.workgroup_size;
  machine.lanes = program.invocations_per_workgroup();
  machine.registers.assign(std::size_t{worker.compiled.register_count} * machine.lanes, 0);
  machine.returned.assign(machine.lanes, 0);
  machine.counters.loads_per_buffer.assign(machine.buffers.size(), 0);
  machine.counters.stores_per_buffer.assign(machine.buffers.size(), 0);
  for (const auto& [reg, value] : worker.compiled.constants) std::fill_n(machine.reg(reg), machine.lanes, value);
}

/// Runs workgroups taken in increasing linear order (x fastest) from `next` until the
/// grid is done or a workgroup at or before `stop` failed.
void work(const ir::Program& program, Worker& worker, std::atomic<std::uint64_t>& next,
          std::atomic<std::uint64_t>& stop) {
  Machine& machine = worker.machine;
  const auto& count = program.workgroup_count;
  const std::uint64_t total = std::uint64_t{count[0]} * count[1] * count[2];
  std::vector<std::uint32_t> all_lanes(machine.lanes), active;
  std::iota(all_lanes.begin(), all_lanes.end(), 0u);
  for (std::uint64_t linear = next++; linear < total && linear < stop.load(); linear = next++) {
    machine.workgroup_id = {static_cast<std::uint32_t>(linear % count[0]),
                            static_cast<std::uint32_t>(linear / count[0] % count[1]),
                            static_cast<std::uint32_t>(linear / (std::uint64_t{count[0]} * count[1]))};
    try {
      fill_builtins(worker.compiled, machine);
      for (auto& array : machine.shared) std::fill(array.begin(), array.end(), std::uint8_t{0});
      std::fill(machine.returned.begin(), machine.returned.end(), 0);
      active = all_lanes;
      worker.compiled.entry->exec(machine, active);
      ++worker.workgroups;
    } catch (...) {
      worker.error = std::current_exception();
      worker.error_workgroup = linear;
      for (std::uint64_t seen = stop.load(); linear < seen && !stop.compare_exchange_weak(seen, linear);) {
      }
      return;
    }
  }
}

void report(const ir::Program& program, const std::vector<Worker>& workers, RunStatistics& out) {
  out = RunStatistics{};
  for (const ir::BufferDecl& decl : program.buffers) {
    out.loads_per_buffer[decl.name] = 0;
    out.stores_per_buffer[decl.name] = 0;
  }
  for (const Worker& worker : workers) {
    const auto& counters = worker.machine.counters;
    out.workgroups += worker.workgroups;
    out.invocations += worker.workgroups * worker.machine.lanes;
    out.global_loads += counters.global_loads;
    out.global_stores += counters.global_stores;
    out.shared_loads += counters.shared_loads;
    out.shared_stores += counters.shared_stores;
    out.subgroup_shuffles += counters.subgroup_shuffles;
    out.subgroup_reductions += counters.subgroup_reductions;
    out.subgroup_ballots += counters.subgroup_ballots;
    out.subgroup_mmas += counters.subgroup_mmas;
    out.arithmetic_ops += counters.arithmetic_ops;
    for (std::size_t i = 0; i < program.buffers.size(); ++i) {
      out.loads_per_buffer[program.buffers[i].name] += counters.loads_per_buffer[i];
      out.stores_per_buffer[program.buffers[i].name] += counters.stores_per_buffer[i];
    }
  }
}

}  // namespace

void run(const ir::Program& program, BufferSet& buffers, const RunOptions& options) {
  check_buffers(program, buffers);
  // Hand-assembled programs skip ProgramBuilder's verification; an ill-formed one
  // (say, a store to a read-only buffer) must be rejected, not half executed.
  if (std::vector<std::string> problems = ir::verify(program, options.verify); !problems.empty()) {
    throw RuntimeError(fmt::format("program '{}' is not well formed: {}; fix the IR (ir::verify lists every problem)",
                                   program.name, fmt::join(problems, "; ")));
  }
  const auto& count = program.workgroup_count;
  const std::uint64_t total = std::uint64_t{count[0]} * count[1] * count[2];
  unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::uint64_t>(threads, std::max<std::uint64_t>(total, 1)));

  std::vector<Worker> workers(threads);
  for (Worker& worker : workers) prepare(program, buffers, worker);
  std::atomic<std::uint64_t> next{0}, stop{std::numeric_limits<std::uint64_t>::max()};
  if (threads == 1) {
    work(program, workers[0], next, stop);
  } else {
    std::vector<std::thread> pool;
    for (Worker& worker : workers) pool.emplace_back([&] { work(program, worker, next, stop); });
    for (std::thread& thread : pool) thread.join();
  }
  if (options.statistics) report(program, workers, *options.statistics);
  // Every workgroup before the first failing one has run, so this is the error a
  // sequential run raises.
  const Worker* failed = nullptr;
  for (const Worker& worker : workers) {
    if (worker.error && (!failed || worker.error_workgroup < failed->error_workgroup)) failed = &worker;
  }
  if (failed) std::rethrow_exception(failed->error);
}

}  // namespace quantc::runtime::reference
