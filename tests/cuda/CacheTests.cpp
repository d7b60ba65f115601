// The on-disk kernel cache: keys, environment, corrupt entries, several writing processes,
// a read-only directory.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "lower/driver/Hash.h"
#include "lower/driver/KernelCache.h"
#include "tests/ScopedEnvironment.h"

using namespace quantc::lower;
using quantc_test::ScopedEnvironment;
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

CacheKey sample_key() { return CacheKey{R"({"k":256,"op":"linear_4bit","n":64})", "sm_90", "O2"}; }

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
  changed.canonical_spec = R"({"k":512,"op":"linear_4bit","n":64})";
  CHECK(changed.digest() != digest);
  CHECK(base.compiler_version == std::string(quantc_version()));
  CHECK_FALSE(quantc_version().empty());
  // The executable's GNU build ID (this test binary has one, like quantc) is part of the
  // version, so a rebuilt compiler never reads its predecessor's kernels.
  const std::string version(quantc_version());
  const std::size_t build = version.find("+build.");
  REQUIRE(build != std::string::npos);
  CHECK(version.size() == build + 7 + 16);
  CHECK(version.find_first_not_of("0123456789abcdef", build + 7) == std::string::npos);
}

TEST_CASE("the cache location follows QUANTC_CACHE_DIR, XDG_CACHE_HOME, HOME, QUANTC_CACHE=0 disables", "[cache]") {
  ScopedEnvironment home("HOME", "/home/someone");
  ScopedEnvironment xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnvironment dir("QUANTC_CACHE_DIR", std::nullopt);
  ScopedEnvironment enabled("QUANTC_CACHE", std::nullopt);
  CHECK(cache_directory_from_environment() == fs::path("/home/someone/.cache/quantc"));
  xdg.set("/xdg");
  CHECK(cache_directory_from_environment() == fs::path("/xdg/quantc"));
  dir.set("/explicit");
  CHECK(cache_directory_from_environment() == fs::path("/explicit"));
  CHECK(KernelCache::from_environment().directory() == fs::path("/explicit"));
  enabled.set("0");
  CHECK_FALSE(cache_directory_from_environment().has_value());
  CHECK_FALSE(KernelCache::from_environment().enabled());
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

namespace {

/// The entry file `intact` with its JSON header line replaced by `header`.
std::string with_header(const std::string& intact, const std::string& header) {
  return header + intact.substr(intact.find('\n'));
}

/// Runs `body` in a child process that is killed after `seconds`: a lookup that blocks
/// (reading a FIFO or /dev/zero) fails the test instead of hanging it. Returns the
/// child's exit status, or -1 when it did not exit normally (killed by the alarm).
template <class Body>
int in_child_with_deadline(unsigned seconds, Body body) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(seconds);
    ::_exit(body());
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("a header with a missing or wrong-typed field is a miss that is rebuilt and listed as corrupt", "[cache]") {
  TemporaryDirectory directory;
  Diagnostics diagnostics;
  KernelCache cache(directory.path(), diagnostics.handler());
  const CacheKey key = sample_key();
  const std::string payload = ".version 7.8\n.target sm_90\n";
  REQUIRE(cache.store(key, ArtifactKind::Ptx, payload));
  const fs::path path = cache.entry_path(key, ArtifactKind::Ptx);
  const std::string intact = read_all(path);
  const std::string good = intact.substr(0, intact.find('\n'));
  INFO(good);
  REQUIRE(good.find(R"("format":1,)") != std::string::npos);
  REQUIRE(good.find(R"("kind":"ptx",)") != std::string::npos);

  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string header = good;
    header.replace(header.find(from), from.size(), to);
    return header;
  };
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"format is a string", replaced(R"("format":1,)", R"("format":"1",)")},
      {"format is null", replaced(R"("format":1,)", R"("format":null,)")},
      {"format is a float", replaced(R"("format":1,)", R"("format":1.5,)")},
      {"format is missing", replaced(R"("format":1,)", "")},
      {"kind is a number", replaced(R"("kind":"ptx",)", R"("kind":7,)")},
      {"kind is another kind", replaced(R"("kind":"ptx",)", R"("kind":"cubin",)")},
      {"size is a string", replaced(R"("size":)", R"("size":"0","was":)")},
      {"size is negative", replaced(R"("size":)", R"("size":-1,"was":)")},
      {"sha256 is a number", replaced(R"("sha256":)", R"("sha256":5,"was":)")},
      {"op and target are wrong-typed", replaced(R"("op":"linear_4bit")", R"("op":[1],"x":null)")},
      {"header is null", "null"},
      {"header is an array", "[1,2,3]"},
      {"header is a string", "\"format\""},
  };
  for (const auto& [name, header] : headers) {
    DYNAMIC_SECTION(name) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << with_header(intact, header);
      if (name == "op and target are wrong-typed") {
        // Only informative fields are wrong: the entry is still usable, the field reads empty.
        CHECK(cache.load(key, ArtifactKind::Ptx) == payload);
        REQUIRE(cache.list().size() == 1);
        CHECK(cache.list()[0].valid);
        CHECK(cache.list()[0].op.empty());
        continue;
      }
      CHECK_NOTHROW(parse_cache_entry(with_header(intact, header)));
      CHECK_FALSE(cache.load(key, ArtifactKind::Ptx).has_value());
      REQUIRE_FALSE(diagnostics.verbose.empty());
      CHECK_THAT(diagnostics.verbose.back(), Catch::Contains(path.filename().string()) && Catch::Contains("rebuilding"));
      std::vector<CacheEntryInfo> listed;
      REQUIRE_NOTHROW(listed = cache.list());
      REQUIRE(listed.size() == 1);
      CHECK_FALSE(listed[0].valid);
      CHECK_FALSE(listed[0].problem.empty());
      int builds = 0;
      bool hit = true;
      CHECK(cache.get_or_build(key, ArtifactKind::Ptx, [&] { ++builds; return payload; }, &hit) == payload);
      CHECK_FALSE(hit);
      CHECK(builds == 1);
      CHECK(read_all(path) == intact);
    }
  }
}

