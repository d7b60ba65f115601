// quantc profile SPEC.json [--target sm_XX] [--seed N] [pipeline flags]: run the kernel's
// PTX in the emulator on generated inputs and print its counters (per kernel and per
// output element) with a roofline estimate for H100 SXM and H200. An estimate for
// comparing kernels, not a measurement: the assumptions are printed with it.
//
// quantc profile FILE.ptx [--entry NAME] --grid X[,Y,Z] --block X[,Y,Z] [--shared-bytes N]
//                         [--arg ARG]... [--output INDEX=FILE.npy]...
// does the same for any PTX entry, launched as `quantc run FILE.ptx` launches it; per
// output element counts over the --output buffers (all buffer arguments when none),
// which are also written, atomically, after the run.
#include <fmt/format.h>

#include "runtime/backends/emulator/EmulatorBackend.h"
#include "runtime/backends/emulator/Profile.h"
#include "tools/CommandSupport.h"
#include "tools/PtxLaunchFlags.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {

void add_profile_command(CLI::App& app) {
  struct ProfileOptions {
    std::string path;
    std::optional<std::string> target;
    std::uint64_t seed = 1;
    PipelineFlags pipeline;
    PtxLaunchFlags ptx;
    std::vector<std::string> outputs;
  };
  auto options = std::make_shared<ProfileOptions>();
  CLI::App* command =
      app.add_subcommand("profile", "Emulate a spec's PTX, or any PTX entry, and print counters and a roofline estimate");
  command->add_option("file", options->path, "Op spec (JSON), or a PTX module (*.ptx) to launch with --entry/--grid/--block/--arg")
      ->required();
  command->add_option("--target", options->target, "Spec: PTX target, e.g. sm_90");
  command->add_option("--seed", options->seed, "Spec: seed for the generated inputs")->capture_default_str();
  command->add_option("--output", options->outputs,
                      "PTX: INDEX=FILE.npy, a buffer argument that counts as output and is saved (repeatable)");
  options->pipeline.add_to(*command);
  options->ptx.add_to(*command);
  command->callback([options, command] {
    const std::string text = read_text_file(options->path);
    if (is_ptx_file(options->path, text)) {
      reject_options(*command,
                     {"--target", "--seed", "-O", "--passes", "--print-ir-after-all", "--print-ir-after",
                      "--time-passes", "--verify-each"},
                     fmt::format("applies to op specs; '{}' is a PTX module", options->path));
      PreparedPtxLaunch prepared = prepare_ptx_launch(text, options->ptx, options->outputs);
      runtime::emulator::EmulatorBackend emulator;
      const runtime::RunReport report = emulator.launch_ptx(prepared.launch, prepared.buffers);
      const std::string kernel = runtime::check_ptx_launch(prepared.launch, prepared.buffers).name;
      fmt::print("{}", runtime::emulator::format_profile(kernel, runtime::emulator::parse_ptx(text).target,
                                                         *report.counters, prepared.output_elements()));
      prepared.write_outputs();
      return;
    }
    reject_options(*command, PtxLaunchFlags::names(),
                   fmt::format("applies to PTX modules; '{}' is an op spec", options->path));
    reject_options(*command, {"--output"}, fmt::format("applies to PTX modules; '{}' is an op spec", options->path));
    ir::ops::OpSpec spec = ir::ops::parse_spec(text, options->path);
    ptx::Target target = resolve_target(options->target, spec);
    lower::CompiledKernel kernel =
        lower::compile(ir::ops::build_program(spec), {target, options->pipeline.pass_options(&spec)});
    fmt::print("{}", runtime::emulator::profile_program(kernel.program, kernel.ptx, target.name(), options->seed));
  });
}

}  // namespace quantc::tools
