// quantc profile SPEC.json [--target sm_XX] [--seed N] [pipeline flags]: run the kernel's
// PTX in the emulator on generated inputs and print its counters (per kernel and per
// output element) with the cost model's estimate (runtime/backends/emulator/CostModel.h)
// for each modeled GPU. An estimate for comparing kernels, not a measurement.
//
// quantc profile FILE.ptx [--entry NAME] --grid X[,Y,Z] --block X[,Y,Z] [--shared-bytes N]
//                         [--arg ARG]... [--output INDEX=FILE.npy]...
// does the same for any PTX entry, launched as `quantc run FILE.ptx` launches it; per
// output element counts over the --output buffers (all buffer arguments when none),
// which are also written, atomically, after the run.
//
// Both take --json (the same as JSON on stdout; keys in README.md), --device KEY
// (repeatable: h100_sxm, h200, a100, l40s; default all) and --registers N (registers per
// thread instead of running ptxas).
#include <fmt/format.h>

#include "runtime/backends/emulator/EmulatorBackend.h"
#include "runtime/backends/emulator/Profile.h"
#include "tools/CommandSupport.h"
#include "tools/PtxLaunchFlags.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {

namespace {

void print_profile(const runtime::emulator::KernelProfile& profile, bool json) {
  if (!json) {
    fmt::print("{}", runtime::emulator::format_profile(profile));
    return;
  }
  nlohmann::ordered_json document = {{"kernels", nlohmann::ordered_json::array({runtime::emulator::profile_json(profile)})},
                             {"devices", runtime::emulator::devices_json()}};
  fmt::print("{}\n", document.dump(2));
}

}  // namespace

void add_profile_command(CLI::App& app) {
  struct ProfileOptions {
    std::string path;
    std::optional<std::string> target;
    std::uint64_t seed = 1;
    PipelineFlags pipeline;
    PtxLaunchFlags ptx;
    std::vector<std::string> outputs;
    bool json = false;
    std::vector<std::string> devices;
    std::optional<std::int64_t> registers;
  };
  auto options = std::make_shared<ProfileOptions>();
  CLI::App* command = app.add_subcommand(
      "profile", "Emulate a spec's PTX, or any PTX entry, and print counters and a GPU cost-model estimate");
  command->add_option("file", options->path, "Op spec (JSON), or a PTX module (*.ptx) to launch with --entry/--grid/--block/--arg")
      ->required();
  command->add_option("--target", options->target, "Spec: PTX target, e.g. sm_90");
  command->add_option("--seed", options->seed, "Spec: seed for the generated inputs")->capture_default_str();
  command->add_option("--output", options->outputs,
                      "PTX: INDEX=FILE.npy, a buffer argument that counts as output and is saved (repeatable)");
  command->add_flag("--json", options->json, "Print the profile as JSON (keys: README.md, 'quantc profile --json')");
  command->add_option("--device", options->devices,
                      "Model only this device (repeatable): h100_sxm, h200, a100, l40s; default: all");
  command->add_option("--registers", options->registers,
                      "Registers per thread for the model instead of running ptxas -v (1..255)");
  options->pipeline.add_to(*command);
  options->ptx.add_to(*command);
  command->callback([options, command] {
    runtime::emulator::ProfileOptions model;
    model.devices = options->devices;
    for (const std::string& key : model.devices) runtime::emulator::find_device(key);  // fail before emulating
    if (options->registers) {
      if (*options->registers < 1 || *options->registers > 255)
        throw CommandError(fmt::format("--registers {}: registers per thread must be 1..255 (ptxas -v reports them)",
                                       *options->registers));
      model.registers = static_cast<std::uint32_t>(*options->registers);
    }
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
      const auto& block = prepared.launch.block;
      print_profile(runtime::emulator::profile_launch(text, kernel, block[0] * block[1] * block[2],
                                                      prepared.launch.dynamic_shared_bytes, *report.counters,
                                                      prepared.output_elements(), model),
                    options->json);
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
    print_profile(runtime::emulator::profile_program(kernel.program, kernel.ptx, options->seed, model), options->json);
  });
}

}  // namespace quantc::tools
