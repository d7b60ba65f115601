// Host packer (ir/ops/HostPack.h) vs the device-side quantize ops (ir/ops/Quantize.h, run on
// the reference interpreter): the same tensor quantized both ways must give identical
// codes and scales, compared exactly (bit for bit on the f32 scales).
//
// Mapping: the device ops quantize a flat vector in groups of consecutive elements. A
// PyTorch-layout weight [out_dim][in_dim] (LinearWeight's storage) flattened row-major
// puts each output's k run contiguously, so with in_dim % G == 0 device group
// (i*in_dim + k)/G is the host's group k/G of output i:
//   affine INT4 (quantize_int4 asymmetric): host sidecar g*out_dim + i, host code nibble
//     k%8 of word (k/8)*out_dim + i; device scale/zero_point index i*(in_dim/G) + g.
//   NF4 (quantize_nf4): host b_scales/b_nf4 are column-major blocks, i*(in_dim/G) + g:
//     the same order and the same bytes as the device buffers.
//   symmetric INT4 per row (quantize_int4 symmetric, G = in_dim): one scale per output.
//
// Documented differences (asserted below, not hidden):
//  1. Symmetric INT4 code encoding: the device stores offset binary q + 8 (0..15), the
//     host (int4_matvec_f32_scaled's layout) a two's complement nibble q & 0xF; they are
//     the same value: host nibble == device nibble XOR 8.
//  2. Affine zero point: the device keeps round(-min/scale) as an f32 even when it lies
//     outside 0..15 (a group that is all positive or all negative); the host stores a u32
//     0..15 for linear_4bit_affine_grouped, so it clamps the zero point and encodes the
//     group with the clamped value (counted in clamped_zero_groups). On groups that
//     straddle zero (every group of the real MiniLM weights) the two agree exactly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>

#include "ir/ops/Quantize.h"
#include "runtime/io/PackFile.h"
#include "runtime/backends/reference/Interpreter.h"
#include "tests/pack/ModelData.h"

using namespace quantc;
using namespace quantc::ir::ops::pack;
using namespace quantc::runtime::pack;

