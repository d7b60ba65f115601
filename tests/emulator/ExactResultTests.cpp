// Results checked against exact expected numbers, not against another backend or golden
// text: unsigned right shifts of values with the top bit set (logical, not arithmetic)
// and integer -> float conversions of values a float cannot hold exactly (round to
// nearest even, not toward zero). Each program runs on the reference interpreter and,
// compiled at -O0 and -O2 for sm_75, sm_80 and sm_90, on the PTX emulator; every output
// element must equal the hand-written value (first rows of each table) or the C++
// oracle (the host's static_cast / shift, for the random rows) bit for bit.
// Emitting shr.s32 for u32 values, or cvt.rz instead of cvt.rn, fails these; golden PTX
// text would only notice that the text changed.
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ir/Builder.h"
#include "ir/Printer.h"
#include "lower/driver/Compiler.h"
#include "ptx/Target.h"
#include "runtime/Buffers.h"
#include "runtime/backends/emulator/Emulator.h"
#include "runtime/backends/reference/Interpreter.h"

using namespace quantc;
using namespace quantc::ir;

namespace {

constexpr std::uint32_t kCount = 64;  // elements per buffer: one CTA of 64 threads

/// Runs `program` on `inputs` with the interpreter and the emulator (sm_75/80/90 at -O0
/// and -O2) and checks every element of each buffer of `expected` bit for bit.
void check_everywhere(const Program& program, const runtime::BufferSet& inputs, const runtime::BufferSet& expected) {
  auto compare = [&](const runtime::BufferSet& actual, const std::string& where) {
    for (const auto& [name, want] : expected) {
      const runtime::HostBuffer& got = actual.at(name);
      REQUIRE(got.bytes.size() == want.bytes.size());
      const unsigned size = byte_size(want.element);
      for (std::size_t i = 0; i < want.count(); ++i) {
        std::uint64_t a = 0, b = 0;
        std::memcpy(&a, want.bytes.data() + i * size, size);
        std::memcpy(&b, got.bytes.data() + i * size, size);
        INFO(where << ": buffer '" << name << "' element " << i << ": expected 0x" << std::hex << a << ", got 0x" << b);
        REQUIRE(a == b);
      }
    }
  };
  runtime::BufferSet interpreted = inputs;
  runtime::reference::run(program, interpreted);
  compare(interpreted, "the reference interpreter");
  for (int sm : {75, 80, 90}) {
    for (lower::OptimizationLevel level : {lower::OptimizationLevel::O0, lower::OptimizationLevel::O2}) {
      lower::PassOptions passes;
      passes.level = level;
      passes.verify_each = true;
      lower::CompiledKernel compiled = lower::compile(program, {ptx::Target{sm}, passes});
      runtime::BufferSet emulated = inputs;
      runtime::emulator::run(compiled.ptx, compiled.program, emulated);
      const std::string where = "the emulator, sm_" + std::to_string(sm) + " -O" + std::to_string(static_cast<int>(level));
      INFO(compiled.ptx);
      compare(emulated, where);
    }
  }
}

template <class T>
std::vector<T> filled(std::vector<T> values, std::mt19937_64& random, T top_bits) {
  while (values.size() < kCount) values.push_back(static_cast<T>(random()) | top_bits);
  return values;
}

}  // namespace

