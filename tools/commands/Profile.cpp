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
//
// quantc profile SPEC.json --schedules profiles every schedule of an op that has the
// "schedule" parameter (seed, fast, ...), each on the same inputs, and names the one
// "schedule": "auto" builds and the model's fastest on the first --device (h100_sxm by
// default): the candidates auto weighs, with the numbers behind its choice.
#include <fmt/format.h>

#include "ir/Printer.h"
#include "runtime/backends/emulator/EmulatorBackend.h"
#include "runtime/backends/emulator/Profile.h"
#include "tools/CommandSupport.h"
#include "tools/PtxLaunchFlags.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {

namespace {

void print_profile(const runtime::emulator::KernelProfile& profile, bool json, std::FILE* out = stdout) {
  if (!json) {
    fmt::print(out, "{}", runtime::emulator::format_profile(profile));
    return;
  }
  nlohmann::ordered_json document = {{"kernels", nlohmann::ordered_json::array({runtime::emulator::profile_json(profile)})},
                             {"devices", runtime::emulator::devices_json()}};
  fmt::print(out, "{}\n", document.dump(2));
}

/// One schedule's row of `profile --schedules`: its profile, or why the op cannot build it.
struct ScheduleCandidate {
  std::string schedule;
  std::optional<runtime::emulator::KernelProfile> profile;
  std::string error;
  bool is_auto = false;  // "schedule": "auto" builds this candidate's program
};

/// The candidate's modeled seconds on the first modeled device, when it has an estimate.
std::optional<double> modeled_seconds(const ScheduleCandidate& candidate) {
  if (!candidate.profile || candidate.profile->devices.empty()) return std::nullopt;
  const auto& estimate = candidate.profile->devices.front().estimate;
  if (!estimate) return std::nullopt;
  return estimate->seconds;
}

void print_schedules(const ir::ops::OpSpec& spec, const std::vector<ScheduleCandidate>& candidates,
                     const std::string& device, bool json) {
  const ScheduleCandidate* best = nullptr;
  const ScheduleCandidate* chosen = nullptr;
  for (const ScheduleCandidate& candidate : candidates) {
    auto seconds = modeled_seconds(candidate);
    if (seconds && (best == nullptr || *seconds < *modeled_seconds(*best))) best = &candidate;
    if (candidate.is_auto) chosen = &candidate;
  }
  if (json) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const ScheduleCandidate& candidate : candidates) {
      nlohmann::ordered_json row = {{"schedule", candidate.schedule}};
      if (candidate.profile) {
        row["kernel"] = runtime::emulator::profile_json(*candidate.profile);
      } else {
        row["error"] = candidate.error;
      }
      rows.push_back(row);
    }
    nlohmann::ordered_json document = {{"op", spec.op->name},
                                       {"device", device},
                                       {"schedules", rows},
                                       {"auto", chosen ? nlohmann::ordered_json(chosen->schedule) : nullptr},
                                       {"best", best ? nlohmann::ordered_json(best->schedule) : nullptr}};
    fmt::print("{}\n", document.dump(2));
    return;
  }
  fmt::print("schedules of {} on {} (the cost model's estimate):\n", spec.canonical_json(), device);
  fmt::print("  {:<8} {:>11} {:>16} {:>6}  {:<22} {:>12} {:>9}\n", "schedule", "modeled us", "memory-bound us",
             "HBM %", "limit", "warp instr", "registers");
  for (const ScheduleCandidate& candidate : candidates) {
    if (!candidate.profile) {
      fmt::print("  {:<8} cannot run: {}\n", candidate.schedule, candidate.error);
      continue;
    }
    const runtime::emulator::DeviceProfile& modeled = candidate.profile->devices.front();
    if (!modeled.estimate) {
      fmt::print("  {:<8} not modeled: {}\n", candidate.schedule, modeled.error);
      continue;
    }
    const auto& estimate = *modeled.estimate;
    fmt::print("  {:<8} {:>11.2f} {:>16.2f} {:>6.1f}  {:<22} {:>12} {:>9}\n", candidate.schedule,
               estimate.seconds * 1e6, estimate.memory_bound_seconds * 1e6, 100 * estimate.hbm_fraction(),
               estimate.limit_key(), candidate.profile->counters.warp_instructions,
               modeled.resources.registers_per_thread);
  }
  fmt::print("auto builds: {}; the model's fastest: {}\n", chosen ? chosen->schedule : "(none)",
             best ? best->schedule : "(none)");
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
    bool schedules = false;
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
  command->add_flag("--schedules", options->schedules,
                    "Spec: profile every schedule of the op (seed, fast) and show which one auto builds");
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
                      "--time-passes", "--verify-each", "--schedules"},
                     fmt::format("applies to op specs; '{}' is a PTX module", options->path));
      PreparedPtxLaunch prepared = prepare_ptx_launch(text, options->ptx, options->outputs);
      runtime::emulator::EmulatorBackend emulator;
      runtime::RunReport report;
      {
        ProgressLine progress(fmt::format("emulator {}", options->path));
        runtime::RunOptions run_options;
        run_options.progress = progress.callback();
        report = emulator.launch_ptx(prepared.launch, prepared.buffers, run_options);
      }
      const std::string kernel = runtime::check_ptx_launch(prepared.launch, prepared.buffers).name;
      const auto& block = prepared.launch.block;
      print_profile(runtime::emulator::profile_launch(text, kernel, block[0] * block[1] * block[2],
                                                      prepared.launch.dynamic_shared_bytes, *report.counters,
                                                      prepared.output_elements(), model),
                    options->json, prepared.report_stream());
      prepared.write_outputs();
      return;
    }
    reject_options(*command, PtxLaunchFlags::names(),
                   fmt::format("applies to PTX modules; '{}' is an op spec", options->path));
    reject_options(*command, {"--output"}, fmt::format("applies to PTX modules; '{}' is an op spec", options->path));
    ir::ops::OpSpec spec = parse_spec_text(text, options->path);
    ptx::Target target = resolve_target(options->target, spec);
    // The generated buffers, the emulator's device copy and its per-byte access map.
    const std::string target_name(target.name());
    check_host_memory(ir::ops::build_program(spec, target_name), 3, fmt::format("profiling {}", options->path));
    if (options->schedules) {
      const ir::ops::ParamSpec* schedule_param = nullptr;
      for (const ir::ops::ParamSpec& param : spec.op->params) {
        if (param.name == "schedule") schedule_param = &param;
      }
      if (schedule_param == nullptr) {
        throw CommandError(fmt::format("--schedules: op {} has one program (no \"schedule\" parameter)", spec.op->name));
      }
      if (model.devices.empty()) model.devices = {"h100_sxm"};
      ir::ops::OpSpec auto_spec = spec;
      auto_spec.args.set("schedule", std::string("auto"));
      const std::string auto_ir = ir::print(ir::ops::build_program(auto_spec, target_name));
      std::vector<ScheduleCandidate> candidates;
      for (const std::string& choice : schedule_param->choices) {
        if (choice == "auto") continue;
        ScheduleCandidate candidate{choice, std::nullopt, {}, false};
        ir::ops::OpArgs args = spec.args;
        args.set("schedule", choice);
        try {
          ir::Program program = spec.op->build(args);
          candidate.is_auto = ir::print(program) == auto_ir;
          lower::CompiledKernel compiled = lower::compile(program, {target, options->pipeline.pass_options(&spec)});
          ProgressLine progress(fmt::format("emulator {} schedule {}", spec.op->name, choice));
          runtime::emulator::ProfileOptions with_progress = model;
          with_progress.progress = progress.callback();
          candidate.profile =
              runtime::emulator::profile_program(compiled.program, compiled.ptx, options->seed, with_progress);
        } catch (const ir::ops::OpError& error) {
          candidate.error = error.what();
        }
        candidates.push_back(std::move(candidate));
      }
      print_schedules(spec, candidates, model.devices.front(), options->json);
      return;
    }
    lower::CompiledKernel kernel =
        lower::compile(ir::ops::build_program(spec, target_name), {target, options->pipeline.pass_options(&spec)});
    std::optional<runtime::emulator::KernelProfile> profile;
    {
      ProgressLine progress(fmt::format("emulator {}", kernel.program.name));
      runtime::emulator::ProfileOptions with_progress = model;
      with_progress.progress = progress.callback();
      profile = runtime::emulator::profile_program(kernel.program, kernel.ptx, options->seed, with_progress);
    }
    print_profile(*profile, options->json);
  });
}

}  // namespace quantc::tools
