#include "runtime/io/MappedFile.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/Buffers.h"

namespace quantc::runtime {

FileBytes map_file(const std::string& path, std::string_view format) {
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) throw RuntimeError(fmt::format("{}: cannot open {} file: {}", path, format, std::strerror(errno)));
  struct stat status {};
  if (::fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(descriptor);
    throw RuntimeError(fmt::format("{}: not a regular file{}", path, S_ISDIR(status.st_mode) ? " (it is a folder)" : ""));
  }
  const auto size = static_cast<std::size_t>(status.st_size);
  if (size == 0) {
    ::close(descriptor);
    throw RuntimeError(fmt::format("{}: invalid {} file: the file is empty", path, format));
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, descriptor, 0);
  const int map_error = errno;  // close() below may change errno
  ::close(descriptor);          // the mapping keeps the file alive
  if (mapping == MAP_FAILED) throw RuntimeError(fmt::format("{}: mmap failed: {}", path, std::strerror(map_error)));
  FileBytes file;
  file.storage = std::shared_ptr<const void>(mapping, [size](const void* address) {
    ::munmap(const_cast<void*>(address), size);
  });
  file.bytes = std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(mapping), size);
  return file;
}

FileBytes own_bytes(std::vector<std::uint8_t> bytes) {
  auto owned = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
  FileBytes file;
  file.bytes = std::span<const std::uint8_t>(owned->data(), owned->size());
  file.storage = std::move(owned);
  return file;
}

}  // namespace quantc::runtime
