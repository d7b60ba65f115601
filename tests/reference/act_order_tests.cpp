// linear_4bit_affine_grouped with "act_order" (ir/ops/Linear4Bit.h): the weights of a
// GPTQ act-order layer, whose g_idx scatters every group over the input features, sorted
// by group as `quantc convert` sorts them, run through the reference interpreter on both
// schedules, against an f64 oracle written here from the layer itself: out[n] = b[n] +
// sum_k x[k] * (q[k, n] - z[g_idx[k], n]) * s[g_idx[k], n], in the layer's own order,
// never through perm. (The emulator sweep runs the registry's act_order test shapes on
// random permutations and requires the PTX to equal the interpreter bit for bit.)
//
// The bound is gemv_schedule_tests.cpp's: per group, c * u * sum_{k in g} |x_k| * (q_k +
// z_g) * s_g * (n_g + 8) plus the bias, c = 2; the seed's per-term bound is smaller.
// Batches (m > 1, f16/bf16 activations: the seed once per row and the tensor-core GEMM,
// ir/ops/TensorGemm.h) are held to the tensor GEMM's bound, 2 u L (|b| + sum of terms)
// with L = group_size + 5 + 2 groups, plus the rounding of the stored output.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "ir/Arithmetic.h"
#include "ir/ops/Linear4Bit.h"
#include "ir/ops/Registry.h"
#include "runtime/backends/reference/Interpreter.h"

using namespace quantc;
using namespace quantc::ir;
using namespace quantc::ir::ops;
using quantc::runtime::BufferSet;
using quantc::runtime::HostBuffer;
namespace reference = quantc::runtime::reference;

namespace {

/// An act-order layer as GPTQ leaves it: codes q [in, out] in the layer's input order,
/// a group map g_idx whose groups are scattered over k, per-group zero points and scales.
struct Layer {
  std::uint32_t in = 0, out = 0, group_size = 0, groups = 0;
  std::vector<std::uint32_t> q;       // [in, out], 0..15
  std::vector<std::uint32_t> g_idx;   // [in]
  std::vector<std::uint32_t> zeros;   // [groups, out], 0..15
  std::vector<float> scales;          // [groups, out]
  std::vector<float> bias;            // [out]
};

/// g_idx as GPTQ's desc_act writes it (auto_gptq/quantization/gptq.py): the trivial map
/// j / group_size of the quantization order, scattered by a random column order.
Layer random_layer(std::uint32_t in, std::uint32_t out, std::uint32_t group_size, std::mt19937& engine) {
  Layer layer;
  layer.in = in;
  layer.out = out;
  layer.group_size = group_size;
  layer.groups = (in + group_size - 1) / group_size;
  std::vector<std::uint32_t> order(in);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), engine);  // order[j]: the j-th column quantized
  layer.g_idx.resize(in);
  for (std::uint32_t j = 0; j < in; ++j) layer.g_idx[order[j]] = j / group_size;
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), scale(0.01f, 0.1f);
  for (std::uint32_t i = 0; i < in * out; ++i) layer.q.push_back(engine() & 15u);
  for (std::uint32_t i = 0; i < layer.groups * out; ++i) {
    layer.zeros.push_back(engine() & 15u);
    layer.scales.push_back(scale(engine));
  }
  for (std::uint32_t n = 0; n < out; ++n) layer.bias.push_back(unit(engine));
  return layer;
}

/// f32 values as a buffer of `type` (f32, or f16/bf16 rounded to nearest even).
HostBuffer activation_buffer(ScalarType type, const std::vector<float>& values) {
  if (type == ScalarType::F32) return HostBuffer::from(ScalarType::F32, values);
  std::vector<std::uint16_t> bits;
  for (float v : values) {
    bits.push_back(type == ScalarType::F16 ? arith::convert<arith::Float16>(v).bits
                                           : arith::convert<arith::BFloat16>(v).bits);
  }
  return HostBuffer::from(type, bits);
}

/// A buffer of `type` as f32 values.
std::vector<float> activation_values(ScalarType type, const HostBuffer& buffer) {
  if (type == ScalarType::F32) return buffer.as<float>();
  std::vector<float> values;
  for (std::uint16_t bits : buffer.as<std::uint16_t>()) {
    values.push_back(type == ScalarType::F16 ? arith::convert<float>(arith::Float16{bits})
                                             : arith::convert<float>(arith::BFloat16{bits}));
  }
  return values;
}

