#include "runtime/io/AtomicFile.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/Buffers.h"

namespace quantc::runtime {

void write_file_atomically(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::path temporary = directory / fmt::format(".{}.tmp.{}", target.filename().string(), ::getpid());
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) throw RuntimeError(fmt::format("cannot write '{}': folder missing or not writable", path));
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.flush();
    if (!file) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw RuntimeError(fmt::format("cannot write '{}': disk full or I/O error", path));
    }
  }
  std::error_code error;
  fs::rename(temporary, target, error);
  if (error) {
    fs::remove(temporary, error);
    throw RuntimeError(fmt::format("cannot write '{}': {}", path, error.message()));
  }
}

}  // namespace quantc::runtime
