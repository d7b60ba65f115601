#include "lower/driver/KernelCache.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lower/driver/Hash.h"

namespace quantc::lower {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr int kEntryFormat = 1;
constexpr std::string_view kTemporaryMarker = ".tmp.";

const char* environment(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && *value != '\0') ? value : nullptr;
}

void default_handler(Severity severity, const std::string& message) {
  if (severity == Severity::Warning) {
    std::cerr << "quantc: warning: " << message << '\n';
  } else if (const char* verbose = environment("QUANTC_VERBOSE"); verbose && std::string_view(verbose) != "0") {
    std::cerr << "quantc: " << message << '\n';
  }
}

/// An entry file's contents, or why it cannot be used. A missing file is `missing` (a plain
/// miss, not worth a diagnostic).
struct EntryFile {
  std::optional<std::string> contents;
  bool missing = false;
  std::string problem;
};

/// Reads an entry without following a symbolic link and without blocking (a FIFO with no
/// writer, a device), accepting only a regular file of at most kMaxEntryBytes.
EntryFile read_entry_file(const fs::path& path) {
  EntryFile file;
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (descriptor < 0) {
    const int error = errno;
    if (error == ENOENT) {
      file.missing = true;
    } else if (error == ELOOP) {
      file.problem = "it is a symbolic link, not a regular file";
    } else {
      file.problem = fmt::format("cannot open it ({})", std::strerror(error));
    }
    return file;
  }
  struct stat status {};
  if (::fstat(descriptor, &status) != 0) {
    file.problem = fmt::format("cannot stat it ({})", std::strerror(errno));
  } else if (!S_ISREG(status.st_mode)) {
    file.problem = S_ISDIR(status.st_mode)    ? "it is a directory, not a regular file"
                   : S_ISFIFO(status.st_mode) ? "it is a FIFO, not a regular file"
                                              : "it is a device or socket, not a regular file";
  } else if (static_cast<std::uint64_t>(status.st_size) > kMaxEntryBytes) {
    file.problem = fmt::format("it is {} bytes, more than the {} an entry may have", status.st_size, kMaxEntryBytes);
  } else {
    // Read to end of file, bounded: the file may still grow after fstat.
    std::string contents;
    std::array<char, 65536> chunk{};
    while (true) {
      const ssize_t got = ::read(descriptor, chunk.data(), chunk.size());
      if (got < 0) {
        if (errno == EINTR) continue;
        file.problem = fmt::format("cannot read it ({})", std::strerror(errno));
        break;
      }
      if (got == 0) {
        file.contents = std::move(contents);
        break;
      }
      contents.append(chunk.data(), static_cast<std::size_t>(got));
      if (contents.size() > kMaxEntryBytes) {
        file.problem = fmt::format("it is more than the {} bytes an entry may have", kMaxEntryBytes);
        break;
      }
    }
  }
  ::close(descriptor);
  return file;
}

/// The header field `name` when it is a string, else "".
std::string string_field(const json& header, const char* name) {
  const auto field = header.find(name);
  return field != header.end() && field->is_string() ? field->get<std::string>() : std::string();
}

}  // namespace

ParsedCacheEntry parse_cache_entry(std::string_view contents) {
  ParsedCacheEntry entry;
  const std::size_t newline = contents.find('\n');
  if (newline == std::string_view::npos) {
    entry.problem = "no header line (truncated)";
    return entry;
  }
  const json header = json::parse(contents.substr(0, newline), nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) {
    entry.problem = "the header line is not a JSON object";
    return entry;
  }
  // Every field is read only after checking its type: a header that is valid JSON with a
  // wrong-typed field is as unusable as garbage, never an exception.
  entry.kind = string_field(header, "kind");
  entry.op = string_field(header, "op");
  entry.target = string_field(header, "target");
  entry.opt_level = string_field(header, "opt_level");
  entry.compiler_version = string_field(header, "compiler_version");
  const auto format = header.find("format");
  const auto size = header.find("size");
  const auto sha256 = header.find("sha256");
  const bool has_size = size != header.end() && size->is_number_unsigned();
  if (has_size) entry.payload_bytes = size->get<std::uint64_t>();
  if (format == header.end() || !format->is_number_integer() || format->get<std::int64_t>() != kEntryFormat) {
    entry.problem = fmt::format("the header's format is not {}", kEntryFormat);
    return entry;
  }
  if (!has_size || sha256 == header.end() || !sha256->is_string() || entry.kind.empty()) {
    entry.problem = "the header lacks a well-typed size, sha256 or kind";
    return entry;
  }
  std::string_view payload = contents.substr(newline + 1);
  if (payload.size() != entry.payload_bytes) {
    entry.problem = fmt::format("payload is {} bytes, header says {} (truncated)", payload.size(), entry.payload_bytes);
    return entry;
  }
  if (sha256_hex(payload) != sha256->get<std::string>()) {
    entry.problem = "payload SHA-256 does not match the header (corrupt)";
    return entry;
  }
  entry.payload = std::string(payload);
  return entry;
}