/// The op's buffers for `layer`: input features sorted by group (stable), w packed in
/// that order (GPTQ's layout: row j's nibble at bits 4*(j%8) of word (j/8, n)), perm the
/// sorted order; x [m, in] and b of the activation type.
BufferSet op_inputs(const Program& program, const Layer& layer, const std::vector<float>& x,
                    ScalarType activation = ScalarType::F32) {
  std::vector<std::uint32_t> perm(layer.in);
  std::iota(perm.begin(), perm.end(), 0u);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return layer.g_idx[a] < layer.g_idx[b]; });
  std::vector<std::uint32_t> w(layer.in / 8 * layer.out, 0);
  for (std::uint32_t j = 0; j < layer.in; ++j) {
    for (std::uint32_t n = 0; n < layer.out; ++n) {
      w[(j / 8) * layer.out + n] |= layer.q[perm[j] * layer.out + n] << (4 * (j % 8));
    }
  }
  BufferSet buffers = runtime::allocate_buffers(program);
  buffers["x"] = activation_buffer(activation, x);
  buffers["perm"] = HostBuffer::from(ScalarType::U32, perm);
  buffers["w"] = HostBuffer::from(ScalarType::U32, w);
  buffers["scale"] = HostBuffer::from(ScalarType::F32, layer.scales);
  buffers["zero_point"] = HostBuffer::from(ScalarType::U32, layer.zeros);
  buffers["b"] = activation_buffer(activation, layer.bias);
  return buffers;
}

std::vector<float> run(const Program& program, const Layer& layer, const std::vector<float>& x) {
  BufferSet buffers = op_inputs(program, layer, x);
  reference::run(program, buffers);
  std::vector<float> out = buffers.at("out").as<float>();
  out.resize(layer.out);
  return out;
}

struct Exact {
  double value = 0, bound = 0;
  double terms = 0;  // |b| + sum_k |x_k| (q_k + z) s
};

/// The f64 product of the layer's dequantized weights, and the fast schedule's bound.
Exact exact_output(const Layer& layer, const std::vector<float>& x, std::uint32_t n) {
  Exact result{layer.bias[n], 0};
  std::vector<double> group_magnitude(layer.groups, 0.0);
  for (std::uint32_t k = 0; k < layer.in; ++k) {
    const std::uint32_t side = layer.g_idx[k] * layer.out + n;
    const double q = layer.q[k * layer.out + n], z = layer.zeros[side], s = layer.scales[side];
    result.value += double(x[k]) * (q - z) * s;
    group_magnitude[layer.g_idx[k]] += std::fabs(x[k]) * (q + z) * s;
  }
  double magnitude = std::fabs(layer.bias[n]);
  result.terms = magnitude;
  for (std::uint32_t g = 0; g < layer.groups; ++g) {
    const std::uint32_t size = std::min(layer.group_size, layer.in - g * layer.group_size);
    magnitude += group_magnitude[g] * double(size + 8);
    result.terms += group_magnitude[g];
  }
  result.bound = 2 * std::ldexp(1.0, -24) * magnitude;
  return result;
}

bool contiguous_groups(const Layer& layer) {
  for (std::uint32_t k = 0; k < layer.in; ++k) {
    if (layer.g_idx[k] != k / layer.group_size) return false;
  }
  return true;
}

void check_layer(std::uint32_t in, std::uint32_t out, std::uint32_t group_size, std::uint32_t seed) {
  std::mt19937 engine(seed);
  const Layer layer = random_layer(in, out, group_size, engine);
  REQUIRE_FALSE(contiguous_groups(layer));  // a real act-order map: the op must reorder
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> x(in);
  for (float& value : x) value = unit(engine);
  const Program seed_program =
      linear_4bit_affine_grouped(in, out, group_size, KernelSchedule::Seed, ScalarType::F32, true);
  const std::vector<float> seed_out = run(seed_program, layer, x);
  const bool fast_runs = !nibble_gemv_unsupported(
      NibbleGemv{"", "", in, out, group_size, out, ScalarType::F32, true});
  std::vector<float> fast_out;
  if (fast_runs) {
    const Program fast =
        linear_4bit_affine_grouped(in, out, group_size, KernelSchedule::Fast, ScalarType::F32, true);
    REQUIRE(fast.caller_buffers() == seed_program.caller_buffers());  // one bundle feeds either schedule
    fast_out = run(fast, layer, x);
  }
  for (std::uint32_t n = 0; n < out; ++n) {
    const Exact exact = exact_output(layer, x, n);
    INFO("output " << n << ": seed " << seed_out[n] << (fast_runs ? ", fast " + std::to_string(fast_out[n]) : "")
                   << ", exact " << exact.value << ", bound " << exact.bound);
    CHECK(std::fabs(seed_out[n] - exact.value) <= exact.bound);
    if (fast_runs) CHECK(std::fabs(fast_out[n] - exact.value) <= exact.bound);
  }
}

}  // namespace

