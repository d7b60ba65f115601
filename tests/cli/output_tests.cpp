// The CLI's input/output rules, end to end: outputs are checked before the run and
// written together after it (a failed run, comparison or pack leaves every file as it
// was), special output paths (-, character devices, FIFOs, symbolic links), modes,
// --compare's bit-exact/numeric report against a backend that really differs, and the
// checks on inputs (.npy headers, NUL bytes, targets, seeds, repeated inputs, memory).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "CliHarness.h"
#include "runtime/Buffers.h"
#include "runtime/io/Safetensors.h"

namespace {

using quantc::ir::ScalarType;

struct SplitResult {
  int exit_code;
  std::string out;  // stdout only
  std::string err;  // stderr only
};

/// Runs quantc with stdout and stderr captured apart.
SplitResult run_split(const std::string& arguments, const std::string& environment = "") {
  const fs::path err_path = scratch_dir() / "stderr.txt";
  const std::string test_cache = "QUANTC_CACHE_DIR=" + std::string(QUANTC_BINARY_DIR) + "/test-kernel-cache ";
  const std::string command =
      test_cache + environment + std::string(QUANTC_CLI_PATH) + " " + arguments + " 2>" + err_path.string();
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char chunk[4096];
  while (std::size_t read = fread(chunk, 1, sizeof chunk, pipe)) out.append(chunk, read);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, read_text(err_path)};
}

// The seed schedule: the PTX launch below uses its 256-thread block.
std::string fixture_spec(const fs::path& dir) {
  return write_text(dir / "fixture.json", R"({"op": "linear_4bit", "k": 8, "n": 4, "schedule": "seed"})");
}

mode_t mode_of(const fs::path& path) {
  struct stat status {};
  REQUIRE(::stat(path.c_str(), &status) == 0);
  return status.st_mode & 07777;
}

int leftovers(const fs::path& dir) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) count += entry.path().filename().string().starts_with(".qc.");
  return count;
}

/// A model with one [4, 64] f32 tensor "fc.weight".
std::string write_model(const fs::path& dir) {
  std::vector<std::uint8_t> bytes(4 * 64 * 4);
  for (std::size_t i = 0; i < 256; ++i) {
    const float value = 0.01f * static_cast<float>(i % 29) - 0.1f;
    std::memcpy(bytes.data() + 4 * i, &value, 4);
  }
  const std::string path = (dir / "model.safetensors").string();
  quantc::runtime::write_safetensors(path, {{"fc.weight", quantc::runtime::SafetensorsDtype::F32, {4, 64}, bytes}});
  return path;
}

}  // namespace

TEST_CASE("quantc run checks every --output before running and writes none when one is bad", "[cli][outputs]") {
  fs::path dir = scratch_dir() / "run_outputs";
  fs::create_directories(dir);
  const std::string spec = fixture_spec(dir);
  const std::string first = write_text(dir / "first.npy", "precious first");
  struct Case {
    std::string bad_output, expected;
  };
  const std::vector<Case> cases = {
      {"nope=" + (dir / "second.npy").string(), "the program has no buffer named 'nope'; its buffers are: x, w, b, out"},
      {"out=" + (dir / "missing" / "second.npy").string(), "folder '" + (dir / "missing").string() + "' does not exist"},
      {"second.npy", "--output expects NAME=FILE.npy, got 'second.npy'"},
      {"out=" + dir.string(), "it is a folder; name a file"},
      {"out=" + first, "are the same file"},
  };
  for (const Case& test : cases) {
    Result result = run_quantc("run " + spec + " --random-inputs 1 --output out=" + first + " --output " + test.bad_output);
    INFO(test.bad_output << "\n" << result.output);
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.output, Catch::StartsWith("error: ") && Catch::Contains(test.expected));
    CHECK(read_text(first) == "precious first");
    CHECK_FALSE(fs::exists(dir / "second.npy"));
    CHECK(leftovers(dir) == 0);
  }
  Result good = run_quantc("run " + spec + " --random-inputs 1 --output out=" + first + " --output out=" +
                           (dir / "second.npy").string());
  REQUIRE(good.exit_code == 0);
  CHECK(quantc::runtime::read_npy(first).buffer.count() == 4);
  CHECK(read_text(first) == read_text(dir / "second.npy"));
}