namespace {

/// A file name unique across processes and threads for the temporary copy of `final_name`.
std::string temporary_name(const std::string& final_name) {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t salt = std::random_device{}();
  return fmt::format(".{}{}{}.{:x}.{}", final_name, kTemporaryMarker, ::getpid(), salt, counter++);
}

/// Writes all of `bytes` to a new file; returns errno (0 on success).
int write_new_file(const fs::path& path, std::string_view header, std::string_view payload) {
  const int descriptor = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (descriptor < 0) return errno;
  int error = 0;
  for (std::string_view part : {header, payload}) {
    while (!part.empty() && error == 0) {
      const ssize_t written = ::write(descriptor, part.data(), part.size());
      if (written < 0) {
        if (errno != EINTR) error = errno;
      } else {
        part.remove_prefix(static_cast<std::size_t>(written));
      }
    }
  }
  if (::close(descriptor) != 0 && error == 0) error = errno;
  return error;
}

/// Creates the cache directory with mode 0700 (its parents with the default mode); an
/// existing directory is left as it is. Returns errno (0 on success).
int create_cache_directory(fs::path directory) {
  std::error_code error;
  if (fs::is_directory(directory, error)) return 0;
  if (!directory.has_filename()) directory = directory.parent_path();  // "dir/" names "dir"
  if (directory.has_parent_path()) {
    fs::create_directories(directory.parent_path(), error);
    if (error) return error.value();
  }
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) return errno;
  return fs::is_directory(directory, error) ? 0 : ENOTDIR;
}

std::string op_name_of(const std::string& canonical_spec) {
  json spec = json::parse(canonical_spec, nullptr, /*allow_exceptions=*/false);
  if (spec.is_object() && spec.contains("op") && spec["op"].is_string()) return spec["op"].get<std::string>();
  return {};
}

/// The GNU build ID (ld --build-id, on by default with GCC and Clang on Linux), in hex,
/// of the ELF object this code is linked into: the executable for the CLI and programs
/// linking the static libraries, the extension module for the Python package; "" when it
/// has none. It changes whenever the linked code does, so a rebuilt compiler never reads
/// kernels cached by the previous build, even when the version string (release + commit,
/// fixed at configure time) stays the same.
std::string own_build_id() {
  struct Search {
    std::uintptr_t address;  // an address inside this object's code
    std::string id;
  } search{reinterpret_cast<std::uintptr_t>(&own_build_id), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto* search = static_cast<Search*>(data);
        bool contains = false;
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          contains |= segment.p_type == PT_LOAD && search->address >= start && search->address < start + segment.p_memsz;
        }
        if (!contains) return 0;  // another object: go on
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_NOTE) continue;
          const auto* note = reinterpret_cast<const unsigned char*>(info->dlpi_addr + segment.p_vaddr);
          const unsigned char* end = note + segment.p_memsz;
          while (note + sizeof(ElfW(Nhdr)) <= end) {
            const auto* header = reinterpret_cast<const ElfW(Nhdr)*>(note);
            const unsigned char* name = note + sizeof(ElfW(Nhdr));
            const unsigned char* desc = name + ((header->n_namesz + 3) & ~3u);
            if (desc + header->n_descsz > end) break;
            if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              for (std::uint32_t b = 0; b < header->n_descsz; ++b) search->id += fmt::format("{:02x}", desc[b]);
              return 1;
            }
            note = desc + ((header->n_descsz + 3) & ~3u);
          }
        }
        return 1;  // this object, without a build ID
      },
      &search);
  return search.id;
}

}  // namespace