TEST_CASE("right shifts of unsigned values with the top bit set are logical: exact results on interpreter and emulator",
          "[emulator][exact]") {
  ProgramBuilder builder("unsigned_shifts");
  BufferRef u = builder.input("u", ScalarType::U32, kCount);
  BufferRef u_amount = builder.input("u_amount", ScalarType::U32, kCount);
  BufferRef w = builder.input("w", ScalarType::U64, kCount);
  BufferRef w_amount = builder.input("w_amount", ScalarType::U64, kCount);
  BufferRef s = builder.input("s", ScalarType::I32, kCount);
  BufferRef s_amount = builder.input("s_amount", ScalarType::I32, kCount);
  BufferRef u_by_register = builder.output("u_by_register", ScalarType::U32, kCount);
  BufferRef u_by_4 = builder.output("u_by_4", ScalarType::U32, kCount);
  BufferRef u_by_31 = builder.output("u_by_31", ScalarType::U32, kCount);
  BufferRef u_by_33 = builder.output("u_by_33", ScalarType::U32, kCount);  // constant amounts >= the width
  BufferRef s_by_40 = builder.output("s_by_40", ScalarType::I32, kCount);
  BufferRef w_by_register = builder.output("w_by_register", ScalarType::U64, kCount);
  BufferRef w_by_36 = builder.output("w_by_36", ScalarType::U64, kCount);
  BufferRef s_by_register = builder.output("s_by_register", ScalarType::I32, kCount);
  builder.launch({kCount, 1, 1}, {1, 1, 1});
  builder.body([&](Body& body) {
    Expr i = body.let("i", invocation_id(0));
    body.store(u_by_register, i, u[i] >> u_amount[i]);
    body.store(u_by_4, i, u[i] >> u32(4));
    body.store(u_by_31, i, u[i] >> u32(31));
    body.store(u_by_33, i, u[i] >> u32(33));
    body.store(s_by_40, i, s[i] >> i32(40));
    body.store(w_by_register, i, w[i] >> w_amount[i]);
    body.store(w_by_36, i, w[i] >> Literal::u64(36));
    body.store(s_by_register, i, s[i] >> s_amount[i]);  // signed: arithmetic, for contrast
  });
  const Program program = builder.build();
  INFO(print(program));

  std::mt19937_64 random(2024);
  // {value, amount, value >> amount}, written out by hand; amounts >= the width give 0.
  struct U32Row { std::uint32_t value, amount, shifted; };
  const std::vector<U32Row> u_rows = {
      {0x80000000u, 4, 0x08000000u}, {0xFFFFFFFFu, 1, 0x7FFFFFFFu}, {0xFFFFFFFFu, 31, 1u},
      {0xDEADBEEFu, 8, 0x00DEADBEu}, {0x80000001u, 0, 0x80000001u}, {0xF0000000u, 28, 0xFu},
      {0x80000000u, 32, 0u},         {0xFFFFFFFFu, 40, 0u},          {0x7FFFFFFFu, 3, 0x0FFFFFFFu}};
  struct U64Row { std::uint64_t value, amount, shifted; };
  const std::vector<U64Row> w_rows = {{0x8000000000000000ull, 4, 0x0800000000000000ull},
                                      {0xFFFFFFFFFFFFFFFFull, 63, 1ull},
                                      {0xFFFFFFFF00000000ull, 32, 0xFFFFFFFFull},
                                      {0x8000000000000000ull, 64, 0ull},
                                      {0xFFFFFFFFFFFFFFFFull, 1, 0x7FFFFFFFFFFFFFFFull}};
  struct I32Row { std::int32_t value, amount, shifted; };
  const std::vector<I32Row> s_rows = {{-16, 2, -4}, {INT32_MIN, 31, -1}, {-1, 40, -1}, {0x40000000, 30, 1}};

  std::vector<std::uint32_t> u_values, u_amounts;
  for (const U32Row& row : u_rows) u_values.push_back(row.value), u_amounts.push_back(row.amount);
  std::vector<std::uint64_t> w_values, w_amounts;
  for (const U64Row& row : w_rows) w_values.push_back(row.value), w_amounts.push_back(row.amount);
  std::vector<std::int32_t> s_values, s_amounts;
  for (const I32Row& row : s_rows) s_values.push_back(row.value), s_amounts.push_back(row.amount);
  u_values = filled<std::uint32_t>(u_values, random, 0x80000000u);
  w_values = filled<std::uint64_t>(w_values, random, 0x8000000000000000ull);
  s_values = filled<std::int32_t>(s_values, random, INT32_MIN);
  while (u_amounts.size() < kCount) u_amounts.push_back(static_cast<std::uint32_t>(random() % 34));
  while (w_amounts.size() < kCount) w_amounts.push_back(random() % 66);
  while (s_amounts.size() < kCount) s_amounts.push_back(static_cast<std::int32_t>(random() % 34));

  // The oracle: C++ shifts, with the IR's rule for amounts >= the width.
  std::vector<std::uint32_t> want_u(kCount), want_u4(kCount), want_u31(kCount);
  std::vector<std::uint64_t> want_w(kCount), want_w36(kCount);
  std::vector<std::int32_t> want_s(kCount), want_s40(kCount);
  for (std::uint32_t k = 0; k < kCount; ++k) {
    want_u[k] = u_amounts[k] >= 32 ? 0u : u_values[k] >> u_amounts[k];
    want_u4[k] = u_values[k] >> 4;
    want_u31[k] = u_values[k] >> 31;
    want_w[k] = w_amounts[k] >= 64 ? 0ull : w_values[k] >> w_amounts[k];
    want_w36[k] = w_values[k] >> 36;
    want_s[k] = s_amounts[k] >= 32 ? (s_values[k] < 0 ? -1 : 0) : s_values[k] >> s_amounts[k];
    want_s40[k] = s_values[k] < 0 ? -1 : 0;
  }
  // The hand-written rows agree with the oracle, so the oracle is not the thing tested.
  for (std::size_t k = 0; k < u_rows.size(); ++k) REQUIRE(want_u[k] == u_rows[k].shifted);
  for (std::size_t k = 0; k < w_rows.size(); ++k) REQUIRE(want_w[k] == w_rows[k].shifted);
  for (std::size_t k = 0; k < s_rows.size(); ++k) REQUIRE(want_s[k] == s_rows[k].shifted);
  // Every random unsigned value has the top bit set: an arithmetic shift would smear it.
  for (std::size_t k = u_rows.size(); k < kCount; ++k) REQUIRE(want_u31[k] == 1u);

  runtime::BufferSet inputs = runtime::allocate_buffers(program);
  inputs["u"] = runtime::HostBuffer::from(ScalarType::U32, u_values);
  inputs["u_amount"] = runtime::HostBuffer::from(ScalarType::U32, u_amounts);
  inputs["w"] = runtime::HostBuffer::from(ScalarType::U64, w_values);
  inputs["w_amount"] = runtime::HostBuffer::from(ScalarType::U64, w_amounts);
  inputs["s"] = runtime::HostBuffer::from(ScalarType::I32, s_values);
  inputs["s_amount"] = runtime::HostBuffer::from(ScalarType::I32, s_amounts);
  runtime::BufferSet expected;
  expected["u_by_register"] = runtime::HostBuffer::from(ScalarType::U32, want_u);
  expected["u_by_4"] = runtime::HostBuffer::from(ScalarType::U32, want_u4);
  expected["u_by_31"] = runtime::HostBuffer::from(ScalarType::U32, want_u31);
  expected["u_by_33"] = runtime::HostBuffer::from(ScalarType::U32, std::vector<std::uint32_t>(kCount, 0));
  expected["s_by_40"] = runtime::HostBuffer::from(ScalarType::I32, want_s40);
  expected["w_by_register"] = runtime::HostBuffer::from(ScalarType::U64, want_w);
  expected["w_by_36"] = runtime::HostBuffer::from(ScalarType::U64, want_w36);
  expected["s_by_register"] = runtime::HostBuffer::from(ScalarType::I32, want_s);
  check_everywhere(program, inputs, expected);
}