TEST_CASE("quantc run --compare says bit-exact only for equal bits and fails when the backends differ",
          "[cli][outputs][compare]") {
  fs::path dir = scratch_dir() / "compare";
  fs::create_directories(dir);
  const std::string spec = fixture_spec(dir);
  const std::string keep = write_text(dir / "keep.npy", "precious");
  // The emulated driver with its launches switched off: the kernels compute nothing, so
  // the outputs stay zero and the two backends disagree.
  const std::string fake_driver =
      std::string("QUANTC_EMULATED_SKIP_LAUNCHES=1 QUANTC_CUDA_DRIVER=") + QUANTC_EMULATED_CUDA_DRIVER + " ";

  Result same = run_quantc("run " + spec + " --backend emulator --random-inputs 1 --compare reference");
  CHECK(same.exit_code == 0);
  CHECK_THAT(same.output, Catch::Contains("compare emulator vs reference: out: bit-exact (4 elements)"));

  Result differs = run_quantc("run " + spec + " --backend cuda --random-inputs 1 --compare reference --output out=" + keep,
                              fake_driver);
  INFO(differs.output);
  CHECK(differs.exit_code == 1);
  CHECK_THAT(differs.output, Catch::Contains("out (4 x f32): [0 0 0 0]") &&
                                 Catch::Contains("compare cuda vs reference: out: not bit-exact: 4 of 4 elements differ, "
                                                 "max abs diff") &&
                                 Catch::Contains("(4 beyond tolerance 1e-05 in abs and rel)") &&
                                 Catch::Contains("error: cuda differs from reference beyond tolerance 1e-05; no output "
                                                 "file was written") &&
                                 !Catch::Contains("bit-exact ("));
  CHECK(read_text(keep) == "precious");

  Result tolerated = run_quantc("run " + spec + " --backend reference --random-inputs 1 --compare cuda --tolerance 1e30 "
                                "--output out=" + keep,
                                fake_driver);
  CHECK(tolerated.exit_code == 0);
  CHECK_THAT(tolerated.output, Catch::Contains("compare reference vs cuda: out: not bit-exact: 4 of 4 elements differ") &&
                                   Catch::Contains("(0 beyond tolerance 1e+30 in abs and rel)"));
  CHECK(quantc::runtime::read_npy(keep).buffer.count() == 4);

  // The tolerance applies per element: the reference's outputs against the zeros as the
  // oracle differ by their magnitude in abs and by far more in rel, so with T between the
  // second and third largest magnitudes exactly two elements are beyond it.
  const std::string reference_out = (dir / "reference.npy").string();
  REQUIRE(run_quantc("run " + spec + " --random-inputs 1 --output out=" + reference_out).exit_code == 0);
  const quantc::runtime::HostBuffer reference = quantc::runtime::read_npy(reference_out).buffer;
  std::vector<double> magnitudes;
  for (std::size_t i = 0; i < reference.count(); ++i) {
    magnitudes.push_back(std::fabs(quantc::runtime::element_as_double(reference, i)));
  }
  std::sort(magnitudes.rbegin(), magnitudes.rend());
  REQUIRE(magnitudes[1] > magnitudes[2]);
  const std::string between = fmt::format("{:g}", (magnitudes[1] + magnitudes[2]) / 2);
  Result two_beyond = run_quantc("run " + spec + " --backend reference --random-inputs 1 --compare cuda --tolerance " +
                                     between,
                                 fake_driver);
  INFO(two_beyond.output);
  CHECK(two_beyond.exit_code == 1);
  CHECK_THAT(two_beyond.output, Catch::Contains("(2 beyond tolerance " + between + " in abs and rel)"));

  for (const char* tolerance : {"nan", "-1", "inf"}) {
    Result bad = run_quantc("run " + spec + " --random-inputs 1 --compare emulator --tolerance " + tolerance);
    CHECK(bad.exit_code == 1);
    CHECK_THAT(bad.output, Catch::Contains("the tolerance must be a finite number >= 0"));
  }
}

