// The bundle as `quantc run` reads it: --inputs DIR and --inputs FILE.safetensors, the
// logical-shape checks (ir/ops/BufferShape.h) with their transposition hint, and the
// bundles and bias `quantc pack` writes with its weight-layout convention and flag checks,
// and such a bundle run with f16/bf16 activations.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <numeric>
#include <tuple>

#include "ConvertHarness.h"
#include "ir/Arithmetic.h"
#include "ir/ops/BufferShape.h"
#include "ir/ops/Registry.h"
#include "runtime/io/Safetensors.h"

using quantc::runtime::read_npy;
using quantc::runtime::to_npy_bytes;
namespace ops = quantc::ir::ops;

namespace {

/// A model with fc.weight [out = 16, in = 64] (nn.Linear layout) and fc.bias [16], f32.
fs::path write_model(const fs::path& dir) {
  std::vector<float> weight(16 * 64), bias(16);
  for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = 0.01f * static_cast<float>(static_cast<int>(i % 41) - 20);
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = 0.25f * static_cast<float>(i) - 2.0f;
  auto bytes = [](const std::vector<float>& values) {
    std::vector<std::uint8_t> out(values.size() * 4);
    std::memcpy(out.data(), values.data(), out.size());
    return out;
  };
  const fs::path path = dir / "model.safetensors";
  quantc::runtime::write_safetensors(path.string(), {{"fc.weight", quantc::runtime::SafetensorsDtype::F32, {16, 64}, bytes(weight)},
                                                     {"fc.bias", quantc::runtime::SafetensorsDtype::F32, {16}, bytes(bias)}});
  return path;
}

fs::path write_x(const fs::path& path, std::size_t count) {
  std::vector<float> x(count);
  for (std::size_t i = 0; i < count; ++i) x[i] = 0.125f * static_cast<float>(static_cast<int>(i % 9) - 4);
  write_bytes(path, to_npy_bytes({HostBuffer::from(quantc::ir::ScalarType::F32, x), {}}));
  return path;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream file(path);
  return nlohmann::json::parse(file);
}

}  // namespace

TEST_CASE("every registered buffer shape multiplies to the element count the program declares", "[run][shapes]") {
  std::size_t checked = 0, one_dimensional_only = 0;
  for (const ops::OpInfo& op : ops::OpRegistry::builtin().all()) {
    for (ops::OpArgs args : op.test_shapes) {
      const quantc::ir::Program program = op.build(args);
      // The u32 parameters a test shape leaves to their defaults, as a parsed spec fills them.
      for (const ops::ParamSpec& param : op.params) {
        if (param.type == ops::ParamType::U32 && !param.default_value.empty() && !args.has(param.name)) {
          args.set(param.name, static_cast<std::uint32_t>(std::stoul(param.default_value)));
        }
      }
      for (const ops::BufferSpec& buffer : op.buffers) {
        const quantc::ir::BufferDecl* decl = program.find_buffer(buffer.name);
        if (decl == nullptr || buffer.shape.empty()) continue;  // conditional buffers, 1-D buffers
        INFO(op.name << " buffer " << buffer.name << " " << ops::shape_formula_text(buffer));
        const auto shape = ops::logical_shape(buffer, args);
        if (!shape) {  // an inexact division: the buffer is 1-D only for these parameters
          ++one_dimensional_only;
          continue;
        }
        CHECK(std::accumulate(shape->begin(), shape->end(), std::uint64_t{1}, std::multiplies<>()) == decl->count);
        ++checked;
      }
    }
  }
  CHECK(checked > 50);
  CHECK(one_dimensional_only > 0);  // dequant_matmul_int4 with odd n: nibble pairs span rows
  ops::BufferSpec bad{"w", "weight", quantc::ir::ScalarType::U32, "n", {"n / (2"}};
  CHECK_THROWS_WITH(ops::logical_shape(bad, ops::OpArgs::dims({{"n", 4}})), Catch::Contains("expects ')'"));
  ops::BufferSpec unknown{"w", "weight", quantc::ir::ScalarType::U32, "n", {"rows"}};
  CHECK_THROWS_WITH(ops::logical_shape(unknown, ops::OpArgs::dims({{"n", 4}})),
                    Catch::Contains("names 'rows', which is not a parameter"));
  ops::BufferSpec ceiling{"s", "sidecar", quantc::ir::ScalarType::F32, "", {"ceil(k/block)", "n/2"}};
  CHECK(ops::logical_shape(ceiling, ops::OpArgs::dims({{"k", 65}, {"block", 32}, {"n", 6}})) ==
        std::vector<std::uint64_t>{3, 3});
  CHECK_FALSE(ops::logical_shape(ceiling, ops::OpArgs::dims({{"k", 65}, {"block", 32}, {"n", 7}})));
}

