// Host packer (ir/ops/HostPack.h): hand-checked codes, scales and layouts for each
// scheme, the `quantc pack` file entry point (runtime/io/PackFile.h), and a real MiniLM
// weight when data/ is present.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include "ir/ops/Quantize.h"
#include "runtime/io/Npy.h"
#include "runtime/io/PackFile.h"
#include "tests/pack/ModelData.h"

using namespace quantc::runtime;
using namespace quantc::ir::ops::pack;
using namespace quantc::runtime::pack;
using quantc::ir::ops::kNf4Table;
namespace fs = std::filesystem;

namespace {

LinearWeight row_weight(std::vector<float> values) {
  return LinearWeight{static_cast<std::uint32_t>(values.size()), 1, std::move(values)};
}

/// A deterministic output-major weight whose entries follow a rough normal law.
LinearWeight normal_weight(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  LinearWeight weight{in_dim, out_dim, std::vector<float>(std::size_t{in_dim} * out_dim)};
  for (float& value : weight.values) value = normal(generator);
  return weight;
}

double max_abs_difference(const LinearWeight& a, const LinearWeight& b) {
  double worst = 0;
  for (std::size_t e = 0; e < a.values.size(); ++e) worst = std::max(worst, std::fabs(double{a.values[e]} - b.values[e]));
  return worst;
}

}  // namespace

TEST_CASE("round half to even") {
  CHECK(round_half_even(2.5f) == 2.0f);
  CHECK(round_half_even(3.5f) == 4.0f);
  CHECK(round_half_even(-2.5f) == -2.0f);
  CHECK(round_half_even(-0.5f) == 0.0f);
  CHECK(round_half_even(0.50000006f) == 1.0f);
}

