// The seed's linear_4bit fixtures, rejection cases and buffer sizes (vyre-libs 0.6.3
// `nn::linear_4bit`), run through the reference interpreter and compared with plain C++
// oracles written here.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "ir/ops/Linear4Bit.h"
#include "runtime/backends/reference/Interpreter.h"

using namespace quantc;
using namespace quantc::ir;
using namespace quantc::ir::ops;
using quantc::runtime::BufferSet;
using quantc::runtime::HostBuffer;
namespace reference = quantc::runtime::reference;

namespace {

struct AffineInputs {
  std::vector<float> x;
  std::vector<std::uint32_t> packed;
  std::vector<float> scale;
  std::vector<std::uint32_t> zero_point;
  std::vector<float> bias;
};

/// Runs linear_4bit_affine_grouped and returns the logical outputs (out_dim floats).
std::vector<float> run_affine(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                              const AffineInputs& in, reference::RunStatistics* statistics = nullptr) {
  Program program = linear_4bit_affine_grouped(in_dim, out_dim, group_size);
  BufferSet buffers = runtime::allocate_buffers(program);
  buffers["x"] = HostBuffer::from(ScalarType::F32, in.x);
  buffers["w"] = HostBuffer::from(ScalarType::U32, in.packed);
  buffers["scale"] = HostBuffer::from(ScalarType::F32, in.scale);
  buffers["zero_point"] = HostBuffer::from(ScalarType::U32, in.zero_point);
  buffers["b"] = HostBuffer::from(ScalarType::F32, in.bias);
  reference::RunOptions options;
  options.statistics = statistics;
  reference::run(program, buffers, options);
  std::vector<float> out = buffers.at("out").as<float>();
  out.resize(out_dim);  // the output byte range [0, out_dim * 4)
  return out;
}

/// The seed's `affine_cpu_reference`: sequential f32 accumulation from the bias.
std::vector<float> affine_oracle(const AffineInputs& in, std::uint32_t in_dim, std::uint32_t out_dim,
                                 std::uint32_t group_size) {
  std::vector<float> out(out_dim);
  for (std::uint32_t i = 0; i < out_dim; ++i) {
    float acc = in.bias[i];
    for (std::uint32_t k = 0; k < in_dim; ++k) {
      std::uint32_t word = in.packed[(k / 8) * out_dim + i];
      float nibble = static_cast<float>((word >> ((k % 8) * 4)) & 0xF);
      std::uint32_t sidecar = (k / group_size) * out_dim + i;
      float weight = (nibble - static_cast<float>(in.zero_point[sidecar])) * in.scale[sidecar];
      float product = in.x[k] * weight;
      acc = acc + product;
    }
    out[i] = acc;
  }
  return out;
}

/// The seed's generated_affine_grouped_vectors inputs, generator for generator.
AffineInputs seed_generated_inputs(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                                   std::uint32_t seed) {
  AffineInputs in;
  const std::uint32_t group_count = (in_dim + group_size - 1) / group_size;
  for (std::uint32_t k = 0; k < in_dim; ++k) in.x.push_back(static_cast<float>((k * 3u + seed) % 19u));
  in.packed.assign(in_dim / 8 * out_dim, 0);
  for (std::uint32_t block = 0; block < in_dim / 8; ++block) {
    for (std::uint32_t out = 0; out < out_dim; ++out) {
      std::uint32_t word = 0;
      for (std::uint32_t lane = 0; lane < 8; ++lane) {
        std::uint32_t k = block * 8 + lane;
        std::uint32_t nibble = (k * 7u + out * 11u + seed) & 0xFu;
        word |= nibble << (lane * 4);
      }
      in.packed[block * out_dim + out] = word;
    }
  }
  in.scale.assign(group_count * out_dim, 0.0f);
  in.zero_point.assign(group_count * out_dim, 0);
  for (std::uint32_t group = 0; group < group_count; ++group) {
    for (std::uint32_t out = 0; out < out_dim; ++out) {
      std::uint32_t index = group * out_dim + out;
      const float scales[4] = {0.25f, 0.5f, 1.0f, 2.0f};
      in.scale[index] = scales[(group + out + seed) & 3u];
      in.zero_point[index] = (group * 5u + out + seed) & 0xFu;
    }
  }
  for (std::uint32_t out = 0; out < out_dim; ++out) in.bias.push_back(static_cast<float>((out + seed) & 7u));
  return in;
}

std::string op_error(const std::function<void()>& build) {
  try {
    build();
  } catch (const OpError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("linear_4bit seed fixture: x = 0..7 gives [140, 364, 28, 0]", "[linear4bit][seed]") {
  Program program = linear_4bit(8, 4);
  BufferSet buffers = runtime::allocate_buffers(program);
  buffers["x"] = HostBuffer::from(ScalarType::F32, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  buffers["w"] = HostBuffer::from(ScalarType::U32,
                                  std::vector<std::uint32_t>{0x76543210u, 0xFEDCBA98u, 0x11111111u, 0x00000000u});
  buffers["b"] = HostBuffer::from(ScalarType::F32, std::vector<float>{0, 0, 0, 0});
  reference::run(program, buffers);
  CHECK(buffers.at("out").as<float>() == std::vector<float>{140.0f, 364.0f, 28.0f, 0.0f});
}

TEST_CASE("linear_4bit seed fixture: x = 1..8 against nibbles 1..8 gives 204", "[linear4bit][seed]") {
  Program program = linear_4bit(8, 2);
  BufferSet buffers = runtime::allocate_buffers(program);
  buffers["x"] = HostBuffer::from(ScalarType::F32, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  buffers["w"] = HostBuffer::from(ScalarType::U32, std::vector<std::uint32_t>{0x87654321u, 0});
  reference::run(program, buffers);
  CHECK(buffers.at("out").as<float>() == std::vector<float>{204.0f, 0.0f});
}

TEST_CASE("linear_4bit_affine_grouped seed fixture gives [150, 3]", "[linear4bit][seed]") {
  AffineInputs in{{1, 2, 3, 4, 5, 6, 7, 8}, {0x87654321u, 0}, {0.5f, 1.0f, 2.0f, 1.0f}, {1, 0, 4, 0}, {0.0f, 3.0f}};
  Program program = linear_4bit_affine_grouped(8, 2, 4);
  CHECK(program.workgroup_size == std::array<std::uint32_t, 3>{256, 1, 1});
  std::vector<float> out = run_affine(8, 2, 4, in);
  CHECK(out == std::vector<float>{150.0f, 3.0f});
  // The seed's output drift tolerance for this op (its planner's output_drift_abs_tolerance).
  const float tolerance = 1.0e-4f;
  CHECK(std::fabs(out[0] - 150.0f) <= tolerance);
}

TEST_CASE("generated affine grouped vectors equal the CPU oracle bit for bit", "[linear4bit][seed]") {
  // The seed's generated_affine_grouped_vectors_match_cpu_oracle. Every product and
  // partial sum is a multiple of 1/4 below 2^22, so f32 is exact in any order and the
  // warp reduction must equal the sequential oracle bit for bit.
  std::size_t checked = 0;
  const std::uint32_t in_dim = 32;
  for (std::uint32_t out_dim : {1u, 2u, 3u, 5u, 8u, 13u, 21u, 32u}) {
    for (std::uint32_t group_size : {1u, 2u, 4u, 8u, 16u, 32u}) {
      for (std::uint32_t seed = 0; seed < 48; ++seed) {
        AffineInputs in = seed_generated_inputs(in_dim, out_dim, group_size, seed);
        std::vector<float> actual = run_affine(in_dim, out_dim, group_size, in);
        std::vector<float> expected = affine_oracle(in, in_dim, out_dim, group_size);
        for (std::uint32_t i = 0; i < out_dim; ++i) {
          if (std::bit_cast<std::uint32_t>(actual[i]) != std::bit_cast<std::uint32_t>(expected[i])) {
            FAIL("mismatch for out_dim=" << out_dim << " group_size=" << group_size << " seed=" << seed
                                         << " output " << i << ": " << actual[i] << " vs " << expected[i]);
          }
        }
        checked += out_dim;
      }
    }
  }
  CHECK(checked >= 24000);
}

TEST_CASE("affine grouped on random data matches a double-precision oracle", "[linear4bit]") {
  const std::uint32_t in_dim = 256, out_dim = 40;
  for (std::uint32_t group_size : {64u, 24u}) {
    DYNAMIC_SECTION("group_size " << group_size) {
      const std::uint32_t group_count = (in_dim + group_size - 1) / group_size;
      std::mt19937 engine(1234 + group_size);
      std::uniform_real_distribution<float> unit(-1.0f, 1.0f), scales(0.01f, 0.1f);
      AffineInputs in;
      for (std::uint32_t k = 0; k < in_dim; ++k) in.x.push_back(unit(engine));
      for (std::uint32_t i = 0; i < in_dim / 8 * out_dim; ++i) in.packed.push_back(static_cast<std::uint32_t>(engine()));
      for (std::uint32_t i = 0; i < group_count * out_dim; ++i) {
        in.scale.push_back(scales(engine));
        in.zero_point.push_back(engine() & 0xFu);
      }
      for (std::uint32_t i = 0; i < out_dim; ++i) in.bias.push_back(unit(engine));
      std::vector<float> actual = run_affine(in_dim, out_dim, group_size, in);

      // Each lane sums in_dim/32 = 8 terms, the butterfly adds 5 levels and the bias
      // one more: 14 additions deep, plus 2 roundings inside each term (weight * scale
      // and x * weight; nibble - zero_point is exact). First-order error bound:
      // (14 + 2) * 2^-24 * (|b| + sum |term|); we allow twice that.
      const double unit_roundoff = std::ldexp(1.0, -24);
      const double depth = in_dim / 32 + 5 + 1 + 2;
      for (std::uint32_t i = 0; i < out_dim; ++i) {
        double exact = in.bias[i], magnitude = std::fabs(in.bias[i]);
        for (std::uint32_t k = 0; k < in_dim; ++k) {
          std::uint32_t word = in.packed[(k / 8) * out_dim + i];
          double nibble = (word >> ((k % 8) * 4)) & 0xF;
          std::uint32_t sidecar = (k / group_size) * out_dim + i;
          double term = double(in.x[k]) * ((nibble - in.zero_point[sidecar]) * double(in.scale[sidecar]));
          exact += term;
          magnitude += std::fabs(term);
        }
        double tolerance = 2 * depth * unit_roundoff * magnitude;
        INFO("output " << i << ": " << actual[i] << " vs " << exact << ", tolerance " << tolerance);
        CHECK(std::fabs(actual[i] - exact) <= tolerance);
      }
    }
  }
}

TEST_CASE("interpreter statistics count the grouped kernel's traffic per output", "[linear4bit][statistics]") {
  const std::uint32_t in_dim = 256, out_dim = 40, group_size = 64;
  AffineInputs in;
  in.x.assign(in_dim, 1.0f);
  in.packed.assign(in_dim / 8 * out_dim, 0x11111111u);
  in.scale.assign(in_dim / group_size * out_dim, 1.0f);
  in.zero_point.assign(in_dim / group_size * out_dim, 0);
  in.bias.assign(out_dim, 0.5f);
  reference::RunStatistics statistics;
  std::vector<float> out = run_affine(in_dim, out_dim, group_size, in, &statistics);
  CHECK(out == std::vector<float>(out_dim, 256.5f));
  CHECK(statistics.workgroups == 5);
  CHECK(statistics.invocations == 5 * 256);
  CHECK(statistics.loads_per_buffer.at("w") == out_dim * in_dim / 8);  // one word per 8 k, broadcast by shuffle
  CHECK(statistics.loads_per_buffer.at("x") == out_dim * in_dim);
  CHECK(statistics.loads_per_buffer.at("scale") == out_dim * in_dim);  // per-chunk form: every k reloads its sidecar
  CHECK(statistics.loads_per_buffer.at("zero_point") == out_dim * in_dim);
  CHECK(statistics.loads_per_buffer.at("b") == out_dim);
  CHECK(statistics.stores_per_buffer.at("out") == out_dim);
  CHECK(statistics.global_loads == out_dim * (in_dim / 8 + 3 * in_dim + 1));
  CHECK(statistics.subgroup_shuffles == out_dim * in_dim);  // 32 lanes x in_dim/32 chunks
  CHECK(statistics.subgroup_reductions == out_dim * 32);
  CHECK(statistics.arithmetic_ops > 0);
}

TEST_CASE("seed rejection cases", "[linear4bit][errors]") {
  CHECK_THAT(op_error([] { linear_4bit(7, 4); }), Catch::Contains("divisible by 8"));
  CHECK_THAT(op_error([] { linear_4bit(7, 4); }), Catch::Contains("k=7"));
  CHECK_THAT(op_error([] { linear_4bit(0, 4); }), Catch::Contains("k=0"));
  CHECK_THAT(op_error([] { linear_4bit(8, 0); }), Catch::Contains("n=0"));
  CHECK_THAT(op_error([] { linear_4bit(0x80000000u, 16); }), Catch::Contains("overflows the u32 element count"));
  CHECK_THAT(op_error([] { linear_4bit_affine_grouped(8, 4, 0); }), Catch::Contains("group_size=0"));
  CHECK_THAT(op_error([] { linear_4bit_affine_grouped(12, 4, 4); }), Catch::Contains("divisible by 8"));
  CHECK_THAT(op_error([] { linear_4bit_affine_grouped(0, 4, 4); }), Catch::Contains("k=0"));
  CHECK_THAT(op_error([] { linear_4bit_affine_grouped(8, 0, 4); }), Catch::Contains("n=0"));
  CHECK_THAT(op_error([] { linear_4bit_affine_grouped(0x80000000u, 16, 64); }),
             Catch::Contains("k/8 * n = 268435456 * 16") && Catch::Contains("overflows"));
  CHECK_THAT(op_error([] { linear_4bit_affine_grouped(1u << 19, 1u << 13, 1); }),
             Catch::Contains("group_count*n") && Catch::Contains("overflows"));
  CHECK_THAT(op_error([] { linear_4bit_affine_grouped(8, 0xFFFFFFF0u, 8); }),
             Catch::Contains("(padded outputs)") && Catch::Contains("overflows"));
}

TEST_CASE("32x7 group 8 builds with 28 packed words", "[linear4bit][buffers]") {
  Program program = linear_4bit_affine_grouped(32, 7, 8);
  REQUIRE(program.buffers.size() == 6);
  CHECK(program.buffers[1].name == "w");
  CHECK(program.buffers[1].element == ScalarType::U32);
  CHECK(program.buffers[1].count == 28);
}

TEST_CASE("generated shapes build or reject by divisibility", "[linear4bit][buffers]") {
  std::size_t accepted = 0, rejected = 0;
  for (std::uint32_t in_dim : {8u, 10u, 16u, 18u, 24u, 32u, 64u, 128u}) {
    for (std::uint32_t out_dim : {1u, 2u, 3u, 7u, 16u, 31u}) {
      for (std::uint32_t group_size : {1u, 2u, 4u, 8u, 16u, 32u}) {
        INFO("k " << in_dim << " n " << out_dim << " group_size " << group_size);
        if (in_dim % 8 == 0) {
          Program program = linear_4bit_affine_grouped(in_dim, out_dim, group_size);
          const BufferDecl& out = program.buffers.at(5);
          CHECK(out.name == "out");
          CHECK(out.count >= out_dim);
          CHECK(out.count == (out_dim + 7) / 8 * 256);
          REQUIRE(out.output_byte_range.has_value());
          CHECK(*out.output_byte_range == ByteRange{0, std::uint64_t{out_dim} * 4});
          CHECK(out.readable_range() == ByteRange{0, std::uint64_t{out_dim} * 4});
          ++accepted;
        } else {
          CHECK_THAT(op_error([&] { linear_4bit_affine_grouped(in_dim, out_dim, group_size); }),
                     Catch::Contains("divisible by 8"));
          ++rejected;
        }
      }
    }
  }
  CHECK(accepted == 6 * 6 * 6);
  CHECK(rejected == 2 * 6 * 6);
  CHECK(accepted + rejected >= 216);
}

TEST_CASE("256x4096 group 64 declares the seed's byte counts", "[linear4bit][buffers]") {
  // The seed's planner figures for this shape: packed weights 524,288 B, sidecars
  // (f32 scale + u32 zero point) 131,072 B, bias and logical output 16,384 B each.
  Program program = linear_4bit_affine_grouped(256, 4096, 64);
  auto bytes = [&](std::size_t index) { return std::uint64_t{program.buffers.at(index).count} * 4; };
  CHECK(program.buffers.at(1).name == "w");
  CHECK(bytes(1) == 524288);
  CHECK(bytes(2) + bytes(3) == 131072);  // scale, zero_point
  CHECK(bytes(4) == 16384);              // b
  CHECK(program.buffers.at(5).readable_range() == ByteRange{0, 16384});
}

TEST_CASE("linear_4bit on random data equals the sequential oracle bit for bit", "[linear4bit]") {
  // One invocation per output accumulating from b[i] over k = 0, 1, ... in f32: the
  // same order as the oracle, so every bit must agree. 300 outputs = 2 workgroups,
  // the second partly idle.
  const std::uint32_t in_dim = 64, out_dim = 300;
  std::mt19937 engine(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> x(in_dim), b(out_dim);
  std::vector<std::uint32_t> w(in_dim / 8 * out_dim);
  for (float& value : x) value = unit(engine);
  for (float& value : b) value = unit(engine);
  for (std::uint32_t& word : w) word = static_cast<std::uint32_t>(engine());
  Program program = linear_4bit(in_dim, out_dim);
  BufferSet buffers = runtime::allocate_buffers(program);
  buffers["x"] = HostBuffer::from(ScalarType::F32, x);
  buffers["w"] = HostBuffer::from(ScalarType::U32, w);
  buffers["b"] = HostBuffer::from(ScalarType::F32, b);
  reference::run(program, buffers);
  std::vector<float> actual = buffers.at("out").as<float>();
  for (std::uint32_t i = 0; i < out_dim; ++i) {
    float acc = b[i];
    for (std::uint32_t k = 0; k < in_dim; ++k) {
      float nibble = static_cast<float>((w[(k / 8) * out_dim + i] >> (4 * (k % 8))) & 0xF);
      float product = x[k] * nibble;
      acc = acc + product;
    }
    INFO("output " << i);
    CHECK(std::bit_cast<std::uint32_t>(actual[i]) == std::bit_cast<std::uint32_t>(acc));
  }
}

TEST_CASE("every registered op's test shapes run in the interpreter without errors", "[linear4bit][registry]") {
  for (const OpInfo& op : OpRegistry::builtin().all()) {
    for (const OpArgs& args : op.test_shapes) {
      Program program = op.build(args);
      INFO(op.name << " " << program.name);
      BufferSet buffers = runtime::random_buffers(program, 3);
      CHECK_NOTHROW(reference::run(program, buffers));
    }
  }
}

TEST_CASE("running workgroups on several threads gives the same bits and counts", "[linear4bit][threads]") {
  Program program = linear_4bit_affine_grouped(256, 100, 24);
  BufferSet serial = runtime::random_buffers(program, 11);
  BufferSet parallel = serial;
  reference::RunStatistics serial_statistics, parallel_statistics;
  reference::RunOptions options;
  options.statistics = &serial_statistics;
  reference::run(program, serial, options);
  options.statistics = &parallel_statistics;
  options.threads = 3;
  reference::run(program, parallel, options);
  CHECK(serial.at("out").bytes == parallel.at("out").bytes);
  CHECK(serial_statistics.workgroups == 13);
  CHECK(parallel_statistics.workgroups == 13);
  CHECK(serial_statistics.global_loads == parallel_statistics.global_loads);
  CHECK(serial_statistics.arithmetic_ops == parallel_statistics.arithmetic_ops);
  CHECK(serial_statistics.loads_per_buffer == parallel_statistics.loads_per_buffer);
}
