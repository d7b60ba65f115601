// End-to-end tests of the quantc binary: each subcommand, each error path (exit code
// and message), .npy round trips and the no-clobber guarantee for output files.
#include <sys/stat.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <tuple>

#include "CliHarness.h"
#include "ir/IR.h"

TEST_CASE("quantc ops lists every registered op, as text and as JSON", "[cli]") {
  Result text = run_quantc("ops");
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.output, Catch::Contains("linear_4bit_affine_grouped") && Catch::Contains("group_size") &&
                              Catch::Contains("input features, the reduction length (the seed's in_dim) (> 0, multiple of 8) "
                                             "[also \"in_dim\"]"));
  Result json = run_quantc("ops --json");
  REQUIRE(json.exit_code == 0);
  nlohmann::json ops = nlohmann::json::parse(json.output);
  bool found = false;
  for (const auto& op : ops) {
    if (op["name"] == "linear_4bit_affine_grouped") {
      found = true;
      CHECK(op["params"].size() == 7);  // k, n, group_size, act_order, schedule, activation, m
      CHECK(op["params"][6]["name"] == "m");
      CHECK(op["params"][6]["default"] == 1);
      CHECK(op["params"][0]["name"] == "k");
      CHECK(op["params"][0]["aliases"] == nlohmann::json::array({"in_dim"}));
      CHECK(op["params"][1]["name"] == "n");
      CHECK(op["params"][1]["aliases"] == nlohmann::json::array({"out_dim"}));
      CHECK(op["params"][2]["aliases"] == nlohmann::json::array());       // group_size
      CHECK(op["params"][3]["name"] == "act_order");
      CHECK(op["params"][3]["default"] == false);
      CHECK(op["params"][4]["name"] == "schedule");
      CHECK(op["params"][5]["name"] == "activation");
      CHECK(op["params"][5]["default"] == "f32");
      CHECK(op["params"][5]["choices"] == nlohmann::json::array({"f32", "f16", "bf16"}));
      CHECK(op["buffers"][6]["name"] == "out");
      CHECK(op["buffers"][6]["element_from"] == "activation");
      CHECK(op["buffers"][0]["element_from"] == "activation");  // x
      CHECK(op["buffers"][1]["name"] == "perm");                // act_order only: x's gather order
      CHECK(op["buffers"][1]["shape"] == nlohmann::json{"k"});
      CHECK_FALSE(op["buffers"][2].contains("element_from"));     // w: u32 words whatever the activations
      CHECK(op["buffers"][2]["shape"] == nlohmann::json{"k/8", "n"});  // w's logical shape
      CHECK(op["buffers"][0]["shape"] == nlohmann::json{"m", "k"});
    }
  }
  CHECK(found);
}

TEST_CASE("quantc emit and ir print PTX and IR for a spec", "[cli]") {
  Result ptx = run_quantc("emit " + spec_path("linear_4bit_affine_grouped.json"));
  REQUIRE(ptx.exit_code == 0);
  CHECK_THAT(ptx.output, Catch::Contains(".target sm_90") && Catch::Contains(".visible .entry linear_4bit_affine_grouped"));
  Result override_target = run_quantc("emit " + spec_path("linear_4bit_affine_grouped.json") + " --target sm_80");
  CHECK_THAT(override_target.output, Catch::Contains(".target sm_80"));
  fs::path out = scratch_dir() / "kernel.ptx";
  CHECK(run_quantc("emit " + spec_path("linear_4bit.json") + " -o " + out.string()).exit_code == 0);
  CHECK_THAT(read_text(out), Catch::Contains(".visible .entry linear_4bit"));
  Result ir = run_quantc("ir " + spec_path("linear_4bit.json"));
  CHECK(ir.exit_code == 0);
  CHECK_THAT(ir.output, Catch::Contains("region \"vyre-libs::nn::linear_4bit\""));
}

