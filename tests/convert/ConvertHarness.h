// Shared by the convert tests: the generated checkpoints (make_checkpoints.py, run once
// per test process), the quantc binary, and the op-semantics dequantization of converted
// buffers that every comparison with a format's reference goes through.
#pragma once

#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "ir/ops/Quantize.h"
#include "runtime/io/Npy.h"
#include "tests/ProcessFolder.h"

namespace quantc_convert_test {

namespace fs = std::filesystem;
using quantc::runtime::HostBuffer;
using quantc::runtime::NpyArray;

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr together
};

inline Result run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char chunk[4096];
  while (std::size_t read = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, read);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// Runs the built quantc with a kernel cache in the build tree.
inline Result run_quantc(const std::string& arguments) {
  return run_command("QUANTC_CACHE_DIR='" + std::string(QUANTC_BINARY_DIR) + "/test-kernel-cache' '" QUANTC_CLI_PATH
                     "' " + arguments);
}

inline std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

inline std::string read_text(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

inline void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A fresh folder for one test.
inline fs::path scratch(const std::string& name) {
  const fs::path dir = quantc_test::process_folder(fs::path(QUANTC_BINARY_DIR) / "convert_scratch", "") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// The checkpoints of make_checkpoints.py, generated once per process.
struct Fixtures {
  fs::path dir;
  nlohmann::json manifest;
  bool gguf = false;
};

inline const Fixtures& fixtures() {
  static const Fixtures generated = [] {
    Fixtures result;
    result.dir = quantc_test::process_folder(fs::path(QUANTC_BINARY_DIR) / "convert_fixtures", "");
    fs::remove_all(result.dir);
    const Result run = run_command("PYTHONPATH='" QUANTC_GGUF_PYTHONPATH "' '" QUANTC_GGUF_PYTHON
                                   "' '" QUANTC_SOURCE_DIR "/tests/convert/make_checkpoints.py' --out " +
                                   quoted(result.dir));
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    std::ifstream file(result.dir / "manifest.json");
    result.manifest = nlohmann::json::parse(file);
    result.gguf = result.manifest["gguf"].get<bool>();
    return result;
  }();
  return generated;
}

inline fs::path fixture(const std::string& relative) { return fixtures().dir / relative; }

/// Whether the GGUF checkpoint exists; when it does not (no gguf-py), warns and returns
/// false, or fails where QUANTC_REQUIRE_PTXAS=1 or QUANTC_REQUIRE_GGUF_PY=1 (as tests/gguf).
inline bool gguf_fixtures() {
  if (fixtures().gguf) return true;
  const std::string reason = "gguf-py is not importable with " QUANTC_GGUF_PYTHON " (PYTHONPATH " QUANTC_GGUF_PYTHONPATH
                             "): " + fixtures().manifest["gguf_version"].get<std::string>() +
                             " (scripts/setup.sh installs it)";
  for (const char* variable : {"QUANTC_REQUIRE_PTXAS", "QUANTC_REQUIRE_GGUF_PY"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::string(value) == "1") FAIL(reason << " (" << variable << "=1: a failure, not a skip)");
  }
  WARN("SKIPPED the GGUF cases: " << reason << "; set QUANTC_REQUIRE_GGUF_PY=1 to fail instead");
  return false;
}

/// The manifest's convertible cases, GGUF ones only when their checkpoint exists.
inline std::vector<nlohmann::json> cases() {
  const bool have_gguf = gguf_fixtures();
  std::vector<nlohmann::json> result;
  for (const nlohmann::json& entry : fixtures().manifest["cases"]) {
    if (entry["format"] != "gguf" || have_gguf) result.push_back(entry);
  }
  return result;
}

/// A converted layer's weight as the op defines it, W [in, out] row-major (index k*out + n),
/// and per element the magnitude the op's f32 bound is stated in: (|q| + |z|) * |s| for
/// the affine and block ops (their fast schedules factor the zero point out), |q| * |s| +
/// |o| in the block ops' offset mode, |NF4| * |s|.
/// With "act_order" the affine op's row k multiplies x[perm[k]], so it is W's row perm[k]:
/// W is in the checkpoint's input order either way.
struct Dequantized {
  std::vector<float> weight;
  std::vector<double> magnitude;
};

inline std::uint32_t u32_at(const HostBuffer& buffer, std::size_t i) {
  std::uint32_t value;
  std::memcpy(&value, buffer.bytes.data() + 4 * i, 4);
  return value;
}
inline float f32_at(const HostBuffer& buffer, std::size_t i) {
  float value;
  std::memcpy(&value, buffer.bytes.data() + 4 * i, 4);
  return value;
}

/// The op semantics (ir/ops/Linear4Bit.h, Nf4Gemm.h, DequantMatmul.h), restated here.
inline Dequantized dequantize_op(const nlohmann::json& spec, const std::map<std::string, NpyArray>& buffers) {
  const std::string op = spec["op"].get<std::string>();
  Dequantized result;
  auto at = [&](const char* name) -> const HostBuffer& { return buffers.at(name).buffer; };
  if (op == "linear_4bit_affine_grouped") {
    const std::size_t in = spec["k"], out = spec["n"], group = spec["group_size"];
    const bool act_order = spec.value("act_order", false);
    REQUIRE(buffers.count("perm") == (act_order ? 1u : 0u));
    std::vector<std::size_t> row(in);
    std::vector<bool> seen(in, false);
    for (std::size_t k = 0; k < in; ++k) {
      row[k] = act_order ? u32_at(at("perm"), k) : k;
      REQUIRE(row[k] < in);
      REQUIRE_FALSE(seen[row[k]]);  // a permutation
      seen[row[k]] = true;
    }
    result.weight.resize(in * out);
    result.magnitude.resize(in * out);
    for (std::size_t k = 0; k < in; ++k) {
      for (std::size_t n = 0; n < out; ++n) {
        const std::uint32_t q = (u32_at(at("w"), (k / 8) * out + n) >> (4 * (k % 8))) & 15u;
        const std::size_t side = (k / group) * out + n;
        const float z = static_cast<float>(u32_at(at("zero_point"), side));
        const float s = f32_at(at("scale"), side);
        result.weight[row[k] * out + n] = (static_cast<float>(q) - z) * s;
        result.magnitude[row[k] * out + n] = (q + std::fabs(double{z})) * std::fabs(double{s});
      }
    }
  } else if (op == "nf4_gemm") {
    const std::size_t k_dim = spec["k"], n_dim = spec["n"], blocks = k_dim / 64;
    const bool fp4 = spec.value("quant_type", "nf4") == "fp4";
    result.weight.resize(k_dim * n_dim);
    result.magnitude.resize(k_dim * n_dim);
    const HostBuffer& codes = at("b_nf4");
    for (std::size_t n = 0; n < n_dim; ++n) {
      for (std::size_t k = 0; k < k_dim; ++k) {
        const std::size_t block = n * blocks + k / 64, row = k % 64;
        const std::uint8_t byte = codes.bytes[block * 32 + row / 2];
        const std::uint32_t code = row % 2 == 0 ? byte & 15u : byte >> 4;
        const float s = f32_at(at("b_scales"), block);
        const float value = fp4 ? quantc::ir::ops::kBnbFp4Table[code] : quantc::ir::ops::kNf4Table[code];
        result.weight[k * n_dim + n] = value * s;
        result.magnitude[k * n_dim + n] = std::fabs(double{value}) * std::fabs(double{s});
      }
    }
  } else {
    REQUIRE((op == "dequant_matmul_int8" || op == "dequant_matmul_int4"));
    const std::size_t k_dim = spec["k"], n_dim = spec["n"], block = spec["block_size"];
    const bool asymmetric = spec["asymmetric"];
    const bool offset = spec.value("offset", false);
    REQUIRE_FALSE((asymmetric && offset));
    result.weight.resize(k_dim * n_dim);
    result.magnitude.resize(k_dim * n_dim);
    for (std::size_t p = 0; p < k_dim; ++p) {
      for (std::size_t j = 0; j < n_dim; ++j) {
        const std::size_t e = p * n_dim + j, side = (p / block) * n_dim + j;
        float q;
        if (op == "dequant_matmul_int8") {
          q = static_cast<float>(static_cast<std::int8_t>(at("w").bytes[e]));
        } else {
          const std::uint8_t byte = at("w").bytes[e / 2];
          q = static_cast<float>(e % 2 == 0 ? byte & 15u : byte >> 4);
        }
        const float s = f32_at(at("scales"), side);
        const float z = asymmetric ? f32_at(at("zero_points"), side) : 0.0f;
        if (offset) {  // q * s + o: the product rounded, then the sum (-std=c++20: no FMA contraction)
          const float o = f32_at(at("offsets"), side);
          const float product = q * s;
          result.weight[e] = product + o;
          result.magnitude[e] = std::fabs(double{q}) * std::fabs(double{s}) + std::fabs(double{o});
          continue;
        }
        result.weight[e] = asymmetric ? (q - z) * s : q * s;
        result.magnitude[e] = (std::fabs(double{q}) + std::fabs(double{z})) * std::fabs(double{s});
      }
    }
  }
  return result;
}

/// Indices where the two arrays' bits differ (at most `limit` reported).
inline std::vector<std::size_t> bit_differences(const std::vector<float>& a, const std::vector<float>& b,
                                                std::size_t limit = 8) {
  std::vector<std::size_t> differ;
  for (std::size_t i = 0; i < a.size() && i < b.size() && differ.size() < limit; ++i) {
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) differ.push_back(i);
  }
  return differ;
}

}  // namespace quantc_convert_test

using namespace quantc_convert_test;