TEST_CASE("act_order: a GPTQ act-order layer sorted by group matches the f64 product of its dequantized weights",
          "[linear4bit][act_order]") {
  // Fast-capable shapes (whole groups per k-lane, sliced groups, a partial last group)
  // and seed-only ones (group_size 24 and 12: packed words straddle groups; out 9).
  for (auto [in, out, group_size] :
       {std::tuple{256u, 16u, 32u}, std::tuple{1024u, 32u, 128u}, std::tuple{200u, 8u, 64u}, std::tuple{384u, 16u, 128u},
        std::tuple{4096u, 8u, 128u}, std::tuple{72u, 9u, 24u}, std::tuple{96u, 12u, 12u}, std::tuple{64u, 4u, 16u},
        // x too large to stage in shared memory: the fast schedule gathers from global memory
        std::tuple{12800u, 4u, 128u}}) {
    DYNAMIC_SECTION(in << "x" << out << " group " << group_size) {
      check_layer(in, out, group_size, 31 + in + group_size);
    }
  }
}

TEST_CASE("act_order: the identity perm gives the plain op's output bit for bit", "[linear4bit][act_order]") {
  for (KernelSchedule schedule : {KernelSchedule::Seed, KernelSchedule::Fast}) {
    const Program plain = linear_4bit_affine_grouped(256, 16, 64, schedule);
    const Program permuted = linear_4bit_affine_grouped(256, 16, 64, schedule, ScalarType::F32, true);
    BufferSet inputs = runtime::random_buffers(plain, 9);
    BufferSet with_perm = runtime::allocate_buffers(permuted);
    for (const auto& [name, buffer] : inputs) with_perm[name] = buffer;
    std::vector<std::uint32_t> identity(256);
    std::iota(identity.begin(), identity.end(), 0u);
    with_perm["perm"] = HostBuffer::from(ScalarType::U32, identity);
    reference::run(plain, inputs);
    reference::run(permuted, with_perm);
    CHECK(inputs.at("out").bytes == with_perm.at("out").bytes);
  }
}

TEST_CASE("act_order: the program declares perm u32[in_dim] after x, only when asked", "[linear4bit][act_order]") {
  for (KernelSchedule schedule : {KernelSchedule::Seed, KernelSchedule::Fast, KernelSchedule::Auto}) {
    const Program permuted = linear_4bit_affine_grouped(256, 16, 64, schedule, ScalarType::F16, true);
    REQUIRE(permuted.buffers.size() >= 3);
    CHECK(permuted.buffers[0].name == "x");
    CHECK(permuted.buffers[1].name == "perm");
    CHECK(permuted.buffers[1].element == ScalarType::U32);
    CHECK(permuted.buffers[1].count == 256);
    CHECK_FALSE(permuted.buffers[1].is_written());
    CHECK(linear_4bit_affine_grouped(256, 16, 64, schedule).find_buffer("perm") == nullptr);
  }
  // The registry: "act_order" defaults to false, and a spec with it builds the perm buffer.
  const OpInfo* op = OpRegistry::builtin().find("linear_4bit_affine_grouped");
  REQUIRE(op != nullptr);
  OpArgs args = OpArgs::dims({{"k", 64}, {"n", 8}, {"group_size", 32}});
  CHECK(op->build(args).find_buffer("perm") == nullptr);
  args.set("act_order", true);
  CHECK(op->build(args).find_buffer("perm") != nullptr);
}

TEST_CASE("act_order: the fast schedule stages x in shared memory as f32 where it fits 48 KiB",
          "[linear4bit][act_order]") {
  for (ScalarType activation : {ScalarType::F32, ScalarType::F16, ScalarType::BF16}) {
    // 12288 f32 values are exactly the 48 KiB of static shared memory; one row more is not.
    const Program staged = linear_4bit_affine_grouped(12288, 8, 128, KernelSchedule::Fast, activation, true);
    REQUIRE(staged.shared.size() == 1);
    CHECK(staged.shared[0].element == ScalarType::F32);
    CHECK(staged.shared[0].count == 12288);
    CHECK(staged.static_shared_bytes() == kMaxStaticSharedBytes);
    // One row more gathers from global memory; its 4 k-subgroups (at most 4 when
    // gathering) meet in their own small array (staged, they meet in x_staged once every
    // subgroup is done reading it).
    const Program gathered = linear_4bit_affine_grouped(12296, 8, 128, KernelSchedule::Fast, activation, true);
    CHECK(gathered.find_shared("x_staged") == nullptr);
    REQUIRE(gathered.find_shared("k_partials") != nullptr);
    CHECK(gathered.find_shared("k_partials")->count == 4 * 2 * 8);
    // Neither the seed program nor the fast GEMV of few rows (one k-subgroup) uses shared memory.
    CHECK(linear_4bit_affine_grouped(256, 8, 128, KernelSchedule::Seed, activation, true).shared.empty());
    CHECK(linear_4bit_affine_grouped(256, 8, 128, KernelSchedule::Fast, activation).shared.empty());
  }
}

