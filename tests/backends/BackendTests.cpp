// The backend interface and its registry (runtime/backends/): every registered backend
// compiles and runs a spec through Backend and agrees with the reference; PTX launches of
// nvcc's kernels on the emulator; the argument checks against a kernel's .param list; and
// the .entry reader those checks use, against the emulator's full parser.
#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/Builder.h"
#include "ir/ops/Spec.h"
#include "ptx/Entries.h"
#include "runtime/backends/Registry.h"
#include "runtime/backends/cuda/Driver.h"
#include "runtime/backends/emulator/EmulatorBackend.h"
#include "runtime/backends/reference/ReferenceBackend.h"

using namespace quantc;
using namespace quantc::runtime;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

/// nvcc's PTX for tests/cli/kernels/launch_kernels.cu (affine, count_odd, scale_2d).
std::string launch_kernels() {
  const std::string text = read_file(std::string(QUANTC_SOURCE_DIR) + "/tests/cli/kernels/launch_kernels.ptx");
  REQUIRE_FALSE(text.empty());
  return text;
}

ir::Program grouped_program() {
  return ir::ops::build_program(
      ir::ops::parse_spec(R"({"op": "linear_4bit_affine_grouped", "k": 128, "n": 96, "group_size": 32})"));
}

NamedBuffer floats(const std::string& name, const std::vector<float>& values) {
  return {name, HostBuffer::from(ir::ScalarType::F32, values)};
}

PtxArgument scalar_f32(float value) { return PtxArgument::of_scalar(std::bit_cast<std::uint32_t>(value), 4, "f32"); }
PtxArgument scalar_u32(std::uint32_t value) { return PtxArgument::of_scalar(value, 4, "u32"); }

/// affine(x, y, a, b, n) over 8 elements: y = a x + b.
PtxLaunch affine_launch(std::uint32_t n = 8) {
  PtxLaunch launch;
  launch.ptx = launch_kernels();
  launch.entry = "affine";
  launch.block = {32, 1, 1};
  launch.arguments = {PtxArgument::of_buffer(0), PtxArgument::of_buffer(1), scalar_f32(2.5f),
                      PtxArgument::of_scalar(static_cast<std::uint32_t>(-3), 4, "s32:-3"), scalar_u32(n)};
  return launch;
}

std::vector<NamedBuffer> affine_buffers() {
  return {floats("x", {0, 1, 2, 3, 4, 5, 6, 7}), floats("y", std::vector<float>(8, 0.0f))};
}