TEST_CASE("parse_cache_entry reads the header's fields and rejects every damaged entry without throwing",
          "[cache]") {
  TemporaryDirectory directory;
  KernelCache cache(directory.path(), [](Severity, const std::string&) {});
  REQUIRE(cache.store(sample_key(), ArtifactKind::Cubin, std::string("\x7f" "ELF\0\1", 6)));
  const std::string intact = read_all(cache.entry_path(sample_key(), ArtifactKind::Cubin));
  const ParsedCacheEntry entry = parse_cache_entry(intact);
  CHECK(entry.payload == std::string("\x7f" "ELF\0\1", 6));
  CHECK(entry.problem.empty());
  CHECK(entry.kind == "cubin");
  CHECK(entry.payload_bytes == 6);
  CHECK(entry.op == "linear_4bit");
  CHECK(entry.target == "sm_90");
  CHECK(entry.opt_level == "O2");
  for (std::size_t length = 0; length < intact.size(); ++length) {
    const ParsedCacheEntry truncated = parse_cache_entry(std::string_view(intact).substr(0, length));
    CHECK_FALSE(truncated.payload.has_value());
    CHECK_FALSE(truncated.problem.empty());
  }
  CHECK(parse_cache_entry(with_header(intact, "{\"format\":1,\"kind\":\"cubin\",\"size\":6,\"sha256\":\"00\"}")).problem ==
        "payload SHA-256 does not match the header (corrupt)");
  CHECK(parse_cache_entry("{\"format\":\"1\"}\n").problem == "the header's format is not 1");
  CHECK(parse_cache_entry(std::string("\xff\xfe{\n", 4)).problem == "the header line is not a JSON object");
}