TEST_CASE("pack writes a bundle that run reads from the folder and from a safetensors file", "[pack][run]") {
  const fs::path dir = scratch("pack_bundle");
  const fs::path model = write_model(dir);
  const fs::path x = write_x(dir / "x.npy", 64);
  const std::string pack = "pack " + quoted(model) + " --tensor fc.weight";

  // The default layout is nn.Linear's [out, in]: in_dim 64, out_dim 16; the bias is exported.
  Result packed = run_quantc(pack + " --group-size 32 -o " + quoted(dir / "affine"));
  INFO(packed.output);
  REQUIRE(packed.exit_code == 0);
  CHECK_THAT(packed.output, Catch::Contains("run: quantc run "));
  const nlohmann::json spec = read_json(dir / "affine" / "spec.json");
  CHECK(spec == nlohmann::json{{"op", "linear_4bit_affine_grouped"}, {"k", 64}, {"n", 16},
                               {"group_size", 32}, {"schedule", "auto"}});
  for (const char* name : {"w", "scale", "zero_point", "b", "bias"}) CHECK(fs::exists(dir / "affine" / (std::string(name) + ".npy")));
  CHECK(read_npy((dir / "affine" / "w.npy").string()).shape == std::vector<std::uint64_t>{8, 16});
  CHECK(read_npy((dir / "affine" / "b.npy").string()).buffer.bytes == read_npy((dir / "affine" / "bias.npy").string()).buffer.bytes);
  CHECK(read_npy((dir / "affine" / "bias.npy").string()).buffer.as<float>()[0] == -2.0f);

  const std::string run = "run " + quoted(dir / "affine" / "spec.json") + " --input x=" + quoted(x);
  Result from_folder = run_quantc(run + " --inputs " + quoted(dir / "affine") + " --output out=" + quoted(dir / "a.npy"));
  INFO(from_folder.output);
  REQUIRE(from_folder.exit_code == 0);
  // The same buffers from one safetensors file (pack's other output).
  Result packed_file = run_quantc(pack + " --group-size 32 -o " + quoted(dir / "affine.safetensors"));
  REQUIRE(packed_file.exit_code == 0);
  const auto file = quantc::runtime::SafetensorsFile::open((dir / "affine.safetensors").string());
  CHECK(file.contains("b"));
  CHECK(file.contains("bias"));
  CHECK(nlohmann::json::parse(file.metadata().at("spec")) == spec);
  Result from_file = run_quantc(run + " --inputs " + quoted(dir / "affine.safetensors") + " --output out=" + quoted(dir / "b.npy"));
  INFO(from_file.output);
  REQUIRE(from_file.exit_code == 0);
  CHECK(read_text(dir / "a.npy") == read_text(dir / "b.npy"));
  // The emulator agrees bit for bit on the bundle.
  Result emulated = run_quantc(run + " --inputs " + quoted(dir / "affine") + " --backend emulator --compare reference --tolerance 0");
  CHECK(emulated.exit_code == 0);
  CHECK_THAT(emulated.output, Catch::Contains("bit-exact"));

  // nf4: nf4_gemm's spec with m, bias.npy beside (nf4_gemm has no bias buffer).
  Result nf4 = run_quantc(pack + " --scheme nf4 --batch 2 -o " + quoted(dir / "nf4"));
  INFO(nf4.output);
  REQUIRE(nf4.exit_code == 0);
  CHECK(read_json(dir / "nf4" / "spec.json") ==
        nlohmann::json{{"op", "nf4_gemm"}, {"m", 2}, {"n", 16}, {"k", 64}, {"schedule", "auto"}});
  CHECK(fs::exists(dir / "nf4" / "bias.npy"));
  const fs::path a = write_x(dir / "a2.npy", 128);
  Result nf4_run = run_quantc("run " + quoted(dir / "nf4" / "spec.json") + " --inputs " + quoted(dir / "nf4") + " --input a=" + quoted(a));
  INFO(nf4_run.output);
  CHECK(nf4_run.exit_code == 0);
  // --batch on the affine scheme: "m" in the spec, and the bundle runs x [2, 64].
  Result batched = run_quantc(pack + " --batch 2 -o " + quoted(dir / "affine2"));
  INFO(batched.output);
  REQUIRE(batched.exit_code == 0);
  CHECK(read_json(dir / "affine2" / "spec.json")["m"] == 2);
  Result batched_run = run_quantc("run " + quoted(dir / "affine2" / "spec.json") + " --inputs " + quoted(dir / "affine2") +
                                  " --input x=" + quoted(a) + " --backend emulator --compare reference --tolerance 0");
  INFO(batched_run.output);
  CHECK(batched_run.exit_code == 0);
  CHECK_THAT(batched_run.output, Catch::Contains("bit-exact"));
  // int4-symmetric: int4_matvec_f32_scaled.
  Result symmetric = run_quantc(pack + " --scheme int4-symmetric -o " + quoted(dir / "sym"));
  REQUIRE(symmetric.exit_code == 0);
  CHECK(read_json(dir / "sym" / "spec.json") ==
        nlohmann::json{{"op", "int4_matvec_f32_scaled"}, {"n", 16}, {"k", 64}, {"schedule", "auto"}});
  CHECK(run_quantc("run " + quoted(dir / "sym" / "spec.json") + " --inputs " + quoted(dir / "sym") + " --input x=" + quoted(x))
            .exit_code == 0);

  // --layout in,out reads the same tensor as the ops' W [in = 16, out = 64]; fc.bias then
  // has the wrong length for the layer, which points at the layout.
  Result in_out = run_quantc(pack + " --layout in,out --group-size 16 -o " + quoted(dir / "in_out"));
  CHECK(in_out.exit_code == 1);
  CHECK_THAT(in_out.output, Catch::Contains("bias 'fc.bias' has shape [16]") && Catch::Contains("check --layout"));
  CHECK_FALSE(fs::exists(dir / "in_out"));
}

