// `quantc run FILE.ptx` and `quantc profile FILE.ptx`: nvcc's PTX (kernels/launch_kernels.cu,
// compiled into the checked-in kernels/launch_kernels.ptx) launched end to end on the
// emulator with file, zero-filled and scalar arguments, the values written with --output
// checked; and every error path, each exiting 1 with "error: ..." and leaving files alone.
#include <algorithm>
#include <cstring>

#include "CliHarness.h"

namespace {

using quantc::ir::ScalarType;

std::string kernels() { return std::string(QUANTC_SOURCE_DIR) + "/tests/cli/kernels/launch_kernels.ptx"; }

fs::path ptx_dir() {
  fs::path dir = scratch_dir() / "ptx";
  fs::create_directories(dir);
  return dir;
}

/// `quantc run kernels affine` on x = 0..7 into a zero-filled y of 8: y = 2.5 x - 3.
std::string affine_arguments(const std::string& x) {
  return " --entry affine --grid 1 --block 32 --arg " + x + " --arg y:f32:8 --arg f32:2.5 --arg s32:-3 --arg u32:8";
}

/// Whether `label` is followed, after whitespace, by the word `value` somewhere in `text`. Not a
/// Catch::Matches regex: libstdc++'s std::regex recurses once per character and overflows
/// the stack on an output this long under AddressSanitizer (scripts/sanitize.sh).
bool has_count(const std::string& text, const std::string& label, const std::string& value) {
  for (std::size_t at = text.find(label); at != std::string::npos; at = text.find(label, at + 1)) {
    const std::size_t begin = at + label.size();
    const std::size_t word = text.find_first_not_of(" \t\n", begin);
    if (word == begin || word == std::string::npos) continue;
    const std::size_t end = text.find_first_of(" \t\n", word);
    if (end != std::string::npos && text.compare(word, end - word, value) == 0) return true;
  }
  return false;
}

std::string write_x(const fs::path& dir) {
  return write_npy<float>(dir / "x.npy", ScalarType::F32, {0, 1, 2, 3, 4, 5, 6, 7});
}

/// Runs `arguments` and checks it failed the way a user error must: exit 1, "error: "
/// first, `expected` in the message, and `keep` untouched.
void check_user_error(const std::string& arguments, const std::string& expected, const fs::path& keep) {
  Result result = run_quantc(arguments);
  INFO("quantc " << arguments << "\n" << result.output);
  CHECK(result.exit_code == 1);
  CHECK_THAT(result.output, Catch::StartsWith("error: ") && Catch::Contains(expected));
  CHECK(read_text(keep) == "precious");
}

}  // namespace

