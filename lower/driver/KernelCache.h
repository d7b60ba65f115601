// The on-disk kernel cache: compiled artifacts (PTX text, cubins) keyed by everything
// that changes them (Triton's runtime/cache.py design).
//
// Location: $QUANTC_CACHE_DIR, else $XDG_CACHE_HOME/quantc, else $HOME/.cache/quantc.
// QUANTC_CACHE=0 disables the cache (every lookup misses, nothing is written).
//
// One entry is one file `<key digest>.<kind>` ("ptx" or "cubin"): a one-line JSON header
// (format, kind, payload size, payload SHA-256, and the key's fields for `quantc cache
// ls`) followed by the payload bytes. Entries are written to a unique temporary file in
// the cache directory and renamed into place, so several processes compiling the same
// kernel at once never expose a partial file (rename is atomic within a file system; the
// last writer wins with identical bytes). Any entry that cannot be used — truncated, a
// size or SHA-256 mismatch, a header that is not JSON or has a missing or wrong-typed
// field, a kind other than the file's, more than kMaxEntryBytes, or a file that is not a
// regular file (a symbolic link, a FIFO, a device, a directory) — is reported at verbose
// level and treated as a miss, so the caller rebuilds and overwrites it; it is never
// returned and never makes a lookup fail or block. Entries are opened with O_NOFOLLOW |
// O_NONBLOCK, so a symbolic link to /dev/zero or a FIFO without a writer is refused at
// once rather than read forever.
//
// Threat model: the SHA-256 in the header detects corruption (a torn or bit-flipped file),
// not tampering: anyone who can write the cache directory can write a well-formed entry and
// make quantc emit their PTX. The directory is therefore created with mode 0700, and a
// cache directory must not be shared with users one does not trust.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ops/Spec.h"

namespace quantc::lower {

/// quantc's version string as the cache sees it, part of every key: CMake's
/// QUANTC_VERSION_STRING (release + source commit), then "+build." and the first 16 hex
/// digits of the GNU build ID of the ELF object quantc is linked into (the executable,
/// or the Python extension module) when it has one, so that a rebuilt binary (an
/// uncommitted change, another compiler) never reuses its predecessor's kernels.
std::string_view quantc_version();

enum class ArtifactKind : std::uint8_t { Ptx, Cubin };
std::string_view to_string(ArtifactKind kind);  // "ptx", "cubin" (also the file extension)

/// Everything a compiled artifact depends on. Two keys with equal fields name the same
/// entry; changing any field (spec text, full target "sm_120" vs "sm_121", optimisation
/// level, compiler version) names a different one.
struct CacheKey {
  std::string canonical_spec;  // ir::ops::OpSpec::canonical_json() (sorted keys, defaults filled)
  std::string target;          // "sm_90"
  std::string opt_level;       // "O0" | "O1" | "O2"
  std::string compiler_version = std::string(quantc_version());

  /// The key for a parsed spec; `target`/`opt_level` are the resolved values (the spec's
  /// own fields, when present, are already inside the canonical text).
  static CacheKey for_spec(const ir::ops::OpSpec& spec, std::string target, std::string opt_level);
  /// SHA-256 (hex) of the fields' canonical JSON serialisation; the entry's file stem.
  std::string digest() const;
};

enum class Severity : std::uint8_t { Verbose, Warning };
/// Receives the cache's diagnostics. The default handler prints warnings to stderr and
/// verbose messages only when the environment sets QUANTC_VERBOSE to a non-zero value.
using DiagnosticHandler = std::function<void(Severity, const std::string&)>;

/// The largest entry file read (header + payload); a larger file is an unusable entry.
inline constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{256} << 20;

/// An entry file's bytes decoded. Never throws, whatever the bytes. The header fields are
/// those of the right type (else empty / 0); `payload` is set only when the header is
/// complete and well-typed and the payload's size and SHA-256 match it, otherwise
/// `problem` says why not.
struct ParsedCacheEntry {
  std::string kind;
  std::uint64_t payload_bytes = 0;
  std::string op;
  std::string target;
  std::string opt_level;
  std::string compiler_version;
  std::optional<std::string> payload;
  std::string problem;
};
/// Decodes one entry file (the kernel cache's reader; also the entry point of its fuzz
/// target).
ParsedCacheEntry parse_cache_entry(std::string_view contents);

/// One entry as `quantc cache ls` shows it. `valid` is false for an unusable entry (its
/// other fields are then whatever of the header could be read, possibly empty, and
/// `problem` says what is wrong).
struct CacheEntryInfo {
  std::filesystem::path path;
  std::string digest;
  std::string kind;
  std::uint64_t payload_bytes = 0;
  std::string op;  // the spec's "op" field, when the spec text is JSON with one
  std::string target;
  std::string opt_level;
  std::string compiler_version;
  bool valid = false;
  std::string problem;
};

/// The directory the environment selects (see the file comment), whether or not it
/// exists; nullopt when QUANTC_CACHE=0 or no variable names a location (no HOME).
std::optional<std::filesystem::path> cache_directory_from_environment();

class KernelCache {
 public:
  /// A cache at cache_directory_from_environment(), or a disabled cache.
  static KernelCache from_environment(DiagnosticHandler diagnostics = {});
  /// A cache that never hits and never writes.
  static KernelCache disabled(DiagnosticHandler diagnostics = {});
  /// A cache in `directory` (created on the first store, mode 0700: see the threat model in
  /// the file comment). An empty handler selects the default one.
  explicit KernelCache(std::filesystem::path directory, DiagnosticHandler diagnostics = {});

  bool enabled() const { return enabled_; }
  /// The cache directory; empty for a disabled cache.
  const std::filesystem::path& directory() const { return directory_; }
  /// False once a store failed because the directory cannot be created or written (a
  /// warning naming the directory and the system error was issued, once); loads still work.
  bool writable() const { return writable_; }

  /// The cached payload, or nullopt on a miss, a disabled cache, or a corrupt entry
  /// (reported at verbose level, left for the next store to overwrite).
  std::optional<std::string> load(const CacheKey& key, ArtifactKind kind) const;
  /// Stores `payload` atomically. Returns false (never throws) when the cache is disabled
  /// or not writable, or the payload is too large for an entry; the first write failure
  /// emits a warning and marks it not writable.
  bool store(const CacheKey& key, ArtifactKind kind, std::string_view payload);
  /// load(), else `build()` then store(). `hit`, when given, says whether it was a hit.
  /// Exceptions from `build` propagate and nothing is stored.
  std::string get_or_build(const CacheKey& key, ArtifactKind kind, const std::function<std::string()>& build,
                           bool* hit = nullptr);

  /// Every entry in the directory, sorted by file name (empty when disabled or absent).
  std::vector<CacheEntryInfo> list() const;
  /// Removes every entry and leftover temporary file (symbolic links and other non-regular
  /// files with an entry's name included, never a directory); returns how many were removed.
  /// Throws std::filesystem::filesystem_error when a file cannot be removed.
  std::size_t clear();

  /// The file an entry lives in (whether or not it exists).
  std::filesystem::path entry_path(const CacheKey& key, ArtifactKind kind) const;

 private:
  KernelCache(bool enabled, std::filesystem::path directory, DiagnosticHandler diagnostics);
  void report(Severity severity, const std::string& message) const;

  bool enabled_ = false;
  bool writable_ = true;
  std::filesystem::path directory_;
  DiagnosticHandler diagnostics_;
};

}  // namespace quantc::lower
