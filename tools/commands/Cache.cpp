// quantc cache path|ls|clear: the on-disk kernel cache ($QUANTC_CACHE_DIR, else
// $XDG_CACHE_HOME/quantc, else ~/.cache/quantc; QUANTC_CACHE=0 disables it).
#include <fmt/format.h>

#include "lower/driver/KernelCache.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {

void add_cache_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("cache", "Inspect or clear the on-disk kernel cache");
  command->require_subcommand(1);
  command->add_subcommand("path", "Print the cache directory (or 'disabled')")->callback([] {
    auto directory = lower::cache_directory_from_environment();
    fmt::print("{}\n", directory ? directory->string() : "disabled (QUANTC_CACHE=0 or no HOME)");
  });
  // An unusable entry is listed as corrupt, with the reason, never an error: the next
  // emit of its spec rebuilds it.
  command->add_subcommand("ls", "List cached artifacts")->callback([] {
    lower::KernelCache cache = lower::KernelCache::from_environment();
    auto shown = [](const std::string& field) { return field.empty() ? std::string("-") : field; };
    for (const lower::CacheEntryInfo& entry : cache.list()) {
      fmt::print("{} {:<5} {:>9} B  {:<32} {:<7} {:<14} quantc {}{}\n", entry.digest.substr(0, 16), shown(entry.kind),
                 entry.payload_bytes, shown(entry.op), shown(entry.target), shown(entry.opt_level),
                 shown(entry.compiler_version),
                 entry.valid ? "" : fmt::format("  (corrupt: {}; rebuilt on next use)", entry.problem));
    }
  });
  command->add_subcommand("clear", "Delete every cached artifact")->callback([] {
    fmt::print("removed {} entries\n", lower::KernelCache::from_environment().clear());
  });
}

}  // namespace quantc::tools