TEST_CASE("quantc pack checks --npy-dir and -o before writing anything", "[cli][outputs][pack]") {
  fs::path dir = scratch_dir() / "pack_outputs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string model = write_model(dir);
  const std::string out = write_text(dir / "out.safetensors", "precious");
  write_text(dir / "a_file", "x");
  const std::string pack = "pack " + model + " --tensor fc.weight --transpose -o " + out;
  Result bad_dir = run_quantc(pack + " --npy-dir " + (dir / "a_file").string());
  CHECK(bad_dir.exit_code == 1);
  CHECK_THAT(bad_dir.output, Catch::StartsWith("error: --npy-dir") && Catch::Contains("exists and is not a folder"));
  CHECK(read_text(out) == "precious");
  Result bad_out = run_quantc("pack " + model + " --tensor fc.weight --transpose -o " + (dir / "no" / "o.safetensors").string() +
                              " --npy-dir " + (dir / "npy").string());
  CHECK(bad_out.exit_code == 1);
  CHECK_THAT(bad_out.output, Catch::Contains("does not exist; create it first"));
  CHECK_FALSE(fs::exists(dir / "npy"));
  CHECK(leftovers(dir) == 0);

  // A group size near 2^32 is one group of real codes (it once wrapped to zero groups).
  Result huge_group = run_quantc(pack + " --group-size 4294967295 --npy-dir " + (dir / "npy").string());
  INFO(huge_group.output);
  REQUIRE(huge_group.exit_code == 0);
  quantc::runtime::SafetensorsFile packed = quantc::runtime::SafetensorsFile::open(out);
  CHECK(packed.tensor("scale").shape == std::vector<std::uint64_t>{1, 4});
  bool any_nonzero = false;
  for (std::uint8_t byte : packed.tensor("w").bytes) any_nonzero |= byte != 0;
  CHECK(any_nonzero);
  CHECK(quantc::runtime::read_npy((dir / "npy" / "zero_point.npy").string()).shape == std::vector<std::uint64_t>{1, 4});

  // -o -: the safetensors bytes are standard output, the report goes to stderr.
  SplitResult to_stdout = run_split("pack " + model + " --tensor fc.weight --transpose -o -");
  CHECK(to_stdout.exit_code == 0);
  const std::string same_file = (dir / "default.safetensors").string();
  REQUIRE(run_quantc("pack " + model + " --tensor fc.weight --transpose -o " + same_file).exit_code == 0);
  CHECK(to_stdout.out == read_text(same_file));
  REQUIRE(to_stdout.out.size() > 8);
  CHECK(to_stdout.out[8] == '{');
  CHECK_THAT(to_stdout.err, Catch::Contains("packed w"));
  CHECK_THAT(to_stdout.out, !Catch::Contains("packed w"));
}

