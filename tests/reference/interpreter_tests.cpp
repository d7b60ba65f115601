// Lockstep SIMT semantics of the reference interpreter, checked against values worked
// out by hand or by plain C++ in the test (never by the interpreter itself).
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/Builder.h"
#include "tests/ptx/SharedMemoryProgram.h"
#include "runtime/backends/reference/Interpreter.h"

using namespace quantc;
using namespace quantc::ir;
using quantc::runtime::BufferSet;
using quantc::runtime::HostBuffer;
using quantc::runtime::RuntimeError;
namespace reference = quantc::runtime::reference;

namespace {

/// Runs `program` with zeroed buffers except those given in `inputs`.
BufferSet run_program(const Program& program, const BufferSet& inputs = {},
                      reference::RunStatistics* statistics = nullptr) {
  BufferSet buffers = runtime::allocate_buffers(program);
  for (const auto& [name, buffer] : inputs) buffers[name] = buffer;
  reference::RunOptions options;
  options.statistics = statistics;
  // These tests exercise the interpreter's own dynamic checks, so the verifier's static
  // subgroup-uniformity check (tested in tests/passes) must not reject the program first.
  options.verify.subgroup_uniformity = false;
  reference::run(program, buffers, options);
  return buffers;
}

template <class T>
std::vector<T> output(const BufferSet& buffers, const std::string& name) {
  return buffers.at(name).as<T>();
}

std::string error_of(const Program& program, const BufferSet& inputs = {}) {
  try {
    run_program(program, inputs);
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "(no error)";
}

/// One workgroup of `lanes` invocations; `out` u32[lanes].
Program one_workgroup(const std::string& name, std::uint32_t lanes, ScalarType element,
                      const std::function<void(Body&, const BufferRef&, Expr)>& body) {
  ProgramBuilder builder(name);
  BufferRef out = builder.output("out", element, lanes);
  builder.launch({lanes, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    Expr lane = b.let("lane", local_id(0));
    body(b, out, lane);
  });
  return builder.build({.subgroup_uniformity = false});
}

}  // namespace

TEST_CASE("divergent if/else runs each side for its own invocations", "[reference][lockstep]") {
  Program program = one_workgroup("if_else", 64, ScalarType::U32, [](Body& b, const BufferRef& out, Expr lane) {
    Expr value = b.let("value", u32(0));
    b.if_then_else(
        lane % 3u < 1u, [&](Body& then) { then.assign(value, lane * 10u); },
        [&](Body& otherwise) { otherwise.assign(value, lane + 1000u); });
    b.store(out, lane, value);
  });
  auto values = output<std::uint32_t>(run_program(program), "out");
  for (std::uint32_t lane = 0; lane < 64; ++lane) {
    INFO("lane " << lane);
    CHECK(values[lane] == (lane % 3 == 0 ? lane * 10 : lane + 1000));
  }
}

TEST_CASE("loops run a per-invocation trip count with bounds read once on entry", "[reference][lockstep]") {
  Program program = one_workgroup("per_lane_loop", 40, ScalarType::U32, [](Body& b, const BufferRef& out, Expr lane) {
    Expr limit = b.let("limit", lane % 7u);
    Expr sum = b.let("sum", u32(0));
    b.loop("j", u32(0), limit, [&](Body& loop, Expr j) {
      loop.assign(sum, sum + j + 1u);
      loop.assign(limit, u32(100));  // must not change the running loop's bound
    });
    b.store(out, lane, sum * 1000u + limit);
  });
  auto values = output<std::uint32_t>(run_program(program), "out");
  for (std::uint32_t lane = 0; lane < 40; ++lane) {
    std::uint32_t trips = lane % 7, expected_sum = trips * (trips + 1) / 2;
    std::uint32_t expected_limit = trips == 0 ? 0 : 100;
    INFO("lane " << lane);
    CHECK(values[lane] == expected_sum * 1000 + expected_limit);
  }
}

TEST_CASE("signed loop bounds and empty ranges", "[reference][lockstep]") {
  Program program = one_workgroup("signed_loop", 8, ScalarType::I32, [](Body& b, const BufferRef& out, Expr lane) {
    Expr count = b.let("count", i32(0));
    // from -3 to lane - 5: lanes 0..1 run no iteration (-3 >= -5, -4).
    b.loop("j", i32(-3), cast(ScalarType::I32, lane) - 5.0, [&](Body& loop, Expr) { loop.assign(count, count + 1.0); });
    b.store(out, lane, count);
  });
  auto values = output<std::int32_t>(run_program(program), "out");
  for (std::int32_t lane = 0; lane < 8; ++lane) CHECK(values[lane] == std::max(0, lane - 5 + 3));
}

TEST_CASE("nested divergence: if inside a loop inside an if", "[reference][lockstep]") {
  Program program = one_workgroup("nested", 64, ScalarType::U32, [](Body& b, const BufferRef& out, Expr lane) {
    Expr acc = b.let("acc", u32(0));
    b.if_then_else(
        lane < 48u,
        [&](Body& outer) {
          outer.loop("j", u32(0), lane % 5u, [&](Body& loop, Expr j) {
            loop.if_then_else(
                eq((lane + j) % 2u, u32(0)), [&](Body& even) { even.assign(acc, acc + 100u); },
                [&](Body& odd) { odd.assign(acc, acc + 1u); });
          });
        },
        [&](Body& high) { high.assign(acc, u32(7)); });
    b.store(out, lane, acc);
  });
  auto values = output<std::uint32_t>(run_program(program), "out");
  for (std::uint32_t lane = 0; lane < 64; ++lane) {
    std::uint32_t expected = 0;
    if (lane < 48) {
      for (std::uint32_t j = 0; j < lane % 5; ++j) expected += (lane + j) % 2 == 0 ? 100 : 1;
    } else {
      expected = 7;
    }
    INFO("lane " << lane);
    CHECK(values[lane] == expected);
  }
}

TEST_CASE("return ends an invocation for the rest of the kernel", "[reference][lockstep]") {
  Program program = one_workgroup("early_return", 64, ScalarType::U32, [](Body& b, const BufferRef& out, Expr lane) {
    b.store(out, lane, u32(1));
    b.loop("j", u32(0), u32(2), [&](Body& loop, Expr j) {
      // Odd lanes with lane / 8 % 4 == j leave in iteration j (j = 0, 1).
      loop.if_then(logical_and(eq(lane / 8u % 4u, j), eq(lane % 2u, u32(1))), [&](Body& then) { then.return_(); });
    });
    b.if_then(eq(lane % 4u, u32(1)), [&](Body& then) { then.return_(); });
    b.store(out, lane, u32(2));
  });
  auto values = output<std::uint32_t>(run_program(program), "out");
  for (std::uint32_t lane = 0; lane < 64; ++lane) {
    bool returned = (lane % 2 == 1 && lane / 8 % 4 < 2) || lane % 4 == 1;
    INFO("lane " << lane);
    CHECK(values[lane] == (returned ? 1u : 2u));
  }
}

TEST_CASE("a subgroup op after some lanes returned is an error", "[reference][subgroup]") {
  Program program = one_workgroup("return_then_add", 32, ScalarType::U32, [](Body& b, const BufferRef& out, Expr lane) {
    b.if_then(eq(lane, u32(5)), [&](Body& then) { then.return_(); });
    b.store(out, lane, subgroup_add(lane));
  });
  std::string error = error_of(program);
  CHECK_THAT(error, Catch::Contains("subgroup_add"));
  CHECK_THAT(error, Catch::Contains("inactive lanes 5"));
}

TEST_CASE("subgroup shuffle, add, max, min and ballot values", "[reference][subgroup]") {
  constexpr std::uint32_t kLanes = 64;
  ProgramBuilder builder("subgroup_values");
  BufferRef input = builder.input("input", ScalarType::F32, kLanes);
  BufferRef shuffled = builder.output("shuffled", ScalarType::U32, kLanes);
  BufferRef sums = builder.output("sums", ScalarType::F32, kLanes);
  BufferRef maxima = builder.output("maxima", ScalarType::I32, kLanes);
  BufferRef minima = builder.output("minima", ScalarType::U32, kLanes);
  BufferRef ballots = builder.output("ballots", ScalarType::U32, kLanes);
  builder.launch({kLanes, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    Expr lane = b.let("lane", local_id(0));
    Expr sub = b.let("sub", subgroup_local_id());
    // Source lane 31 - sub, except every 4th lane asks for lane 40 (>= 32: own value).
    Expr source = b.let("source", select(eq(sub % 4u, u32(3)), u32(40), 31u - sub));
    b.store(shuffled, lane, subgroup_shuffle(lane * 10u, source));
    b.store(sums, lane, subgroup_add(input[lane]));
    Expr signed_value = b.let("signed_value", cast(ScalarType::I32, (lane * 37u) % 101u) - 50.0);
    b.store(maxima, lane, subgroup_max(signed_value));
    b.store(minima, lane, subgroup_min((lane * 13u) % 29u + 3u));
    b.store(ballots, lane, subgroup_ballot(logical_or(eq(lane % 3u, u32(0)), lane > 60u)));
  });
  Program program = builder.build();

  std::vector<float> x(kLanes);
  for (std::uint32_t i = 0; i < kLanes; ++i) x[i] = std::ldexp(1.0f + i * 0.37f, int(i % 7) * 3 - 9) * (i % 2 ? -1 : 1);
  BufferSet buffers = run_program(program, {{"input", HostBuffer::from(ScalarType::F32, x)}});

  auto shuffle_values = output<std::uint32_t>(buffers, "shuffled");
  auto sum_values = output<float>(buffers, "sums");
  auto max_values = output<std::int32_t>(buffers, "maxima");
  auto min_values = output<std::uint32_t>(buffers, "minima");
  auto ballot_values = output<std::uint32_t>(buffers, "ballots");
  for (std::uint32_t subgroup = 0; subgroup < 2; ++subgroup) {
    const std::uint32_t base = subgroup * 32;
    // Butterfly 16, 8, 4, 2, 1 (shfl.sync.bfly), written out independently of the interpreter.
    std::vector<float> partial(x.begin() + base, x.begin() + base + 32);
    for (std::uint32_t offset = 16; offset >= 1; offset /= 2) {
      std::vector<float> next(32);
      for (std::uint32_t i = 0; i < 32; ++i) next[i] = partial[i] + partial[i ^ offset];
      partial = next;
    }
    std::int32_t expected_max = std::numeric_limits<std::int32_t>::min();
    std::uint32_t expected_min = ~0u, expected_ballot = 0;
    for (std::uint32_t i = 0; i < 32; ++i) {
      std::uint32_t lane = base + i;
      expected_max = std::max(expected_max, std::int32_t((lane * 37) % 101) - 50);
      expected_min = std::min(expected_min, (lane * 13) % 29 + 3);
      if (lane % 3 == 0 || lane > 60) expected_ballot |= 1u << i;
    }
    for (std::uint32_t i = 0; i < 32; ++i) {
      std::uint32_t lane = base + i;
      INFO("lane " << lane);
      std::uint32_t source = i % 4 == 3 ? i : 31 - i;
      CHECK(shuffle_values[lane] == (base + source) * 10);
      CHECK(std::bit_cast<std::uint32_t>(sum_values[lane]) == std::bit_cast<std::uint32_t>(partial[0]));
      CHECK(max_values[lane] == expected_max);
      CHECK(min_values[lane] == expected_min);
      CHECK(ballot_values[lane] == expected_ballot);
    }
  }
  // The butterfly order is observable: a sequential sum of this data differs.
  float sequential = 0;
  for (std::uint32_t i = 0; i < 32; ++i) sequential += x[i];
  CHECK(std::bit_cast<std::uint32_t>(sequential) != std::bit_cast<std::uint32_t>(sum_values[0]));
}

TEST_CASE("subgroup op under divergent control flow names the op and the inactive lanes", "[reference][subgroup]") {
  SECTION("masked off by an if") {
    Program program = one_workgroup("divergent_add", 64, ScalarType::U32, [](Body& b, const BufferRef& out, Expr lane) {
      b.if_then(logical_or(lane < 16u, lane > 40u), [&](Body& then) { then.store(out, lane, subgroup_add(lane)); });
    });
    std::string error = error_of(program);
    CHECK_THAT(error, Catch::Contains("subgroup_add(lane)"));
    CHECK_THAT(error, Catch::Contains("subgroup 0"));
    CHECK_THAT(error, Catch::Contains("inactive lanes 16-31"));
    CHECK_THAT(error, Catch::Contains("active lanes: 0-15"));
  }
  SECTION("beyond the workgroup size") {
    Program program = one_workgroup("partial_subgroup", 40, ScalarType::U32, [](Body& b, const BufferRef& out, Expr lane) {
      b.store(out, lane, subgroup_shuffle(lane, u32(0)));
    });
    std::string error = error_of(program);
    CHECK_THAT(error, Catch::Contains("subgroup_shuffle(lane, 0u32)"));
    CHECK_THAT(error, Catch::Contains("subgroup 1"));
    CHECK_THAT(error, Catch::Contains("lanes 8-31 are beyond the workgroup size 40"));
  }
  SECTION("ballot in a loop with per-lane trip counts") {
    Program program = one_workgroup("divergent_ballot", 32, ScalarType::U32, [](Body& b, const BufferRef& out, Expr lane) {
      b.loop("j", u32(0), lane % 2u + 1u, [&](Body& loop, Expr j) { loop.store(out, lane, subgroup_ballot(eq(j, u32(0)))); });
    });
    std::string error = error_of(program);
    CHECK_THAT(error, Catch::Contains("subgroup_ballot"));
    CHECK_THAT(error, Catch::Contains("inactive lanes 0, 2, 4"));
  }
}

TEST_CASE("out-of-bounds loads and stores name buffer, index and count", "[reference][bounds]") {
  ProgramBuilder builder("bounds");
  BufferRef data = builder.input("data", ScalarType::F32, 8);
  BufferRef out = builder.output("out", ScalarType::F32, 4);
  BufferRef index_buffer = builder.input("indices", ScalarType::U32, 2);
  builder.launch({1, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    b.store(out, index_buffer[1u], data[index_buffer[0u]]);
  });
  Program program = builder.build();
  auto with_indices = [](std::uint32_t load_index, std::uint32_t store_index) {
    return BufferSet{{"indices", HostBuffer::from(ScalarType::U32, std::vector<std::uint32_t>{load_index, store_index})}};
  };
  CHECK_NOTHROW(run_program(program, with_indices(7, 3)));
  std::string load_error = error_of(program, with_indices(8, 0));
  CHECK_THAT(load_error, Catch::Contains("out-of-bounds load from buffer 'data': index 8 >= count 8"));
  CHECK_THAT(load_error, Catch::Contains("invocation (0, 0, 0) of workgroup (0, 0, 0)"));
  std::string store_error = error_of(program, with_indices(0, 4000000000u));
  CHECK_THAT(store_error, Catch::Contains("out-of-bounds store to buffer 'out': index 4000000000 >= count 4"));
}

TEST_CASE("a reinterpreting load reads little-endian u32 words of a byte buffer and checks its whole span",
          "[reference][bounds]") {
  ProgramBuilder builder("wide");
  BufferRef bytes = builder.input("bytes", ScalarType::I8, 36);
  BufferRef out = builder.output("out", ScalarType::U32, 4);
  BufferRef index_buffer = builder.input("indices", ScalarType::U32, 1);
  builder.launch({1, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) { b.store(out, u32(0), bytes.load_words((index_buffer[0u] & 3u) * 16u, 4)); });
  Program program = builder.build();
  std::vector<std::int8_t> data(36);
  for (int i = 0; i < 36; ++i) data[i] = static_cast<std::int8_t>(i - 100);
  auto inputs = [&](std::uint32_t block) {
    return BufferSet{{"bytes", HostBuffer::from(ScalarType::I8, data)},
                     {"indices", HostBuffer::from(ScalarType::U32, std::vector<std::uint32_t>{block})}};
  };
  BufferSet result = run_program(program, inputs(1));
  std::vector<std::uint32_t> words = result.at("out").as<std::uint32_t>();
  for (unsigned lane = 0; lane < 4; ++lane) {
    std::uint32_t expected;
    std::memcpy(&expected, data.data() + 16 + 4 * lane, 4);
    CHECK(words[lane] == expected);
  }
  // Bytes 32..47 of a 36-byte buffer: the span, not just the first byte, must be in range.
  CHECK_THAT(error_of(program, inputs(2)), Catch::Contains("out-of-bounds load of 16 elements from buffer 'bytes': "
                                                           "index 32 + 16 > count 36"));
}

TEST_CASE("a reinterpreting store writes little-endian u32 words over a byte buffer and checks its whole span",
          "[reference][bounds]") {
  ProgramBuilder builder("wide_store");
  BufferRef bytes = builder.output("bytes", ScalarType::U8, 20);
  BufferRef index_buffer = builder.input("indices", ScalarType::U32, 1);
  builder.launch({1, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    b.store_words(bytes, (index_buffer[0u] & 3u) * 8u, MakeVector::make({u32(0x04030201u), u32(0x08070605u)}));
  });
  Program program = builder.build();
  auto inputs = [&](std::uint32_t block) {
    return BufferSet{{"bytes", HostBuffer::from(ScalarType::U8, std::vector<std::uint8_t>(20, 0xEE))},
                     {"indices", HostBuffer::from(ScalarType::U32, std::vector<std::uint32_t>{block})}};
  };
  std::vector<std::uint8_t> written = run_program(program, inputs(1)).at("bytes").as<std::uint8_t>();
  for (unsigned i = 0; i < 20; ++i) {
    INFO(i);
    CHECK(written[i] == (i >= 8 && i < 16 ? i - 7 : 0xEE));  // bytes 8..15 hold 1..8, the rest is untouched
  }
  // Bytes 16..23 of a 20-byte buffer: the span, not just the first byte, must be in range.
  CHECK_THAT(error_of(program, inputs(2)), Catch::Contains("out-of-bounds store to buffer 'bytes': index 16 + 7"));
}

TEST_CASE("undeclared buffers, missing variables and mismatched buffers are errors", "[reference][bounds]") {
  Program program;
  program.name = "undeclared";
  program.buffers.push_back(BufferDecl{"out", 0, BufferAccess::ReadWrite, ScalarType::U32, 1, std::nullopt});
  program.entry = Block::make({Store::make("out", u32(0), Load::make(ScalarType::U32, "ghost", u32(0)))});
  CHECK_THAT(error_of(program), Catch::Contains("program 'undeclared' is not well formed"));
  CHECK_THAT(error_of(program), Catch::Contains("undeclared buffer 'ghost'"));

  program.entry = Block::make({Store::make("out", u32(0), Var::make(ScalarType::U32, "nowhere"))});
  CHECK_THAT(error_of(program), Catch::Contains("undeclared variable 'nowhere'"));

  program.buffers[0].access = BufferAccess::ReadOnly;
  program.entry = Block::make({Store::make("out", u32(0), u32(7))});
  CHECK_THAT(error_of(program), Catch::Contains("not well formed"));
  CHECK(error_of(program).find("out") != std::string::npos);

  BufferSet wrong{{"out", HostBuffer::from(ScalarType::U32, std::vector<std::uint32_t>{1, 2})}};
  CHECK_THROWS_WITH(reference::run(program, wrong), Catch::Contains("buffer 'out': expected 1 elements"));
}

TEST_CASE("integer division by zero is an error, MIN / -1 wraps", "[reference][arithmetic]") {
  ProgramBuilder builder("division");
  BufferRef in = builder.input("in", ScalarType::I32, 2);
  BufferRef out = builder.output("out", ScalarType::I32, 2);
  builder.launch({1, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    b.store(out, u32(0), in[0u] / in[1u]);
    b.store(out, u32(1), in[0u] % in[1u]);
  });
  Program program = builder.build();
  auto inputs = [](std::int32_t a, std::int32_t b) {
    return BufferSet{{"in", HostBuffer::from(ScalarType::I32, std::vector<std::int32_t>{a, b})}};
  };
  CHECK(output<std::int32_t>(run_program(program, inputs(-7, 2)), "out") == std::vector<std::int32_t>{-3, -1});
  const std::int32_t min = std::numeric_limits<std::int32_t>::min();
  CHECK(output<std::int32_t>(run_program(program, inputs(min, -1)), "out") == std::vector<std::int32_t>{min, 0});
  std::string error = error_of(program, inputs(5, 0));
  CHECK_THAT(error, Catch::Contains("integer division by zero (dividend 5)"));
  CHECK_THAT(error, Catch::Contains("(in[0u32] / in[1u32])"));
}

TEST_CASE("integers wrap and shifts clamp at the bit width", "[reference][arithmetic]") {
  ProgramBuilder builder("wrap_shift");
  BufferRef in = builder.input("in", ScalarType::U32, 4);
  BufferRef u32_out = builder.output("u32_out", ScalarType::U32, 6);
  BufferRef i32_out = builder.output("i32_out", ScalarType::I32, 5);
  BufferRef u8_out = builder.output("u8_out", ScalarType::U8, 3);
  BufferRef i8_out = builder.output("i8_out", ScalarType::I8, 2);
  BufferRef u16_out = builder.output("u16_out", ScalarType::U16, 1);
  builder.launch({1, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    Expr amount = b.let("amount", in[0u]);  // 32
    Expr big = b.let("big", in[1u]);        // 0xFFFFFFF0
    b.store(u32_out, u32(0), big << amount);
    b.store(u32_out, u32(1), big >> (amount + 1u));
    b.store(u32_out, u32(2), big << 4u);
    b.store(u32_out, u32(3), big + 0x20u);
    b.store(u32_out, u32(4), big * 0x10u + 7u);
    b.store(u32_out, u32(5), u32(3) - 5u);
    Expr negative = b.let("negative", cast(ScalarType::I32, big));  // -16
    Expr signed_amount = b.let("signed_amount", cast(ScalarType::I32, amount));
    b.store(i32_out, u32(0), negative >> signed_amount);            // -1
    b.store(i32_out, u32(1), negative >> 2.0);                      // -4 (arithmetic)
    b.store(i32_out, u32(2), negative << (signed_amount + 8.0));    // 0
    b.store(i32_out, u32(3), i32(std::numeric_limits<std::int32_t>::max()) + 1.0);
    b.store(i32_out, u32(4), -i32(std::numeric_limits<std::int32_t>::min()));
    Expr small = b.let("small", cast(ScalarType::U8, in[2u]));  // 200
    b.store(u8_out, u32(0), small + literal(ScalarType::U8, 100));
    b.store(u8_out, u32(1), small * literal(ScalarType::U8, 3));
    b.store(u8_out, u32(2), small >> literal(ScalarType::U8, 8));
    Expr tiny = b.let("tiny", cast(ScalarType::I8, in[3u]));  // -128
    b.store(i8_out, u32(0), tiny - literal(ScalarType::I8, 1));
    b.store(i8_out, u32(1), abs(tiny));
    Expr half_word = b.let("half_word", cast(ScalarType::U16, in[1u]));  // 0xFFF0
    b.store(u16_out, u32(0), half_word * half_word);
  });
  Program program = builder.build();
  BufferSet buffers = run_program(
      program, {{"in", HostBuffer::from(ScalarType::U32, std::vector<std::uint32_t>{32, 0xFFFFFFF0u, 200, 0x80})}});
  CHECK(output<std::uint32_t>(buffers, "u32_out") ==
        std::vector<std::uint32_t>{0, 0, 0xFFFFFF00u, 0x10, 0xFFFFFF07u, 0xFFFFFFFEu});
  const std::int32_t min = std::numeric_limits<std::int32_t>::min();
  CHECK(output<std::int32_t>(buffers, "i32_out") == std::vector<std::int32_t>{-1, -4, 0, min, min});
  CHECK(output<std::uint8_t>(buffers, "u8_out") == std::vector<std::uint8_t>{44, 88, 0});
  CHECK(output<std::int8_t>(buffers, "i8_out") == std::vector<std::int8_t>{127, -128});
  CHECK(output<std::uint16_t>(buffers, "u16_out") == std::vector<std::uint16_t>{0x0100});  // 0xFFF0^2 mod 2^16
}

TEST_CASE("casts: float to integer rounds toward zero, saturates, NaN gives 0", "[reference][cast]") {
  const std::vector<float> inputs = {std::nanf(""), 1e10f, -1e10f, -2.7f, 2.7f, 300.5f, -5.5f, 4294967040.0f,
                                     -0.9f, std::numeric_limits<float>::infinity()};
  const auto n = static_cast<std::uint32_t>(inputs.size());
  ProgramBuilder builder("float_to_int");
  BufferRef in = builder.input("in", ScalarType::F32, n);
  BufferRef as_i32 = builder.output("as_i32", ScalarType::I32, n);
  BufferRef as_u32 = builder.output("as_u32", ScalarType::U32, n);
  BufferRef as_u8 = builder.output("as_u8", ScalarType::U8, n);
  BufferRef as_i8 = builder.output("as_i8", ScalarType::I8, n);
  BufferRef as_i64 = builder.output("as_i64", ScalarType::I64, n);
  BufferRef as_bool = builder.output("as_bool", ScalarType::Bool, n);
  builder.launch({n, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    Expr i = b.let("i", local_id(0));
    Expr value = b.let("value", in[i]);
    b.store(as_i32, i, cast(ScalarType::I32, value));
    b.store(as_u32, i, cast(ScalarType::U32, value));
    b.store(as_u8, i, cast(ScalarType::U8, value));
    b.store(as_i8, i, cast(ScalarType::I8, value));
    b.store(as_i64, i, cast(ScalarType::I64, value));
    b.store(as_bool, i, cast(ScalarType::Bool, value));
  });
  BufferSet buffers = run_program(builder.build(), {{"in", HostBuffer::from(ScalarType::F32, inputs)}});
  const std::int32_t i32_max = std::numeric_limits<std::int32_t>::max(), i32_min = std::numeric_limits<std::int32_t>::min();
  CHECK(output<std::int32_t>(buffers, "as_i32") ==
        std::vector<std::int32_t>{0, i32_max, i32_min, -2, 2, 300, -5, i32_max, 0, i32_max});
  CHECK(output<std::uint32_t>(buffers, "as_u32") ==
        std::vector<std::uint32_t>{0, 0xFFFFFFFFu, 0, 0, 2, 300, 0, 4294967040u, 0, 0xFFFFFFFFu});
  CHECK(output<std::uint8_t>(buffers, "as_u8") == std::vector<std::uint8_t>{0, 255, 0, 0, 2, 255, 0, 255, 0, 255});
  CHECK(output<std::int8_t>(buffers, "as_i8") == std::vector<std::int8_t>{0, 127, -128, -2, 2, 127, -5, 127, 0, 127});
  CHECK(output<std::int64_t>(buffers, "as_i64") ==
        std::vector<std::int64_t>{0, 10000000000, -10000000000, -2, 2, 300, -5, 4294967040, 0,
                                  std::numeric_limits<std::int64_t>::max()});
  // x -> bool is x != 0: NaN is true, -0.9 is true.
  CHECK(output<std::uint8_t>(buffers, "as_bool") == std::vector<std::uint8_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
}

TEST_CASE("casts between integers and to floats", "[reference][cast]") {
  ProgramBuilder builder("int_casts");
  BufferRef in = builder.input("in", ScalarType::U32, 1);
  BufferRef ints = builder.output("ints", ScalarType::I64, 4);
  BufferRef floats = builder.output("floats", ScalarType::F32, 2);
  BufferRef doubles = builder.output("doubles", ScalarType::F64, 1);
  builder.launch({1, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    Expr word = b.let("word", in[0u]);  // 0x800000FF
    b.store(ints, u32(0), cast(ScalarType::I64, word));                                  // zero-extends
    b.store(ints, u32(1), cast(ScalarType::I64, cast(ScalarType::I32, word)));           // sign-extends
    b.store(ints, u32(2), cast(ScalarType::I64, cast(ScalarType::I8, word)));            // truncates to -1
    b.store(ints, u32(3), cast(ScalarType::I64, cast(ScalarType::Bool, word & 0x100u)));  // 0
    // 2^24 + 1 is not an f32: round to nearest even gives 2^24; 0x800000FF -> 2^31.
    b.store(floats, u32(0), cast(ScalarType::F32, (word & 0u) + 16777217u));
    b.store(floats, u32(1), cast(ScalarType::F32, cast(ScalarType::U64, word) * literal(ScalarType::U64, 0x100000000)));
    b.store(doubles, u32(0), cast(ScalarType::F64, cast(ScalarType::I32, word)));
  });
  BufferSet buffers =
      run_program(builder.build(), {{"in", HostBuffer::from(ScalarType::U32, std::vector<std::uint32_t>{0x800000FFu})}});
  CHECK(output<std::int64_t>(buffers, "ints") == std::vector<std::int64_t>{0x800000FF, -2147483393, -1, 0});
  CHECK(output<float>(buffers, "floats") == std::vector<float>{16777216.0f, 9223373136366403584.0f});
  CHECK(output<double>(buffers, "doubles") == std::vector<double>{-2147483393.0});
}

TEST_CASE("f16 values: loads, arithmetic rounded to binary16, stores and round trips", "[reference][f16]") {
  // binary16 bit patterns: 1.0 = 0x3C00, 2^-11 = 0x1000 (half an ulp of 1.0),
  // 65504 (max) = 0x7BFF, 0.1 rounds to 0x2E66.
  ProgramBuilder builder("half");
  BufferRef in = builder.input("in", ScalarType::F16, 3);
  BufferRef in32 = builder.input("in32", ScalarType::F32, 1);
  BufferRef out = builder.output("out", ScalarType::F16, 5);
  BufferRef wide = builder.output("wide", ScalarType::F32, 1);
  builder.launch({1, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    b.store(out, u32(0), in[0u] + in[1u]);                        // 1 + 2^-11: tie, rounds to even (1.0)
    b.store(out, u32(1), in[0u] + in[1u] + in[1u] + in[1u]);      // stays 1.0 per step
    b.store(out, u32(2), in[2u] + in[2u]);                        // overflow to +inf
    b.store(out, u32(3), cast(ScalarType::F16, in32[0u]));        // 0.1f -> 0x2E66
    b.store(out, u32(4), fma(in[0u], in[1u], in[0u]));            // exact 1 + 2^-11 -> tie -> 1.0
    b.store(wide, u32(0), cast(ScalarType::F32, cast(ScalarType::F16, in32[0u])));
  });
  BufferSet buffers = run_program(
      builder.build(), {{"in", HostBuffer::from(ScalarType::F16, std::vector<std::uint16_t>{0x3C00, 0x1000, 0x7BFF})},
                        {"in32", HostBuffer::from(ScalarType::F32, std::vector<float>{0.1f})}});
  CHECK(output<std::uint16_t>(buffers, "out") == std::vector<std::uint16_t>{0x3C00, 0x3C00, 0x7C00, 0x2E66, 0x3C00});
  // 0x2E66 = 2^-4 * (1 + 614/1024) = 0.0999755859375
  CHECK(output<float>(buffers, "wide") == std::vector<float>{0.0999755859375f});
}

TEST_CASE("f32: no contraction, fma fused, min/max NaN rule, ne unordered", "[reference][float]") {
  const float a = 1.0f + std::ldexp(1.0f, -12);
  const float c = -(1.0f + std::ldexp(1.0f, -11));
  const float nan = std::nanf("");
  ProgramBuilder builder("floats");
  BufferRef in = builder.input("in", ScalarType::F32, 3);
  BufferRef out = builder.output("out", ScalarType::F32, 8);
  BufferRef flags = builder.output("flags", ScalarType::Bool, 3);
  builder.launch({1, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    Expr x = b.let("x", in[0u]), z = b.let("z", in[1u]), n = b.let("n", in[2u]);
    b.store(out, u32(0), x * x + z);        // (1 + 2^-11 + 2^-24 rounded to 1 + 2^-11) - (1 + 2^-11) = 0
    b.store(out, u32(1), fma(x, x, z));     // exactly 2^-24
    b.store(out, u32(2), min(n, x));
    b.store(out, u32(3), max(x, n));
    b.store(out, u32(4), min(f32(-0.0f), f32(0.0f)));
    b.store(out, u32(5), max(f32(-0.0f), f32(0.0f)));
    b.store(out, u32(6), min(z, x));
    b.store(out, u32(7), abs(z));
    b.store(flags, u32(0), ne(n, n));
    b.store(flags, u32(1), eq(n, n));
    b.store(flags, u32(2), n < x);
  });
  BufferSet buffers = run_program(builder.build(), {{"in", HostBuffer::from(ScalarType::F32, std::vector<float>{a, c, nan})}});
  auto values = output<float>(buffers, "out");
  CHECK(values[0] == 0.0f);
  CHECK(values[1] == std::ldexp(1.0f, -24));
  CHECK(values[2] == a);
  CHECK(values[3] == a);
  CHECK(std::signbit(values[4]));
  CHECK_FALSE(std::signbit(values[5]));
  CHECK(values[6] == c);
  CHECK(values[7] == -c);
  CHECK(output<std::uint8_t>(buffers, "flags") == std::vector<std::uint8_t>{1, 0, 0});
}

TEST_CASE("f64 arithmetic and u64/i64 values", "[reference][float]") {
  ProgramBuilder builder("wide_types");
  BufferRef in = builder.input("in", ScalarType::F64, 2);
  BufferRef out = builder.output("out", ScalarType::F64, 2);
  BufferRef words = builder.output("words", ScalarType::U64, 2);
  builder.launch({1, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    b.store(out, u32(0), in[0u] / in[1u]);
    b.store(out, u32(1), in[0u] * in[1u] - 3.0);
    Expr big = b.let("big", literal(ScalarType::U64, 0) - literal(ScalarType::U64, 1));
    b.store(words, u32(0), big >> literal(ScalarType::U64, 63));
    b.store(words, u32(1), cast(ScalarType::U64, literal(ScalarType::I64, -3)) + big);
  });
  BufferSet buffers = run_program(builder.build(), {{"in", HostBuffer::from(ScalarType::F64, std::vector<double>{1.0, 3.0})}});
  CHECK(output<double>(buffers, "out") == std::vector<double>{1.0 / 3.0, 0.0});
  CHECK(output<std::uint64_t>(buffers, "words") == std::vector<std::uint64_t>{1, 0xFFFFFFFFFFFFFFFCull});
}

TEST_CASE("lookup reads a constant table and rejects out-of-range indices", "[reference][lookup]") {
  std::vector<std::uint64_t> table;
  for (int i = 0; i < 16; ++i) table.push_back(std::bit_cast<std::uint32_t>(float(i) * 0.125f - 1.0f));
  ProgramBuilder builder("lookup");
  BufferRef codes = builder.input("codes", ScalarType::U32, 4);
  BufferRef out = builder.output("out", ScalarType::F32, 4);
  builder.launch({4, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    Expr i = b.let("i", local_id(0));
    b.store(out, i, Lookup::make(ScalarType::F32, table, codes[i]));
  });
  Program program = builder.build();
  auto with_codes = [](std::vector<std::uint32_t> values) {
    return BufferSet{{"codes", HostBuffer::from(ScalarType::U32, values)}};
  };
  CHECK(output<float>(run_program(program, with_codes({0, 15, 8, 3})), "out") ==
        std::vector<float>{-1.0f, 0.875f, 0.0f, -0.625f});
  std::string error = error_of(program, with_codes({0, 16, 8, 3}));
  CHECK_THAT(error, Catch::Contains("lookup index 16 out of range for a table of 16 entries"));
  CHECK_THAT(error, Catch::Contains("invocation (1, 0, 0)"));
}

TEST_CASE("barrier reached by part of the workgroup is an error", "[reference][lockstep]") {
  Program uniform = one_workgroup("uniform_barrier", 64, ScalarType::U32, [](Body& b, const BufferRef& out, Expr lane) {
    b.store(out, lane, lane);
    b.barrier();
    b.store(out, lane, out[63u - lane]);
  });
  // Lockstep: every lane loads before any lane stores, so each reads the pre-store value.
  auto values = output<std::uint32_t>(run_program(uniform), "out");
  for (std::uint32_t lane = 0; lane < 64; ++lane) CHECK(values[lane] == 63 - lane);
  Program divergent = one_workgroup("divergent_barrier", 64, ScalarType::U32, [](Body& b, const BufferRef&, Expr lane) {
    b.if_then(lane < 10u, [&](Body& then) { then.barrier(); });
  });
  CHECK_THAT(error_of(divergent), Catch::Contains("barrier reached by 10 of the 64 invocations"));
}

TEST_CASE("multi-dimensional launches number invocations x fastest", "[reference][lockstep]") {
  ProgramBuilder builder("grid");
  BufferRef out = builder.output("out", ScalarType::U32, 2 * 3 * 4 * 2 * 2);
  builder.launch({2, 3, 4}, {2, 2, 1});
  builder.body([&](Body& b) {
    Expr gx = b.let("gx", invocation_id(0)), gy = b.let("gy", invocation_id(1)), gz = b.let("gz", invocation_id(2));
    Expr linear = b.let("linear", (gz * 6u + gy) * 4u + gx);
    b.store(out, linear, workgroup_id(0) * 1000u + workgroup_id(1) * 100u + local_id(2) * 10u + subgroup_local_id());
  });
  auto values = output<std::uint32_t>(run_program(builder.build()), "out");
  for (std::uint32_t gz = 0; gz < 4; ++gz)
    for (std::uint32_t gy = 0; gy < 6; ++gy)
      for (std::uint32_t gx = 0; gx < 4; ++gx) {
        std::uint32_t lx = gx % 2, ly = gy % 3, lz = gz;
        std::uint32_t expected = gx / 2 * 1000 + gy / 3 * 100 + lz * 10 + (lx + 2 * ly + 6 * lz) % 32;
        CHECK(values[(gz * 6 + gy) * 4 + gx] == expected);
      }
}

TEST_CASE("byte-sized buffers of every type load and store their encodings", "[reference][types]") {
  ProgramBuilder builder("byte_types");
  BufferRef flags = builder.input("flags", ScalarType::Bool, 3);
  BufferRef halves = builder.input("halves", ScalarType::U16, 2);
  BufferRef longs = builder.input("longs", ScalarType::I64, 2);
  BufferRef bytes = builder.input("bytes", ScalarType::I8, 2);
  BufferRef out = builder.output("out", ScalarType::I64, 6);
  BufferRef out_flags = builder.output("out_flags", ScalarType::Bool, 3);
  builder.launch({1, 1, 1}, {1, 1, 1});
  builder.body([&](Body& b) {
    b.store(out, u32(0), cast(ScalarType::I64, flags[0u]) + cast(ScalarType::I64, flags[1u]) * 10.0 +
                             cast(ScalarType::I64, flags[2u]) * 100.0);
    b.store(out, u32(1), cast(ScalarType::I64, halves[0u] + halves[1u]));  // u16 wraps
    b.store(out, u32(2), longs[0u] * longs[1u]);
    b.store(out, u32(3), cast(ScalarType::I64, bytes[0u]));
    b.store(out, u32(4), cast(ScalarType::I64, bytes[1u]));
    b.store(out, u32(5), cast(ScalarType::I64, BufferLength::make("longs")));
    b.store(out_flags, u32(0), !flags[1u]);
    b.store(out_flags, u32(1), logical_and(flags[1u], flags[2u]));
    b.store(out_flags, u32(2), flags[0u] ^ flags[1u]);
  });
  BufferSet inputs{
      {"flags", HostBuffer::from(ScalarType::Bool, std::vector<std::uint8_t>{0, 2, 1})},  // byte 2 reads as true
      {"halves", HostBuffer::from(ScalarType::U16, std::vector<std::uint16_t>{0xFFFF, 3})},
      {"longs", HostBuffer::from(ScalarType::I64, std::vector<std::int64_t>{-3000000000, 5})},
      {"bytes", HostBuffer::from(ScalarType::I8, std::vector<std::int8_t>{-7, 100})}};
  BufferSet buffers = run_program(builder.build(), inputs);
  CHECK(output<std::int64_t>(buffers, "out") == std::vector<std::int64_t>{110, 2, -15000000000, -7, 100, 2});
  CHECK(output<std::uint8_t>(buffers, "out_flags") == std::vector<std::uint8_t>{0, 1, 1});
}

TEST_CASE("with several threads the reported error is the sequential run's first one", "[reference][threads]") {
  // Workgroups 2..7 all fail; whichever thread gets there first, workgroup 2's error wins.
  ProgramBuilder builder("fails_everywhere");
  BufferRef data = builder.input("data", ScalarType::U32, 4);
  BufferRef out = builder.output("out", ScalarType::U32, 64);
  builder.launch({8, 1, 1}, {8, 1, 1});
  builder.body([&](Body& b) {
    Expr i = b.let("i", invocation_id(0));
    b.if_then(workgroup_id(0) >= 2u, [&](Body& then) { then.store(out, i, data[i]); });
  });
  Program failing = builder.build();
  auto error_with = [&](unsigned threads) {
    BufferSet buffers = runtime::allocate_buffers(failing);
    reference::RunOptions run_options;
    run_options.threads = threads;
    try {
      reference::run(failing, buffers, run_options);
    } catch (const runtime::RuntimeError& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  std::string sequential = error_with(1);
  CHECK_THAT(sequential, Catch::Contains("index 16 >= count 4"));
  CHECK_THAT(sequential, Catch::Contains("workgroup (2, 0, 0)"));
  CHECK(error_with(4) == sequential);
}

TEST_CASE("workgroup arrays: per-workgroup storage, barriers, vector and constant-index accesses",
          "[reference][shared]") {
  const Program program = quantc::testing::shared_memory_program();
  BufferSet inputs = runtime::allocate_buffers(program);
  std::vector<float> x(256);
  std::vector<std::uint32_t> w(1024);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = float(int(k * 37 % 101) - 50);  // exact in f16 too
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = std::uint32_t(k * 2654435761u);
  std::memcpy(inputs.at("x").bytes.data(), x.data(), x.size() * 4);
  std::memcpy(inputs.at("w").bytes.data(), w.data(), w.size() * 4);
  reference::RunStatistics statistics;
  BufferSet out = run_program(program, inputs, &statistics);
  const auto sums = output<float>(out, "sums");
  const auto words = output<std::uint32_t>(out, "words");
  const auto bytes = output<std::uint32_t>(out, "bytes");
  const auto wide = output<double>(out, "wide");
  const auto again = output<float>(out, "again");
  const auto& halves = out.at("halves").bytes;
  for (std::uint32_t group = 0; group < 2; ++group) {
    for (std::uint32_t i = 0; i < 128; ++i) {
      const std::uint32_t g = group * 128 + i, base = group * 128, mirror = 127 - i;
      INFO("workgroup " << group << " invocation " << i);
      const float before = x[base + mirror];
      CHECK(sums[g] == (before + x[base + ((i + 1) & 127)]) + x[base + 5]);
      for (std::uint32_t k = 0; k < 4; ++k) CHECK(words[g * 4 + k] == w[(base + ((i + 32) & 127)) * 4 + k]);
      const std::uint32_t octet = std::uint8_t((base + mirror) * 7 + 3);
      CHECK(bytes[g] == octet * 1000 + 200 + (group + 1) * 100000);
      CHECK(wide[g] == double(x[base + ((i + 64) & 127)]) * (1.0 / 3.0));
      // f16 of a small integer: exact; lane 0 is value, lane 1 its negation.
      std::uint16_t lane0 = 0, lane1 = 0;
      std::memcpy(&lane0, halves.data() + g * 4, 2);
      std::memcpy(&lane1, halves.data() + g * 4 + 2, 2);
      CHECK(lane1 == std::uint16_t(lane0 ^ 0x8000u));
      CHECK(again[g] == (before * 2.0f + 1.0f) - before);
    }
  }
  // Per invocation: 10 shared loads (a vector load counts once), 6 stores; the two
  // constant-index stores run in one invocation per workgroup.
  CHECK(statistics.shared_loads == 256 * 10);
  CHECK(statistics.shared_stores == 256 * 6 + 2 * 2);
  CHECK(statistics.global_loads == 256 * 2);
  CHECK(statistics.global_stores == 256 * 6);
  CHECK(statistics.loads_per_buffer.count("partial") == 0);  // per buffer: kernel parameters only
}

TEST_CASE("workgroup arrays start each workgroup zeroed and are not shared between workgroups", "[reference][shared]") {
  ProgramBuilder builder("shared_isolation");
  BufferRef out = builder.output("out", ScalarType::U32, 64);
  BufferRef cell = builder.shared("cell", ScalarType::U32, 1);
  builder.launch({32, 1, 1}, {2, 1, 1});
  builder.body([&](Body& b) {
    Expr lane = b.let("lane", local_id(0));
    Expr seen = b.let("seen", cell[0u]);  // 0 in every workgroup, whatever the previous one left
    b.barrier();
    b.if_then(eq(lane, u32(0)), [&](Body& then) { then.store(cell, u32(0), workgroup_id(0) + 7u); });
    b.barrier();
    b.store(out, invocation_id(0), seen * 1000u + cell[0u]);
  });
  const auto values = output<std::uint32_t>(run_program(builder.build()), "out");
  for (std::uint32_t g = 0; g < 64; ++g) CHECK(values[g] == g / 32 + 7);
}