TEST_CASE("act_order: a perm value past in_dim is an out-of-bounds load the interpreter reports",
          "[linear4bit][act_order][errors]") {
  const Program program = linear_4bit_affine_grouped(64, 8, 32, KernelSchedule::Seed, ScalarType::F32, true);
  BufferSet buffers = runtime::random_buffers(program, 4);
  std::vector<std::uint32_t> perm = buffers.at("perm").as<std::uint32_t>();
  perm[5] = 64;
  buffers["perm"] = HostBuffer::from(ScalarType::U32, perm);
  CHECK_THROWS_WITH(reference::run(program, buffers),
                    Catch::Contains("out-of-bounds load from buffer 'x': index 64 >= count 64"));
  // The fast schedule gathers from x staged in shared memory: the same index is out of its bounds.
  const Program fast = linear_4bit_affine_grouped(64, 8, 32, KernelSchedule::Fast, ScalarType::F32, true);
  BufferSet fast_buffers = runtime::random_buffers(fast, 4);
  fast_buffers["perm"] = HostBuffer::from(ScalarType::U32, perm);
  CHECK_THROWS_WITH(reference::run(fast, fast_buffers), Catch::Contains("out-of-bounds load") &&
                                                            Catch::Contains("x_staged") && Catch::Contains("64"));
}

TEST_CASE("act_order: batches of a GPTQ act-order layer match the f64 product of its dequantized weights",
          "[linear4bit][act_order][tensor_gemm]") {
  struct Case {
    std::uint32_t in, out, group_size, m;
    ScalarType activation;
  };
  // One m-tile of 3 rows, a partial m-tile of 17 with a ragged last part, two row tiles.
  for (const Case c : {Case{256, 32, 32, 3, ScalarType::F16}, Case{1056, 64, 96, 17, ScalarType::BF16},
                       Case{384, 32, 128, 40, ScalarType::F16}}) {
    DYNAMIC_SECTION(c.m << "x" << c.in << "x" << c.out << " group " << c.group_size << " " << to_string(c.activation)) {
      std::mt19937 engine(c.in + c.m);
      Layer layer = random_layer(c.in, c.out, c.group_size, engine);
      REQUIRE_FALSE(contiguous_groups(layer));
      auto rounded = [&](float v) { return activation_values(c.activation, activation_buffer(c.activation, {v}))[0]; };
      for (float& b : layer.bias) b = rounded(b);
      std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
      std::vector<float> x(std::size_t{c.m} * c.in);
      for (float& value : x) value = rounded(unit(engine));
      const double u = std::ldexp(1.0, -24), u_half = c.activation == ScalarType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
      const double chain = c.group_size + 5.0 + 2.0 * layer.groups;
      for (KernelSchedule schedule : {KernelSchedule::Seed, KernelSchedule::Fast}) {
        const Program program =
            linear_4bit_affine_grouped(c.in, c.out, c.group_size, schedule, c.activation, true, c.m);
        CHECK((program.find_shared("w_tile") != nullptr) == (schedule == KernelSchedule::Fast));
        BufferSet buffers = op_inputs(program, layer, x, c.activation);
        reference::run(program, buffers);
        const std::vector<float> out = activation_values(c.activation, buffers.at("out"));
        REQUIRE(out.size() == std::size_t{c.m} * c.out);
        for (std::uint32_t i = 0; i < c.m; ++i) {
          const std::vector<float> row(x.begin() + std::size_t{i} * c.in, x.begin() + std::size_t{i + 1} * c.in);
          for (std::uint32_t n = 0; n < c.out; ++n) {
            const Exact exact = exact_output(layer, row, n);
            const double bound = 2 * u * chain * exact.terms;
            const double got = out[std::size_t{i} * c.out + n];
            INFO("row " << i << " output " << n << ": " << got << ", exact " << exact.value << ", bound " << bound);
            CHECK(std::fabs(got - exact.value) <= bound + u_half * (std::fabs(exact.value) + bound) + u);
          }
        }
      }
    }
  }
}
