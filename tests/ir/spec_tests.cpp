// JSON spec parsing: every malformed spec is an error naming the key or value.
#include <catch2/catch.hpp>

#include "ir/ops/Spec.h"

using namespace quantc::ir::ops;

TEST_CASE("a valid spec fills defaults and keeps the target", "[spec]") {
  OpSpec spec = parse_spec(R"({"op": "linear_4bit_affine_grouped", "in_dim": 256, "out_dim": 4096,
                               "group_size": 64, "target": "sm_90"})");
  CHECK(spec.op->name == "linear_4bit_affine_grouped");
  CHECK(spec.args.u32("group_size") == 64);
  CHECK(spec.target == "sm_90");
  CHECK(spec.canonical_json() ==
        R"({"group_size":64,"in_dim":256,"op":"linear_4bit_affine_grouped","out_dim":4096,"schedule":"auto","target":"sm_90"})");
}

TEST_CASE("malformed specs are rejected with the problem named", "[spec]") {
  CHECK_THROWS_WITH(parse_spec("{", "bad.json"), Catch::Contains("bad.json: malformed JSON"));
  CHECK_THROWS_WITH(parse_spec("[]"), Catch::Contains("must be a JSON object"));
  CHECK_THROWS_WITH(parse_spec(R"({"in_dim": 8})"), Catch::Contains("missing string key \"op\""));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_8bit"})"),
                    Catch::Contains("unknown op \"linear_8bit\"") && Catch::Contains("linear_4bit"));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "in_dim": 8, "out_dim": 4, "outdim": 4})"),
                    Catch::Contains("unknown key \"outdim\""));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "in_dim": "8", "out_dim": 4})"),
                    Catch::Contains("\"in_dim\" must be a non-negative integer, got \"8\""));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "in_dim": -8, "out_dim": 4})"),
                    Catch::Contains("\"in_dim\" = -8 is outside 0..4294967295"));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "in_dim": 8589934592, "out_dim": 4})"),
                    Catch::Contains("outside 0..4294967295"));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "in_dim": 8})"), Catch::Contains("needs \"out_dim\""));
  CHECK_THROWS_WITH(parse_spec(R"({"op": "linear_4bit", "in_dim": 8, "out_dim": 4, "target": 90})"),
                    Catch::Contains("\"target\" must be a string"));
}

TEST_CASE("dimension errors come from the op constructor with the seed's message", "[spec]") {
  OpSpec spec = parse_spec(R"({"op": "linear_4bit", "in_dim": 7, "out_dim": 4})");
  CHECK_THROWS_WITH(build_program(spec), Catch::Contains("in_dim=7 is not divisible by 8"));
}
