// A folder that belongs to one test process: created on first use, removed with
// everything in it when the process exits. ctest runs every Catch2 test case in its own
// process, so per-process folders that outlived their process would pile up by the
// thousand (in the build tree or the system's temporary folder) over a few runs.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <system_error>

namespace quantc_test {

/// `parent / (prefix + pid)`, created if missing; one per (parent, prefix) and process,
/// removed at exit (a static destructor, so after the last test case ran).
inline std::filesystem::path process_folder(const std::filesystem::path& parent, const std::string& prefix) {
  struct Owned {
    std::filesystem::path path;
    ~Owned() {
      std::error_code ignored;
      std::filesystem::permissions(path, std::filesystem::perms::owner_all, ignored);
      std::filesystem::remove_all(path, ignored);
    }
  };
  static std::map<std::filesystem::path, Owned> owned;
  const std::filesystem::path path = parent / (prefix + std::to_string(::getpid()));
  auto [entry, inserted] = owned.try_emplace(path);
  if (inserted) entry->second.path = path;
  std::filesystem::create_directories(path);
  return path;
}

/// process_folder under the system's temporary folder.
inline std::filesystem::path temporary_process_folder(const std::string& prefix) {
  return process_folder(std::filesystem::temp_directory_path(), prefix);
}

}  // namespace quantc_test