TEST_CASE("quantc emit --metadata writes the launch metadata that the PTX header and the IR state", "[cli][metadata]") {
  fs::path dir = scratch_dir();
  for (const std::string spec : {"linear_4bit_affine_grouped.json", "nf4_gemm.json", "quantize_nf4.json"}) {
    INFO(spec);
    const fs::path ptx_path = dir / "kernel.ptx", metadata_path = dir / "kernel.json";
    Result emit = run_quantc("emit " + spec_path(spec) + " -o " + ptx_path.string() + " --metadata " +
                             metadata_path.string());
    REQUIRE(emit.exit_code == 0);
    const nlohmann::json metadata = nlohmann::json::parse(read_text(metadata_path));
    const std::string ptx = read_text(ptx_path);
    const std::string entry = metadata["entry"];
    CHECK_THAT(ptx, Catch::Contains(".visible .entry " + entry + "("));
    // The IR's own header (printed by another path) declares the same launch shape.
    Result ir = run_quantc("ir " + spec_path(spec));
    REQUIRE(ir.exit_code == 0);
    const auto& grid = metadata["grid"];
    const auto& block = metadata["block"];
    CHECK_THAT(ir.output, Catch::Contains(fmt::format("workgroup_size({}, {}, {}) workgroup_count({}, {}, {})",
                                                      int(block[0]), int(block[1]), int(block[2]), int(grid[0]),
                                                      int(grid[1]), int(grid[2]))));
    CHECK_THAT(ptx, Catch::Contains(fmt::format("// Launch: grid ({}, {}, {}), block ({}, {}, {})", int(grid[0]),
                                                int(grid[1]), int(grid[2]), int(block[0]), int(block[1]),
                                                int(block[2]))));
    CHECK_THAT(ptx, Catch::Contains(fmt::format(".maxntid {}, {}, {}", int(block[0]), int(block[1]), int(block[2]))));
    CHECK(metadata["dynamic_shared_bytes"] == 0);
    CHECK(metadata["min_ctas_per_sm"] == 0);  // none of these asks for CTAs per SM
    CHECK(ptx.find(".minnctapersm") == std::string::npos);
    // One parameter object per `.param .u64`, in order, each a buffer the IR declares.
    std::size_t params = 0;
    for (std::size_t at = ptx.find(".param .u64"); at != std::string::npos; at = ptx.find(".param .u64", at + 1)) {
      ++params;
    }
    REQUIRE(metadata["parameters"].size() == params);
    for (std::size_t i = 0; i < params; ++i) {
      const auto& parameter = metadata["parameters"][i];
      CHECK(parameter["param"] == fmt::format("{}_param_{}", entry, i));
      CHECK(parameter["binding"] == i);
      const std::string element = parameter["element"];
      const std::uint64_t element_bytes = element == "f64" || element == "u64" ? 8 : element == "u8" ? 1 : 4;
      CHECK(parameter["bytes"] == std::uint64_t(parameter["count"]) * element_bytes);
      CHECK_THAT(ir.output, Catch::Contains(fmt::format("buffer @{} {}: {} {}[{}]", i, std::string(parameter["buffer"]),
                                                        std::string(parameter["access"]), element,
                                                        std::uint64_t(parameter["count"]))));
      CHECK(parameter.contains("result_bytes") == (parameter["access"] != "read_only"));
    }
  }
  // The tensor-core NF4 GEMM at m = 2 asks for 4 CTAs an SM: one wave of its 512 (ir/ops/TensorGemm.h).
  {
    const std::string spec = write_text(dir / "nf4_m2.json", R"({"op": "nf4_gemm", "m": 2, "k": 4096, "n": 4096, )"
                                                             R"("accumulate": "f32", "activation": "f16", "schedule": "fast"})");
    const fs::path ptx_path = dir / "nf4_m2.ptx", metadata_path = dir / "nf4_m2.meta.json";
    REQUIRE(run_quantc("emit " + spec + " -o " + ptx_path.string() + " --metadata " + metadata_path.string()).exit_code == 0);
    CHECK(nlohmann::json::parse(read_text(metadata_path))["min_ctas_per_sm"] == 4);
    CHECK_THAT(read_text(ptx_path), Catch::Contains(".maxntid 256, 1, 1\n.minnctapersm 4\n"));
    CHECK_THAT(run_quantc("ir " + spec).output, Catch::Contains("workgroup_count(128, 1, 4) min_resident_workgroups(4)"));
  }
  // A bad --metadata path fails before anything is written: the PTX output is untouched.
  const fs::path kept = dir / "kept.ptx";
  write_text(kept, "previous contents");
  Result bad = run_quantc("emit " + spec_path("linear_4bit.json") + " -o " + kept.string() + " --metadata " +
                          (dir / "missing-folder" / "k.json").string());
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::StartsWith("error: ") && Catch::Contains("missing-folder"));
  CHECK(read_text(kept) == "previous contents");
  // PTX and metadata cannot both go to standard output.
  Result both = run_quantc("emit " + spec_path("linear_4bit.json") + " --metadata -");
  CHECK(both.exit_code == 1);
  CHECK_THAT(both.output, Catch::StartsWith("error: "));
}