TEST_CASE("pack rejects flags its scheme ignores and contradicting layouts", "[pack][errors]") {
  const fs::path dir = scratch("pack_flags");
  const fs::path model = write_model(dir);
  const std::string pack = "pack " + quoted(model) + " --tensor fc.weight -o " + quoted(dir / "out");
  struct Case {
    std::string flags, message;
  };
  for (const Case& c : std::vector<Case>{
           {"--scheme nf4 --block 128", "--block 128: nf4_gemm reads one scale per 64 consecutive input features"},
           {"--scheme nf4 --group-size 64", "--group-size applies to --scheme int4-affine-grouped; nf4 ignores it"},
           {"--scheme int4-symmetric --group-size 64", "int4_matvec_f32_scaled has one scale per row"},
           {"--block 64", "--block applies to --scheme nf4; int4-affine-grouped ignores it"},
           {"--scheme int4-symmetric --batch 4", "--batch applies to --scheme nf4 and int4-affine-grouped"},
           {"--transpose --layout in,out", "--transpose means --layout out,in, which contradicts --layout in,out"},
           {"--npy-dir " + quoted(dir / "npy"), "--npy-dir applies to a .safetensors output"},
       }) {
    INFO(c.flags);
    Result result = run_quantc(pack + " " + c.flags);
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.output, Catch::Contains(c.message));
  }
  CHECK_FALSE(fs::exists(dir / "out"));
  CHECK_FALSE(fs::exists(dir / "npy"));
  // --transpose alone is the default layout, kept for old scripts.
  CHECK(run_quantc(pack + " --transpose").exit_code == 0);
  CHECK(read_json(dir / "out" / "spec.json")["k"] == 64);
  // The layout names the fix when the tensor cannot be packed as given.
  Result wrong = run_quantc("pack " + quoted(model) + " --tensor fc.weight --scheme nf4 --layout in,out -o " +
                        quoted(dir / "nf4"));
  CHECK(wrong.exit_code == 1);
  CHECK_THAT(wrong.output, Catch::Contains("in_dim=16") && Catch::Contains("check --layout"));
}