TEST_CASE("integer to float conversions round to nearest even: exact results on interpreter and emulator",
          "[emulator][exact]") {
  ProgramBuilder builder("integer_to_float");
  BufferRef u = builder.input("u", ScalarType::U32, kCount);
  BufferRef s = builder.input("s", ScalarType::I32, kCount);
  BufferRef w = builder.input("w", ScalarType::U64, kCount);
  BufferRef l = builder.input("l", ScalarType::I64, kCount);
  BufferRef f_from_u = builder.output("f_from_u", ScalarType::F32, kCount);
  BufferRef f_from_s = builder.output("f_from_s", ScalarType::F32, kCount);
  BufferRef f_from_w = builder.output("f_from_w", ScalarType::F32, kCount);
  BufferRef f_from_l = builder.output("f_from_l", ScalarType::F32, kCount);
  BufferRef d_from_w = builder.output("d_from_w", ScalarType::F64, kCount);
  BufferRef d_from_l = builder.output("d_from_l", ScalarType::F64, kCount);
  builder.launch({kCount, 1, 1}, {1, 1, 1});
  builder.body([&](Body& body) {
    Expr i = body.let("i", invocation_id(0));
    body.store(f_from_u, i, cast(ScalarType::F32, u[i]));
    body.store(f_from_s, i, cast(ScalarType::F32, s[i]));
    body.store(f_from_w, i, cast(ScalarType::F32, w[i]));
    body.store(f_from_l, i, cast(ScalarType::F32, l[i]));
    body.store(d_from_w, i, cast(ScalarType::F64, w[i]));
    body.store(d_from_l, i, cast(ScalarType::F64, l[i]));
  });
  const Program program = builder.build();
  INFO(print(program));

  // {value, the nearest float (ties to even)}: truncation would give the comment's value.
  struct U32Row { std::uint32_t value; float nearest; };
  const std::vector<U32Row> u_rows = {
      {16777219u, 16777220.0f},          // 2^24 + 3, a tie: even 2^24 + 4 (toward zero: 2^24 + 2)
      {16777217u, 16777216.0f},          // 2^24 + 1, a tie: even 2^24 (same toward zero)
      {0xFFFFFFFFu, 4294967296.0f},      // 2^32 - 1 -> 2^32 (toward zero: 4294967040)
      {0x80000081u, 2147483904.0f},      // 2^31 + 129 -> 2^31 + 256 (toward zero: 2^31)
      {0x80000080u, 2147483648.0f},      // 2^31 + 128, a tie: even 2^31
      {0x80000180u, 2147484160.0f},      // 2^31 + 384, a tie: even 2^31 + 512 (toward zero: 2^31 + 256)
      {16777215u, 16777215.0f}};         // 2^24 - 1: exact
  struct I32Row { std::int32_t value; float nearest; };
  const std::vector<I32Row> s_rows = {
      {-16777219, -16777220.0f},         // toward zero: -16777218
      {0x7FFFFFFF, 2147483648.0f},       // toward zero: 2147483520
      {INT32_MIN, -2147483648.0f},       // exact
      {-0x7FFFFFC1, -2147483648.0f}};    // -(2^31 - 63) -> -2^31 (toward zero: -2147483520)
  struct U64Row { std::uint64_t value; float nearest; double nearest_double; };
  const std::vector<U64Row> w_rows = {
      {0xFFFFFFFFFFFFFFFFull, 18446744073709551616.0f, 18446744073709551616.0},  // -> 2^64 both
      {(1ull << 53) + 3, 9007199254740992.0f, 9007199254740996.0},             // f64: tie to even 2^53 + 4
      {(1ull << 24) + 3, 16777220.0f, 16777219.0},
      {0x8000008000000001ull, 9223373136366403584.0f, 9223372586610589696.0}};  // just above an f32 tie
  struct I64Row { std::int64_t value; float nearest; double nearest_double; };
  const std::vector<I64Row> l_rows = {
      {-((1ll << 53) + 3), -9007199254740992.0f, -9007199254740996.0},
      {INT64_MAX, 9223372036854775808.0f, 9223372036854775808.0},
      {-((1ll << 24) + 3), -16777220.0f, -16777219.0}};

  std::mt19937_64 random(7);
  std::vector<std::uint32_t> u_values;
  for (const U32Row& row : u_rows) u_values.push_back(row.value);
  std::vector<std::int32_t> s_values;
  for (const I32Row& row : s_rows) s_values.push_back(row.value);
  std::vector<std::uint64_t> w_values;
  for (const U64Row& row : w_rows) w_values.push_back(row.value);
  std::vector<std::int64_t> l_values;
  for (const I64Row& row : l_rows) l_values.push_back(row.value);
  // The rest: values with more significant bits than a float holds (most not exactly
  // representable), so truncation and rounding differ on about half of them.
  u_values = filled<std::uint32_t>(u_values, random, 0x01000000u);
  s_values = filled<std::int32_t>(s_values, random, 0x01000000);
  w_values = filled<std::uint64_t>(w_values, random, 0x0020000000000000ull);
  l_values = filled<std::int64_t>(l_values, random, 0x0020000000000000ll);

  std::vector<float> want_f_u, want_f_s, want_f_w, want_f_l;
  std::vector<double> want_d_w, want_d_l;
  for (std::uint32_t k = 0; k < kCount; ++k) {
    want_f_u.push_back(static_cast<float>(u_values[k]));
    want_f_s.push_back(static_cast<float>(s_values[k]));
    want_f_w.push_back(static_cast<float>(w_values[k]));
    want_f_l.push_back(static_cast<float>(l_values[k]));
    want_d_w.push_back(static_cast<double>(w_values[k]));
    want_d_l.push_back(static_cast<double>(l_values[k]));
  }
  for (std::size_t k = 0; k < u_rows.size(); ++k) REQUIRE(want_f_u[k] == u_rows[k].nearest);
  for (std::size_t k = 0; k < s_rows.size(); ++k) REQUIRE(want_f_s[k] == s_rows[k].nearest);
  for (std::size_t k = 0; k < w_rows.size(); ++k) {
    REQUIRE(want_f_w[k] == w_rows[k].nearest);
    REQUIRE(want_d_w[k] == w_rows[k].nearest_double);
  }
  for (std::size_t k = 0; k < l_rows.size(); ++k) {
    REQUIRE(want_f_l[k] == l_rows[k].nearest);
    REQUIRE(want_d_l[k] == l_rows[k].nearest_double);
  }
  // Enough of the random rows round up, where truncation differs.
  int rounded_up = 0;
  for (std::uint32_t k = 0; k < kCount; ++k) rounded_up += static_cast<double>(want_f_u[k]) > u_values[k];
  REQUIRE(rounded_up >= 10);

  runtime::BufferSet inputs = runtime::allocate_buffers(program);
  inputs["u"] = runtime::HostBuffer::from(ScalarType::U32, u_values);
  inputs["s"] = runtime::HostBuffer::from(ScalarType::I32, s_values);
  inputs["w"] = runtime::HostBuffer::from(ScalarType::U64, w_values);
  inputs["l"] = runtime::HostBuffer::from(ScalarType::I64, l_values);
  runtime::BufferSet expected;
  expected["f_from_u"] = runtime::HostBuffer::from(ScalarType::F32, want_f_u);
  expected["f_from_s"] = runtime::HostBuffer::from(ScalarType::F32, want_f_s);
  expected["f_from_w"] = runtime::HostBuffer::from(ScalarType::F32, want_f_w);
  expected["f_from_l"] = runtime::HostBuffer::from(ScalarType::F32, want_f_l);
  expected["d_from_w"] = runtime::HostBuffer::from(ScalarType::F64, want_d_w);
  expected["d_from_l"] = runtime::HostBuffer::from(ScalarType::F64, want_d_l);
  check_everywhere(program, inputs, expected);
}