TEST_CASE("bad specs and options exit 1 with 'error:' naming the problem", "[cli]") {
  fs::path dir = scratch_dir();
  struct Case {
    std::string spec, expected;
  };
  std::vector<Case> cases = {
      {"{\"op\": ", "malformed JSON"},
      {R"({"op": "linear_5bit"})", "unknown op \"linear_5bit\""},
      {R"({"op": "linear_4bit", "k": 8, "n": 4, "bias": 1})", "unknown key \"bias\""},
      {R"({"op": "linear_4bit", "k": 8.5, "n": 4})", "\"k\" must be a non-negative integer"},
      {R"({"op": "linear_4bit", "k": 12, "n": 4})", "k=12 is not divisible by 8"},
      {R"({"op": "linear_4bit", "k": 8, "n": 0})", "n=0 is invalid"},
      {R"({"op": "linear_4bit_affine_grouped", "k": 8, "n": 4, "group_size": 0})", "group_size=0"},
      {R"({"op": "linear_4bit", "k": 4294967288, "n": 4096})", "overflows the u32 element count"},
  };
  for (const Case& test : cases) {
    Result result = run_quantc("ir " + write_text(dir / "bad.json", test.spec));
    INFO(test.spec << "\n" << result.output);
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.output, Catch::StartsWith("error: ") && Catch::Contains(test.expected));
  }
  Result target = run_quantc("emit " + spec_path("linear_4bit.json") + " --target sm_61");
  CHECK(target.exit_code == 1);
  CHECK_THAT(target.output, Catch::Contains("unknown target 'sm_61'") && Catch::Contains("sm_120"));
  CHECK(run_quantc("emit /nonexistent/spec.json").exit_code == 1);
  CHECK(run_quantc("frobnicate").exit_code == 1);
}

TEST_CASE("quantc run reproduces the seed fixture from .npy inputs and writes .npy outputs", "[cli]") {
  fs::path dir = scratch_dir();
  using quantc::ir::ScalarType;
  std::string spec = write_text(dir / "fixture.json", R"({"op": "linear_4bit", "k": 8, "n": 4})");
  std::string x = write_npy<float>(dir / "x.npy", ScalarType::F32, {0, 1, 2, 3, 4, 5, 6, 7});
  std::string w = write_npy<std::uint32_t>(dir / "w.npy", ScalarType::U32, {0x76543210, 0xFEDCBA98, 0x11111111, 0});
  std::string b = write_npy<float>(dir / "b.npy", ScalarType::F32, {0, 0, 0, 0});
  fs::path out = dir / "out.npy";
  Result result = run_quantc("run " + spec + " --backend reference --input x=" + x + " --input w=" + w + " --input b=" + b +
                         " --output out=" + out.string());
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("out (4 x f32): [140 364 28 0]"));
  NpyArray array = quantc::runtime::read_npy(out.string());
  CHECK(array.buffer.as<float>() == std::vector<float>{140, 364, 28, 0});
  if (fs::exists("/usr/bin/python3")) {  // NumPy itself, as an independent reader
    std::string command = "/usr/bin/python3 -c \"import numpy; print(numpy.load('" + out.string() + "').tolist())\" 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    char line[256] = {0};
    std::string text = fgets(line, sizeof line, pipe) ? line : "";
    int status = pclose(pipe);
    if (WEXITSTATUS(status) == 0) CHECK(text == "[140.0, 364.0, 28.0, 0.0]\n");
  }
}