TEST_CASE("run checks input shapes and names the layout when a file looks transposed", "[run][shapes][errors]") {
  const fs::path dir = scratch("run_shapes");
  const fs::path model = write_model(dir);
  REQUIRE(run_quantc("pack " + quoted(model) + " --tensor fc.weight --group-size 32 -o " + quoted(dir / "b")).exit_code == 0);
  const fs::path x = write_x(dir / "x.npy", 64);
  const NpyArray w = read_npy((dir / "b" / "w.npy").string());  // [8, 16]
  const std::string run = "run " + quoted(dir / "b" / "spec.json") + " --inputs " + quoted(dir / "b") + " --input x=" + quoted(x);

  auto write_w = [&](const std::vector<std::uint64_t>& shape, bool transpose) {
    NpyArray array = w;
    if (transpose) {
      std::vector<std::uint32_t> words = w.buffer.as<std::uint32_t>(), swapped(words.size());
      for (std::size_t r = 0; r < 8; ++r) {
        for (std::size_t c = 0; c < 16; ++c) swapped[c * 8 + r] = words[r * 16 + c];
      }
      array.buffer = HostBuffer::from(quantc::ir::ScalarType::U32, swapped);
    }
    array.shape = shape;
    write_bytes(dir / "w_file.npy", to_npy_bytes(array));
    return quoted(dir / "w_file.npy");
  };
  // Given by --input, w overrides nothing: the folder's w.npy is then a second source.
  Result twice = run_quantc(run + " --input w=" + write_w({8, 16}, false));
  CHECK(twice.exit_code == 1);
  CHECK_THAT(twice.output, Catch::Contains("buffer 'w' is already given by --input w="));

  const std::string explicit_run = "run " + quoted(dir / "b" / "spec.json") + " --input x=" + quoted(x) +
                                   " --input scale=" + quoted(dir / "b" / "scale.npy") + " --input zero_point=" +
                                   quoted(dir / "b" / "zero_point.npy") + " --input b=" + quoted(dir / "b" / "b.npy");
  Result transposed = run_quantc(explicit_run + " --input w=" + write_w({16, 8}, true));
  CHECK(transposed.exit_code == 1);
  CHECK_THAT(transposed.output,
             Catch::Contains("buffer 'w' of linear_4bit_affine_grouped has the logical shape [k/8, n] = [8, "
                             "16]") &&
                 Catch::Contains("the file's shape is [16, 8]: looks transposed: [n, k/8] given, "
                                 "[k/8, n] expected"));
  Result reshaped = run_quantc(explicit_run + " --input w=" + write_w({4, 32}, false));
  CHECK(reshaped.exit_code == 1);
  CHECK_THAT(reshaped.output, Catch::Contains("same element count, other dimensions"));
  Result flat = run_quantc(explicit_run + " --input w=" + write_w({128}, false) + " --output out=" + quoted(dir / "flat.npy"));
  INFO(flat.output);
  CHECK(flat.exit_code == 0);
  Result shaped = run_quantc(explicit_run + " --input w=" + write_w({8, 16}, false) + " --output out=" + quoted(dir / "shaped.npy"));
  CHECK(shaped.exit_code == 0);
  CHECK(read_text(dir / "flat.npy") == read_text(dir / "shaped.npy"));
  // Dimensions of size 1 keep the element order: x as one row [1, 64] is accepted, as a
  // matrix [8, 8] it is not.
  NpyArray x_row = read_npy(x.string());
  x_row.shape = {1, 64};
  write_bytes(dir / "x_row.npy", to_npy_bytes(x_row));
  const std::string with_x = "run " + quoted(dir / "b" / "spec.json") + " --inputs " + quoted(dir / "b") + " --input x=";
  CHECK(run_quantc(with_x + quoted(dir / "x_row.npy")).exit_code == 0);
  x_row.shape = {8, 8};
  write_bytes(dir / "x_square.npy", to_npy_bytes(x_row));
  Result square = run_quantc(with_x + quoted(dir / "x_square.npy"));
  CHECK(square.exit_code == 1);
  CHECK_THAT(square.output, Catch::Contains("buffer 'x' of linear_4bit_affine_grouped has the logical shape [m, k] = "
                                            "[1, 64]") &&
                                Catch::Contains("the file's shape is [8, 8]: same element count, other dimensions"));
  // Bad --inputs sources.
  fs::create_directories(dir / "empty");
  write_bytes(dir / "empty" / "notes.txt", "no buffers here");
  Result empty = run_quantc(run.substr(0, run.find(" --input x")) + " --inputs " + quoted(dir / "empty") + " --random-inputs 1");
  CHECK(empty.exit_code == 1);
  CHECK_THAT(empty.output, Catch::Contains("the folder holds none of the input buffers' files (x.npy, w.npy"));
  Result not_safetensors = run_quantc(run + " --inputs " + quoted(x));
  CHECK(not_safetensors.exit_code == 1);
  CHECK_THAT(not_safetensors.output, Catch::Contains("not a folder (of BUFFER.npy files) or a .safetensors file"));
  // A safetensors input with a transposed tensor is checked the same way.
  std::vector<std::uint8_t> w_bytes = w.buffer.bytes;
  quantc::runtime::write_safetensors((dir / "t.safetensors").string(),
                                     {{"w", quantc::runtime::SafetensorsDtype::U32, {16, 8}, w_bytes}});
  Result from_safetensors = run_quantc(explicit_run + " --inputs " + quoted(dir / "t.safetensors"));
  CHECK(from_safetensors.exit_code == 1);
  CHECK_THAT(from_safetensors.output, Catch::Contains("(tensor 'w')") && Catch::Contains("looks transposed"));
}