TEST_CASE("quantc run FILE.ptx runs nvcc's kernel on the emulator with file, buffer and scalar arguments",
          "[cli][ptx]") {
  fs::path dir = ptx_dir();
  const std::string x = write_x(dir);
  fs::path y = dir / "y.npy";
  fs::remove(y);
  Result result = run_quantc("run " + kernels() + affine_arguments(x) + " --output 1=" + y.string());
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("arg 1 y (8 x f32): [-3 -0.5 2 4.5 7 9.5 12 14.5]"));
  NpyArray written = quantc::runtime::read_npy(y.string());
  CHECK(written.buffer.element == ScalarType::F32);
  CHECK(written.shape == std::vector<std::uint64_t>{8});
  CHECK(written.buffer.as<float>() == std::vector<float>{-3, -0.5f, 2, 4.5f, 7, 9.5f, 12, 14.5f});

  SECTION("the input buffer is not written back; only --output files are") {
    CHECK(quantc::runtime::read_npy(x).buffer.as<float>() == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  }
  SECTION("without --output every buffer argument is printed") {
    Result all = run_quantc("run " + kernels() + affine_arguments(x));
    REQUIRE(all.exit_code == 0);
    CHECK_THAT(all.output, Catch::Contains("arg 0 x (8 x f32): [0 1 2 3 4 5 6 7]") &&
                               Catch::Contains("arg 1 y (8 x f32): [-3 -0.5 2 4.5 7 9.5 12 14.5]"));
  }
  SECTION("a u64 scalar and an atomic: count_odd") {
    const std::string v = write_npy<std::int32_t>(dir / "v.npy", ScalarType::I32, {1, 2, 3, -5, 8, 13, 0, 7, 9, 4});
    fs::path count = dir / "count.npy";
    Result odd = run_quantc("run " + kernels() + " --entry count_odd --grid 2 --block 8 --arg " + v +
                            " --arg count:u32:1 --arg u64:10 --output 1=" + count.string());
    INFO(odd.output);
    REQUIRE(odd.exit_code == 0);
    NpyArray counted = quantc::runtime::read_npy(count.string());
    CHECK(counted.buffer.element == ScalarType::U32);
    CHECK(counted.buffer.as<std::uint32_t>() == std::vector<std::uint32_t>{6});
  }
  SECTION("2-D grid and block, an f64 scalar, an in-place file buffer whose shape is kept") {
    std::vector<double> values(6 * 5);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = double(i);
    const std::string v = write_text(
        dir / "grid.npy", quantc::runtime::to_npy_bytes({HostBuffer::from(ScalarType::F64, values), {6, 5}}));
    fs::path scaled = dir / "scaled.npy";
    Result run = run_quantc("run " + kernels() + " --entry scale_2d --grid 2,2 --block 4,4 --arg " + v +
                            " --arg f64:-0.25 --arg u32:5 --arg u32:6 --output 0=" + scaled.string());
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    NpyArray result_array = quantc::runtime::read_npy(scaled.string());
    CHECK(result_array.shape == std::vector<std::uint64_t>{6, 5});
    std::vector<double> expected(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) expected[i] = values[i] * -0.25;
    CHECK(result_array.buffer.as<double>() == expected);
  }
  SECTION("a file whose text starts like PTX is PTX whatever its name; --stats prints the emulator's counters") {
    const std::string renamed = write_text(dir / "kernel.txt", read_text(kernels()));
    Result sniffed = run_quantc("run " + renamed + affine_arguments(x) + " --stats");
    INFO(sniffed.output);
    REQUIRE(sniffed.exit_code == 0);
    CHECK_THAT(sniffed.output, Catch::Contains("arg 1 y (8 x f32): [-3 -0.5 2 4.5 7 9.5 12 14.5]") &&
                                   Catch::Contains("kernel affine (target sm_80): 1 CTAs, 32 threads") &&
                                   Catch::Contains("load requests"));
  }
}

TEST_CASE("quantc profile FILE.ptx prints the emulator's counters per --output element", "[cli][ptx]") {
  fs::path dir = ptx_dir();
  const std::string x = write_x(dir);
  fs::path y = dir / "profiled_y.npy";
  fs::remove(y);
  Result profile = run_quantc("profile " + kernels() + affine_arguments(x) + " --output 1=" + y.string());
  INFO(profile.output);
  REQUIRE(profile.exit_code == 0);
  CHECK_THAT(profile.output, Catch::Contains("kernel affine (target sm_80): 1 CTAs, 32 threads, 8 output elements") &&
                                 Catch::Contains("load requests") && Catch::Contains("store requests") &&
                                 Catch::Contains("unique bytes read") && Catch::Contains("H100 SXM") &&
                                 Catch::Contains("H200") && Catch::Contains("model assumptions"));
  // One warp: the 8 active lanes load 32 contiguous bytes (one sector) once.
  CHECK(has_count(profile.output, "load requests", "1"));
  CHECK(has_count(profile.output, "unique bytes read", "32"));
  CHECK(quantc::runtime::read_npy(y.string()).buffer.as<float>() ==
        std::vector<float>{-3, -0.5f, 2, 4.5f, 7, 9.5f, 12, 14.5f});
  // Without --output, every buffer argument counts: 8 + 8.
  Result all = run_quantc("profile " + kernels() + affine_arguments(x));
  CHECK_THAT(all.output, Catch::Contains("16 output elements"));
}

