// The one Catch2 main shared by every test suite.
//
// Two additions to Catch2's own main, both so that a test case that never runs cannot
// pass unnoticed:
//  - `--quantc-case-log DIR` (added to every ctest entry by tests/CMakeLists.txt, and
//    removed here before Catch2 parses the command line) appends the name of every test
//    case this process starts to DIR/<executable>.<pid>.log. After a full ctest run,
//    tests/check_test_cases_ran.py compares those names with each executable's
//    --list-test-names-only and fails naming the test cases no ctest entry ran (a name
//    catch_discover_tests splits at ";" or mangles becomes entries that match nothing).
//  - A run (not a listing) that starts no test case fails with exit code 3, whatever the
//    command line: Catch2 itself exits 0 on "No tests ran" unless `--warn NoTests` is
//    given and a test spec matched nothing.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

namespace {

struct CaseLog {
  std::string directory;  // empty: no log
  std::string executable;
  bool run_started = false;
  std::size_t cases_started = 0;
  std::ofstream file;
};

CaseLog& case_log() {
  static CaseLog log;
  return log;
}

class CaseLogListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testRunStarting(Catch::TestRunInfo const& info) override {
    TestEventListenerBase::testRunStarting(info);
    CaseLog& log = case_log();
    log.run_started = true;
    if (log.directory.empty()) return;
    std::filesystem::create_directories(log.directory);
    std::filesystem::path name = std::filesystem::path(log.executable).filename();
    std::filesystem::path path =
        std::filesystem::path(log.directory) / (name.string() + "." + std::to_string(::getpid()) + ".log");
    log.file.open(path, std::ios::out | std::ios::trunc);
    if (!log.file) {
      std::cerr << "error: cannot write the test case log " << path << "\n";
      std::exit(4);
    }
    // First line: the executable, so the checker can match logs to executables.
    log.file << "executable\t" << log.executable << "\n" << std::flush;
  }

  // Logged when the test case starts: one that crashes or times out still counts as
  // run here (ctest reports it as failed); the log is about test cases never started.
  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    TestEventListenerBase::testCaseStarting(info);
    CaseLog& log = case_log();
    ++log.cases_started;
    if (log.file.is_open()) log.file << "case\t" << info.name << "\n" << std::flush;
  }
};

std::string executable_path(const char* argv0) {
  std::error_code error;
  std::filesystem::path self = std::filesystem::canonical("/proc/self/exe", error);
  if (!error) return self.string();
  return std::filesystem::absolute(argv0).lexically_normal().string();
}

}  // namespace

CATCH_REGISTER_LISTENER(CaseLogListener)

int main(int argc, char* argv[]) {
  CaseLog& log = case_log();
  log.executable = executable_path(argv[0]);
  std::vector<char*> arguments;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quantc-case-log") == 0) {
      if (i + 1 >= argc) {
        std::cerr << "error: --quantc-case-log needs a directory\n";
        return 4;
      }
      log.directory = argv[++i];
      continue;
    }
    arguments.push_back(argv[i]);
  }
  Catch::Session session;
  int result = session.run(static_cast<int>(arguments.size()), arguments.data());
  if (result == 0 && log.run_started && log.cases_started == 0) {
    std::cerr << "error: no test case ran (the test spec matched nothing, or only hidden tests); "
                 "a test run that checks nothing fails\n";
    return 3;
  }
  return result;
}
