// One function per quantc subcommand; each adds itself to the application.
#pragma once

#include <CLI/CLI.hpp>

namespace quantc::tools {

void add_ops_command(CLI::App& app);      // quantc ops [--json]
void add_emit_commands(CLI::App& app);    // quantc emit / ir / opt
void add_check_command(CLI::App& app);    // quantc check
void add_run_command(CLI::App& app);      // quantc run
void add_profile_command(CLI::App& app);  // quantc profile
void add_cache_command(CLI::App& app);    // quantc cache path|ls|clear
void add_pack_command(CLI::App& app);     // quantc pack
void add_convert_command(CLI::App& app);  // quantc convert

}  // namespace quantc::tools