std::string_view quantc_version() {
  static const std::string version = [] {
    const std::string build = own_build_id();
    return build.empty() ? std::string(QUANTC_VERSION_STRING)
                         : fmt::format("{}+build.{}", QUANTC_VERSION_STRING, build.substr(0, 16));
  }();
  return version;
}

std::string_view to_string(ArtifactKind kind) { return kind == ArtifactKind::Ptx ? "ptx" : "cubin"; }

CacheKey CacheKey::for_spec(const ir::ops::OpSpec& spec, std::string target, std::string opt_level) {
  return CacheKey{spec.canonical_json(), std::move(target), std::move(opt_level)};
}

std::string CacheKey::digest() const {
  const json fields = {{"spec", canonical_spec},
                       {"target", target},
                       {"opt_level", opt_level},
                       {"compiler_version", compiler_version}};
  return sha256_hex(fields.dump());  // object keys are sorted: the text is canonical
}

std::optional<fs::path> cache_directory_from_environment() {
  if (const char* switch_value = environment("QUANTC_CACHE"); switch_value && std::string_view(switch_value) == "0") {
    return std::nullopt;
  }
  if (const char* directory = environment("QUANTC_CACHE_DIR")) return fs::path(directory);
  if (const char* xdg = environment("XDG_CACHE_HOME")) return fs::path(xdg) / "quantc";
  if (const char* home = environment("HOME")) return fs::path(home) / ".cache" / "quantc";
  return std::nullopt;
}

KernelCache::KernelCache(bool enabled, fs::path directory, DiagnosticHandler diagnostics)
    : enabled_(enabled), directory_(std::move(directory)), diagnostics_(std::move(diagnostics)) {
  if (!diagnostics_) diagnostics_ = default_handler;
}

KernelCache::KernelCache(fs::path directory, DiagnosticHandler diagnostics)
    : KernelCache(true, std::move(directory), std::move(diagnostics)) {}

KernelCache KernelCache::disabled(DiagnosticHandler diagnostics) {
  return KernelCache(false, fs::path(), std::move(diagnostics));
}

KernelCache KernelCache::from_environment(DiagnosticHandler diagnostics) {
  if (auto directory = cache_directory_from_environment()) return KernelCache(*directory, std::move(diagnostics));
  return disabled(std::move(diagnostics));
}

void KernelCache::report(Severity severity, const std::string& message) const { diagnostics_(severity, message); }

fs::path KernelCache::entry_path(const CacheKey& key, ArtifactKind kind) const {
  return directory_ / fmt::format("{}.{}", key.digest(), to_string(kind));
}

std::optional<std::string> KernelCache::load(const CacheKey& key, ArtifactKind kind) const {
  if (!enabled_) return std::nullopt;
  const fs::path path = entry_path(key, kind);
  EntryFile file = read_entry_file(path);
  if (file.missing) return std::nullopt;
  std::string problem = std::move(file.problem);
  if (file.contents) {
    ParsedCacheEntry entry = parse_cache_entry(*file.contents);
    if (entry.payload && entry.kind == to_string(kind)) return std::move(entry.payload);
    problem = entry.payload ? fmt::format("the header's kind is '{}', not '{}'", entry.kind, to_string(kind))
                            : std::move(entry.problem);
  }
  report(Severity::Verbose,
         fmt::format("kernel cache: ignoring entry {}: {}; rebuilding it", path.string(), problem));
  return std::nullopt;
}