TEST_CASE("pack --activation f16|bf16 writes the spec's activation and a 16-bit bias buffer that run takes",
          "[pack][run][activation]") {
  // The bundle and the safetensors file of `pack --activation`: spec "activation", `b` the
  // f32 bundle's bias rounded once to the type, every other buffer byte for byte the f32
  // bundle's; x may come from a safetensors F16/BF16 tensor; emulator == interpreter.
  using quantc::ir::ScalarType;
  namespace arith = quantc::ir::arith;
  const fs::path dir = scratch("pack_activation");
  const fs::path model = write_model(dir);
  const std::string pack = "pack " + quoted(model) + " --tensor fc.weight --group-size 32";
  REQUIRE(run_quantc(pack + " -o " + quoted(dir / "f32")).exit_code == 0);
  CHECK_FALSE(read_json(dir / "f32" / "spec.json").contains("activation"));  // f32: the default, left out
  const NpyArray x32 = read_npy(write_x(dir / "x.npy", 64).string());
  for (const auto& [name, type, dtype] : {std::tuple{"f16", ScalarType::F16, quantc::runtime::SafetensorsDtype::F16},
                                          std::tuple{"bf16", ScalarType::BF16, quantc::runtime::SafetensorsDtype::BF16}}) {
    INFO(name);
    auto narrowed = [format = arith::format_of(type)](const std::vector<float>& values) {
      std::vector<std::uint16_t> bits;  // rounded once to nearest even, as numpy's astype
      for (float value : values) {
        bits.push_back(static_cast<std::uint16_t>(arith::round_to_format(value, format)));
      }
      return bits;
    };
    const fs::path bundle = dir / name;
    const Result packed = run_quantc(pack + " --activation " + name + " -o " + quoted(bundle));
    INFO(packed.output);
    REQUIRE(packed.exit_code == 0);
    CHECK(read_json(bundle / "spec.json")["activation"] == name);
    const NpyArray b = read_npy((bundle / "b.npy").string());
    CHECK(b.buffer.element == type);
    CHECK(b.buffer.as<std::uint16_t>() == narrowed(read_npy((dir / "f32" / "b.npy").string()).buffer.as<float>()));
    for (const char* file : {"w.npy", "scale.npy", "zero_point.npy", "bias.npy"}) {
      CHECK(read_text(bundle / file) == read_text(dir / "f32" / file));
    }
    // x as a safetensors tensor of the activation type.
    const std::vector<std::uint16_t> x_bits = narrowed(x32.buffer.as<float>());
    std::vector<std::uint8_t> x_bytes(x_bits.size() * 2);
    std::memcpy(x_bytes.data(), x_bits.data(), x_bytes.size());
    const fs::path x_file = dir / (std::string(name) + "_x.safetensors");
    quantc::runtime::write_safetensors(x_file.string(), {{"x", dtype, {64}, x_bytes}});
    Result ran = run_quantc("run " + quoted(bundle / "spec.json") + " --inputs " + quoted(bundle) + " --inputs " +
                            quoted(x_file) + " --backend emulator --compare reference --output out=" +
                            quoted(bundle / "out.npy"));
    INFO(ran.output);
    REQUIRE(ran.exit_code == 0);
    CHECK_THAT(ran.output, Catch::Contains(fmt::format("out (16 x {})", name)) && Catch::Contains("bit-exact"));
    CHECK(read_npy((bundle / "out.npy").string()).buffer.element == type);
    // The f32 bundle's b.npy for the 16-bit spec: refused, naming the conversion.
    Result mixed = run_quantc("run " + quoted(bundle / "spec.json") + " --inputs " + quoted(x_file) + " --input w=" +
                              quoted(bundle / "w.npy") + " --input scale=" + quoted(bundle / "scale.npy") +
                              " --input zero_point=" + quoted(bundle / "zero_point.npy") + " --input b=" +
                              quoted(dir / "f32" / "b.npy"));
    CHECK(mixed.exit_code == 1);
    CHECK_THAT(mixed.output, Catch::Contains(fmt::format("buffer 'b' expects 16 x {}, the file holds 16 x f32", name)) &&
                                 Catch::Contains(fmt::format("convert the file to {}", name)));
    // The safetensors output: b in the activation type, the spec in the metadata.
    const fs::path file = dir / (std::string(name) + ".safetensors");
    REQUIRE(run_quantc(pack + " --activation " + name + " -o " + quoted(file)).exit_code == 0);
    const auto packed_file = quantc::runtime::SafetensorsFile::open(file.string());
    CHECK(packed_file.tensor("b").dtype == dtype);
    CHECK(packed_file.tensor("bias").dtype == quantc::runtime::SafetensorsDtype::F32);
    CHECK(nlohmann::json::parse(packed_file.metadata().at("spec"))["activation"] == name);
  }
  Result bad = run_quantc(pack + " --activation f8 -o " + quoted(dir / "f8"));
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Catch::Contains("--activation") && Catch::Contains("f8"));
  CHECK_FALSE(fs::exists(dir / "f8"));
}