TEST_CASE("quantc run takes f16 activations from .npy files and writes an f16 .npy output", "[cli]") {
  // The seed fixture with "activation": "f16": x = 0..7 and the results 140, 364, 28, 0
  // are exact in f16, so the f16 kernel reproduces them; emulated PTX against the interpreter.
  fs::path dir = scratch_dir();
  using quantc::ir::ScalarType;
  std::string spec =
      write_text(dir / "f16.json", R"({"op": "linear_4bit", "k": 8, "n": 4, "activation": "f16"})");
  std::string x = write_npy<std::uint16_t>(dir / "x16.npy", ScalarType::F16,
                                           {0x0000, 0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600, 0x4700});
  std::string w = write_npy<std::uint32_t>(dir / "w.npy", ScalarType::U32, {0x76543210, 0xFEDCBA98, 0x11111111, 0});
  std::string b = write_npy<std::uint16_t>(dir / "b16.npy", ScalarType::F16, {0, 0, 0, 0x8000});  // -0: +0 out
  fs::path out = dir / "out16.npy";
  Result result = run_quantc("run " + spec + " --backend emulator --compare reference --input x=" + x + " --input w=" +
                             w + " --input b=" + b + " --output out=" + out.string());
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("out (4 x f16): [140 364 28 0]") && Catch::Contains("bit-exact"));
  CHECK(read_text(out).find("'descr': '<f2'") != std::string::npos);
  NpyArray array = quantc::runtime::read_npy(out.string());
  CHECK(array.buffer.element == ScalarType::F16);
  CHECK(array.buffer.as<std::uint16_t>() == std::vector<std::uint16_t>{0x5860, 0x5db0, 0x4f00, 0x0000});
  // The output file feeds the next layer as is: the round trip through .npy keeps every bit.
  Result again = run_quantc("run " + write_text(dir / "f16_4.json", R"({"op": "linear_4bit", "k": 8, "n": 8,
                                "activation": "f16"})") + " --random-inputs 5 --input x=" + x +
                            " --output out=" + (dir / "out16_8.npy").string());
  REQUIRE(again.exit_code == 0);
  CHECK(quantc::runtime::read_npy((dir / "out16_8.npy").string()).buffer.element == ScalarType::F16);
  if (fs::exists("/usr/bin/python3")) {  // NumPy itself, as an independent reader, where it is installed
    std::string command = "/usr/bin/python3 -c \"import numpy; a = numpy.load('" + out.string() +
                          "'); print(a.dtype, a.tolist())\" 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    char line[256] = {0};
    std::string text = fgets(line, sizeof line, pipe) ? line : "";
    int status = pclose(pipe);
    if (WEXITSTATUS(status) == 0) CHECK(text == "float16 [140.0, 364.0, 28.0, 0.0]\n");
  }
  // An f32 file for the f16 buffer names both types and both fixes.
  std::string x32 = write_npy<float>(dir / "x32.npy", ScalarType::F32, {0, 1, 2, 3, 4, 5, 6, 7});
  Result wrong = run_quantc("run " + spec + " --random-inputs 1 --input x=" + x32);
  CHECK(wrong.exit_code == 1);
  CHECK_THAT(wrong.output, Catch::Contains("buffer 'x' expects 8 x f16, the file holds 8 x f32") &&
                               Catch::Contains("convert the file to f16 (numpy: a.astype(numpy.float16))") &&
                               Catch::Contains("set \"activation\": \"f32\" in the spec"));
}

TEST_CASE("quantc run takes bf16 activations as ml_dtypes' '<V2' or raw uint16 and writes '<V2'", "[cli]") {
  fs::path dir = scratch_dir();
  using quantc::ir::ScalarType;
  std::string spec =
      write_text(dir / "bf16.json", R"({"op": "linear_4bit", "k": 8, "n": 4, "activation": "bf16"})");
  // numpy.save of numpy.arange(8).astype(ml_dtypes.bfloat16), byte for byte (NumPy 2.4, ml_dtypes 0.6).
  std::string header = "{'descr': '<V2', 'fortran_order': False, 'shape': (8,), }";
  header.append(117 - header.size(), ' ');
  const std::string data("\x00\x00\x80\x3f\x00\x40\x40\x40\x80\x40\xa0\x40\xc0\x40\xe0\x40", 16);
  std::string x_v2 = write_text(dir / "x_v2.npy", std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header + "\n" + data);
  // The same bit patterns saved as uint16.
  std::string x_u2 = write_npy<std::uint16_t>(dir / "x_u2.npy", ScalarType::U16,
                                              {0x0000, 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x40c0, 0x40e0});
  std::string w = write_npy<std::uint32_t>(dir / "w.npy", ScalarType::U32, {0x76543210, 0xFEDCBA98, 0x11111111, 0});
  std::string b = write_npy<std::uint16_t>(dir / "b_u2.npy", ScalarType::U16, {0, 0, 0, 0});
  for (const std::string& x : {x_v2, x_u2}) {
    fs::path out = dir / "out_bf16.npy";
    Result result = run_quantc("run " + spec + " --backend emulator --compare reference --input x=" + x + " --input w=" +
                               w + " --input b=" + b + " --output out=" + out.string());
    INFO(x << "\n" << result.output);
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.output, Catch::Contains("out (4 x bf16): [140 364 28 0]") && Catch::Contains("bit-exact"));
    const std::string written = read_text(out);
    CHECK(written.find("{'descr': '<V2', 'fortran_order': False, 'shape': (4,), }") == 10);
    NpyArray array = quantc::runtime::read_npy(out.string());
    CHECK(array.buffer.element == ScalarType::BF16);
    CHECK(array.buffer.as<std::uint16_t>() == std::vector<std::uint16_t>{0x430c, 0x43b6, 0x41e0, 0x0000});
  }
  // uint16 of another byte size, or f16 for the bf16 buffer, are refused.
  std::string short_u2 = write_npy<std::uint16_t>(dir / "short_u2.npy", ScalarType::U16, {0, 1, 2});
  CHECK_THAT(run_quantc("run " + spec + " --random-inputs 1 --input x=" + short_u2).output,
             Catch::Contains("expects 8 x bf16, the file holds 3 x u16"));
  std::string x16 = write_npy<std::uint16_t>(dir / "x16.npy", ScalarType::F16, std::vector<std::uint16_t>(8, 0x3c00));
  CHECK_THAT(run_quantc("run " + spec + " --random-inputs 1 --input x=" + x16).output,
             Catch::Contains("expects 8 x bf16, the file holds 8 x f16") &&
                 Catch::Contains("ml_dtypes.bfloat16") && Catch::Contains("\"activation\": \"f16\""));
}

