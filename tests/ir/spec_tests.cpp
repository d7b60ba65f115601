// JSON spec parsing: every malformed spec is an error naming the key or value.
#include <catch2/catch.hpp>

#include "ir/Printer.h"
#include "ir/ops/Spec.h"

using namespace quantc::ir::ops;

TEST_CASE("a valid spec fills defaults and keeps the target", "[spec]") {
  OpSpec spec = parse_spec(R"({"op": "linear_4bit_affine_grouped", "k": 256, "n": 4096,
                               "group_size": 64, "target": "sm_90"})");
  CHECK(spec.op->name == "linear_4bit_affine_grouped");
  CHECK(spec.args.u32("group_size") == 64);
  CHECK(spec.target == "sm_90");
  CHECK(spec.canonical_json() ==
        R"({"act_order":false,"activation":"f32","group_size":64,"k":256,"m":1,"n":4096,"op":"linear_4bit_affine_grouped",)"
        R"("schedule":"auto","target":"sm_90"})");
}

TEST_CASE("every linear and matmul op names its dimensions m, n, k and takes the seed's names as aliases",
          "[spec]") {
  // m activation rows, n outputs, k the reduction; the seeds' in_dim/out_dim, batch/rows/cols
  // and lane_count give the same spec, canonically under m, n, k.
  OpSpec linear = parse_spec(R"({"op": "linear_4bit_affine_grouped", "in_dim": 256, "out_dim": 4096, "group_size": 64})");
  CHECK(linear.args.u32("k") == 256);
  CHECK(linear.args.u32("n") == 4096);
  CHECK_FALSE(linear.args.has("in_dim"));
  CHECK(linear.canonical_json() ==
        parse_spec(R"({"op": "linear_4bit_affine_grouped", "k": 256, "n": 4096, "group_size": 64})").canonical_json());
  OpSpec batched = parse_spec(R"({"op": "int4_batched_matvec_f32_scaled", "batch": 3, "rows": 8, "cols": 64})");
  CHECK(batched.args.u32("m") == 3);
  CHECK(batched.args.u32("n") == 8);
  CHECK(batched.args.u32("k") == 64);
  CHECK(parse_spec(R"({"op": "int4_dot_i32", "lane_count": 16})").args.u32("k") == 16);
  CHECK(parse_spec(R"({"op": "dequant_matmul_int8", "m": 1, "n": 32, "k": 64, "block_size": 32})").args.u32("n") == 32);
  // One parameter given twice is an error naming both keys.
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "in_dim": 8, "k": 8, "n": 4})", "twice.json"),
                    Catch::Contains("twice.json: \"in_dim\" and \"k\" both give linear_4bit's \"k\"; keep one"));
  // An unknown key lists the aliases with the names.
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "k": 8, "n": 4, "j": 1})"),
                    Catch::Contains("k (or in_dim), n (or out_dim)"));
  // A bad value is reported under the key the spec used.
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "in_dim": "8", "n": 4})"),
                    Catch::Contains("\"in_dim\" must be a non-negative integer, got \"8\""));
}

TEST_CASE("malformed specs are rejected with the problem named", "[spec]") {
  CHECK_THROWS_WITH(parse_spec("{", "bad.json"), Catch::Contains("bad.json: malformed JSON"));
  CHECK_THROWS_WITH(parse_spec("[]"), Catch::Contains("must be a JSON object"));
  CHECK_THROWS_WITH(parse_spec(R"({"k": 8})"), Catch::Contains("missing string key \"op\""));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_8bit"})"),
                    Catch::Contains("unknown op \"linear_8bit\"") && Catch::Contains("linear_4bit"));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "k": 8, "n": 4, "outdim": 4})"),
                    Catch::Contains("unknown key \"outdim\""));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "k": "8", "n": 4})"),
                    Catch::Contains("\"k\" must be a non-negative integer, got \"8\""));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "k": -8, "n": 4})"),
                    Catch::Contains("\"k\" = -8 is outside 0..4294967295"));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "k": 8589934592, "n": 4})"),
                    Catch::Contains("outside 0..4294967295"));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "k": 8})"), Catch::Contains("needs \"n\""));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "k": 8, "n": 4, "target": 90})"),
                    Catch::Contains("\"target\" must be a string"));
}

TEST_CASE("dimension errors come from the op constructor with the seed's message", "[spec]") {
  OpSpec spec = parse_spec(R"({"op": "linear_4bit", "k": 7, "n": 4})");
  CHECK_THROWS_WITH(build_program(spec), Catch::Contains("k=7 is not divisible by 8"));
}

