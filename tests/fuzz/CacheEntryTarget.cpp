// Kernel-cache entries: the input is written as the entry file of a fixed key in a
// private cache directory, then read the two ways quantc reads entries, KernelCache::load
// (`quantc emit`, through get_or_build) and KernelCache::list (`quantc cache ls`). A
// truncated or corrupt entry must be a miss (load returns nothing, list marks it
// invalid); neither may throw. An entry load accepts must hold exactly the bytes after
// its header line, and list must agree that it is valid.
#include <string>

#include "lower/driver/KernelCache.h"
#include "tests/fuzz/FuzzTargets.h"

namespace quantc::fuzz {

Outcome cache_entry_target(const std::uint8_t* data, std::size_t size) {
  static const lower::CacheKey key{R"({"op":"fuzz"})", "sm_80", "O2"};
  static lower::KernelCache cache(scratch_directory() + "/cache", [](lower::Severity, const std::string&) {});
  static const std::string path = [] {
    std::filesystem::create_directories(cache.directory());
    return cache.entry_path(key, lower::ArtifactKind::Ptx).string();
  }();
  write_bytes(path, data, size);
  const std::optional<std::string> payload = cache.load(key, lower::ArtifactKind::Ptx);
  const auto entries = cache.list();
  if (entries.size() != 1 || entries[0].path != path) throw InvariantViolation("cache list does not show the one entry");
  if (entries[0].valid != payload.has_value()) throw InvariantViolation("cache load and list disagree on validity");
  if (!payload) return Outcome::Rejected;
  const std::string_view contents(reinterpret_cast<const char*>(data), size);
  if (contents.substr(contents.find('\n') + 1) != *payload) {
    throw InvariantViolation("cache load returned something other than the bytes after the header line");
  }
  return Outcome::Accepted;
}

}  // namespace quantc::fuzz