TEST_CASE("output paths: - is standard output and devices and FIFOs are written in place and links are followed",
          "[cli][outputs]") {
  fs::path dir = scratch_dir() / "special_paths";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string spec = fixture_spec(dir);
  const std::string run = "run " + spec + " --random-inputs 1";

  SplitResult npy_to_stdout = run_split(run + " --output out=-");
  REQUIRE(npy_to_stdout.exit_code == 0);
  CHECK(quantc::runtime::parse_npy(npy_to_stdout.out, "stdout").buffer.count() == 4);
  CHECK_THAT(npy_to_stdout.err, Catch::Contains("out (4 x f32): ["));
  Result twice = run_quantc(run + " --output out=- --output out=-");
  CHECK(twice.exit_code == 1);
  CHECK_THAT(twice.output, Catch::Contains("only one output can go to standard output"));

  struct stat null_before {};
  REQUIRE(::stat("/dev/null", &null_before) == 0);
  if (S_ISCHR(null_before.st_mode)) {
    for (const std::string& command : {run + " --output out=/dev/null", "emit " + spec + " -o /dev/null"}) {
      Result result = run_quantc(command);
      INFO(command << "\n" << result.output);
      CHECK(result.exit_code == 0);
      struct stat null_after {};
      REQUIRE(::stat("/dev/null", &null_after) == 0);
      CHECK(S_ISCHR(null_after.st_mode));  // never replaced, also as root
      CHECK(null_after.st_ino == null_before.st_ino);
    }
  } else {
    WARN("/dev/null is not a character device here; skipping its checks");
  }

  const fs::path fifo = dir / "pipe.npy";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string received;
  std::thread reader([&] { received = read_text(fifo); });
  Result through_fifo = run_quantc(run + " --output out=" + fifo.string());
  reader.join();
  CHECK(through_fifo.exit_code == 0);
  CHECK(quantc::runtime::parse_npy(received, "fifo").buffer.count() == 4);
  CHECK(fs::is_fifo(fifo));

  fs::create_directories(dir / "real");
  write_text(dir / "real" / "target.npy", "old");
  ::chmod((dir / "real" / "target.npy").c_str(), 0600);
  fs::create_symlink("real/target.npy", dir / "link.npy");
  Result through_link = run_quantc(run + " --output out=" + (dir / "link.npy").string());
  CHECK(through_link.exit_code == 0);
  CHECK(fs::is_symlink(dir / "link.npy"));
  CHECK(quantc::runtime::read_npy((dir / "real" / "target.npy").string()).buffer.count() == 4);
  CHECK(mode_of(dir / "real" / "target.npy") == 0600);  // the existing file's mode is kept
  CHECK(leftovers(dir / "real") == 0);

  const std::string long_name = (dir / (std::string(251, 'x') + ".npy")).string();
  Result long_output = run_quantc(run + " --output out=" + long_name);
  CHECK(long_output.exit_code == 0);
  CHECK(quantc::runtime::read_npy(long_name).buffer.count() == 4);
}

TEST_CASE("quantc run PTX --output and quantc profile --output follow the same rules", "[cli][outputs][ptx]") {
  fs::path dir = scratch_dir() / "ptx_outputs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string ptx = dir.string() + "/k.ptx";
  Result emitted = run_quantc("emit " + fixture_spec(dir) + " -o " + ptx);
  REQUIRE(emitted.exit_code == 0);
  const std::string keep = write_text(dir / "keep.npy", "precious");
  const std::string launch = " --grid 1 --block 256 --arg x:f32:8 --arg w:u32:4 --arg b:f32:4 --arg out:f32:4";
  for (const char* command : {"run ", "profile "}) {
    Result bad = run_quantc(std::string(command) + ptx + launch + " --output 3=" + keep + " --output 3=" +
                            (dir / "nowhere" / "x.npy").string());
    INFO(command << bad.output);
    CHECK(bad.exit_code == 1);
    CHECK_THAT(bad.output, Catch::Contains("does not exist; create it first"));
    CHECK(read_text(keep) == "precious");
  }
  SplitResult to_stdout = run_split("run " + ptx + launch + " --output 3=-");
  CHECK(to_stdout.exit_code == 0);
  CHECK(quantc::runtime::parse_npy(to_stdout.out, "stdout").buffer.count() == 4);
  CHECK_THAT(to_stdout.err, Catch::Contains("arg 3 out (4 x f32)"));
}