TEST_CASE("quantc run names missing and mismatched inputs and never clobbers outputs on failure", "[cli]") {
  fs::path dir = scratch_dir();
  using quantc::ir::ScalarType;
  std::string spec = write_text(dir / "fixture.json", R"({"op": "linear_4bit", "k": 8, "n": 4})");
  std::string keep = write_text(dir / "keep.npy", "precious");
  Result missing = run_quantc("run " + spec + " --output out=" + keep);
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Catch::Contains("missing inputs: x, w, b"));
  CHECK(read_text(keep) == "precious");

  std::string wrong_type = write_npy<std::int32_t>(dir / "x_i32.npy", ScalarType::I32, {0, 1, 2, 3, 4, 5, 6, 7});
  Result mismatched = run_quantc("run " + spec + " --random-inputs 3 --input x=" + wrong_type + " --output out=" + keep);
  CHECK(mismatched.exit_code == 1);
  CHECK_THAT(mismatched.output, Catch::Contains("buffer 'x' expects 8 x f32, the file holds 8 x i32"));
  std::string wrong_count = write_npy<float>(dir / "x_short.npy", ScalarType::F32, {0, 1, 2});
  CHECK_THAT(run_quantc("run " + spec + " --random-inputs 3 --input x=" + wrong_count).output,
             Catch::Contains("expects 8 x f32, the file holds 3 x f32"));
  // One element short or long is as wrong as any other count.
  for (std::size_t count : {7u, 9u}) {
    std::string off_by_one = write_npy<float>(dir / "x_off_by_one.npy", ScalarType::F32, std::vector<float>(count, 1.0f));
    Result result = run_quantc("run " + spec + " --random-inputs 3 --input x=" + off_by_one + " --output out=" + keep);
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.output, Catch::Contains(fmt::format("expects 8 x f32, the file holds {} x f32", count)));
  }
  CHECK_THAT(run_quantc("run " + spec + " --input x=" + write_text(dir / "junk.npy", "junk")).output,
             Catch::Contains("not a .npy file"));
  CHECK(read_text(keep) == "precious");
}

TEST_CASE("quantc run with random inputs is deterministic per seed", "[cli]") {
  std::string spec = spec_path("linear_4bit_affine_grouped.json");
  Result first = run_quantc("run " + spec + " --random-inputs 7");
  Result second = run_quantc("run " + spec + " --random-inputs 7");
  REQUIRE(first.exit_code == 0);
  CHECK(first.output == second.output);
  CHECK_THAT(first.output, Catch::Contains("out (4096 x f32)"));
}

TEST_CASE("quantc check assembles for each target and reports registers and spills", "[cli][ptxas]") {
  Result result = run_quantc("check " + spec_path("linear_4bit_affine_grouped.json") + " --target sm_80 --target sm_90");
  if (result.output.find("ptxas was not found") != std::string::npos ||
      result.output.find("not found") != std::string::npos) {
    if (std::getenv("QUANTC_REQUIRE_PTXAS") != nullptr) FAIL("ptxas is required (QUANTC_REQUIRE_PTXAS=1): " << result.output);
    WARN("ptxas not available; skipping: " << result.output);
    return;
  }
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("sm_80: ok (ptxas, whole program),") && Catch::Contains("sm_90: ok (ptxas, whole program),") &&
                                Catch::Contains("0 bytes spill stores") && !Catch::Contains(".minnctapersm"));
  // NF4 on the tensor cores at m = 2 asks for 4 CTAs an SM: 64 registers, no spills.
  const std::string nf4 = write_text(scratch_dir() / "nf4_m2.json",
                                     R"({"op": "nf4_gemm", "m": 2, "k": 4096, "n": 4096, "accumulate": "f32", )"
                                     R"("activation": "f16", "schedule": "fast"})");
  Result asked = run_quantc("check " + nf4 + " --target sm_90");
  INFO(asked.output);
  CHECK(asked.exit_code == 0);
  CHECK_THAT(asked.output, Catch::Contains("sm_90: ok (ptxas, whole program), 64 registers (fit for 4 CTAs per SM: "
                                           ".minnctapersm), 0 bytes spill stores"));
}