namespace {

struct Device {
  std::vector<std::uint8_t> packed;
  std::vector<float> scale, zero_point;
};

Device run_device(const ir::Program& program, const std::vector<float>& values) {
  runtime::BufferSet buffers = runtime::allocate_buffers(program);
  buffers["x"] = runtime::HostBuffer::from(ir::ScalarType::F32, values);
  runtime::reference::run(program, buffers);
  Device device{buffers.at("packed").as<std::uint8_t>(), buffers.at("scale").as<float>(), {}};
  if (buffers.count("zero_point")) device.zero_point = buffers.at("zero_point").as<float>();
  return device;
}

std::uint32_t device_code(const Device& device, std::size_t element) {
  return (device.packed[element / 2] >> (4 * (element % 2))) & 0xFu;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

/// Compares every group; returns how many groups had a zero point outside 0..15 (the
/// documented difference 2), whose codes are checked against the host's clamped rule.
std::uint64_t check_affine(const LinearWeight& weight, std::uint32_t group) {
  REQUIRE(weight.in_dim % group == 0);
  const auto host = pack_int4_affine_grouped(weight, group);
  const Device device =
      run_device(ir::ops::quantize_int4(std::uint32_t(weight.values.size()), group, false), weight.values);
  const std::uint32_t groups_per_row = weight.in_dim / group;
  std::uint64_t clamped = 0;
  for (std::uint32_t i = 0; i < weight.out_dim; ++i) {
    for (std::uint32_t g = 0; g < groups_per_row; ++g) {
      const std::size_t device_group = std::size_t{i} * groups_per_row + g, sidecar = std::size_t{g} * weight.out_dim + i;
      const float device_zero = device.zero_point[device_group];
      const bool outside = device_zero < 0.0f || device_zero > 15.0f;
      clamped += outside ? 1 : 0;
      INFO("group " << g << " of output " << i << " (group size " << group << ")");
      REQUIRE(same_bits(host.scale[sidecar], device.scale[device_group]));
      REQUIRE(float(host.zero_point[sidecar]) == std::clamp(device_zero, 0.0f, 15.0f));
      for (std::uint32_t k = g * group; k < (g + 1) * group; ++k) {
        const std::uint32_t host_code = (host.w[(k / 8) * weight.out_dim + i] >> (4 * (k % 8))) & 0xFu;
        const std::uint32_t expected =
            outside ? affine_int4_code(weight.at(k, i), {host.scale[sidecar], float(host.zero_point[sidecar])})
                    : device_code(device, std::size_t{i} * weight.in_dim + k);
        INFO("k " << k);
        REQUIRE(host_code == expected);
      }
    }
  }
  CHECK(clamped == host.clamped_zero_groups);
  return clamped;
}

void check_nf4(const LinearWeight& weight, std::uint32_t block) {
  const auto host = pack_nf4(weight, block);
  const Device device = run_device(ir::ops::quantize_nf4(std::uint32_t(weight.values.size()), block), weight.values);
  REQUIRE(host.scales.size() == device.scale.size());
  for (std::size_t b = 0; b < host.scales.size(); ++b) {
    INFO("block " << b);
    REQUIRE(same_bits(host.scales[b], device.scale[b]));
  }
  REQUIRE(host.data == device.packed);  // same column-major block order and byte layout
}

void check_symmetric(const LinearWeight& weight) {
  const auto host = pack_int4_symmetric(weight);
  const Device device =
      run_device(ir::ops::quantize_int4(std::uint32_t(weight.values.size()), weight.in_dim, true), weight.values);
  for (std::uint32_t i = 0; i < weight.out_dim; ++i) {
    INFO("output " << i);
    REQUIRE(same_bits(host.row_scales[i], device.scale[i]));
    for (std::uint32_t k = 0; k < weight.in_dim; ++k) {
      const std::uint32_t host_code = (host.w[std::size_t{i} * host.words_per_row + k / 8] >> (4 * (k % 8))) & 0xFu;
      INFO("k " << k);
      REQUIRE(host_code == (device_code(device, std::size_t{i} * weight.in_dim + k) ^ 8u));  // difference 1
    }
  }
}

void check_all(const LinearWeight& weight) {
  for (std::uint32_t group : {32u, 64u, 128u}) CHECK(check_affine(weight, group) == 0);
  check_nf4(weight, 64);
  check_symmetric(weight);
}

LinearWeight generated_normal(std::uint32_t in_dim, std::uint32_t out_dim, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, 0.04f);
  LinearWeight weight{in_dim, out_dim, std::vector<float>(std::size_t{in_dim} * out_dim)};
  for (float& value : weight.values) value = normal(generator);
  return weight;
}

}  // namespace

TEST_CASE("host packer == device quantize ops on a generated normal tensor") {
  check_all(generated_normal(256, 40, 11));
}

TEST_CASE("host packer vs device quantize: a one-signed group differs only by the documented zero-point clamp") {
  LinearWeight weight = generated_normal(64, 4, 12);
  // Output 1's first group all positive, output 2's second all negative: their zero
  // points round(-min/scale) fall below 0 and above 15.
  for (std::uint32_t k = 0; k < 32; ++k) weight.values[1 * 64 + k] = 0.5f + 0.01f * float(k);
  for (std::uint32_t k = 32; k < 64; ++k) weight.values[2 * 64 + k] = -0.5f - 0.01f * float(k);
  const Device device = run_device(ir::ops::quantize_int4(64 * 4, 32, false), weight.values);
  CHECK(device.zero_point[1 * 2 + 0] < 0.0f);
  CHECK(device.zero_point[2 * 2 + 1] > 15.0f);
  CHECK(check_affine(weight, 32) == 2);
  check_nf4(weight, 64);  // NF4 and symmetric have no zero point: identical
  check_symmetric(weight);
}

TEST_CASE("host packer == device quantize ops on real MiniLM weights") {
  const auto model = quantc::test::minilm_model_path();
  if (!model) return;
  auto file = runtime::SafetensorsFile::open(model->string());
  for (const char* name : {"encoder.layer.0.attention.self.query.weight", "encoder.layer.3.intermediate.dense.weight",
                           "encoder.layer.5.output.dense.weight"}) {
    INFO(name);
    check_all(linear_weight_from_tensor(file, name, /*transpose=*/true));
  }
}