TEST_CASE("spec input checks: NUL bytes and unknown targets and seeds and repeated inputs", "[cli][inputs]") {
  fs::path dir = scratch_dir() / "spec_inputs";
  fs::create_directories(dir);
  // A spec, a NUL byte, then garbage; the length comes from the literal, NUL included.
  static constexpr char kNulSpec[] = "{\"op\": \"linear_4bit\", \"k\": 8, \"n\": 4}\0{\"garbage\"";
  const std::string nul = write_text(dir / "nul.json", std::string(kNulSpec, sizeof(kNulSpec) - 1));
  for (const std::string& command : {"ir " + nul, "emit " + nul, "run " + nul + " --random-inputs 1"}) {
    Result result = run_quantc(command);
    INFO(command << "\n" << result.output);
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.output, Catch::StartsWith("error: ") && Catch::Contains("NUL byte at offset 37"));
  }

  const std::string sm81 = write_text(dir / "sm81.json", R"({"op": "linear_4bit", "k": 8, "n": 4, "target": "sm_81"})");
  for (const std::string& command :
       {"ir " + sm81, "emit " + sm81, "run " + sm81 + " --random-inputs 1", "run " + sm81 + " --backend reference --random-inputs 1",
        "run " + sm81 + " --backend emulator --random-inputs 1", "profile " + sm81, "check " + sm81,
        "emit " + sm81 + " --target sm_90"}) {
    Result result = run_quantc(command);
    INFO(command << "\n" << result.output);
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.output, Catch::StartsWith("error: ") && Catch::Contains("\"target\": unknown target 'sm_81'") &&
                                  Catch::Contains("sm_120"));
  }

  const std::string spec = fixture_spec(dir);
  for (const char* seed : {"-1", "18446744073709551616", "1e3", "abc", "0x10"}) {
    Result result = run_quantc("run " + spec + " --random-inputs " + seed);
    INFO(seed << "\n" << result.output);
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.output, Catch::Contains("--random-inputs '" + std::string(seed) +
                                              "': the seed must be an integer from 0 to 18446744073709551615"));
  }
  CHECK(run_quantc("run " + spec + " --random-inputs 18446744073709551615").exit_code == 0);

  const std::string x1 = write_npy<float>(dir / "x1.npy", ScalarType::F32, {0, 1, 2, 3, 4, 5, 6, 7});
  const std::string x2 = write_npy<float>(dir / "x2.npy", ScalarType::F32, {7, 6, 5, 4, 3, 2, 1, 0});
  Result repeated = run_quantc("run " + spec + " --random-inputs 1 --input x=" + x1 + " --input x=" + x2);
  CHECK(repeated.exit_code == 1);
  CHECK_THAT(repeated.output, Catch::Contains("--input x=" + x2 + ": buffer 'x' is already given by --input x=" + x1));
  Result unknown = run_quantc("run " + spec + " --random-inputs 1 --input y=" + x1);
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.output, Catch::Contains("the program has no buffer named 'y'; its buffers are: x, w, b, out"));
}