TEST_CASE("a cache entry that is a symbolic link, FIFO, directory or oversized file is a miss that never blocks",
          "[cache]") {
  TemporaryDirectory directory;
  Diagnostics diagnostics;
  KernelCache cache(directory.path(), diagnostics.handler());
  const CacheKey key = sample_key();
  const std::string payload = ".version 7.8\n";
  REQUIRE(cache.store(key, ArtifactKind::Ptx, payload));
  const fs::path path = cache.entry_path(key, ArtifactKind::Ptx);
  const std::string intact = read_all(path);
  fs::remove(path);
  std::string expected_problem;
  bool rebuilt_in_place = true;

  SECTION("a symbolic link to /dev/zero") {
    fs::create_symlink("/dev/zero", path);
    expected_problem = "symbolic link";
  }
  SECTION("a symbolic link to a valid entry") {
    // Even a link to good bytes is refused: entries are only ever regular files.
    const fs::path elsewhere = directory.path() / "elsewhere";
    std::ofstream(elsewhere, std::ios::binary) << intact;
    fs::create_symlink(elsewhere, path);
    expected_problem = "symbolic link";
  }
  SECTION("a FIFO with no writer") {
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    expected_problem = "FIFO";
  }
  SECTION("a directory") {
    fs::create_directories(path / "inside");
    expected_problem = "directory";
    rebuilt_in_place = false;  // rename cannot replace a non-empty directory
  }
  SECTION("a file larger than kMaxEntryBytes") {
    { std::ofstream(path, std::ios::binary) << intact; }
    fs::resize_file(path, kMaxEntryBytes + 1);  // sparse: no disk used
    expected_problem = "more than the";
  }

  // In a child with a deadline: a regression that reads the FIFO or /dev/zero hangs there.
  const int status = in_child_with_deadline(20, [&] {
    Diagnostics child_diagnostics;
    KernelCache child_cache(directory.path(), child_diagnostics.handler());
    if (child_cache.load(key, ArtifactKind::Ptx).has_value()) return 2;
    if (child_diagnostics.verbose.empty() ||
        child_diagnostics.verbose.back().find(expected_problem) == std::string::npos) {
      return 3;
    }
    const std::vector<CacheEntryInfo> listed = child_cache.list();
    if (listed.size() != 1 || listed[0].valid || listed[0].problem.find(expected_problem) == std::string::npos) {
      return 4;
    }
    return 0;
  });
  INFO("child status: -1 killed (blocked), 2 loaded, 3 diagnostic, 4 listing; expected problem: " << expected_problem);
  REQUIRE(status == 0);

  bool hit = true;
  CHECK(cache.get_or_build(key, ArtifactKind::Ptx, [&] { return payload; }, &hit) == payload);
  CHECK_FALSE(hit);
  if (rebuilt_in_place) {
    CHECK(fs::is_regular_file(fs::symlink_status(path)));
    CHECK(read_all(path) == intact);
    CHECK(cache.load(key, ArtifactKind::Ptx) == payload);
    CHECK(diagnostics.warnings.empty());
  }
  if (expected_problem == "symbolic link") CHECK(fs::exists(fs::path("/dev/zero")));
}

TEST_CASE("clear removes symbolic links and FIFOs named like entries but not what a link points to", "[cache]") {
  TemporaryDirectory directory;
  const fs::path cache_directory = directory.path() / "cache";
  KernelCache cache(cache_directory, [](Severity, const std::string&) {});
  REQUIRE(cache.store(sample_key(), ArtifactKind::Ptx, "ptx"));
  const fs::path target = directory.path() / "precious.ptx";
  std::ofstream(target) << "keep me";
  fs::create_symlink(target, cache_directory / "link.ptx");
  REQUIRE(::mkfifo((cache_directory / "fifo.cubin").c_str(), 0600) == 0);
  fs::create_directories(cache_directory / "directory.ptx");
  CHECK(cache.clear() == 3);
  CHECK(read_all(target) == "keep me");
  CHECK(fs::is_directory(cache_directory / "directory.ptx"));
}

TEST_CASE("the cache directory is created with mode 0700", "[cache]") {
  TemporaryDirectory directory;
  const fs::path cache_directory = directory.path() / "parent" / "quantc";
  const mode_t old_mask = ::umask(0);  // even with a permissive umask
  KernelCache cache(cache_directory, [](Severity, const std::string&) {});
  const bool stored = cache.store(sample_key(), ArtifactKind::Ptx, "ptx");
  ::umask(old_mask);
  REQUIRE(stored);
  struct stat status {};
  REQUIRE(::stat(cache_directory.c_str(), &status) == 0);
  CHECK((status.st_mode & 0777) == 0700);
  // An existing directory keeps the mode its owner gave it.
  const fs::path existing = directory.path() / "existing";
  fs::create_directories(existing);
  fs::permissions(existing, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  KernelCache existing_cache(existing, [](Severity, const std::string&) {});
  REQUIRE(existing_cache.store(sample_key(), ArtifactKind::Ptx, "ptx"));
  REQUIRE(::stat(existing.c_str(), &status) == 0);
  CHECK((status.st_mode & 0777) == 0750);
}

TEST_CASE("a failed store's warning names the system error of the step that failed", "[cache]") {
  TemporaryDirectory directory;
  Diagnostics diagnostics;
  KernelCache cache(directory.path(), diagnostics.handler());
  // The entry's name is taken by a non-empty directory: the write succeeds, the rename fails.
  fs::create_directories(cache.entry_path(sample_key(), ArtifactKind::Ptx) / "inside");
  CHECK_FALSE(cache.store(sample_key(), ArtifactKind::Ptx, "ptx"));
  REQUIRE(diagnostics.warnings.size() == 1);
  CHECK_THAT(diagnostics.warnings[0], Catch::Contains("not writable (") && !Catch::Contains("(Success)"));
  CHECK_THAT(diagnostics.warnings[0], Catch::Contains(std::strerror(EISDIR)) || Catch::Contains(std::strerror(ENOTEMPTY)));
  for (const auto& file : fs::directory_iterator(directory.path())) {
    CHECK(file.path().filename().string().find(".tmp.") == std::string::npos);  // the temporary is removed
  }
}
