// Host packer vs the device-side quantize ops (ir/ops/Quantize.h, run on the reference
// interpreter): the same tensor quantized both ways must give identical codes and
// scales. Built only when the ops and the interpreter are in the tree (tests/pack/CMakeLists.txt).
//
// Mapping: the device ops quantize a flat vector in groups of consecutive elements. A
// PyTorch-layout weight [out_dim][in_dim] flattened row-major puts each output's k run
// contiguously, so with in_dim % group == 0 device group (i*in_dim + k)/G is the host's
// group (k/G) of output i: affine sidecar g*out_dim + i, NF4 block i*(in_dim/G) + g.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include "ir/ops/Quantize.h"
#include "runtime/Pack.h"
#include "runtime/reference/Interpreter.h"

using namespace quantc;
using namespace quantc::runtime::pack;
namespace fs = std::filesystem;

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

void check_affine(const LinearWeight& weight, std::uint32_t group) {
  const auto host = pack_int4_affine_grouped(weight, group);
  const Device device = run_device(ir::ops::quantize_int4(std::uint32_t(weight.values.size()), group, false), weight.values);
  const std::uint32_t groups_per_row = weight.in_dim / group;
  for (std::uint32_t i = 0; i < weight.out_dim; ++i) {
    for (std::uint32_t g = 0; g < groups_per_row; ++g) {
      const std::size_t device_group = std::size_t{i} * groups_per_row + g;
      INFO("output " << i << " group " << g);
      REQUIRE(host.scale[g * weight.out_dim + i] == device.scale[device_group]);
      REQUIRE(float(host.zero_point[g * weight.out_dim + i]) == device.zero_point[device_group]);
    }
    for (std::uint32_t k = 0; k < weight.in_dim; ++k) {
      const std::uint32_t host_code = (host.w[(k / 8) * weight.out_dim + i] >> (4 * (k % 8))) & 0xFu;
      INFO("output " << i << " k " << k);
      REQUIRE(host_code == device_code(device, std::size_t{i} * weight.in_dim + k));
    }
  }
}

void check_nf4(const LinearWeight& weight, std::uint32_t block) {
  const auto host = pack_nf4(weight, block);
  const Device device = run_device(ir::ops::quantize_nf4(std::uint32_t(weight.values.size()), block), weight.values);
  REQUIRE(host.scales == device.scale);  // both column-major block order
  REQUIRE(host.data == device.packed);   // and the same byte layout
}

}  // namespace

TEST_CASE("host packer == device quantize ops on a generated normal tensor") {
  std::mt19937 generator(11);
  std::normal_distribution<float> normal(0.0f, 0.04f);
  LinearWeight weight{256, 40, std::vector<float>(256 * 40)};
  for (float& value : weight.values) value = normal(generator);
  for (std::uint32_t group : {32u, 64u, 128u}) check_affine(weight, group);
  check_nf4(weight, 64);
}

TEST_CASE("host packer == device quantize ops on a real MiniLM weight") {
  const fs::path model = fs::path(QUANTC_SOURCE_DIR) / "data/models/all-MiniLM-L6-v2/model.safetensors";
  if (!fs::exists(model)) {
    WARN("SKIPPED: " << model << " absent; run scripts/fetch_model.sh");
    return;
  }
  auto file = runtime::SafetensorsFile::open(model.string());
  LinearWeight weight = linear_weight_from_tensor(file, "encoder.layer.0.attention.self.query.weight", true);
  // The first 64 outputs keep the interpreter run short; every group of them is compared.
  weight.values.resize(std::size_t{64} * weight.in_dim);
  weight.out_dim = 64;
  check_affine(weight, 64);
  check_nf4(weight, 64);
}
