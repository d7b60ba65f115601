#include "lower/driver/KernelCache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

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

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream contents;
  contents << in.rdbuf();
  return std::move(contents).str();
}

/// A decoded entry: its header, and the payload only when size and hash check out.
struct DecodedEntry {
  json header;
  std::optional<std::string> payload;
  std::string problem;  // why the payload was rejected
};

DecodedEntry decode_entry(const std::string& contents) {
  DecodedEntry entry;
  entry.header = json::object();
  const std::size_t newline = contents.find('\n');
  if (newline == std::string::npos) {
    entry.problem = "no header line (truncated)";
    return entry;
  }
  json header = json::parse(contents.substr(0, newline), nullptr, /*allow_exceptions=*/false);
  const bool header_ok = header.is_object();
  if (header_ok) entry.header = std::move(header);
  if (!header_ok || !entry.header.contains("format") || entry.header["format"] != kEntryFormat ||
      !entry.header.contains("size") || !entry.header["size"].is_number_unsigned() ||
      !entry.header.contains("sha256") || !entry.header["sha256"].is_string()) {
    entry.problem = "unreadable header";
    return entry;
  }
  std::string payload = contents.substr(newline + 1);
  const auto expected_size = entry.header["size"].get<std::uint64_t>();
  if (payload.size() != expected_size) {
    entry.problem = fmt::format("payload is {} bytes, header says {} (truncated)", payload.size(), expected_size);
    return entry;
  }
  if (sha256_hex(payload) != entry.header["sha256"].get<std::string>()) {
    entry.problem = "payload SHA-256 does not match the header (corrupt)";
    return entry;
  }
  entry.payload = std::move(payload);
  return entry;
}

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

/// A header field as `quantc cache ls` shows it: the string, or empty when the field is
/// absent or not a string (json::value would throw on a wrong type in a corrupt header).
std::string string_field(const json& header, const char* key) {
  const auto field = header.find(key);
  return field != header.end() && field->is_string() ? field->get<std::string>() : std::string();
}

std::string op_name_of(const std::string& canonical_spec) {
  json spec = json::parse(canonical_spec, nullptr, /*allow_exceptions=*/false);
  if (spec.is_object() && spec.contains("op") && spec["op"].is_string()) return spec["op"].get<std::string>();
  return {};
}

}  // namespace

std::string_view quantc_version() { return QUANTC_VERSION_STRING; }

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
  std::optional<std::string> contents = read_file(path);
  if (!contents) return std::nullopt;
  DecodedEntry entry = decode_entry(*contents);
  if (!entry.payload) {
    report(Severity::Verbose, fmt::format("kernel cache: ignoring entry {}: {}; rebuilding it", path.string(),
                                          entry.problem));
    return std::nullopt;
  }
  return entry.payload;
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
  std::error_code error;
  fs::create_directories(directory_, error);
  if (error) return give_up(error.message());

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
    fs::remove(temporary_path, error);
    return give_up(std::strerror(write_error));
  }
  fs::rename(temporary_path, final_path, error);
  if (error) {
    fs::remove(temporary_path, error);
    return give_up(error.message());
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
    if (std::optional<std::string> contents = read_file(file.path())) {
      DecodedEntry entry = decode_entry(*contents);
      info.valid = entry.payload.has_value();
      info.kind = string_field(entry.header, "kind");
      const auto size = entry.header.find("size");
      info.payload_bytes = size != entry.header.end() && size->is_number_unsigned() ? size->get<std::uint64_t>() : 0;
      info.op = string_field(entry.header, "op");
      info.target = string_field(entry.header, "target");
      info.opt_level = string_field(entry.header, "opt_level");
      info.compiler_version = string_field(entry.header, "compiler_version");
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
    if (ours && file.is_regular_file()) files.push_back(file.path());
  }
  for (const fs::path& file : files) removed += fs::remove(file) ? 1 : 0;
  return removed;
}

}  // namespace quantc::lower