TEST_CASE("quantc check --assembler nvjitlink links in process and says it compiled relocatably", "[cli][nvjitlink]") {
  Result linked = run_quantc("check " + spec_path("int4_dot_i32.json") + " --assembler nvjitlink --target sm_90");
  INFO(linked.output);
  REQUIRE(linked.exit_code == 0);
  CHECK_THAT(linked.output, Catch::Contains("sm_90: ok (nvjitlink, relocatable),") && Catch::Contains("registers"));
}

TEST_CASE("pipeline flags: -O levels, explicit passes, printing and errors", "[cli][passes]") {
  std::string spec = spec_path("linear_4bit_affine_grouped_seed.json");  // the seed's loops, which -O2 hoists
  Result unoptimized = run_quantc("ir " + spec + " -O0");
  CHECK_THAT(unoptimized.output, Catch::Contains("for chunk: u32") && !Catch::Contains("group_idx"));
  Result optimized = run_quantc("ir " + spec);  // -O2 is the default
  CHECK_THAT(optimized.output, Catch::Contains("for group_idx: u32") && Catch::Contains("for group_chunk: u32") &&
                                   !Catch::Contains("for chunk: u32"));
  Result printed = run_quantc("emit " + spec + " --print-ir-after=hoist_sidecars -o /dev/null");
  CHECK_THAT(printed.output, Catch::Contains("IR Dump After hoist_sidecars"));
  Result timed = run_quantc("ir " + spec + " --time-passes --verify-each");
  CHECK_THAT(timed.output, Catch::Contains("hoist_sidecars") && Catch::Contains("total"));
  Result bogus = run_quantc("ir " + spec + " --passes=fold_constants,vectorize");
  CHECK(bogus.exit_code == 1);
  CHECK_THAT(bogus.output, Catch::StartsWith("error: ") && Catch::Contains("vectorize"));
  CHECK(run_quantc("ir " + spec + " -O7").exit_code == 1);
}

TEST_CASE("the spec's fp_contract and --fp-contract choose whether -O2 fuses a*b+c", "[cli][passes]") {
  std::string spec = spec_path("linear_4bit_affine_grouped_seed.json");  // the seed's mul + add per nibble
  Result fused = run_quantc("emit " + spec);
  REQUIRE(fused.exit_code == 0);
  CHECK_THAT(fused.output, Catch::Contains("fma.rn.f32"));
  Result separate = run_quantc("emit " + spec + " --fp-contract=off");
  REQUIRE(separate.exit_code == 0);
  CHECK_THAT(separate.output, !Catch::Contains("fma.rn.f32") && Catch::Contains("mul.rn.f32"));
  // The cache keys the two pipelines apart: emitting "on" again after "off" still fuses.
  CHECK_THAT(run_quantc("emit " + spec + " --fp-contract=on").output, Catch::Contains("fma.rn.f32"));

  fs::path dir = scratch_dir();
  write_text(dir / "off.json", R"({"op": "linear_4bit_affine_grouped", "k": 256, "n": 16,
                                  "group_size": 64, "schedule": "seed", "fp_contract": "off"})");
  Result from_spec = run_quantc("emit " + (dir / "off.json").string());
  REQUIRE(from_spec.exit_code == 0);
  CHECK_THAT(from_spec.output, !Catch::Contains("fma.rn.f32"));
  CHECK_THAT(run_quantc("emit " + (dir / "off.json").string() + " --fp-contract=on").output,
             Catch::Contains("fma.rn.f32"));  // the flag overrides the spec
  write_text(dir / "bad.json", R"({"op": "linear_4bit", "k": 8, "n": 8, "fp_contract": "fast"})");
  Result bad_spec = run_quantc("emit " + (dir / "bad.json").string());
  CHECK(bad_spec.exit_code == 1);
  CHECK_THAT(bad_spec.output, Catch::Contains("\"fp_contract\" must be \"on\" or \"off\", got \"fast\""));
  Result bad_flag = run_quantc("emit " + spec + " --fp-contract=fast");
  CHECK(bad_flag.exit_code != 0);
  CHECK_THAT(bad_flag.output, Catch::Contains("--fp-contract"));
}

TEST_CASE("quantc opt reads IR text and runs the named passes", "[cli][passes]") {
  fs::path dir = scratch_dir();
  fs::path input = dir / "grouped.qir";
  REQUIRE(run_quantc("ir " + spec_path("linear_4bit_affine_grouped_seed.json") + " -O0 -o " + input.string()).exit_code == 0);
  Result hoisted = run_quantc("opt " + input.string() + " --passes=hoist_sidecars");
  INFO(hoisted.output);
  CHECK(hoisted.exit_code == 0);
  CHECK_THAT(hoisted.output, Catch::Contains("for group_idx: u32"));
  Result broken = run_quantc("opt " + write_text(dir / "broken.qir", "program \"p\" workgroup_size(1, 1, 1)\n{\n"));
  CHECK(broken.exit_code == 1);
  CHECK_THAT(broken.output, Catch::Contains("broken.qir:"));
}

