#include "lower/PassManager.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>

#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/analysis/Structure.h"
#include "lower/passes/Passes.h"

namespace quantc::lower {

const std::vector<PassInfo>& registered_passes() {
  static const std::vector<PassInfo> passes = {
      {"fold_constants", "constant folding, algebraic simplification, range-decided comparisons", fold_constants,
       false},
      // Not idempotent: reusing `let x = e` for later e's can make `x * 2` and an older
      // `e * 2` equal, which the next run binds.
      {"cse", "common-subexpression elimination on pure expressions", eliminate_common_subexpressions, false},
      {"licm", "hoist loop-invariant lets and provably safe read-only loads out of loops", hoist_loop_invariants,
       false},
      // Idempotent: it iterates to its own fixed point.
      {"dce", "remove unread variables, empty ifs/loops and code after return", eliminate_dead_code, true},
      {"unroll_loops", "unroll small constant-trip-count loops", [](ir::Program p) { return unroll_loops(std::move(p)); },
       false},
      {"hoist_sidecars", "load per-group scales/zero points once per group instead of once per chunk", hoist_sidecars,
       false},
      {"contract_fma", "fuse a*b+c on f32/f64 into fma (changes rounding; -O2 runs it first)", contract_fma, true,
       false},
  };
  return passes;
}

const PassInfo& find_pass(std::string_view name) {
  std::string known;
  for (const PassInfo& pass : registered_passes()) {
    if (pass.name == name) return pass;
    known += (known.empty() ? "" : ", ") + pass.name;
  }
  throw PassError(fmt::format("unknown pass '{}'; known passes: {}", name, known));
}

std::vector<std::string> pipeline(OptimizationLevel level) {
  switch (level) {
    case OptimizationLevel::O0:
      return {};
    case OptimizationLevel::O1:
      return {"fold_constants", "dce"};
    case OptimizationLevel::O2:
      // Sidecar hoisting first: it needs the chunk loop before unrolling touches it.
      return {"hoist_sidecars", "fold_constants", "licm", "cse", "unroll_loops", "fold_constants", "dce"};
  }
  return {};
}

std::vector<std::string> prologue(const PassOptions& options) {
  if (!options.passes.empty() || options.level != OptimizationLevel::O2 || !options.fp_contract) return {};
  return {"contract_fma"};
}

std::vector<std::string> parse_pass_list(std::string_view text) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string_view name = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (!name.empty()) names.push_back(find_pass(name).name);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (names.empty()) throw PassError(fmt::format("empty pass list '{}'; write e.g. --passes=fold_constants,dce", text));
  return names;
}

OptimizationLevel parse_optimization_level(std::string_view text) {
  if (text.starts_with("-")) text.remove_prefix(1);
  if (text.starts_with("O")) text.remove_prefix(1);
  if (text == "0") return OptimizationLevel::O0;
  if (text == "1") return OptimizationLevel::O1;
  if (text == "2") return OptimizationLevel::O2;
  throw PassError(fmt::format("unknown optimization level '{}'; use -O0, -O1 or -O2", text));
}

namespace {

std::size_t ir_size(const ir::Program& program) { return ir::analysis::node_size(program.entry); }

void print_timings(std::ostream& log, const std::vector<PassTiming>& timings) {
  log << "; ===== pass execution timing report =====\n";
  log << fmt::format("; {:<16} {:>12} {:>8} {:>8} {}\n", "pass", "wall (us)", "before", "after", "changed");
  std::chrono::nanoseconds total{0};
  for (const PassTiming& timing : timings) {
    total += timing.wall_time;
    log << fmt::format("; {:<16} {:>12.1f} {:>8} {:>8} {}\n", timing.pass, timing.wall_time.count() / 1000.0,
                       timing.nodes_before, timing.nodes_after,
                       timing.skipped ? "skipped" : timing.changed ? "yes" : "no");
  }
  log << fmt::format("; {:<16} {:>12.1f}\n", "total", total.count() / 1000.0);
}

}  // namespace

ir::Program run_passes(ir::Program program, const PassOptions& options, std::vector<PassTiming>* timings) {
  std::vector<std::string> names = options.passes.empty() ? pipeline(options.level) : options.passes;
  std::vector<const PassInfo*> passes, prologue_passes;
  for (const std::string& name : names) passes.push_back(&find_pass(name));
  for (const std::string& name : prologue(options)) prologue_passes.push_back(&find_pass(name));
  for (const std::string& name : options.print_ir_after) find_pass(name);
  bool logging = options.print_ir_after_all || !options.print_ir_after.empty() || options.time_passes;
  if (logging && options.log == nullptr) throw PassError("pass printing or timing requested without a log stream");

  std::vector<PassTiming> local_timings;
  std::vector<PassTiming>& record = timings ? *timings : local_timings;
  record.reserve(record.size() + prologue_passes.size() +
                 passes.size() * (options.passes.empty() ? options.max_rounds : 1));
  const bool count_nodes = timings != nullptr || options.time_passes;
  std::size_t nodes = count_nodes ? ir_size(program) : 0;
  // Per pass, an entry on which running it is known to change nothing.
  std::map<const PassInfo*, ir::Node> fixed_point;
  // Runs `pass` (or skips it where its result is known); true when it changed the IR.
  auto run_pass = [&](const PassInfo* pass) {
    PassTiming timing{pass->name, {}, nodes, nodes, false, false};
    ir::Node& known = fixed_point[pass];
    if (known.defined() && known.same_as(program.entry)) {
      timing.skipped = true;
      record.push_back(timing);
      return false;
    }
    const ir::Node before = program.entry;
    auto start = std::chrono::steady_clock::now();
    program = pass->run(std::move(program));
    timing.wall_time = std::chrono::steady_clock::now() - start;
    timing.changed = !program.entry.same_as(before);
    if (count_nodes && timing.changed) nodes = ir_size(program);
    timing.nodes_after = nodes;
    record.push_back(timing);
    known = !timing.changed ? before : pass->idempotent ? program.entry : ir::Node();
    if (options.verify_each) {
      std::vector<std::string> problems = ir::verify(program);
      if (!problems.empty()) {
        std::string message = fmt::format("pass '{}' produced IR that fails verification:", pass->name);
        for (const std::string& problem : problems) message += "\n  - " + problem;
        throw PassError(message + "\n" + ir::print(program));
      }
    }
    bool print = options.print_ir_after_all ||
                 std::find(options.print_ir_after.begin(), options.print_ir_after.end(), pass->name) !=
                     options.print_ir_after.end();
    if (print && timing.changed) *options.log << "; *** IR Dump After " << pass->name << " ***\n" << ir::print(program);
    return timing.changed;
  };
  for (const PassInfo* pass : prologue_passes) run_pass(pass);
  bool iterate = options.passes.empty() && options.level == OptimizationLevel::O2;
  unsigned rounds = iterate ? std::max(1u, options.max_rounds) : 1;
  for (unsigned round = 0; round < rounds; ++round) {
    bool round_changed = false;
    for (const PassInfo* pass : passes) round_changed |= run_pass(pass);
    if (!round_changed) break;
  }
  if (options.time_passes) print_timings(*options.log, record);
  return program;
}

}  // namespace quantc::lower