TEST_CASE("the activation parameter types x, the bias and the output and is part of the canonical spec", "[spec]") {
  OpSpec f16 = parse_spec(R"({"op": "linear_4bit", "k": 8, "n": 4, "activation": "f16"})");
  OpSpec f32 = parse_spec(R"({"op": "linear_4bit", "k": 8, "n": 4})");
  CHECK(f16.args.choice("activation") == "f16");
  CHECK(f32.args.choice("activation") == "f32");  // the default, filled in
  CHECK(f16.canonical_json() != f32.canonical_json());  // so the kernel cache keeps them apart
  CHECK(f16.canonical_json().find(R"("activation":"f16")") != std::string::npos);
  quantc::ir::Program program = build_program(f16);
  CHECK(program.find_buffer("x")->element == quantc::ir::ScalarType::F16);
  CHECK(program.find_buffer("b")->element == quantc::ir::ScalarType::F16);
  CHECK(program.find_buffer("out")->element == quantc::ir::ScalarType::F16);
  CHECK(program.find_buffer("w")->element == quantc::ir::ScalarType::U32);
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "k": 8, "n": 4, "activation": "fp16"})"),
                    Catch::Contains("\"activation\" must be one of f32, f16, bf16, got \"fp16\""));
  // Packed-INT4 activations are codes: those ops have no such parameter.
  CHECK_THROWS_WITH(parse_spec(R"({"op": "int4_dot_i32", "k": 8, "activation": "f16"})"),
                    Catch::Contains("unknown key \"activation\""));
  // Every linear and matmul op with float activations takes it.
  for (const char* name : {"linear_4bit", "linear_4bit_affine_grouped", "int4_matvec_f32_scaled",
                           "int4_batched_matvec_f32_scaled", "dequant_matmul_int8", "dequant_matmul_int4",
                           "dequant_matmul_fp8", "dequant_matmul_nvfp4", "nf4_gemm", "nf4_gemm_transpose"}) {
    const OpInfo* op = OpRegistry::builtin().find(name);
    REQUIRE(op != nullptr);
    bool found = false;
    for (const ParamSpec& param : op->params) found |= param.name == "activation" && param.default_value == "\"f32\"";
    INFO(name);
    CHECK(found);
  }
}

TEST_CASE("auto batches take the tensor cores for a target of sm_80 or later, the seed otherwise", "[spec]") {
  CHECK_FALSE(has_tensor_core_mma("sm_75"));
  CHECK(has_tensor_core_mma("sm_80"));
  CHECK(has_tensor_core_mma("sm_90a"));
  CHECK(has_tensor_core_mma("sm_120"));
  CHECK_FALSE(has_tensor_core_mma("compute_90"));
  auto tensor = [](const quantc::ir::Program& program) { return program.find_shared("w_tile") != nullptr; };
  for (const char* text :
       {R"({"op": "dequant_matmul_int4", "m": 4, "k": 64, "n": 64, "block_size": 32, "activation": "f16")",
        R"({"op": "linear_4bit_affine_grouped", "m": 4, "k": 64, "n": 64, "group_size": 32, "activation": "bf16")",
        R"({"op": "nf4_gemm", "m": 4, "k": 64, "n": 64, "accumulate": "f32", "activation": "f16")"}) {
    INFO(text);
    const OpSpec portable = parse_spec(std::string(text) + "}");
    CHECK_FALSE(tensor(build_program(portable)));  // no target: every target runs the seed
    CHECK(tensor(build_program(portable, "sm_80")));
    CHECK_FALSE(tensor(build_program(portable, "sm_75")));
    const OpSpec targeted = parse_spec(std::string(text) + R"(, "target": "sm_90"})");
    CHECK(tensor(build_program(targeted)));
    CHECK_FALSE(tensor(build_program(targeted, "sm_75")));  // the target it is built for decides
    const OpSpec seed = parse_spec(std::string(text) + R"(, "target": "sm_90", "schedule": "seed"})");
    CHECK_FALSE(tensor(build_program(seed)));
  }
  // Where the fast schedule refuses the batch (f32 activations, nf4_gemm's f64 sums, m = 1)
  // "auto" is the op's own choice.
  for (const char* text :
       {R"({"op": "dequant_matmul_int4", "m": 4, "k": 64, "n": 64, "block_size": 32, "target": "sm_90"})",
        R"({"op": "nf4_gemm", "m": 4, "k": 64, "n": 64, "activation": "f16", "target": "sm_90"})",
        R"({"op": "linear_4bit_affine_grouped", "k": 64, "n": 64, "group_size": 32, "activation": "f16", "target": "sm_90"})"}) {
    INFO(text);
    const OpSpec spec = parse_spec(text);
    CHECK_FALSE(tensor(build_program(spec)));
    CHECK(quantc::ir::print(build_program(spec)) == quantc::ir::print(spec.op->build(spec.args)));
  }
}