TEST_CASE("quantc opt refuses IR nested deeper than the limit with one error and never crashes", "[cli][nesting]") {
  fs::path dir = scratch_dir();
  const std::string header =
      "program \"deep\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n"
      "buffer @0 x: read_only u32[8]\nbuffer @1 out: read_write u32[8]\n{\n";
  auto repeat = [](const std::string& text, std::size_t count) {
    std::string result;
    for (std::size_t i = 0; i < count; ++i) result += text;
    return result;
  };
  // Sizes at which the parser, printer or passes used to overflow the stack (SIGSEGV).
  const std::string sum = header + "  out[0u32] = " + repeat("(", 17500) + "x[0u32]" + repeat(" + 1u32)", 17500) + "\n}\n";
  const std::string ifs = header + repeat("  if (x[0u32] == 1u32) {\n", 100000) + "  out[0u32] = 1u32\n" +
                          repeat("  }\n", 100000) + "}\n";
  const std::string nots = header + "  out[0u32] = " + repeat("not(", 50000) + "x[0u32]" + repeat(")", 50000) + "\n}\n";
  // The if whose condition's index literal is one level too deep: `if` number i sits at
  // depth 2i (statement) on line 4 + i, its condition's literal at 2i + 3.
  const int deepest_if_line = 4 + static_cast<int>(quantc::ir::kMaxNestingDepth - 2) / 2;
  for (const auto& [name, text, line] : {std::tuple{"sum.qir", sum, 5}, std::tuple{"ifs.qir", ifs, deepest_if_line},
                                         std::tuple{"nots.qir", nots, 5}}) {
    INFO(name);
    Result result = run_quantc("opt " + write_text(dir / name, text));
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.output, Catch::StartsWith("error: ") &&
                                  Catch::Contains(fmt::format("{}:{}:", name, line)) &&
                                  Catch::Contains(fmt::format("IR nested {} levels deep; quantc accepts at most {}",
                                                              quantc::ir::kMaxNestingDepth + 1,
                                                              quantc::ir::kMaxNestingDepth)) &&
                                  Catch::Contains("Fix: bind subexpressions to variables with let"));
  }
  // At the limit it goes through the whole -O2 pipeline.
  // Block, store, the sums, the load and its index: kMaxNestingDepth levels.
  const std::size_t sums = quantc::ir::kMaxNestingDepth - 4;
  const std::string deepest = header + "  out[0u32] = " + repeat("(", sums) + "x[1u32]" + repeat(" + 1u32)", sums) + "\n}\n";
  Result ok = run_quantc("opt --verify-each " + write_text(dir / "deepest.qir", deepest));
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.output, Catch::Contains(fmt::format("out[0u32] = (x[1u32] + {}u32)", sums)));
  // A chain of 30,000 lets is flat (each let refers to the one before): it is accepted,
  // and the value ranges, resolved down the whole chain without recursing along it,
  // prove a29999 >= 29999 and drop the branch.
  std::string chain = header + "  let a0: u32 = local_id.x\n";
  for (int i = 1; i < 30000; ++i) chain += fmt::format("  let a{}: u32 = (a{} + 1u32)\n", i, i - 1);
  chain += "  if (a29999 < 8u32) {\n    out[a29999] = 1u32\n  }\n}\n";
  Result flat = run_quantc("opt " + write_text(dir / "chain.qir", chain));
  CHECK(flat.exit_code == 0);
  CHECK_THAT(flat.output, Catch::Contains("let a1: u32 = (a0 + 1u32)") && !Catch::Contains("out[a29999]"));
}

TEST_CASE("quantc emit caches PTX and cubins on disk, quantc cache lists and clears them", "[cli][cache]") {
  fs::path dir = scratch_dir() / "cache";
  fs::remove_all(dir);
  std::string environment = "QUANTC_CACHE_DIR=" + dir.string() + " ";
  auto run_cached = [&](const std::string& arguments) {
    return run_quantc(arguments.empty() ? "" : arguments, environment);
  };
  std::string spec = spec_path("linear_4bit.json");
  Result first = run_cached("emit " + spec);
  Result second = run_cached("emit " + spec);
  REQUIRE(first.exit_code == 0);
  CHECK(first.output == second.output);
  fs::path cubin = scratch_dir() / "kernel.cubin";
  REQUIRE(run_cached("emit " + spec + " --format cubin --target sm_90 -o " + cubin.string()).exit_code == 0);
  CHECK(read_text(cubin).substr(0, 4) == "\x7f" "ELF");
  CHECK_THAT(run_cached("emit " + spec + " --format cubin").output, Catch::Contains("-o OUT.cubin"));
  Result listed = run_cached("cache ls");
  CHECK_THAT(listed.output, Catch::Contains("ptx") && Catch::Contains("cubin") && Catch::Contains("linear_4bit"));
  CHECK_THAT(run_cached("cache path").output, Catch::Contains(dir.string()));
  CHECK_THAT(run_cached("cache clear").output, Catch::Contains("removed 3 entries"));
  CHECK_THAT(run_quantc("cache path", "QUANTC_CACHE=0 ").output, Catch::Contains("disabled"));
}

