// quantc pack on files (runtime/io/PackFile.h) and the size arithmetic of the host
// packer (ir/ops/HostPack.h): every output is checked before anything is written, and a
// group size near 2^32 is one group, not zero.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ir/ops/HostPack.h"
#include "runtime/io/Npy.h"
#include "runtime/io/PackFile.h"
#include "runtime/io/Safetensors.h"
#include "tests/ProcessFolder.h"

namespace fs = std::filesystem;
using namespace quantc::runtime;
namespace hostpack = quantc::ir::ops::pack;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path dir = quantc_test::temporary_process_folder("quantc_io_pack_tests_") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string get(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

/// A model with one [out_dim = 4, in_dim = 64] weight "fc.weight" of distinct values.
std::string write_model(const fs::path& dir) {
  std::vector<float> values(4 * 64);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.01f * static_cast<float>(i % 37) - 0.15f;
  std::vector<std::uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  const std::string path = (dir / "model.safetensors").string();
  write_safetensors(path, {{"fc.weight", SafetensorsDtype::F32, {4, 64}, bytes}});
  return path;
}

}  // namespace

TEST_CASE("a group size near 2^32 packs one short group and not zero groups", "[pack]") {
  hostpack::LinearWeight weight{64, 4, std::vector<float>(256)};
  for (std::size_t i = 0; i < weight.values.size(); ++i) weight.values[i] = static_cast<float>(i % 13) - 6.0f;
  const hostpack::PackedAffineGrouped huge = hostpack::pack_int4_affine_grouped(weight, 4294967295u);
  const hostpack::PackedAffineGrouped whole = hostpack::pack_int4_affine_grouped(weight, 64);
  CHECK(huge.group_count == 1);
  CHECK(huge.w == whole.w);
  CHECK(huge.scale == whole.scale);
  CHECK(huge.zero_point == whole.zero_point);
  bool any_nonzero = false;
  for (std::uint32_t word : huge.w) any_nonzero |= word != 0;
  CHECK(any_nonzero);
  CHECK(hostpack::pack_int4_affine_grouped(weight, 4294967294u).group_count == 1);
  CHECK(hostpack::pack_int4_affine_grouped(weight, 48).group_count == 2);  // 48 + a short 16
}

TEST_CASE("pack_file with --group-size 4294967295 writes real weights and one-group sidecars", "[pack]") {
  fs::path dir = fresh_dir("huge_group");
  pack::PackOptions options;
  options.model_path = write_model(dir);
  options.tensor = "fc.weight";
  options.group_size = 4294967295u;
  options.output_path = (dir / "out.safetensors").string();
  pack::pack_file(options);
  SafetensorsFile packed = SafetensorsFile::open(options.output_path);
  CHECK(packed.tensor("scale").shape == std::vector<std::uint64_t>{1, 4});
  CHECK(packed.tensor("zero_point").shape == std::vector<std::uint64_t>{1, 4});
  CHECK(packed.tensor("w").shape == std::vector<std::uint64_t>{8, 4});
  bool any_nonzero = false;
  for (std::uint8_t byte : packed.tensor("w").bytes) any_nonzero |= byte != 0;
  CHECK(any_nonzero);
  CHECK(packed.metadata().at("group_size") == "4294967295");
}

TEST_CASE("pack_file checks --npy-dir before writing -o and writes nothing on failure", "[pack]") {
  fs::path dir = fresh_dir("npy_dir");
  pack::PackOptions options;
  options.model_path = write_model(dir);
  options.tensor = "fc.weight";
  options.output_path = (dir / "out.safetensors").string();
  std::ofstream(options.output_path) << "precious";
  std::ofstream(dir / "a_file") << "x";

  options.npy_dir = (dir / "a_file").string();
  CHECK_THROWS_WITH(pack::pack_file(options), Catch::Contains("exists and is not a folder"));
  CHECK(get(options.output_path) == "precious");
  options.npy_dir = (dir / "a_file" / "sub").string();
  CHECK_THROWS_WITH(pack::pack_file(options), Catch::Contains("is not a folder"));
  CHECK(get(options.output_path) == "precious");

  // A buffer's .npy name taken by a folder: refused before anything is written.
  fs::create_directories(dir / "npy" / "scale.npy");
  options.npy_dir = (dir / "npy").string();
  CHECK_THROWS_WITH(pack::pack_file(options), Catch::Contains("scale.npy': it is a folder"));
  CHECK(get(options.output_path) == "precious");
  CHECK_FALSE(fs::exists(dir / "npy" / "w.npy"));

  // A missing tensor: the new --npy-dir folders are not even created.
  options.npy_dir = (dir / "new" / "deeper").string();
  options.tensor = "missing.weight";
  CHECK_THROWS_WITH(pack::pack_file(options), Catch::Contains("no tensor named 'missing.weight'"));
  CHECK(get(options.output_path) == "precious");
  CHECK_FALSE(fs::exists(dir / "new"));

  options.tensor = "fc.weight";
  pack::pack_file(options);
  CHECK(get(options.output_path).substr(8, 1) == "{");
  for (const char* name : {"w.npy", "scale.npy", "zero_point.npy"}) {
    INFO(name);
    CHECK(read_npy((dir / "new" / "deeper" / name).string()).buffer.count() > 0);
  }
  for (const auto& entry : fs::directory_iterator(dir)) CHECK_FALSE(entry.path().filename().string().starts_with(".qc."));
}
