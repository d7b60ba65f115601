// quantc: quantized-kernel specs -> PTX. This file only wires subcommands together;
// every subcommand lives in tools/commands/ and calls the libraries.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "tools/commands/Commands.h"

int main(int argc, char** argv) {
  CLI::App app{"quantc: compile quantized-kernel specs (INT4, NF4, FP8, NVFP4) to PTX", "quantc"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(QUANTC_VERSION));
  quantc::tools::add_ops_command(app);
  quantc::tools::add_emit_commands(app);
  quantc::tools::add_check_command(app);
  quantc::tools::add_run_command(app);
  quantc::tools::add_profile_command(app);
  quantc::tools::add_cache_command(app);
  quantc::tools::add_pack_command(app);
  quantc::tools::add_convert_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    fmt::print(stderr, "error: {}\nRun 'quantc --help' for usage.\n", error.what());
    return 1;
  } catch (const std::exception& error) {
    // SpecError, OpError, IRError, RuntimeError, CommandError: all user-facing.
    fmt::print(stderr, "error: {}\n", error.what());
    return 1;
  }
  return 0;
}
