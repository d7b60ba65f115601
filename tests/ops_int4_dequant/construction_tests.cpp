// Op construction: every registered shape builds and declares the registry's buffers;
// every invalid parameter is rejected with the value and the fix; every shipped spec
// in examples/specs/ parses and builds.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "ir/ops/Activation.h"
#include "ir/ops/DequantMatmul.h"
#include "ir/ops/Int4Packed.h"
#include "ir/ops/Registry.h"
#include "ir/ops/Spec.h"

using namespace quantc::ir;
using namespace quantc::ir::ops;

namespace {
const std::vector<std::string> kOps = {
    "int4_dot_i32",          "int4_dot_f32_scaled",           "int4_matvec_f32_scaled",
    "int4_batched_matvec_f32_scaled", "int4_batched_matmul_f32_scaled", "int4_batched_matmul_top1_f32_scaled",
    "dequant_matmul_int8",   "dequant_matmul_int4",           "dequant_matmul_fp8",
    "dequant_matmul_nvfp4"};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A spec of `op` with m 2, k 9, n 7, block_size 4 and `extra` keys (", \"key\": value").
std::string fmt_spec(const char* op, const std::string& extra) {
  return std::string(R"({"op": ")") + op + R"(", "m": 2, "k": 9, "n": 7, "block_size": 4)" + extra + "}";
}

/// Runs `build` and checks that it throws OpError whose message contains every fragment.
template <class Build>
void require_op_error(Build build, std::initializer_list<const char*> fragments) {
  try {
    build();
    FAIL("expected OpError");
  } catch (const OpError& error) {
    std::string message = error.what();
    INFO(message);
    CHECK(message.rfind("Fix:", 0) == 0);
    for (const char* fragment : fragments) CHECK(message.find(fragment) != std::string::npos);
  }
}
}  // namespace

TEST_CASE("every packed INT4 and dequant-matmul op is registered with parameters, buffers and test shapes",
          "[ops_int4_dequant][registry]") {
  for (const std::string& name : kOps) {
    INFO(name);
    const OpInfo* op = OpRegistry::builtin().find(name);
    REQUIRE(op != nullptr);
    CHECK(!op->summary.empty());
    CHECK(!op->layout.empty());
    CHECK(!op->seed.empty());
    CHECK(op->test_shapes.size() >= 3);
    for (const OpArgs& shape : op->test_shapes) {
      Program program = op->build(shape);
      CHECK(program.name == name);
      // Every declared buffer is described in the registry with the same element type (the
      // "activation" parameter's for the activation-typed ones, whose registry element is f32).
      for (const BufferDecl& decl : program.buffers) {
        auto spec = std::find_if(op->buffers.begin(), op->buffers.end(),
                                 [&](const BufferSpec& buffer) { return buffer.name == decl.name; });
        REQUIRE(spec != op->buffers.end());
        CHECK(decl.element == (spec->activation_typed ? activation_of(shape) : spec->element));
        if (spec->activation_typed) CHECK(spec->element == ScalarType::F32);
      }
    }
  }
}

TEST_CASE("dequant params: asymmetric is a bool, format a choice of e4m3/e5m2", "[ops_int4_dequant][registry]") {
  const OpInfo* int8 = OpRegistry::builtin().find("dequant_matmul_int8");
  auto asymmetric = std::find_if(int8->params.begin(), int8->params.end(),
                                 [](const ParamSpec& param) { return param.name == "asymmetric"; });
  REQUIRE(asymmetric != int8->params.end());
  CHECK(asymmetric->type == ParamType::Bool);
  const OpInfo* fp8 = OpRegistry::builtin().find("dequant_matmul_fp8");
  auto format = std::find_if(fp8->params.begin(), fp8->params.end(),
                             [](const ParamSpec& param) { return param.name == "format"; });
  REQUIRE(format != fp8->params.end());
  CHECK(format->type == ParamType::Choice);
  CHECK(format->choices == std::vector<std::string>{"e4m3", "e5m2"});
}

TEST_CASE("dequant int8/int4 offset mode: a bool exclusive with asymmetric, its own offsets buffer",
          "[ops_int4_dequant][registry][offset]") {
  for (const char* name : {"dequant_matmul_int8", "dequant_matmul_int4"}) {
    INFO(name);
    const OpInfo* op = OpRegistry::builtin().find(name);
    auto offset = std::find_if(op->params.begin(), op->params.end(),
                               [](const ParamSpec& param) { return param.name == "offset"; });
    REQUIRE(offset != op->params.end());
    CHECK(offset->type == ParamType::Bool);
    CHECK(offset->default_value == "false");
    // Specs without the key keep their programs: offset defaults to false.
    const OpSpec plain = parse_spec(fmt_spec(name, ""));
    CHECK_FALSE(plain.args.boolean("offset"));
    const Program with_offsets = op->build(parse_spec(fmt_spec(name, R"(, "offset": true)")).args);
    CHECK(with_offsets.find_buffer("offsets") != nullptr);
    CHECK(with_offsets.find_buffer("offsets")->count == 3 * 7);  // ceil(9/4) * 7
    CHECK(with_offsets.find_buffer("offsets")->element == ScalarType::F32);
    CHECK(with_offsets.find_buffer("zero_points") == nullptr);
    CHECK(op->build(parse_spec(fmt_spec(name, "")).args).find_buffer("offsets") == nullptr);
    require_op_error([&] { op->build(parse_spec(fmt_spec(name, R"(, "offset": true, "asymmetric": true)")).args); },
                     {name, "\"asymmetric\": true and \"offset\": true are exclusive", "set one of them to false"});
  }
  // The offsets bind after the scales, where asymmetric's zero_points bind.
  const Program int4 = dequant_matmul_int4(1, 64, 64, 32, BlockAffineMode::Offset, KernelSchedule::Fast);
  REQUIRE(int4.buffers.size() == 5);
  CHECK(int4.buffers[2].name == "scales");
  CHECK(int4.buffers[3].name == "offsets");
  CHECK(to_string(BlockAffineMode::Offset) == "offset");
  CHECK(to_string(BlockAffineMode::ZeroPoint) == "asymmetric");
}

TEST_CASE("buffer counts follow the documented layouts", "[ops_int4_dequant][layout]") {
  Program matvec = int4_matvec_f32_scaled(3, 9);
  CHECK(matvec.find_buffer("weights")->count == 6);  // 3 rows x ceil(9/8) words
  CHECK(matvec.find_buffer("x")->count == 9);
  CHECK(matvec.find_buffer("out")->count == 3);
  Program top1 = int4_batched_matmul_top1_f32_scaled(5, 3, 17);
  CHECK(top1.find_buffer("activations")->count == 15);
  CHECK(top1.find_buffer("out")->count == 10);
  Program int4 = dequant_matmul_int4(2, 9, 7, 4, true);
  CHECK(int4.find_buffer("w")->element == ScalarType::U8);
  CHECK(int4.find_buffer("w")->count == 32);  // ceil(63 / 2)
  CHECK(int4.find_buffer("scales")->count == 21);  // ceil(9/4) * 7
  CHECK(int4.find_buffer("zero_points")->count == 21);
  CHECK(dequant_matmul_int8(2, 9, 7, 4, false).find_buffer("zero_points") == nullptr);
  CHECK(dequant_matmul_int8(2, 9, 7, 4, false).find_buffer("w")->element == ScalarType::I8);
  Program nvfp4 = dequant_matmul_nvfp4(2, 20, 3);
  CHECK(nvfp4.find_buffer("scales")->count == 6);  // ceil(20/16) * 3
  CHECK(nvfp4.find_buffer("global_scale")->count == 1);
  // Tile: min(m, 4) rows per invocation, 128 columns per workgroup.
  Program fp8 = dequant_matmul_fp8(9, 4, 300, Fp8Format::E5M2);
  CHECK(fp8.workgroup_size == std::array<std::uint32_t, 3>{128, 1, 1});
  CHECK(fp8.workgroup_count == std::array<std::uint32_t, 3>{3, 3, 1});
  CHECK(dequant_matmul_fp8(3, 4, 5, Fp8Format::E4M3).workgroup_count == std::array<std::uint32_t, 3>{1, 1, 1});
}

TEST_CASE("invalid parameters are rejected with the value and the fix", "[ops_int4_dequant][errors]") {
  require_op_error([] { int4_dot_i32(0); }, {"int4_dot_i32", "k=0"});
  require_op_error([] { int4_dot_f32_scaled(0); }, {"k=0"});
  require_op_error([] { int4_matvec_f32_scaled(0, 8); }, {"n=0"});
  require_op_error([] { int4_matvec_f32_scaled(8, 0); }, {"k=0"});
  require_op_error([] { int4_batched_matvec_f32_scaled(0, 8, 8); }, {"m=0"});
  require_op_error([] { int4_batched_matvec_f32_scaled(1u << 20, 8, 1u << 13); }, {"m*k", "overflows"});
  require_op_error([] { int4_batched_matvec_f32_scaled(300000, 1, 1); }, {"65535", "split the batch"});
  require_op_error([] { int4_batched_matmul_f32_scaled(2, 1u << 30, 64); }, {"n*ceil(k/8)", "overflows"});
  require_op_error([] { int4_batched_matmul_top1_f32_scaled(2, (1u << 24) + 1, 8); }, {"n=16777217", "f32"});
  require_op_error([] { int4_batched_matmul_top1_f32_scaled(2, 8, 0); }, {"k=0"});
  require_op_error([] { dequant_matmul_int8(0, 8, 8, 4, false); }, {"dequant_matmul_int8", "m=0"});
  require_op_error([] { dequant_matmul_int8(1, 0, 8, 4, false); }, {"k=0"});
  require_op_error([] { dequant_matmul_int4(1, 8, 0, 4, true); }, {"n=0"});
  require_op_error([] { dequant_matmul_int4(1, 8, 8, 0, true); }, {"block_size=0"});
  require_op_error([] { dequant_matmul_int8(1, 1u << 16, 1u << 16, 8, false); }, {"k*n", "4294967296", "overflows"});
  require_op_error([] { dequant_matmul_fp8(1u << 17, 1u << 15, 1, Fp8Format::E4M3); }, {"m*k", "overflows"});
  require_op_error([] { dequant_matmul_nvfp4(300000, 1, 1); }, {"65535", "split m"});
  require_op_error([] { dequant_matmul_nvfp4(0, 16, 16); }, {"dequant_matmul_nvfp4", "m=0"});
}

TEST_CASE("a bad fp8 format in a spec is rejected", "[ops_int4_dequant][errors]") {
  CHECK_THROWS_AS(parse_spec(R"({"op": "dequant_matmul_fp8", "m": 1, "k": 1, "n": 1, "format": "e3m4"})"),
                  SpecError);
  CHECK(parse_fp8_format("e5m2") == Fp8Format::E5M2);
  CHECK(!parse_fp8_format("E4M3").has_value());
}

TEST_CASE("examples/specs has one spec per op that parses and builds", "[ops_int4_dequant][specs]") {
  for (const std::string& name : kOps) {
    INFO(name);
    std::string path = std::string(QUANTC_SOURCE_DIR) + "/examples/specs/" + name + ".json";
    OpSpec spec = parse_spec(read_file(path), path);
    CHECK(spec.op->name == name);
    CHECK(spec.target == "sm_90");
    Program program = build_program(spec);
    CHECK(program.name == name);
  }
}