TEST_CASE(".npy inputs: huge headers parse while malformed ones and wrong sizes are named", "[cli][inputs][npy]") {
  fs::path dir = scratch_dir() / "npy_inputs";
  fs::create_directories(dir);
  const std::string spec = fixture_spec(dir);
  auto npy = [&](const std::string& name, const std::string& header, std::size_t data_bytes) {
    std::string file("\x93NUMPY\x01\x00", 8);
    file += static_cast<char>(header.size() & 0xff);
    file += static_cast<char>(header.size() >> 8);
    file += header;
    file.append(data_bytes, '\0');
    return write_text(dir / name, file);
  };
  // ~30 KB of shape: the regex reader overflowed the stack here (exit by SIGSEGV).
  std::string shape = "(8";
  for (int i = 0; i < 10'000; ++i) shape += ", 1";
  Result big = run_quantc("run " + spec + " --random-inputs 1 --input x=" +
                          npy("big.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "), }\n", 32));
  INFO(big.output);
  CHECK(big.exit_code == 0);
  CHECK_THAT(big.output, Catch::Contains("out (4 x f32)"));

  Result commas = run_quantc("run " + spec + " --random-inputs 1 --input x=" +
                             npy("commas.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (8,,), }\n", 32));
  CHECK(commas.exit_code == 1);
  CHECK_THAT(commas.output, Catch::Contains("commas.npy: malformed .npy header: expected a dimension"));
  Result duplicate = run_quantc(
      "run " + spec + " --random-inputs 1 --input x=" +
      npy("dup.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), 'shape': (8,), }\n", 32));
  CHECK_THAT(duplicate.output, Catch::Contains("the key 'shape' appears twice"));
  Result short_data = run_quantc("run " + spec + " --random-inputs 1 --input x=" +
                                 npy("short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }\n", 28));
  CHECK(short_data.exit_code == 1);
  CHECK_THAT(short_data.output, Catch::Contains("needs 8 elements (32 bytes) of data, found 28 bytes (truncated)"));
  Result long_data = run_quantc("run " + spec + " --random-inputs 1 --input x=" +
                                npy("long.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }\n", 36));
  CHECK_THAT(long_data.output, Catch::Contains("needs 8 elements (32 bytes) of data, found 36 bytes (trailing bytes)"));
}

TEST_CASE("a run that cannot fit in host memory is refused before allocating and names the buffer", "[cli][memory]") {
  fs::path dir = scratch_dir() / "memory";
  fs::create_directories(dir);
  const std::string spec = write_text(dir / "huge.json", R"({"op": "dequantize_nf4", "n": 2147483648})");
  Result result = run_quantc("run " + spec + " --random-inputs 1", "QUANTC_HOST_MEMORY_LIMIT=1G ");
  INFO(result.output);
  CHECK(result.exit_code == 1);
  CHECK_THAT(result.output, Catch::StartsWith("error: running " + spec + " needs about") &&
                                Catch::Contains("more than the limit of 1.0 GiB") &&
                                Catch::Contains("the largest buffer is 'y', 2147483648 x f32 = 8589934592 bytes") &&
                                Catch::Contains("use smaller dimensions") && !Catch::Contains("bad_alloc"));
  Result profiled = run_quantc("profile " + spec, "QUANTC_HOST_MEMORY_LIMIT=1G ");
  CHECK(profiled.exit_code == 1);
  CHECK_THAT(profiled.output, Catch::Contains("the largest buffer is 'y'"));
  Result bad_limit = run_quantc("run " + spec + " --random-inputs 1", "QUANTC_HOST_MEMORY_LIMIT=lots ");
  CHECK(bad_limit.exit_code == 1);
  CHECK_THAT(bad_limit.output, Catch::Contains("QUANTC_HOST_MEMORY_LIMIT='lots': expected a byte count"));
}

TEST_CASE("emulator runs show progress on stderr only when asked or on a terminal", "[cli][progress]") {
  const std::string spec = spec_path("linear_4bit_affine_grouped.json");
  SplitResult shown = run_split("run " + spec + " --backend emulator --random-inputs 1", "QUANTC_PROGRESS=1 ");
  CHECK(shown.exit_code == 0);
  CHECK_THAT(shown.err, Catch::Contains("\remulator linear_4bit_affine_grouped: ") && Catch::Contains(" CTAs (100%)"));
  CHECK_THAT(shown.out, !Catch::Contains("CTAs"));
  SplitResult quiet = run_split("run " + spec + " --backend emulator --random-inputs 1");  // stderr is a file
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
  SplitResult profiled = run_split("profile " + spec, "QUANTC_PROGRESS=1 ");
  CHECK(profiled.exit_code == 0);
  CHECK_THAT(profiled.err, Catch::Contains("CTAs (100%)"));
}