TEST_CASE("int4-affine-grouped: hand-checked codes, scale and zero point") {
  // min -5, max 10: range 15, scale 1, zero round(5) = 5; q = round(v) + 5 (half to even).
  auto packed = pack_int4_affine_grouped(row_weight({-5, -2.5f, 0, 2.5f, 10, 3.5f, -0.5f, 1.5f}), 8);
  REQUIRE(packed.w.size() == 1);
  CHECK(packed.scale == std::vector<float>{1.0f});
  CHECK(packed.zero_point == std::vector<std::uint32_t>{5});
  // codes 0, 3, 5, 7, 15, 9, 5, 7 at nibbles 0..7
  CHECK(packed.w[0] == 0x759F'7530u);
  CHECK(packed.clamped_zero_groups == 0);
}

TEST_CASE("int4-affine-grouped: word (k/8)*out_dim + i, sidecars g*out_dim + i") {
  // out_dim 3, in_dim 16, group 8: weight(k, i) = i*16 + k - 24 spans distinct groups.
  LinearWeight weight{16, 3, {}};
  for (std::uint32_t i = 0; i < 3; ++i) {
    for (std::uint32_t k = 0; k < 16; ++k) weight.values.push_back(static_cast<float>(i * 16 + k) - 24.0f);
  }
  auto packed = pack_int4_affine_grouped(weight, 8);
  REQUIRE(packed.group_count == 2);
  REQUIRE(packed.w.size() == 6);
  for (std::uint32_t i = 0; i < 3; ++i) {
    for (std::uint32_t g = 0; g < 2; ++g) {
      // each group spans 7 consecutive integers: scale 7/15, and min = i*16 + 8g - 24
      const float low = static_cast<float>(i * 16 + 8 * g) - 24.0f;
      CHECK(packed.scale[g * 3 + i] == 7.0f / 15.0f);
      const float expected_zero = std::min(std::max(std::nearbyint(-low / (7.0f / 15.0f)), 0.0f), 15.0f);
      CHECK(packed.zero_point[g * 3 + i] == static_cast<std::uint32_t>(expected_zero));
      // first element of each group is the group minimum: code clamp(round(min/s)+z)
      const std::uint32_t first = packed.w[g * 3 + i] & 0xFu;
      const float expected_first =
          std::min(std::max(std::nearbyint(low / (7.0f / 15.0f)) + expected_zero, 0.0f), 15.0f);
      CHECK(first == static_cast<std::uint32_t>(expected_first));
    }
  }
  // Row 1 spans [-8, 7]: its groups contain 0 only partly; rows 0 and 2 are one-signed
  // (all negative / all positive), so their zero points clamp.
  CHECK(packed.clamped_zero_groups > 0);
  CHECK_THROWS_WITH(pack_int4_affine_grouped(LinearWeight{12, 1, std::vector<float>(12)}, 4),
                    Catch::Contains("in_dim=12 is not divisible by 8"));
  CHECK_THROWS_WITH(pack_int4_affine_grouped(weight, 0), Catch::Contains("--group-size 0"));
}

/// quantize_int4's round-trip bound (ir/ops/Quantize.h): |dequant - v| <= scale/2, or <= scale where the code
/// saturated at 0 or 15 (v at the group's min/max with both roundings going outward).
void check_affine_round_trip(const LinearWeight& weight, const PackedAffineGrouped& packed) {
  auto restored = dequantize(packed);
  for (std::uint32_t i = 0; i < weight.out_dim; ++i) {
    for (std::uint32_t k = 0; k < weight.in_dim; ++k) {
      const float scale = packed.scale[(k / packed.group_size) * weight.out_dim + i];
      const std::uint32_t code = (packed.w[(k / 8) * weight.out_dim + i] >> (4 * (k % 8))) & 0xFu;
      const float bound = (code == 0 || code == 15 ? 1.0f : 0.5f) * scale * 1.0001f;
      INFO("group " << packed.group_size << " k " << k << " i " << i << " code " << code);
      REQUIRE(std::fabs(restored.at(k, i) - weight.at(k, i)) <= bound);
    }
  }
}

TEST_CASE("int4-affine-grouped: mixed-sign groups round-trip within scale/2") {
  auto weight = normal_weight(128, 24, 1);
  for (std::uint32_t group : {32u, 64u, 128u, 48u}) {
    auto packed = pack_int4_affine_grouped(weight, group);
    CHECK(packed.clamped_zero_groups == 0);  // 32+ normal values always straddle 0 here
    check_affine_round_trip(weight, packed);
  }
}

TEST_CASE("affine special values: NaN gets the zero code, infinities saturate") {
  auto params = affine_int4_params(std::vector<float>{-1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN(),
                                                      std::numeric_limits<float>::infinity()});
  CHECK(params.scale == 3.0f / 15.0f);  // NaN and inf do not enter the range
  CHECK(affine_int4_code(std::numeric_limits<float>::quiet_NaN(), params) == 5);
  CHECK(affine_int4_code(std::numeric_limits<float>::infinity(), params) == 15);
  CHECK(affine_int4_code(-std::numeric_limits<float>::infinity(), params) == 0);
  // An all-zero group: eps keeps the scale positive, zero point 0, code 0.
  auto zeros = affine_int4_params(std::vector<float>(4, 0.0f));
  CHECK(zeros.scale == 1e-12f / 15.0f);
  CHECK(zeros.zero_point == 0.0f);
}

TEST_CASE("nf4: thresholds, hand-checked codes, ties to the lower code, brute-force nearest") {
  const auto thresholds = quantc::ir::ops::nf4_thresholds();
  for (std::size_t t = 0; t < 15; ++t) {
    const double midpoint = (double{kNf4Table[t]} + kNf4Table[t + 1]) / 2;
    CHECK(double{thresholds[t]} <= midpoint);
    CHECK(double{std::nextafter(thresholds[t], 2.0f)} > midpoint);
  }
  // 0.5 lies between 0.4407 (code 12) and 0.5626 (code 13), midpoint 0.5017: code 12.
  auto packed = pack_nf4(row_weight({0.5f, -1.0f}), 2);
  CHECK(packed.scales == std::vector<float>{1.0f});
  CHECK(packed.data == std::vector<std::uint8_t>{0x0C});
  CHECK(nf4_code(0.0f, 0.0f) == 7);  // all-zero block
  CHECK(nf4_code(std::numeric_limits<float>::quiet_NaN(), 1.0f) == 7);
  // A value exactly on a representable midpoint goes to the lower code.
  CHECK(nf4_code(0.5f, 1.0f) == 12);
  const float exact_midpoint = (kNf4Table[0] + kNf4Table[1]) / 2;  // -0.8480964 (exact in f32)
  if (double{exact_midpoint} == (double{kNf4Table[0]} + kNf4Table[1]) / 2) CHECK(nf4_code(exact_midpoint, 1.0f) == 0);
  std::mt19937 generator(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int trial = 0; trial < 20000; ++trial) {
    const float value = uniform(generator);
    const std::uint32_t code = nf4_code(value, 1.0f);
    for (std::uint32_t other = 0; other < 16; ++other) {
      INFO(value << " code " << code << " other " << other);
      CHECK(std::fabs(double{value} - kNf4Table[code]) <= std::fabs(double{value} - kNf4Table[other]));
    }
  }
}

TEST_CASE("nf4: block 64 layout scale[col*(k/64)+block], bytes (col*(k/64)+block)*32+byte, low nibble first") {
  // in_dim 128 (two blocks), out_dim 3. Put the block maximum at a known element and
  // make every other element 0 (code 7).
  LinearWeight weight{128, 3, std::vector<float>(384, 0.0f)};
  for (std::uint32_t column = 0; column < 3; ++column) {
    weight.values[column * 128 + 5] = static_cast<float>(column + 1);      // block 0, byte 2 high nibble
    weight.values[column * 128 + 64 + 10] = -2.0f * (column + 1);          // block 1, byte 5 low nibble
  }
  auto packed = pack_nf4(weight, 64);
  REQUIRE(packed.scales.size() == 6);
  REQUIRE(packed.data.size() == 6 * 32);
  for (std::uint32_t column = 0; column < 3; ++column) {
    CHECK(packed.scales[column * 2 + 0] == static_cast<float>(column + 1));
    CHECK(packed.scales[column * 2 + 1] == 2.0f * (column + 1));
    CHECK(packed.data[(column * 2 + 0) * 32 + 2] == 0xF7);  // element 5: code 15 high, element 4: 7 low
    CHECK(packed.data[(column * 2 + 1) * 32 + 5] == 0x70);  // element 10: code 0 low, element 11: 7 high
    CHECK(packed.data[(column * 2 + 1) * 32 + 6] == 0x77);
  }
  CHECK_THROWS_WITH(pack_nf4(LinearWeight{96, 1, std::vector<float>(96)}, 64),
                    Catch::Contains("in_dim=96 is not a multiple of --block 64"));
}

TEST_CASE("int4-symmetric: signed nibbles, ceil(cols/8) words per row, row_scale = absmax/7") {
  // absmax 7 -> scale 1; codes 1,2,3,4,-1,-2,-3,-7 -> 0x9DEF4321 (seed fixture style); the
  // ninth value spills into a second, zero-padded word.
  LinearWeight weight{9, 2, {1, 2, 3, 4, -1, -2, -3, -7, 2.5f, /*row 1*/ 0, 0, 0, 0, 0, 0, 0, 0, -14}};
  auto packed = pack_int4_symmetric(weight);
  REQUIRE(packed.words_per_row == 2);
  CHECK(packed.row_scales == std::vector<float>{1.0f, 2.0f});
  CHECK(packed.w[0] == 0x9DEF'4321u);
  CHECK(packed.w[1] == 0x2u);  // round(2.5) = 2 (half to even)
  CHECK(packed.w[2] == 0u);
  CHECK(packed.w[3] == 0x9u);  // -14 / 2 = -7
  CHECK(symmetric_int4_code(100.0f, 1.0f) == 7);
  CHECK(symmetric_int4_code(-100.0f, 1.0f) == -8);
  auto restored = dequantize(packed);
  CHECK(restored.at(7, 0) == -7.0f);
  CHECK(restored.at(8, 1) == -14.0f);
}

TEST_CASE("pack_file writes the op's buffer names, metadata and .npy files, --layout selects the axis") {
  const fs::path dir = fs::temp_directory_path() / "quantc_pack_test";
  fs::create_directories(dir);
  // A PyTorch-style nn.Linear weight [out_features = 4, in_features = 64].
  LinearWeight weight = normal_weight(64, 4, 7);
  std::vector<std::uint8_t> bytes(weight.values.size() * 4);
  std::memcpy(bytes.data(), weight.values.data(), bytes.size());
  write_safetensors((dir / "model.safetensors").string(), {{"fc.weight", SafetensorsDtype::F32, {4, 64}, bytes}});

  PackOptions options;
  options.model_path = (dir / "model.safetensors").string();
  options.tensor = "fc.weight";
  options.output_path = (dir / "packed.safetensors").string();
  options.npy_dir = (dir / "npy").string();

  options.scheme = Scheme::Int4AffineGrouped;
  options.group_size = 32;
  pack_file(options);
  auto file = SafetensorsFile::open(options.output_path);
  CHECK(file.metadata().at("op") == "linear_4bit_affine_grouped");
  CHECK(file.metadata().at("k") == "64");
  CHECK(file.metadata().at("n") == "4");
  CHECK(file.tensor("w").shape == std::vector<std::uint64_t>{8, 4});
  CHECK(file.tensor("scale").shape == std::vector<std::uint64_t>{2, 4});
  CHECK(file.tensor("zero_point").dtype == SafetensorsDtype::U32);
  auto expected = pack_int4_affine_grouped(weight, 32);
  auto w = read_npy((dir / "npy/w.npy").string());
  CHECK(w.buffer.as<std::uint32_t>() == expected.w);

  options.scheme = Scheme::Nf4;
  pack_file(options);
  file = SafetensorsFile::open(options.output_path);
  CHECK(file.metadata().at("op") == "nf4_gemm");
  CHECK(file.tensor("b_scales").shape == std::vector<std::uint64_t>{4, 1});
  CHECK(file.tensor("b_nf4").shape == std::vector<std::uint64_t>{4, 8});
  CHECK(file.tensor("b_nf4").dtype == SafetensorsDtype::U32);

  options.scheme = Scheme::Int4Symmetric;
  pack_file(options);
  file = SafetensorsFile::open(options.output_path);
  CHECK(file.tensor("weights").shape == std::vector<std::uint64_t>{4, 8});
  CHECK(file.to_f32("row_scales") == pack_int4_symmetric(weight).row_scales);

  // With --layout in,out the [4, 64] tensor reads as in_dim 4: rejected for NF4 with a hint.
  options.layout = WeightLayout::InOut;
  options.scheme = Scheme::Nf4;
  CHECK_THROWS_WITH(pack_file(options), Catch::Contains("in_dim=4") && Catch::Contains("--layout"));
  auto untransposed = linear_weight_from_tensor(SafetensorsFile::open(options.model_path), "fc.weight", false);
  CHECK(untransposed.in_dim == 4);
  CHECK(untransposed.out_dim == 64);
  CHECK(untransposed.at(3, 10) == weight.at(10, 3));
  CHECK_THROWS_WITH(scheme_from_name("int3"), Catch::Contains("unknown --scheme 'int3'"));
  fs::remove_all(dir);
}

TEST_CASE("real MiniLM weight: every scheme round-trips within its bound") {
  const auto model = quantc::test::minilm_model_path();
  if (!model) return;
  auto file = SafetensorsFile::open(model->string());
  auto weight = linear_weight_from_tensor(file, "encoder.layer.0.intermediate.dense.weight", true);
  REQUIRE(weight.in_dim == 384);
  REQUIRE(weight.out_dim == 1536);
  auto affine = pack_int4_affine_grouped(weight, 64);
  CHECK(affine.clamped_zero_groups == 0);
  check_affine_round_trip(weight, affine);
  auto symmetric = pack_int4_symmetric(weight);
  CHECK(max_abs_difference(dequantize(symmetric), weight) <=
        *std::max_element(symmetric.row_scales.begin(), symmetric.row_scales.end()) * 0.5 * 1.0001);
  auto nf4 = pack_nf4(weight, 64);
  // Widest NF4 gap is 1 - 0.7230: half of it times the largest block scale.
  CHECK(max_abs_difference(dequantize(nf4), weight) <=
        *std::max_element(nf4.scales.begin(), nf4.scales.end()) * (1.0 - 0.7229568362236023) / 2 * 1.0001);
}
