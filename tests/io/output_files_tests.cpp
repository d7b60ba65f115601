// Output staging (runtime/io/AtomicFile.h): nothing is replaced before commit, special
// paths are written in place or followed, modes are kept, errors name the real cause,
// and staged temporaries disappear on SIGINT/SIGTERM.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "runtime/Buffers.h"
#include "runtime/io/AtomicFile.h"
#include "tests/ProcessFolder.h"

namespace fs = std::filesystem;
using quantc::runtime::OutputFiles;
using quantc::runtime::RuntimeError;
using quantc::runtime::write_file_atomically;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path dir = quantc_test::temporary_process_folder("quantc_io_tests_") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void put(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string get(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

/// Files in `dir` whose name starts with ".qc." (staged temporaries).
int leftovers(const fs::path& dir) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) count += entry.path().filename().string().starts_with(".qc.");
  return count;
}

mode_t mode_of(const fs::path& path) {
  struct stat status {};
  REQUIRE(::stat(path.c_str(), &status) == 0);
  return status.st_mode & 07777;
}

std::string add_error(OutputFiles& outputs, const std::string& path, bool allow_stdout = false) {
  try {
    outputs.add(path, allow_stdout);
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("staged outputs replace nothing until commit and leave no temporaries", "[atomic]") {
  fs::path dir = fresh_dir("stage");
  put(dir / "a.npy", "old a");
  put(dir / "b.npy", "old b");
  {
    OutputFiles outputs;
    const std::size_t a = outputs.add((dir / "a.npy").string());
    const std::size_t b = outputs.add((dir / "b.npy").string());
    outputs.stage(a, "new a");
    outputs.stage(b, "new b");
    CHECK(get(dir / "a.npy") == "old a");
    CHECK(leftovers(dir) == 2);
    // destroyed without commit: a failed command
  }
  CHECK(get(dir / "a.npy") == "old a");
  CHECK(get(dir / "b.npy") == "old b");
  CHECK(leftovers(dir) == 0);

  OutputFiles outputs;
  const std::size_t a = outputs.add((dir / "a.npy").string());
  const std::size_t c = outputs.add((dir / "c.npy").string());
  outputs.stage(a, "new a");
  outputs.stage(c, "new c");
  outputs.commit();
  CHECK(get(dir / "a.npy") == "new a");
  CHECK(get(dir / "c.npy") == "new c");
  CHECK(leftovers(dir) == 0);
}

TEST_CASE("a rewritten output keeps its mode and a new one gets the umask default", "[atomic]") {
  fs::path dir = fresh_dir("mode");
  put(dir / "private.npy", "old");
  ::chmod((dir / "private.npy").c_str(), 0600);
  write_file_atomically((dir / "private.npy").string(), "new");
  CHECK(get(dir / "private.npy") == "new");
  CHECK(mode_of(dir / "private.npy") == 0600);
  ::chmod((dir / "private.npy").c_str(), 0640);
  write_file_atomically((dir / "private.npy").string(), "newer");
  CHECK(mode_of(dir / "private.npy") == 0640);

  const mode_t previous = ::umask(027);
  write_file_atomically((dir / "fresh.npy").string(), "x");
  ::umask(previous);
  // The umask is read once per process; whichever was read, the mode is 0666 minus it.
  const mode_t fresh = mode_of(dir / "fresh.npy");
  CHECK((fresh == (0666 & ~027) || fresh == (0666 & ~previous)));
}

TEST_CASE("a symbolic link is followed: its target is replaced and the link stays a link", "[atomic]") {
  fs::path dir = fresh_dir("links");
  fs::create_directories(dir / "real");
  put(dir / "real" / "data.npy", "old");
  fs::create_symlink("real/data.npy", dir / "link1");
  fs::create_symlink("link1", dir / "link2");  // a chain, relative to each link's folder
  write_file_atomically((dir / "link2").string(), "new");
  CHECK(fs::is_symlink(dir / "link1"));
  CHECK(fs::is_symlink(dir / "link2"));
  CHECK(get(dir / "real" / "data.npy") == "new");
  CHECK(leftovers(dir / "real") == 0);

  fs::create_symlink("real/created.npy", dir / "dangling");
  write_file_atomically((dir / "dangling").string(), "made");
  CHECK(fs::is_symlink(dir / "dangling"));
  CHECK(get(dir / "real" / "created.npy") == "made");

  fs::create_symlink("loop_b", dir / "loop_a");
  fs::create_symlink("loop_a", dir / "loop_b");
  OutputFiles outputs;
  CHECK_THAT(add_error(outputs, (dir / "loop_a").string()), Catch::Contains("too many levels of symbolic links"));
}

TEST_CASE("character devices and FIFOs are written in place and never replaced", "[atomic]") {
  struct stat before {};
  REQUIRE(::stat("/dev/null", &before) == 0);
  if (!S_ISCHR(before.st_mode)) {
    WARN("/dev/null is not a character device on this machine; skipping its check");
  } else {
    write_file_atomically("/dev/null", "discarded");
    struct stat after {};
    REQUIRE(::stat("/dev/null", &after) == 0);
    CHECK(S_ISCHR(after.st_mode));
    CHECK(after.st_ino == before.st_ino);
    CHECK(after.st_rdev == before.st_rdev);
  }

  fs::path dir = fresh_dir("fifo");
  const fs::path fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string received;
  std::thread reader([&] { received = get(fifo); });
  write_file_atomically(fifo.string(), "through the pipe");
  reader.join();
  CHECK(received == "through the pipe");
  CHECK(fs::is_fifo(fifo));
  CHECK(leftovers(dir) == 0);

  struct stat full {};
  if (::stat("/dev/full", &full) == 0 && S_ISCHR(full.st_mode)) {
    // The write error is the system's (ENOSPC), reported as such.
    CHECK_THROWS_WITH(write_file_atomically("/dev/full", "x"),
                      Catch::Contains("cannot write '/dev/full': No space left on device"));
  }
}

TEST_CASE("a file name of 255 characters can be written (the temporary name is short)", "[atomic]") {
  fs::path dir = fresh_dir("long");
  const std::string name = std::string(251, 'n') + ".npy";
  write_file_atomically((dir / name).string(), "long");
  CHECK(get(dir / name) == "long");
  CHECK(leftovers(dir) == 0);
}

TEST_CASE("bad output paths are refused when added with the problem and the fix", "[atomic]") {
  fs::path dir = fresh_dir("errors");
  OutputFiles outputs;
  CHECK_THAT(add_error(outputs, (dir / "missing" / "x.npy").string()),
             Catch::Contains("folder '" + (dir / "missing").string() + "' does not exist; create it first"));
  CHECK_THAT(add_error(outputs, dir.string()), Catch::Contains("it is a folder; name a file"));
  put(dir / "file", "f");
  CHECK_THAT(add_error(outputs, (dir / "file" / "x.npy").string()), Catch::Contains("is not a folder"));
  CHECK_THAT(add_error(outputs, "-"), Catch::Contains("standard output is not available for this output"));
  CHECK_THAT(add_error(outputs, ""), Catch::Contains("the output file name is empty"));
  outputs.add((dir / "one.npy").string());
  CHECK_THAT(add_error(outputs, (dir / "." / "one.npy").string()), Catch::Contains("are the same file"));
  fs::create_symlink("one.npy", dir / "alias.npy");
  CHECK_THAT(add_error(outputs, (dir / "alias.npy").string()), Catch::Contains("are the same file"));
  outputs.add("-", /*allow_stdout=*/true);
  CHECK(outputs.writes_stdout());
  CHECK_THAT(add_error(outputs, "-", true), Catch::Contains("only one output can go to standard output"));
  if (::geteuid() != 0) {  // root may write anywhere
    fs::create_directories(dir / "locked");
    ::chmod((dir / "locked").c_str(), 0500);
    CHECK_THAT(add_error(outputs, (dir / "locked" / "x.npy").string()), Catch::Contains("is not writable"));
    ::chmod((dir / "locked").c_str(), 0700);
  }
}

TEST_CASE("a failed rename reports the rename's own error and not a later call's", "[atomic]") {
  fs::path dir = fresh_dir("rename");
  OutputFiles outputs;
  const std::size_t index = outputs.add((dir / "target").string());
  outputs.stage(index, "bytes");
  // The target turns into a non-empty folder between the check and the commit.
  fs::create_directories(dir / "target");
  put(dir / "target" / "inside", "x");
  try {
    outputs.commit();
    FAIL("commit should have failed");
  } catch (const RuntimeError& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Catch::Contains("cannot write '" + (dir / "target").string() + "'") &&
                            Catch::Contains("Is a directory") && !Catch::Contains("Success"));
  }
  CHECK(leftovers(dir) == 0);
}

TEST_CASE("SIGINT and SIGTERM while outputs are staged remove the temporaries", "[atomic][signals]") {
  for (int signal_number : {SIGINT, SIGTERM}) {
    fs::path dir = fresh_dir("signal" + std::to_string(signal_number));
    put(dir / "keep.npy", "precious");
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // Catch2 handles these signals in the test process; quantc runs with the defaults.
      for (int reset : {SIGINT, SIGTERM, SIGHUP}) ::signal(reset, SIG_DFL);
      OutputFiles outputs;
      outputs.stage(outputs.add((dir / "keep.npy").string()), "replacement");
      outputs.stage(outputs.add((dir / "other.npy").string()), "other");
      ::raise(signal_number);
      ::_exit(3);  // not reached: the handler re-raises the signal with its default action
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    INFO("signal " << signal_number);
    CHECK(WIFSIGNALED(status));
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == signal_number));
    CHECK(leftovers(dir) == 0);
    CHECK(get(dir / "keep.npy") == "precious");
    CHECK_FALSE(fs::exists(dir / "other.npy"));
  }
}