TEST_CASE("quantc run FILE.ptx: every user error exits 1 naming the value and leaves files untouched",
          "[cli][ptx]") {
  fs::path dir = ptx_dir();
  const std::string x = write_x(dir);
  const fs::path keep = dir / "keep.npy";
  write_text(keep, "precious");
  const std::string out = " --output 1=" + keep.string();
  const std::string run = "run " + kernels();
  const std::string shape = " --grid 1 --block 32";

  SECTION("entries") {
    check_user_error(run + " --entry saxpy" + shape + " --arg " + x + " --arg y:f32:8" + out,
                     "the PTX module has no entry 'saxpy'; its entries: affine, count_odd, scale_2d", keep);
    check_user_error(run + shape + " --arg " + x + " --arg y:f32:8" + out,
                     "the PTX module has 3 entries (affine, count_odd, scale_2d); name the one to launch (quantc: "
                     "--entry NAME)",
                     keep);
  }
  SECTION("launch shape") {
    const std::string arguments = " --entry affine --arg " + x + " --arg y:f32:8 --arg f32:1 --arg s32:0 --arg u32:8";
    check_user_error(run + arguments + " --grid 4,x --block 32" + out, "--grid '4,x': expected X[,Y,Z]", keep);
    check_user_error(run + arguments + " --grid 0 --block 32" + out, "--grid '0'", keep);
    check_user_error(run + arguments + " --grid 1,1,1,1 --block 32" + out, "--grid '1,1,1,1'", keep);
    check_user_error(run + arguments + " --grid 1 --block 32,-1" + out, "--block '32,-1'", keep);
    check_user_error(run + arguments + " --block 32" + out, "needs --grid", keep);
    check_user_error(run + arguments + " --grid 1 --block 32 --shared-bytes lots" + out, "--shared-bytes 'lots'", keep);
    check_user_error(run + arguments + " --grid 1 --block 2048" + out, "blocks hold 1..1024 threads", keep);
  }
  SECTION("malformed --arg values") {
    const std::string prefix = run + " --entry affine" + shape + " --arg " + x + " --arg y:f32:8";
    check_user_error(prefix + " --arg q32:1 --arg s32:0 --arg u32:8" + out, "unknown scalar type 'q32'", keep);
    check_user_error(prefix + " --arg f32:fast --arg s32:0 --arg u32:8" + out, "--arg 'f32:fast': f32 takes a decimal number",
                     keep);
    check_user_error(prefix + " --arg f32:1e39 --arg s32:0 --arg u32:8" + out, "within the f32 range", keep);
    check_user_error(prefix + " --arg f32:1 --arg s32:2147483648 --arg u32:8" + out,
                     "s32 takes an integer in -2147483648..2147483647", keep);
    check_user_error(prefix + " --arg f32:1 --arg s32:0 --arg u32:-1" + out, "u32 takes an integer in 0..4294967295", keep);
    check_user_error(prefix + " --arg f32:1 --arg s32:0 --arg 8" + out, "--arg '8' (argument 4): expected FILE.npy", keep);
    check_user_error(run + " --entry affine" + shape + " --arg " + x + " --arg y:f77:8" + out,
                     "unknown buffer element type 'f77'", keep);
    check_user_error(run + " --entry affine" + shape + " --arg " + x + " --arg y:f32:0" + out,
                     "element count must be an integer from 1", keep);
    check_user_error(run + " --entry affine" + shape + " --arg " + x + " --arg :f32:8" + out, "needs a name", keep);
    check_user_error(run + " --entry affine" + shape + " --arg " + (dir / "absent.npy").string() + out,
                     "absent.npy: cannot open .npy file", keep);
    check_user_error(run + " --entry affine" + shape + " --arg " + write_text(dir / "junk.npy", "junk") + out,
                     "not a .npy file", keep);
  }
  SECTION("malformed --output values") {
    const std::string arguments = " --entry affine" + shape + " --arg " + x +
                                  " --arg y:f32:8 --arg f32:1 --arg s32:0 --arg u32:8 --output ";
    check_user_error(run + arguments + "y=" + keep.string(), "--output 'y=" + keep.string() + "': for a PTX kernel expected INDEX=FILE.npy", keep);
    check_user_error(run + arguments + "5=" + keep.string(), "argument 5 does not exist; 5 --arg values were given (0..4)", keep);
    check_user_error(run + " --entry affine" + shape + " --output 0=" + keep.string(),
                     "argument 0 does not exist; no --arg values were given", keep);
    check_user_error(run + arguments + "2=" + keep.string(), "argument 2 is the scalar 'f32:1'", keep);
    check_user_error(run + arguments + "1= --output 1=" + keep.string(), "expected INDEX=FILE.npy", keep);
  }
  SECTION("arguments that do not match the kernel's .param list, named by parameter") {
    const std::string prefix = run + " --entry affine" + shape;
    // A .u64 parameter may be a pointer or an integer (count_odd's n): a u64 scalar is
    // passed as is, and the kernel's load through it faults.
    check_user_error(prefix + " --arg u64:0 --arg y:f32:8 --arg f32:1 --arg s32:0 --arg u32:8" + out,
                     "out-of-bounds global load of 4 bytes at address 0x0, which is not inside any buffer", keep);
    check_user_error(prefix + " --arg u32:0 --arg y:f32:8 --arg f32:1 --arg s32:0 --arg u32:8" + out,
                     "parameter 0 ('affine_param_0', .u64): argument 0 is a scalar u32:0 (4 bytes), but the parameter "
                     "holds 8 bytes (a pointer: give a buffer)",
                     keep);
    check_user_error(prefix + " --arg " + x + " --arg y:f32:8 --arg z:f32:8 --arg s32:0 --arg u32:8" + out,
                     "parameter 2 ('affine_param_2', .f32): argument 2 is buffer 'z' (8 x f32), but a buffer needs a "
                     ".u64 or .b64 pointer parameter",
                     keep);
    check_user_error(prefix + " --arg " + x + " --arg y:f32:8 --arg f64:1 --arg s32:0 --arg u32:8" + out,
                     "parameter 2 ('affine_param_2', .f32): argument 2 is a scalar f64:1 (8 bytes), but the parameter "
                     "holds 4 bytes",
                     keep);
    check_user_error(prefix + " --arg " + x + " --arg y:f32:8 --arg f32:1" + out,
                     "kernel affine takes 5 parameters (.u64 affine_param_0, .u64 affine_param_1, .f32 affine_param_2, "
                     ".u32 affine_param_3, .u32 affine_param_4), 3 arguments were given",
                     keep);
  }
  SECTION("an out-of-bounds access during the run: the emulator's message") {
    check_user_error(run + " --entry affine" + shape + " --arg " + x + " --arg y:f32:8 --arg f32:1 --arg s32:0 --arg u32:32" +
                         out,
                     "out-of-bounds global load of 4 bytes", keep);
    check_user_error(run + " --entry affine" + shape + " --arg " + x + " --arg y:f32:8 --arg f32:1 --arg s32:0 --arg u32:32" +
                         out,
                     "in buffer 0 'x' of 32 bytes", keep);
  }
  SECTION("text that does not parse as PTX: the emulator's message with the line") {
    std::string broken = read_text(kernels());
    const std::size_t at = broken.find("fma.rn.f32");
    REQUIRE(at != std::string::npos);
    broken.replace(at, 10, "fma.rn.q32");
    const std::size_t line = 1 + std::count(broken.begin(), broken.begin() + static_cast<long>(at), '\n');
    const std::string path = write_text(dir / "broken.ptx", broken);
    check_user_error("run " + path + " --entry affine" + shape + " --arg " + x +
                         " --arg y:f32:8 --arg f32:1 --arg s32:0 --arg u32:8" + out,
                     "PTX line " + std::to_string(line), keep);
    check_user_error("run " + write_text(dir / "prose.ptx", "hello, world\n") + " --entry affine" + shape + " --arg " + x +
                         " --arg y:f32:8" + out,
                     "PTX line 1", keep);
  }
  SECTION("backends: the reference runs IR, not PTX; cuda without a driver says so; unknown names are listed") {
    const std::string arguments = " --entry affine" + shape + " --arg " + x + " --arg y:f32:8 --arg f32:1 --arg s32:0 --arg u32:8";
    check_user_error(run + arguments + " --backend reference" + out,
                     "backend 'reference' runs quantc IR, not PTX; run '" + kernels() +
                         "' with --backend emulator or --backend cuda",
                     keep);
    Result cuda = run_quantc(run + arguments + " --backend cuda" + out, "QUANTC_CUDA_DRIVER=/nonexistent/libcuda.so.1 ");
    CHECK(cuda.exit_code == 1);
    CHECK_THAT(cuda.output, Catch::StartsWith("error: ") && Catch::Contains("no CUDA driver found") &&
                                Catch::Contains("--backend emulator"));
    CHECK(read_text(keep) == "precious");
    Result unknown = run_quantc(run + arguments + " --backend tpu" + out);
    CHECK(unknown.exit_code == 1);
    CHECK_THAT(unknown.output, Catch::StartsWith("error: ") && Catch::Contains("tpu") && Catch::Contains("reference") &&
                                   Catch::Contains("emulator") && Catch::Contains("cuda"));
    CHECK(read_text(keep) == "precious");
  }
  SECTION("flags of the other mode") {
    check_user_error(run + " --entry affine" + shape + " --input x=" + x + out,
                     "--input applies to op specs; '" + kernels() + "' is a PTX module", keep);
    check_user_error(run + " --entry affine" + shape + " -O1" + out, "-O applies to op specs", keep);
    check_user_error("run " + spec_path("linear_4bit.json") + " --random-inputs 1 --arg u32:1 --output out=" + keep.string(),
                     "--arg applies to PTX modules", keep);
    check_user_error("profile " + spec_path("linear_4bit.json") + " --grid 1", "--grid applies to PTX modules", keep);
    check_user_error("profile " + kernels() + " --entry affine" + shape + " --seed 3", "--seed applies to op specs", keep);
  }
}