TEST_CASE("quantc emit rebuilds and quantc cache ls lists an unusable entry instead of failing", "[cli][cache]") {
  fs::path dir = scratch_dir() / "cache-corrupt";
  fs::remove_all(dir);
  const std::string environment = "QUANTC_CACHE_DIR=" + dir.string() + " QUANTC_VERBOSE=1 ";
  const std::string spec = spec_path("dequantize_int4.json");
  Result first = run_quantc("emit " + spec, environment);
  REQUIRE(first.exit_code == 0);
  std::vector<fs::path> entries;
  for (const auto& file : fs::directory_iterator(dir)) entries.push_back(file.path());
  REQUIRE(entries.size() == 1);
  const fs::path entry = entries[0];
  const std::string intact = read_text(entry);
  const std::string header = intact.substr(0, intact.find('\n'));
  REQUIRE(header.find(R"("format":1,)") != std::string::npos);

  SECTION("a header field of the wrong type") {
    std::string corrupt = intact;
    corrupt.replace(corrupt.find(R"("format":1,)"), 11, R"("format":"1",)");
    write_text(entry, corrupt);
  }
  SECTION("a symbolic link to /dev/zero") {
    fs::remove(entry);
    fs::create_symlink("/dev/zero", entry);
  }
  SECTION("a FIFO") {
    fs::remove(entry);
    REQUIRE(::mkfifo(entry.c_str(), 0600) == 0);
  }
  // `timeout` turns a lookup that blocks on the FIFO or /dev/zero into a failure (exit 124).
  Result listed = run_quantc("cache ls", "timeout 60 env " + environment);
  INFO(listed.output);
  CHECK(listed.exit_code == 0);
  CHECK_THAT(listed.output, Catch::Contains("(corrupt: ") && Catch::Contains("rebuilt on next use"));
  CHECK_THAT(listed.output, !Catch::Contains("json.exception"));
  Result rebuilt = run_quantc("emit " + spec, "timeout 60 env " + environment);
  INFO(rebuilt.output);
  CHECK(rebuilt.exit_code == 0);
  CHECK_THAT(rebuilt.output, Catch::Contains("ignoring entry") && Catch::Contains("rebuilding it") &&
                                 Catch::Contains(".version"));
  CHECK(read_text(entry) == intact);
  CHECK(fs::is_regular_file(fs::symlink_status(entry)));
  CHECK(run_quantc("cache ls", environment).output.find("corrupt") == std::string::npos);
}

TEST_CASE("quantc run --backend cuda fails clearly without a driver", "[cli][cuda]") {
  Result result = run_quantc("run " + spec_path("linear_4bit.json") + " --backend cuda --random-inputs 1",
                             "QUANTC_CUDA_DRIVER=/nonexistent/libcuda.so.1 ");
  CHECK(result.exit_code == 1);
  CHECK_THAT(result.output, Catch::StartsWith("error: ") && Catch::Contains("--backend reference"));
}

TEST_CASE("quantc run --backend emulator agrees with the reference, quantc profile prints counters", "[cli][emulator]") {
  std::string spec = spec_path("linear_4bit_affine_grouped.json");
  Result compared = run_quantc("run " + spec + " --backend emulator --random-inputs 5 --compare reference");
  INFO(compared.output);
  CHECK(compared.exit_code == 0);
  CHECK_THAT(compared.output, Catch::Contains("compare emulator vs reference: out: bit-exact (4096 elements)"));
  Result unoptimized = run_quantc("run " + spec + " --backend emulator -O0 --random-inputs 5 --compare reference");
  CHECK(unoptimized.exit_code == 0);
  CHECK_THAT(unoptimized.output, Catch::Contains("out: bit-exact (4096 elements)"));
  Result profile = run_quantc("profile " + spec + " --target sm_90");
  CHECK(profile.exit_code == 0);
  CHECK_THAT(profile.output, Catch::Contains("4096 output elements") && Catch::Contains("sectors per load request") &&
                                 Catch::Contains("H100 SXM") && Catch::Contains("H200") &&
                                 Catch::Contains("model assumptions"));
}
