// quantc profile SPEC.json [--target sm_XX] [--seed N] [pipeline flags]: run the kernel's
// PTX in the emulator on generated inputs and print its counters (per kernel and per
// output element) with a roofline estimate for H100 SXM and H200. An estimate for
// comparing kernels, not a measurement: the assumptions are printed with it.
#include <fmt/format.h>

#include "runtime/backends/emulator/Profile.h"
#include "tools/CommandSupport.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {

void add_profile_command(CLI::App& app) {
  struct ProfileOptions {
    std::string spec_path;
    std::optional<std::string> target;
    std::uint64_t seed = 1;
    PipelineFlags pipeline;
  };
  auto options = std::make_shared<ProfileOptions>();
  CLI::App* command = app.add_subcommand("profile", "Emulate a spec's PTX and print counters and a roofline estimate");
  command->add_option("spec", options->spec_path, "Op spec (JSON)")->required();
  command->add_option("--target", options->target, "PTX target, e.g. sm_90");
  command->add_option("--seed", options->seed, "Seed for the generated inputs")->capture_default_str();
  options->pipeline.add_to(*command);
  command->callback([options] {
    ir::ops::OpSpec spec = load_spec(options->spec_path);
    ptx::Target target = resolve_target(options->target, spec);
    lower::CompiledKernel kernel =
        lower::compile(ir::ops::build_program(spec), {target, options->pipeline.pass_options(&spec)});
    fmt::print("{}", runtime::emulator::profile_program(kernel.program, kernel.ptx, target.name(), options->seed));
  });
}

}  // namespace quantc::tools