std::string check_message(const PtxLaunch& launch, const std::vector<NamedBuffer>& buffers) {
  try {
    check_ptx_launch(launch, buffers);
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the registry lists every backend with a description and its kernel form", "[backends][registry]") {
  REQUIRE(backend_names() == std::vector<std::string>{"reference", "emulator", "cuda"});
  CHECK(backend_names(KernelForm::Ptx) == std::vector<std::string>{"emulator", "cuda"});
  CHECK(backend_names(KernelForm::Ir) == std::vector<std::string>{"reference"});
  CHECK(backend_list() == "reference, emulator, cuda");
  for (const RegisteredBackend& entry : backends()) {
    CHECK_FALSE(entry.info.description.empty());
    CHECK(find_backend(entry.info.name) == &entry);
  }
  CHECK(find_backend("tpu") == nullptr);
  CHECK_THROWS_AS(make_backend("tpu"), UnknownBackend);
  CHECK_THROWS_WITH(make_backend("tpu"), "unknown backend 'tpu'; the backends are: reference, emulator, cuda");

  const std::unique_ptr<Backend> reference = make_backend("reference");
  CHECK(reference->name() == "reference");
  CHECK(reference->form() == KernelForm::Ir);
  const std::unique_ptr<Backend> emulator = make_backend("emulator");
  CHECK(emulator->name() == "emulator");
  CHECK(emulator->form() == KernelForm::Ptx);
  if (cuda::gpu_available()) {
    CHECK(make_backend("cuda")->name() == "cuda");
  } else {
    // Without a driver or device the CUDA backend cannot exist: a BackendUnavailable,
    // which code trying every backend catches to skip it.
    CHECK_THROWS_AS(make_backend("cuda"), BackendUnavailable);
  }
}

TEST_CASE("every backend compiles and runs a spec through the interface, bit for bit like the reference",
          "[backends][registry]") {
  const ir::Program program = grouped_program();
  reference::ReferenceBackend oracle;
  const BackendKernel oracle_kernel = oracle.compile(program, {});
  CHECK(oracle_kernel.ptx.empty());
  CHECK_FALSE(oracle_kernel.target.has_value());
  const BufferSet inputs = random_buffers(oracle_kernel.program, 11);
  BufferSet expected = inputs;
  RunOptions counting;
  counting.counters = true;
  const RunReport oracle_report = oracle.run(oracle_kernel, expected, counting);
  REQUIRE(oracle_report.statistics.has_value());
  CHECK(oracle_report.statistics->global_stores == 24);  // the fast schedule: one 4-wide store per 4 outputs
  CHECK_FALSE(oracle_report.counters.has_value());
  CHECK_FALSE(oracle.run(oracle_kernel, expected = inputs).has_counters());  // counters only on request

  for (const RegisteredBackend& entry : backends()) {
    DYNAMIC_SECTION("backend " << entry.info.name) {
      std::unique_ptr<Backend> backend;
      try {
        backend = entry.make();
      } catch (const BackendUnavailable& unavailable) {
        WARN("SKIPPED backend " << entry.info.name << ": " << unavailable.what());
        continue;
      }
      const BackendKernel kernel = backend->compile(program, {});
      CHECK(kernel.ptx.empty() == (backend->form() == KernelForm::Ir));
      BufferSet buffers = inputs;
      const RunReport report = backend->run(kernel, buffers, counting);
      CHECK(buffers.at("out").bytes == expected.at("out").bytes);
      if (entry.info.name == "emulator") {
        REQUIRE(report.counters.has_value());
        CHECK(report.counters->ctas == program.workgroup_count[0]);
      }
    }
  }
}

TEST_CASE("compile follows the requested target and pipeline, else the backend's default", "[backends]") {
  const ir::Program program = grouped_program();
  emulator::EmulatorBackend emulator;
  const BackendKernel by_default = emulator.compile(program, {});
  REQUIRE(by_default.target.has_value());
  CHECK(by_default.target->sm == 80);
  CHECK_THAT(by_default.ptx, Catch::Contains(".target sm_80"));
  const BackendKernel for_hopper = emulator.compile(program, lower::CompileOptions(ptx::Target{90}));
  CHECK(for_hopper.target->sm == 90);
  CHECK_THAT(for_hopper.ptx, Catch::Contains(".target sm_90"));

  CompileOptions unoptimized;
  unoptimized.passes.level = lower::OptimizationLevel::O0;
  reference::ReferenceBackend reference;
  CHECK(reference.compile(program, unoptimized).program.buffers == program.buffers);
}

TEST_CASE("a PTX backend refuses a kernel without PTX, an IR backend refuses PTX launches", "[backends]") {
  emulator::EmulatorBackend emulator;
  BufferSet buffers = allocate_buffers(grouped_program());
  CHECK_THROWS_WITH(emulator.run(BackendKernel{grouped_program(), {}, std::nullopt}, buffers),
                    Catch::Contains("backend 'emulator' runs PTX, but kernel 'linear_4bit_affine_grouped' has none"));
  reference::ReferenceBackend reference;
  std::vector<NamedBuffer> named = affine_buffers();
  CHECK_THROWS_WITH(reference.launch_ptx(affine_launch(), named), Catch::Contains("backend 'reference' runs IR, not PTX"));
}

TEST_CASE("launch_ptx runs nvcc's PTX on the emulator and reports its counters", "[backends][ptx]") {
  emulator::EmulatorBackend emulator;
  std::vector<NamedBuffer> buffers = affine_buffers();
  const RunReport report = emulator.launch_ptx(affine_launch(), buffers);
  CHECK(buffers[1].buffer.as<float>() == std::vector<float>{-3, -0.5f, 2, 4.5f, 7, 9.5f, 12, 14.5f});
  CHECK(buffers[0].buffer.as<float>() == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  REQUIRE(report.counters.has_value());
  CHECK(report.counters->threads == 32);
  CHECK(report.counters->global_load_requests == 1);
  CHECK(report.counters->unique_global_bytes_written == 32);

  SECTION("the module's only entry is taken when none is named") {
    PtxLaunch launch = affine_launch();
    const std::string text = launch.ptx;
    launch.ptx = text.substr(0, text.find("// .globl\tcount_odd"));
    launch.entry.clear();
    std::vector<NamedBuffer> again = affine_buffers();
    emulator.launch_ptx(launch, again);
    CHECK(again[1].buffer.as<float>() == buffers[1].buffer.as<float>());
  }
  SECTION("an out-of-bounds access stops the launch; the buffers keep their bytes") {
    std::vector<NamedBuffer> short_buffers = affine_buffers();
    CHECK_THROWS_WITH(emulator.launch_ptx(affine_launch(32), short_buffers),
                      Catch::Contains("out-of-bounds global load") && Catch::Contains("'x' of 32 bytes"));
    CHECK(short_buffers[0].buffer.bytes.size() == 32);
    CHECK(short_buffers[1].buffer.bytes.size() == 32);
  }
}

TEST_CASE("check_ptx_launch names the entry, the parameter and the argument for every mismatch", "[backends][ptx]") {
  const std::vector<NamedBuffer> buffers = affine_buffers();
  CHECK(check_message(affine_launch(), buffers).empty());
  CHECK(check_ptx_launch(affine_launch(), buffers).name == "affine");

  PtxLaunch launch = affine_launch();
  launch.entry = "saxpy";
  CHECK(check_message(launch, buffers) == "the PTX module has no entry 'saxpy'; its entries: affine, count_odd, scale_2d");
  launch.entry.clear();
  CHECK_THAT(check_message(launch, buffers), Catch::Contains("has 3 entries (affine, count_odd, scale_2d)"));

  launch = affine_launch();
  launch.arguments.pop_back();
  CHECK_THAT(check_message(launch, buffers),
             Catch::Contains("kernel affine takes 5 parameters (.u64 affine_param_0, .u64 affine_param_1, .f32 "
                             "affine_param_2, .u32 affine_param_3, .u32 affine_param_4), 4 arguments were given"));
  launch = affine_launch();
  launch.arguments[2] = PtxArgument::of_buffer(1);
  CHECK_THAT(check_message(launch, buffers),
             Catch::Contains("parameter 2 ('affine_param_2', .f32): argument 2 is buffer 'y' (8 x f32), but a buffer "
                             "needs a .u64 or .b64 pointer parameter"));
  launch = affine_launch();
  launch.arguments[0] = scalar_u32(0);
  CHECK_THAT(check_message(launch, buffers),
             Catch::Contains("parameter 0 ('affine_param_0', .u64): argument 0 is a scalar u32 (4 bytes), but the "
                             "parameter holds 8 bytes (a pointer: give a buffer)"));
  launch = affine_launch();
  launch.arguments[1] = PtxArgument::of_buffer(2);
  CHECK_THAT(check_message(launch, buffers), Catch::Contains("argument 1 names buffer #2, but 2 buffers were given"));
  launch = affine_launch();
  launch.grid = {1, 0, 1};
  CHECK_THAT(check_message(launch, buffers), Catch::Contains("grid (1, 0, 1)"));
  launch = affine_launch();
  launch.ptx = "// nothing here\n";
  CHECK(check_message(launch, buffers) == "the PTX module has no .entry (no kernel to launch)");
}

TEST_CASE("read_entries reads .entry parameter lists as declared, skipping comments", "[backends][ptx]") {
  const std::vector<ptx::Entry> entries = ptx::read_entries(launch_kernels());
  REQUIRE(entries.size() == 3);
  CHECK(ptx::entry_names(entries) == "affine, count_odd, scale_2d");
  REQUIRE(entries[2].parameters.size() == 4);
  CHECK(entries[2].parameters[1].name == "scale_2d_param_1");
  CHECK(entries[2].parameters[1].spelling() == ".f64");
  CHECK(entries[2].parameters[1].bytes() == 8);
  CHECK_FALSE(entries[2].parameters[1].holds_pointer());
  CHECK(entries[2].parameters[0].holds_pointer());

  const std::vector<ptx::Entry> odd = ptx::read_entries(R"(
    .version 8.0 // .entry fake(.param .u32 nope)
    .target sm_90
    /* .entry also_fake() */
    .file 1 "/tmp/a (b).cu"
    .visible .entry no_parameters()
    { ret; }
    .entry attributes(.param .u64 .ptr .global .align 16 p, .param .align 8 .b8 s[24], .param .s16 h)
    .maxntid 128, 1, 1
    { ret; }
    .weak .entry bare
    { ret; }
  )");
  REQUIRE(odd.size() == 3);
  CHECK(odd[0].name == "no_parameters");
  CHECK(odd[0].parameters.empty());
  CHECK(odd[0].line == 6);
  REQUIRE(odd[1].parameters.size() == 3);
  CHECK(odd[1].parameters[0].holds_pointer());
  CHECK(odd[1].parameters[1].array);
  CHECK(odd[1].parameters[1].bytes() == 24);
  CHECK(odd[1].parameters[1].spelling() == ".b8[24]");
  CHECK_FALSE(odd[1].parameters[1].holds_pointer());
  CHECK(odd[1].parameters[2].bytes() == 2);
  CHECK(odd[2].name == "bare");

  CHECK_THROWS_WITH(ptx::read_entries(".entry k(.param .q32 x)"), Catch::Contains("PTX line 1") && Catch::Contains("'.q32'"));
  CHECK_THROWS_WITH(ptx::read_entries(".entry k(.param .u32 x\n .param .u32 y)"),
                    Catch::Contains("PTX line 2") && Catch::Contains("expected ',' or ')' after parameter x"));
  CHECK_THROWS_WITH(ptx::read_entries(".entry k(.param .u32"), Catch::Contains("the module ends"));
}

TEST_CASE("read_entries agrees with the emulator's parser on every op's PTX and on nvcc's", "[backends][ptx]") {
  std::vector<std::string> modules = {launch_kernels()};
  for (const auto& file : std::filesystem::directory_iterator(std::string(QUANTC_SOURCE_DIR) + "/examples/specs")) {
    const ir::Program program = ir::ops::build_program(ir::ops::parse_spec(read_file(file.path().string())));
    modules.push_back(lower::compile(program, lower::CompileOptions(ptx::Target{90})).ptx);
  }
  for (const std::string& text : modules) {
    const emulator::Module module = emulator::parse_ptx(text);
    const std::vector<ptx::Entry> entries = ptx::read_entries(text);
    REQUIRE(entries.size() == module.kernels.size());
    for (std::size_t k = 0; k < entries.size(); ++k) {
      const emulator::Kernel& kernel = module.kernels[k];
      INFO("kernel " << kernel.name);
      CHECK(entries[k].name == kernel.name);
      REQUIRE(entries[k].parameters.size() == kernel.parameters.size());
      for (std::size_t p = 0; p < kernel.parameters.size(); ++p) {
        CHECK(entries[k].parameters[p].name == kernel.parameters[p].name);
        CHECK(entries[k].parameters[p].bytes() == kernel.parameters[p].size);
      }
    }
  }
}

TEST_CASE("trees of and/or/xor/not over at most three inputs are one lop3 each, bit for bit on both backends",
          "[backends][lop3]") {
  using namespace quantc::ir;
  ProgramBuilder builder("logic_trees");
  BufferRef a = builder.input("a", ScalarType::U32, 64), b = builder.input("b", ScalarType::U32, 64);
  BufferRef c = builder.input("c", ScalarType::U32, 64);
  BufferRef out = builder.output("out", ScalarType::U32, 64 * 5);
  builder.launch({64, 1, 1}, {1, 1, 1});
  builder.body([&](Body& body) {
    Expr i = body.let("i", invocation_id(0));
    Expr x = body.let("x", a[i]), y = body.let("y", b[i]), z = body.let("z", c[i]);
    body.store(out, i * 5u, y ^ ((x ^ y) & u32(0x0E0E0E0Eu)));                         // a bit select: one lop3
    body.store(out, i * 5u + 1u, (x & y) | (!x & z));                                  // a mux through not: one lop3
    body.store(out, i * 5u + 2u, ((x ^ z) & y) | ((y & z) ^ x));                       // leaves repeated: one lop3
    body.store(out, i * 5u + 3u, ((((x | y) | z) | (x << 1u)) | (y << 2u)) | (z << 3u));  // six leaves: pairs
    body.store(out, i * 5u + 4u, (x & u32(0xF0F0F0F0u)) | (y & u32(0x0F0F0F0Fu)));    // four leaves: a pair
  });
  const Program program = builder.build();
  CompileOptions options;
  options.target = ptx::parse_target("sm_90");
  emulator::EmulatorBackend emulator;
  const BackendKernel kernel = emulator.compile(program, options);
  // The trees share no subtree (CSE would make one a leaf of the others). One lop3 for each
  // of the first three stores, two and an or for the chain (six leaves
  // in three pairs), one for the last (and + lop3).
  const std::string& ptx = kernel.ptx;
  std::size_t lop3 = 0, ors = 0;
  for (std::size_t at = ptx.find("lop3.b32"); at != std::string::npos; at = ptx.find("lop3.b32", at + 1)) ++lop3;
  for (std::size_t at = ptx.find("\tor.b32"); at != std::string::npos; at = ptx.find("\tor.b32", at + 1)) ++ors;
  CHECK(lop3 == 6);
  CHECK(ors == 1);
  CHECK(ptx.find("xor.b32") == std::string::npos);
  CHECK(ptx.find("not.b32") == std::string::npos);
  const BufferSet inputs = random_buffers(program, 7);
  BufferSet emulated = inputs, interpreted = inputs;
  emulator.run(kernel, emulated);
  reference::ReferenceBackend reference;
  reference.run(reference.compile(program, {}), interpreted);
  CHECK(emulated.at("out").bytes == interpreted.at("out").bytes);
  // Against the formulas themselves, on the host.
  auto words = [](const HostBuffer& buffer) {
    std::vector<std::uint32_t> values(buffer.bytes.size() / 4);
    std::memcpy(values.data(), buffer.bytes.data(), buffer.bytes.size());
    return values;
  };
  const auto xs = words(inputs.at("a")), ys = words(inputs.at("b")), zs = words(inputs.at("c"));
  const auto got = words(emulated.at("out"));
  for (std::size_t j = 0; j < 64; ++j) {
    const std::uint32_t x = xs[j], y = ys[j], z = zs[j];
    INFO("invocation " << j);
    CHECK(got[j * 5] == (y ^ ((x ^ y) & 0x0E0E0E0Eu)));
    CHECK(got[j * 5 + 1] == ((x & y) | (~x & z)));
    CHECK(got[j * 5 + 2] == (((x ^ z) & y) | ((y & z) ^ x)));
    CHECK(got[j * 5 + 3] == (x | y | z | (x << 1) | (y << 2) | (z << 3)));
    CHECK(got[j * 5 + 4] == ((x & 0xF0F0F0F0u) | (y & 0x0F0F0F0Fu)));
  }
}
