// Types, literals, node factories, the builder and the printer.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "ir/Builder.h"
#include "ir/Printer.h"

using namespace quantc::ir;

TEST_CASE("scalar types have stable names, widths and sizes", "[ir][types]") {
  CHECK(to_string(ScalarType::F32) == "f32");
  CHECK(parse_scalar_type("u32") == ScalarType::U32);
  CHECK_FALSE(parse_scalar_type("u31").has_value());
  CHECK(bit_width(ScalarType::I4) == 4);
  CHECK(byte_size(ScalarType::F64) == 8);
  CHECK(byte_size(ScalarType::Bool) == 1);
  CHECK_THROWS_WITH(byte_size(ScalarType::U4), Catch::Contains("sub-byte"));
  CHECK(is_signed(ScalarType::I8));
  CHECK_FALSE(is_signed(ScalarType::U64));
}

TEST_CASE("literals canonicalise their bits", "[ir][literal]") {
  CHECK(Literal::make(ScalarType::U8, 0x1ff).as<Literal>()->bits == 0xff);
  CHECK(Literal::i32(-1).as<Literal>()->as_int64() == -1);
  CHECK(Literal::f32(0.5f).as<Literal>()->as_double() == 0.5);
  CHECK(literal(ScalarType::F16, 1.5).as<Literal>()->bits == 0x3e00);
  CHECK(literal(ScalarType::I32, -3.9).as<Literal>()->as_int64() == -3);
}

TEST_CASE("factories reject ill-typed operands with the operand types", "[ir][factory]") {
  CHECK_THROWS_WITH(u32(1) + f32(1.0f), Catch::Contains("operand types differ (u32 vs f32)"));
  CHECK_THROWS_WITH(f32(1.0f) % f32(2.0f), Catch::Contains("must be integers"));
  CHECK_THROWS_WITH(Load::make(ScalarType::F32, "x", i32(0)), Catch::Contains("index must be u32"));
  CHECK_THROWS_WITH(select(u32(1), u32(1), u32(2)), Catch::Contains("condition must be bool"));
  CHECK_THROWS_WITH(fma(u32(1), u32(1), u32(1)), Catch::Contains("float"));
  CHECK_THROWS_WITH(subgroup_shuffle(f64(1.0), u32(0)), Catch::Contains("32-bit"));
  CHECK_THROWS_WITH(Var::make(ScalarType::I4, "nibble"), Catch::Contains("storage-only"));
  CHECK_THROWS_WITH(Builtin::make(BuiltinKind::LocalId, 3), Catch::Contains("axis 3 out of range"));
  CHECK((u32(1) < u32(2)).type() == ScalarType::Bool);
}

TEST_CASE("vector types: the supported element x lane combinations, names, widths and bytes", "[ir][types]") {
  CHECK(to_string(Type(ScalarType::U32, 4)) == "u32x4");
  CHECK(to_string(Type(ScalarType::BF16, 2)) == "bf16x2");
  CHECK(to_string(Type(ScalarType::F32)) == "f32");
  CHECK(parse_type("f16x2") == Type(ScalarType::F16, 2));
  CHECK(parse_type("bf16") == Type(ScalarType::BF16));
  for (const char* invalid : {"f16x4", "u8x2", "f64x2", "u32x3", "f32x8", "boolx2", "u32x", "x2"}) {
    INFO(invalid);
    CHECK_FALSE(parse_type(invalid).has_value());
  }
  CHECK(Type(ScalarType::F32, 4).bits() == 128);
  CHECK(Type(ScalarType::F16, 2).bytes() == 4);
  CHECK(Type(ScalarType::U32, 2) != ScalarType::U32);
  CHECK(Type(ScalarType::U32) == ScalarType::U32);
  CHECK(is_float(Type(ScalarType::BF16, 2)));
  CHECK(bit_width(ScalarType::BF16) == 16);
  CHECK(literal(ScalarType::BF16, 1.0).as<Literal>()->bits == 0x3f80);
}