TEST_CASE("quantc run lists the registry's backends in --help and compares against any of them", "[cli][backends]") {
  Result help = run_quantc("run --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.output, Catch::Contains("reference: the IR interpreter") && Catch::Contains("[runs IR]") &&
                              Catch::Contains("emulator: the PTX on the CPU") && Catch::Contains("cuda: a CUDA GPU") &&
                              Catch::Contains("{reference,emulator,cuda}"));
  Result compared = run_quantc("run " + spec_path("linear_4bit.json") + " --random-inputs 2 --compare emulator --stats");
  INFO(compared.output);
  CHECK(compared.exit_code == 0);
  CHECK_THAT(compared.output, Catch::Contains("compare reference vs emulator: out: bit-exact (1024 elements)") &&
                                  Catch::Contains("statistics (1024 outputs): per output"));
  Result emulated = run_quantc("run " + spec_path("linear_4bit.json") + " --backend emulator --random-inputs 2 --stats");
  CHECK_THAT(emulated.output, Catch::Contains("kernel linear_4bit (target sm_80)") && Catch::Contains("1024 output elements"));
  Result unknown = run_quantc("run " + spec_path("linear_4bit.json") + " --random-inputs 2 --compare tpu");
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.output, Catch::Contains("--compare 'tpu': no such backend; the backends are: reference, emulator, cuda"));
}
