// JSON op specs: what `quantc emit SPEC.json` does before the kernel cache and the output
// file (tools/commands/Emit.cpp, emit_artifact): parse the spec, resolve the target and
// the pipeline (the spec's "target", "opt_level", "fp_contract"), make the cache key,
// build the op's program and compile it to PTX. A spec can be wrong only in the ways the
// CLI reports as errors: SpecError (JSON, keys, types), OpError (the op's parameter
// checks) and CommandError (target, optimisation level). Anything else, e.g. an IRError
// from a program an op constructor accepted, is a bug.
#include <optional>
#include <string>

#include "ir/ops/Spec.h"
#include "lower/driver/Compiler.h"
#include "lower/driver/KernelCache.h"
#include "tests/fuzz/FuzzTargets.h"
#include "tools/CommandSupport.h"

namespace quantc::fuzz {

Outcome spec_target(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ir::ops::OpSpec spec = ir::ops::parse_spec(text, "fuzz.json");
    const tools::PipelineFlags no_flags;
    const lower::CompileOptions options{tools::resolve_target(std::nullopt, spec), no_flags.pass_options(&spec)};
    const auto key = lower::CacheKey::for_spec(spec, options.target.name(), lower::pipeline_name(options.passes));
    if (key.digest().size() != 64) throw InvariantViolation("a cache key digest is not 64 hex digits");
    const ir::Program program = ir::ops::build_program(spec);
    const std::string ptx = lower::compile(program, options).ptx;
    if (ptx.find(".entry") == std::string::npos) throw InvariantViolation("compile() returned PTX without an entry");
  } catch (const ir::ops::SpecError&) {
    return Outcome::Rejected;
  } catch (const ir::ops::OpError&) {
    return Outcome::Rejected;
  } catch (const tools::CommandError&) {
    return Outcome::Rejected;
  }
  return Outcome::Accepted;
}

}  // namespace quantc::fuzz