TEST_CASE("vector, bitcast and permute factories check lanes, widths and types", "[ir][factory]") {
  Expr h = literal(ScalarType::F16, 1.0), b = literal(ScalarType::BF16, 1.0);
  Expr pair = make_vector({h, h});
  CHECK(pair.type() == Type(ScalarType::F16, 2));
  CHECK(extract_lane(pair, 1).type() == ScalarType::F16);
  CHECK(insert_lane(pair, 0, h).type() == pair.type());
  CHECK(bitcast(ScalarType::U32, pair).type() == ScalarType::U32);
  CHECK(subgroup_shuffle(pair, u32(0)).type() == pair.type());  // 32 bits: one shfl
  CHECK((pair * pair).type() == pair.type());
  CHECK((pair * 2.0).type() == pair.type());  // the literal is broadcast
  CHECK_THROWS_WITH(make_vector({h, b}), Catch::Contains("lanes have different types (f16 and bf16)"));
  CHECK_THROWS_WITH(make_vector({h, h, h}), Catch::Contains("f16x3 is not a vector type quantc supports"));
  CHECK_THROWS_WITH(make_vector({pair, pair}), Catch::Contains("expected a scalar, got f16x2"));
  CHECK_THROWS_WITH(extract_lane(pair, 2), Catch::Contains("lane 2 of f16x2"));
  CHECK_THROWS_WITH(extract_lane(h, 0), Catch::Contains("the operand must be a vector"));
  CHECK_THROWS_WITH(insert_lane(pair, 0, b), Catch::Contains("value is bf16 but the lanes of f16x2 are f16"));
  CHECK_THROWS_WITH(bitcast(ScalarType::U64, pair), Catch::Contains("f16x2 (32 bits) -> u64 (64 bits)"));
  CHECK_THROWS_WITH(bitcast(ScalarType::U32, boolean(true)), Catch::Contains("neither may be bool"));
  CHECK_THROWS_WITH(cast(Type(ScalarType::F32, 4), pair), Catch::Contains("changes the lane count"));
  CHECK_THROWS_WITH(permute(u32(1), i32(2), u32(3)), Catch::Contains("operands must be u32"));
  CHECK_THROWS_WITH(pair < pair, Catch::Contains("not defined on vectors"));
  CHECK_THROWS_WITH(subgroup_shuffle(make_vector({u32(1), u32(2)}), u32(0)), Catch::Contains("32-bit"));
  CHECK_THROWS_WITH(Load::make(Type(ScalarType::F32, 4), "x", u32(0), 3), Catch::Contains("alignment 3 is invalid"));
  CHECK_THROWS_WITH(Load::make(Type(ScalarType::F32, 4), "x", u32(0), 32), Catch::Contains("from 4 to 16 bytes"));
  CHECK(Load::make(Type(ScalarType::F32, 4), "x", u32(0)).as<Load>()->alignment == 16);
  CHECK(Load::make(ScalarType::F16, "x", u32(0)).as<Load>()->alignment == 2);
  CHECK_THROWS_WITH(Store::make("y", u32(0), make_vector({u32(1), u32(2)}), 2), Catch::Contains("alignment 2 is invalid for u32x2"));
}

TEST_CASE("the printer writes typed literals, parenthesised binaries and nested blocks", "[ir][printer]") {
  ProgramBuilder builder("print_me");
  BufferRef x = builder.input("x", ScalarType::F32, 4);
  BufferRef y = builder.output("y", ScalarType::F32, 8);
  builder.set_output_byte_range("y", {0, 16});
  builder.launch({32, 1, 1}, {1, 1, 1});
  builder.body([&](Body& body) {
    Expr i = body.let("i", invocation_id(0));
    body.if_then_else(
        i < 4u, [&](Body& then) { then.store(y, i, fma(x[i], f32(2.0f), f32(-0.25f))); },
        [&](Body& otherwise) { otherwise.store(y, i, f32(std::numeric_limits<float>::infinity())); });
    body.loop("k", u32(0), u32(2), [&](Body& loop, Expr k) {
      loop.let("lane_sum", subgroup_add(cast(ScalarType::F32, k + subgroup_local_id())));
    });
  });
  CHECK(print(builder.build()) ==
        "program \"print_me\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n"
        "buffer @0 x: read_only f32[4]\n"
        "buffer @1 y: read_write f32[8] output_bytes(0, 16)\n"
        "{\n"
        "  let i: u32 = invocation_id.x\n"
        "  if (i < 4u32) {\n"
        "    y[i] = fma(x[i], 2.0f32, -0.25f32)\n"
        "  } else {\n"
        "    y[i] = f32(inf)\n"
        "  }\n"
        "  for k: u32 in 0u32 .. 2u32 {\n"
        "    let lane_sum: f32 = subgroup_add(cast<f32>((k + subgroup_local_id)))\n"
        "  }\n"
        "}\n");
}

TEST_CASE("NaN literals keep their bits in print", "[ir][printer]") {
  CHECK(print(Literal::make(ScalarType::F32, 0x7fc00001)) == "f32(nan 0x7fc00001)");
  CHECK(print(Lookup::make(ScalarType::F32, {0, 0x3f800000}, u32(1))) == "lookup<f32>[0.0f32, 1.0f32](1u32)");
}
