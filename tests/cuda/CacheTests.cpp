// The on-disk kernel cache: keys, environment, corrupt entries, several writing processes,
// a read-only directory.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "lower/driver/Hash.h"
#include "lower/driver/KernelCache.h"

using namespace quantc::lower;
namespace fs = std::filesystem;

namespace {

/// A fresh directory under the system temporary directory, removed at scope exit.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::random_device random;
    path_ = fs::temp_directory_path() / ("quantc-cache-test-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(random()));
    fs::create_directories(path_);
  }
  ~TemporaryDirectory() {
    std::error_code error;
    fs::permissions(path_, fs::perms::owner_all, error);
    fs::remove_all(path_, error);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct Diagnostics {
  std::vector<std::string> verbose;
  std::vector<std::string> warnings;
  DiagnosticHandler handler() {
    return [this](Severity severity, const std::string& message) {
      (severity == Severity::Warning ? warnings : verbose).push_back(message);
    };
  }
};

CacheKey sample_key() { return CacheKey{R"({"in_dim":256,"op":"linear_4bit","out_dim":64})", "sm_90", "O2"}; }

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

/// A deterministic payload large enough that a torn write would be visible.
std::string large_payload() {
  std::string payload;
  for (int line = 0; line < 20000; ++line) payload += "  mad.lo.s32 %r" + std::to_string(line) + ", %r1, %r2, %r3;\n";
  return payload;
}

}  // namespace

TEST_CASE("SHA-256 matches the FIPS 180-4 test vectors", "[cache]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("the key changes with spec, target, optimisation level and compiler version", "[cache]") {
  const CacheKey base = sample_key();
  const std::string digest = base.digest();
  CHECK(digest.size() == 64);
  CHECK(CacheKey(base).digest() == digest);
  CacheKey changed = base;
  changed.target = "sm_120";
  CHECK(changed.digest() != digest);
  changed = base;
  changed.opt_level = "O1";
  CHECK(changed.digest() != digest);
  changed = base;
  changed.compiler_version = "0.0.0-other";
  CHECK(changed.digest() != digest);
  changed = base;
  changed.canonical_spec = R"({"in_dim":512,"op":"linear_4bit","out_dim":64})";
  CHECK(changed.digest() != digest);
  CHECK(base.compiler_version == std::string(quantc_version()));
  CHECK_FALSE(quantc_version().empty());
}

TEST_CASE("the cache location follows QUANTC_CACHE_DIR, XDG_CACHE_HOME, HOME, QUANTC_CACHE=0 disables", "[cache]") {
  const auto saved = [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  const auto home = saved("HOME"), xdg = saved("XDG_CACHE_HOME"), dir = saved("QUANTC_CACHE_DIR"),
             enabled = saved("QUANTC_CACHE");
  ::setenv("HOME", "/home/someone", 1);
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("QUANTC_CACHE_DIR");
  ::unsetenv("QUANTC_CACHE");
  CHECK(cache_directory_from_environment() == fs::path("/home/someone/.cache/quantc"));
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  CHECK(cache_directory_from_environment() == fs::path("/xdg/quantc"));
  ::setenv("QUANTC_CACHE_DIR", "/explicit", 1);
  CHECK(cache_directory_from_environment() == fs::path("/explicit"));
  CHECK(KernelCache::from_environment().directory() == fs::path("/explicit"));
  ::setenv("QUANTC_CACHE", "0", 1);
  CHECK_FALSE(cache_directory_from_environment().has_value());
  CHECK_FALSE(KernelCache::from_environment().enabled());

  const auto restore = [](const char* name, const std::optional<std::string>& value) {
    value ? ::setenv(name, value->c_str(), 1) : ::unsetenv(name);
  };
  restore("HOME", home);
  restore("XDG_CACHE_HOME", xdg);
  restore("QUANTC_CACHE_DIR", dir);
  restore("QUANTC_CACHE", enabled);
}

TEST_CASE("store, load, list and clear", "[cache]") {
  TemporaryDirectory directory;
  Diagnostics diagnostics;
  KernelCache cache(directory.path() / "nested", diagnostics.handler());
  const CacheKey key = sample_key();
  CHECK_FALSE(cache.load(key, ArtifactKind::Ptx).has_value());
  REQUIRE(cache.store(key, ArtifactKind::Ptx, ".version 7.8\n"));
  REQUIRE(cache.store(key, ArtifactKind::Cubin, std::string("\x7f" "ELF\0\1", 6)));
  CHECK(cache.load(key, ArtifactKind::Ptx) == ".version 7.8\n");
  CHECK(cache.load(key, ArtifactKind::Cubin) == std::string("\x7f" "ELF\0\1", 6));

  const std::vector<CacheEntryInfo> entries = cache.list();
  REQUIRE(entries.size() == 2);
  std::set<std::string> kinds;
  for (const CacheEntryInfo& entry : entries) {
    CHECK(entry.valid);
    CHECK(entry.digest == key.digest());
    CHECK(entry.op == "linear_4bit");
    CHECK(entry.target == "sm_90");
    CHECK(entry.opt_level == "O2");
    kinds.insert(entry.kind);
  }
  CHECK(kinds == std::set<std::string>{"ptx", "cubin"});
  CHECK(cache.clear() == 2);
  CHECK(cache.list().empty());
  CHECK_FALSE(cache.load(key, ArtifactKind::Ptx).has_value());
  CHECK(diagnostics.warnings.empty());
}

TEST_CASE("a disabled cache never hits and never writes", "[cache]") {
  KernelCache cache = KernelCache::disabled();
  int builds = 0;
  for (int i = 0; i < 2; ++i) {
    bool hit = true;
    CHECK(cache.get_or_build(sample_key(), ArtifactKind::Ptx, [&] { ++builds; return std::string("ptx"); }, &hit) ==
          "ptx");
    CHECK_FALSE(hit);
  }
  CHECK(builds == 2);
}

TEST_CASE("a truncated or corrupt entry is reported, never loaded, and rebuilt", "[cache]") {
  TemporaryDirectory directory;
  Diagnostics diagnostics;
  KernelCache cache(directory.path(), diagnostics.handler());
  const CacheKey key = sample_key();
  const std::string payload = large_payload();
  REQUIRE(cache.store(key, ArtifactKind::Ptx, payload));
  const fs::path path = cache.entry_path(key, ArtifactKind::Ptx);
  const std::string intact = read_all(path);

  SECTION("truncated") {
    fs::resize_file(path, intact.size() - 100);
  }
  SECTION("one byte flipped") {
    std::string corrupt = intact;
    corrupt[corrupt.size() / 2] ^= 0x20;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << corrupt;
  }
  SECTION("header destroyed") {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << "garbage";
  }
  CHECK_FALSE(cache.load(key, ArtifactKind::Ptx).has_value());
  REQUIRE_FALSE(diagnostics.verbose.empty());
  CHECK_THAT(diagnostics.verbose.back(), Catch::Contains(path.filename().string()) && Catch::Contains("rebuilding"));
  CHECK_FALSE(cache.list().at(0).valid);

  int builds = 0;
  bool hit = true;
  CHECK(cache.get_or_build(key, ArtifactKind::Ptx, [&] { ++builds; return payload; }, &hit) == payload);
  CHECK_FALSE(hit);
  CHECK(builds == 1);
  CHECK(read_all(path) == intact);  // rewritten in full
  CHECK(cache.get_or_build(key, ArtifactKind::Ptx, [&] { ++builds; return payload; }, &hit) == payload);
  CHECK(hit);
  CHECK(builds == 1);
}

TEST_CASE("several processes writing the same entries at once never expose a partial file", "[cache]") {
  TemporaryDirectory directory;
  const std::string payload = large_payload();
  constexpr int kProcesses = 6;
  constexpr int kRounds = 40;
  std::vector<CacheKey> keys;
  for (int k = 0; k < 3; ++k) {
    CacheKey key = sample_key();
    key.target = "sm_" + std::to_string(80 + k);
    keys.push_back(key);
  }
  std::vector<pid_t> children;
  for (int process = 0; process < kProcesses; ++process) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // Child: no Catch2 assertions; the exit status reports the first inconsistency.
      KernelCache cache(directory.path(), [](Severity, const std::string&) {});
      int status = 0;
      for (int round = 0; round < kRounds && status == 0; ++round) {
        const CacheKey& key = keys[(round + process) % keys.size()];
        std::optional<std::string> loaded = cache.load(key, ArtifactKind::Ptx);
        if (loaded && *loaded != payload) status = 2;  // a torn or foreign entry was served
        if (!cache.store(key, ArtifactKind::Ptx, payload)) status = 3;
      }
      ::_exit(status);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  KernelCache cache(directory.path());
  for (const CacheKey& key : keys) CHECK(cache.load(key, ArtifactKind::Ptx) == payload);
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(directory.path())) {
    ++files;
    CHECK(entry.path().filename().string().find(".tmp.") == std::string::npos);  // no temporaries left
  }
  CHECK(files == keys.size());
}

TEST_CASE("a read-only cache directory works uncached with one warning", "[cache]") {
  TemporaryDirectory directory;
  const fs::path read_only = directory.path() / "read-only";
  fs::create_directories(read_only);
  fs::permissions(read_only, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                 fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  // Root ignores permissions: run the cache as an unprivileged user in a child process.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::geteuid() == 0 && ::setuid(65534) != 0) ::_exit(77);  // cannot drop privileges
    Diagnostics diagnostics;
    KernelCache cache(read_only, diagnostics.handler());
    int builds = 0;
    bool hit = true;
    for (int i = 0; i < 3; ++i) {
      if (cache.get_or_build(sample_key(), ArtifactKind::Ptx, [&] { ++builds; return std::string("ptx"); }, &hit) !=
          "ptx") {
        ::_exit(2);
      }
      if (hit) ::_exit(3);
    }
    if (builds != 3) ::_exit(4);
    if (diagnostics.warnings.size() != 1) ::_exit(5);
    if (diagnostics.warnings[0].find(read_only.string()) == std::string::npos ||
        diagnostics.warnings[0].find("not writable") == std::string::npos) {
      ::_exit(6);
    }
    if (cache.writable()) ::_exit(7);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    WARN("SKIPPED: running as root and cannot switch to an unprivileged user to make the directory read-only");
    return;
  }
  INFO("child exit status (2 wrong result, 3 hit, 4 build count, 5 warning count, 6 warning text, 7 writable)");
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(fs::is_empty(read_only));
}