bool KernelCache::store(const CacheKey& key, ArtifactKind kind, std::string_view payload) {
  if (!enabled_ || !writable_) return false;
  auto give_up = [&](const std::string& why) {
    writable_ = false;
    report(Severity::Warning, fmt::format("kernel cache directory {} is not writable ({}); continuing without a "
                                          "cache. Fix: make it writable, set QUANTC_CACHE_DIR elsewhere, or "
                                          "QUANTC_CACHE=0",
                                          directory_.string(), why));
    return false;
  };
  // An entry too large to be read back would only take space: not stored (4 KiB leaves room
  // for the header line).
  if (payload.size() > kMaxEntryBytes - 4096) {
    report(Severity::Verbose, fmt::format("kernel cache: not storing a {}-byte {}: entries are limited to {} bytes",
                                          payload.size(), to_string(kind), kMaxEntryBytes));
    return false;
  }
  if (int create_error = create_cache_directory(directory_); create_error != 0) {
    return give_up(std::strerror(create_error));
  }
  std::error_code error;
  const fs::path final_path = entry_path(key, kind);
  const fs::path temporary_path = directory_ / temporary_name(final_path.filename().string());
  const json header = {{"format", kEntryFormat},
                       {"kind", to_string(kind)},
                       {"size", payload.size()},
                       {"sha256", sha256_hex(payload)},
                       {"op", op_name_of(key.canonical_spec)},
                       {"target", key.target},
                       {"opt_level", key.opt_level},
                       {"compiler_version", key.compiler_version}};
  if (int write_error = write_new_file(temporary_path, header.dump() + "\n", payload); write_error != 0) {
    fs::remove(temporary_path, error);  // write_error is kept apart from `error`
    return give_up(std::strerror(write_error));
  }
  fs::rename(temporary_path, final_path, error);
  if (error) {
    const std::string why = error.message();  // before remove() overwrites `error`
    std::error_code ignored;
    fs::remove(temporary_path, ignored);
    return give_up(why);
  }
  report(Severity::Verbose, fmt::format("kernel cache: stored {}", final_path.string()));
  return true;
}

std::string KernelCache::get_or_build(const CacheKey& key, ArtifactKind kind, const std::function<std::string()>& build,
                                      bool* hit) {
  if (std::optional<std::string> cached = load(key, kind)) {
    if (hit) *hit = true;
    return std::move(*cached);
  }
  if (hit) *hit = false;
  std::string built = build();
  store(key, kind, built);
  return built;
}

std::vector<CacheEntryInfo> KernelCache::list() const {
  std::vector<CacheEntryInfo> entries;
  std::error_code error;
  if (!enabled_ || !fs::is_directory(directory_, error)) return entries;
  for (const fs::directory_entry& file : fs::directory_iterator(directory_, error)) {
    const std::string name = file.path().filename().string();
    const std::string extension = file.path().extension().string();
    if (name.find(kTemporaryMarker) != std::string::npos || (extension != ".ptx" && extension != ".cubin")) continue;
    CacheEntryInfo info;
    info.path = file.path();
    info.digest = file.path().stem().string();
    EntryFile entry_file = read_entry_file(file.path());
    info.problem = entry_file.missing ? "removed while listing" : std::move(entry_file.problem);
    if (entry_file.contents) {
      ParsedCacheEntry entry = parse_cache_entry(*entry_file.contents);
      const std::string expected_kind = extension.substr(1);
      info.valid = entry.payload.has_value() && entry.kind == expected_kind;
      info.problem = entry.payload ? (info.valid ? std::string()
                                                 : fmt::format("the header's kind is '{}', not '{}'", entry.kind,
                                                               expected_kind))
                                   : std::move(entry.problem);
      info.kind = std::move(entry.kind);
      info.payload_bytes = entry.payload_bytes;
      info.op = std::move(entry.op);
      info.target = std::move(entry.target);
      info.opt_level = std::move(entry.opt_level);
      info.compiler_version = std::move(entry.compiler_version);
    }
    entries.push_back(std::move(info));
  }
  std::sort(entries.begin(), entries.end(),
            [](const CacheEntryInfo& a, const CacheEntryInfo& b) { return a.path < b.path; });
  return entries;
}

std::size_t KernelCache::clear() {
  std::size_t removed = 0;
  std::error_code error;
  if (!enabled_ || !fs::is_directory(directory_, error)) return 0;
  std::vector<fs::path> files;
  for (const fs::directory_entry& file : fs::directory_iterator(directory_)) {
    const std::string name = file.path().filename().string();
    const std::string extension = file.path().extension().string();
    const bool ours = extension == ".ptx" || extension == ".cubin" || name.find(kTemporaryMarker) != std::string::npos;
    // A symbolic link or FIFO with an entry's name is removed like an entry (remove() never
    // follows a link); a directory is left alone.
    if (ours && !fs::is_directory(file.symlink_status(error))) files.push_back(file.path());
  }
  for (const fs::path& file : files) removed += fs::remove(file) ? 1 : 0;
  return removed;
}

}  // namespace quantc::lower
