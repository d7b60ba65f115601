// `quantc profile --json`: the documented keys (README, "quantc profile") hold the numbers
// the cost model must give for kernels whose answer is known by hand, and bad --device /
// --registers values fail naming the value.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "CliHarness.h"

namespace {

using json = nlohmann::json;

std::string kernels() { return std::string(QUANTC_SOURCE_DIR) + "/tests/cli/kernels/launch_kernels.ptx"; }

/// Peak DRAM bandwidth of each modeled device, bytes per second (CostModel.cpp's table).
const std::map<std::string, double> kBandwidth = {
    {"h100_sxm", 3.35e12}, {"h200", 4.8e12}, {"a100", 2.039e12}, {"l40s", 864e9}};

json profile_json(const std::string& arguments) {
  Result result = run_quantc("profile " + arguments + " --json");
  INFO("quantc profile " << arguments << " --json\n" << result.output);
  REQUIRE(result.exit_code == 0);
  json document = json::parse(result.output, nullptr, /*allow_exceptions=*/false);
  REQUIRE_FALSE(document.is_discarded());
  return document;
}

bool known_limit(const std::string& limit) {
  static const std::set<std::string> fixed = {"dram_bandwidth", "latency", "issue_dispatch", "ctas"};
  return fixed.count(limit) != 0 || limit.rfind("issue_", 0) == 0;
}

}  // namespace

TEST_CASE("quantc profile --json: a streaming elementwise kernel is modeled at unique bytes / DRAM bandwidth",
          "[cli][profile]") {
  // affine: y[i] = a * x[i] + b over 2^20 floats in 4096 CTAs of 256 threads; each warp
  // loads and stores 128 contiguous bytes once, so DRAM moves exactly 4 MiB + 4 MiB.
  const std::uint64_t n = 1u << 20;
  const json document = profile_json(kernels() + " --entry affine --grid 4096 --block 256 --arg x:f32:" +
                                     std::to_string(n) + " --arg y:f32:" + std::to_string(n) +
                                     " --arg f32:2 --arg s32:1 --arg u32:" + std::to_string(n));
  REQUIRE(document["kernels"].size() == 1);
  const json& kernel = document["kernels"][0];
  CHECK(kernel["kernel"] == "affine");
  CHECK(kernel["ctas"] == 4096);
  CHECK(kernel["threads_per_cta"] == 256);
  CHECK(kernel["unique_bytes_read"] == 4 * n);
  CHECK(kernel["unique_bytes_written"] == 4 * n);
  CHECK(kernel["load_requests"] == n / 32);      // one per warp
  CHECK(kernel["load_sectors"] == n / 32 * 4);   // 128 bytes = 4 sectors per request
  CHECK(kernel["warp_instructions"].get<std::uint64_t>() > n / 32 * 5);
  CHECK(kernel["registers"].get<int>() > 0);
  CHECK(kernel["registers"].get<int>() <= 32);
  REQUIRE(kernel["devices"].size() == 4);
  for (const auto& [key, bandwidth] : kBandwidth) {
    INFO(key);
    const json& device = kernel["devices"][key];
    REQUIRE(device.contains("modeled_us"));
    CHECK(device["memory_bound_us"].get<double>() == Approx(8.0 * n / bandwidth * 1e6).epsilon(1e-12));
    CHECK(device["modeled_us"].get<double>() >= device["memory_bound_us"].get<double>());
    CHECK(device["hbm_fraction"].get<double>() ==
          Approx(device["memory_bound_us"].get<double>() / device["modeled_us"].get<double>()));
    CHECK(known_limit(device["limit"].get<std::string>()));
    CHECK(device["limits_us"].contains(device["limit"].get<std::string>()));
    CHECK(document["devices"][key]["dram_bandwidth_tb_per_s"].get<double>() == Approx(bandwidth / 1e12));
  }
  // On H100 SXM: 8 MiB / 3.35 TB/s = 2.504 us; issue (~0.4 us) and a DRAM round trip per wave
  // (530 ns against 645 ns of DRAM time per wave of 1056 CTAs) stay below it.
  const json& h100 = kernel["devices"]["h100_sxm"];
  CHECK(h100["memory_bound_us"].get<double>() == Approx(2.504).epsilon(1e-3));
  CHECK(h100["limit"] == "dram_bandwidth");
  // At the sustained bandwidth: what a device copy reaches (about 3.0 of 3.35 TB/s).
  CHECK(h100["hbm_fraction"].get<double>() ==
        Approx(document["devices"]["h100_sxm"]["sustained_dram_fraction"].get<double>()).epsilon(1e-9));
  CHECK(h100["waves"] == 4);
}

json buffer_traffic(const json& kernel, const std::string& name) {
  for (const json& buffer : kernel["buffers"]) {
    if (buffer["name"] == name) return buffer;
  }
  FAIL("no buffer named " << name);
  return json();
}

/// The fast batch-1 GEMVs on the model fitted to an H200 (CostModel.cpp): each warp's
/// serial chain (load waits + instructions x warp_cycles_per_instruction), not DRAM, sets
/// the time, as measured (bench/results/gpu-nvidia-h200.md: 0.2-0.6 waves, 12-33% of copy
/// bandwidth at these shapes). A schedule that reaches the DRAM limit fails this check and
/// should update it.
void check_serial_chain_bound(const json& devices, const json& device, const char* key) {
  INFO(device.dump());
  CHECK(device["limit"] == "latency");
  CHECK(device["modeled_us"].get<double>() == Approx(device["limits_us"]["latency"].get<double>()));
  CHECK(device["limits_us"]["dram_bandwidth"].get<double>() < device["modeled_us"].get<double>());
  CHECK(device["hbm_fraction"].get<double>() < 0.87);
  const double cycles = devices[key]["warp_cycles_per_instruction"].get<double>();
  const double clock_mhz = devices[key]["clock_ghz"].get<double>() * 1e3;
  CHECK(device["latency_bound_us"].get<double>() >= device["instructions_per_warp"].get<double>() * cycles / clock_mhz);
}

/// Modeled within 1.15x of the memory-bound time (>= 87% of HBM), DRAM the limit.
void check_at_hbm_target(const json& device) {
  INFO(device.dump());
  CHECK(device["limit"] == "dram_bandwidth");
  CHECK(device["hbm_fraction"].get<double>() >= 0.87);
  CHECK(device["modeled_us"].get<double>() <= 1.15 * device["memory_bound_us"].get<double>());
}

TEST_CASE("quantc profile --json: one warp of 8 loads is latency-bound, the seed affine GEMV too, the fast one is not",
          "[cli][profile]") {
  SECTION("latency: 1 CTA of 32 threads, one load each, waits one DRAM round trip") {
    const json document =
        profile_json(kernels() + " --entry affine --grid 1 --block 32 --arg x:f32:8 --arg y:f32:8 --arg f32:2 "
                                 "--arg s32:1 --arg u32:8 --device h100_sxm");
    const json& kernel = document["kernels"][0];
    REQUIRE(kernel["devices"].size() == 1);
    const json& h100 = kernel["devices"]["h100_sxm"];
    CHECK(h100["limit"] == "latency");
    // 700 cycles at 1.98 GHz x 1.5 under load = 530.3 ns, plus the warp's instructions at
    // warp_cycles_per_instruction each; 64 bytes move in 0.019 ns.
    const double cycles = document["devices"]["h100_sxm"]["warp_cycles_per_instruction"].get<double>();
    CHECK(cycles > 0);
    CHECK(h100["modeled_us"].get<double>() ==
          Approx(0.5303 + h100["instructions_per_warp"].get<double>() * cycles / 1980.0).epsilon(1e-3));
    CHECK(h100["hbm_fraction"].get<double>() < 0.001);
  }
  SECTION("each warp's chain: quantc's seed linear_4bit_affine_grouped at 1024x4096") {
    fs::path spec = scratch_dir() / "affine_1024x4096.json";
    write_text(spec, R"({"op": "linear_4bit_affine_grouped", "k": 1024, "n": 4096, "group_size": 128,
                       "schedule": "seed", "target": "sm_80"})");
    const json document = profile_json(spec.string() + " --device h100_sxm --device a100");
    const json& kernel = document["kernels"][0];
    CHECK(kernel["devices"].size() == 2);
    CHECK_FALSE(kernel["devices"].contains("h200"));
    const std::string source = kernel["registers_source"].get<std::string>();
    CHECK((source == "ptxas" || source == "assumed"));
    for (const char* key : {"h100_sxm", "a100"}) {
      INFO(key);
      const json& device = kernel["devices"][key];
      // 16 warps' worth of columns per CTA walk all of K one nibble per lane: a long chain.
      CHECK(device["limit"] == "latency");
      CHECK(device["hbm_fraction"].get<double>() < 0.5);
      CHECK(device["modeled_us"].get<double>() ==
            Approx(device["limits_us"][device["limit"].get<std::string>()].get<double>()).epsilon(0.2));
    }
  }
  SECTION("the fast linear_4bit_affine_grouped at 4096x4096: whole sectors, K split across 8 warps, at the HBM target") {
    fs::path spec = scratch_dir() / "affine_fast.json";
    write_text(spec, R"({"op": "linear_4bit_affine_grouped", "k": 4096, "n": 4096, "group_size": 128,
                       "schedule": "fast", "target": "sm_90"})");
    const json document = profile_json(spec.string() + " --device h100_sxm");
    const json& kernel = document["kernels"][0];
    check_at_hbm_target(kernel["devices"]["h100_sxm"]);
    CHECK(kernel["threads_per_cta"] == 512);  // 2 column subgroups x 8 k-subgroups
    // Each k-lane pair reads its own rows: a weight request touches 16 lines (16 rows). The
    // 4 slices of a group interleave its rows, so the 4 k-lanes of a group read 4
    // consecutive rows and each of the two x requests touches 4 lines, not 16: with the
    // sidecars' 2 lines, (16 + 2 * 4 + ...) / 3 < 8 lines per request. Contiguous slices
    // took 48 of the memory pipe's line slots per row, more than the DRAM time.
    CHECK(kernel["load_wavefronts"].get<double>() / kernel["load_requests"].get<double>() < 8.0);
    const json x = buffer_traffic(kernel, "x");
    // Two per packed row of each warp's 8 columns, 16 rows (k-lanes) a request.
    CHECK(x["load_requests"] == 2 * (4096 / 8) * (4096 / 8) / 16);
    // 16-byte loads, two column lanes: each packed row of a warp's 8 columns is one whole
    // 32-byte sector.
    const json w = buffer_traffic(kernel, "w");
    CHECK(w["load_sector_efficiency"] == 1.0);
    CHECK(w["load_sector_efficiency"].get<double>() >= 0.95);
    CHECK(kernel["load_sectors"].get<double>() / kernel["load_requests"].get<double>() >= 8.0);
    // Issued warp instructions per packed-weight byte (register moves ptxas removes are not issued).
    const double issued = kernel["warp_instructions"].get<double>() - kernel["pipe_instructions"]["move"].get<double>();
    CHECK(issued / (4096.0 * 4096 / 2) <= 0.35);
  }
  SECTION("the fast nf4_gemm (f64, f32) at 4096x4096: bound by each warp's chain; nf4_gemm_transpose by DRAM") {
    for (const char* op : {R"("op": "nf4_gemm", "accumulate": "f64")", R"("op": "nf4_gemm", "accumulate": "f32")",
                           R"("op": "nf4_gemm_transpose")"}) {
      fs::path spec = scratch_dir() / "nf4_fast.json";
      write_text(spec, std::string("{") + op + R"(, "m": 1, "n": 4096, "k": 4096, "schedule": "fast", "target": "sm_90"})");
      const json document = profile_json(spec.string() + " --device h100_sxm");
      const json& kernel = document["kernels"][0];
      INFO(op);
      // nf4_gemm: 4 columns per lane, half blocks split across 4 warps of a workgroup. The
      // transpose: 64 splits of one-warp workgroups, one wave at the 64 registers it asks for.
      if (std::string(op).find("transpose") == std::string::npos) {
        check_serial_chain_bound(document["devices"], kernel["devices"]["h100_sxm"], "h100_sxm");
      } else {
        CHECK(kernel["registers"] == 64);
        check_at_hbm_target(kernel["devices"]["h100_sxm"]);
      }
      // 16-byte weight loads; nf4_gemm's are whole sectors (16 per request), the transpose's
      // half sectors (its reduction runs across columns, see ir/ops/Nf4Gemm.h); activation
      // and scale loads bring the average down.
      CHECK(kernel["load_sectors"].get<double>() / kernel["load_requests"].get<double>() >= 8.0);
      const double issued = kernel["warp_instructions"].get<double>() - kernel["pipe_instructions"]["move"].get<double>();
      CHECK(issued / (4096.0 * 4096 / 2) <= 0.35);
    }
  }
  SECTION("PTX for sm_90 is modeled on the sm_90 devices only; the others say why") {
    const json kernel = profile_json(spec_path("linear_4bit_affine_grouped.json"))["kernels"][0];
    CHECK(kernel["target"] == "sm_90");
    CHECK(kernel["devices"]["h200"].contains("modeled_us"));
    CHECK_FALSE(kernel["devices"]["a100"].contains("modeled_us"));
    CHECK(kernel["devices"]["a100"]["error"] == "the PTX targets sm_90; a100 is sm_80 and cannot run it");
    CHECK(kernel["devices"]["l40s"]["error"] == "the PTX targets sm_90; l40s is sm_89 and cannot run it");
  }
}

TEST_CASE("quantc profile --json: the fast linear_4bit at the Llama shapes reaches the HBM target in one wave",
          "[cli][profile]") {
  struct Shape {
    std::uint32_t k, n, threads_per_cta;
  };
  // 4096x11008: 8 k-subgroups would make 688 workgroups of 16 warps, 1.3 waves of 48
  // warps per SM; 4 (256 invocations) fit one. 11008x4096: 11 interleaved rows per
  // k-lane load in batches of 6 (two waits on loads, not three).
  for (const Shape& shape : {Shape{4096, 4096, 512}, Shape{4096, 11008, 256}, Shape{11008, 4096, 512}}) {
    DYNAMIC_SECTION(shape.k << "x" << shape.n) {
      fs::path spec = scratch_dir() / "linear_4bit_llama.json";
      write_text(spec, fmt::format(R"({{"op": "linear_4bit", "k": {}, "n": {}, "schedule": "fast", "target": "sm_90"}})",
                                   shape.k, shape.n));
      const json kernel = profile_json(spec.string() + " --device h100_sxm")["kernels"][0];
      CHECK(kernel["threads_per_cta"] == shape.threads_per_cta);
      const json& device = kernel["devices"]["h100_sxm"];
      CHECK(device["waves"] == 1);
      check_at_hbm_target(device);
    }
  }
}

TEST_CASE("quantc profile --json: the fast int4 row GEMVs at 4096x4096 read whole sectors at the HBM target",
          "[cli][profile]") {
  // K-contiguous signed INT4 (ir/ops/Int4Packed.h, "schedule": "fast"): a row group of 4
  // rows per 4 k-subgroups, each lane 4 words 32 apart of a 128-word span of every row,
  // x shared by the 4 rows.
  for (const char* op : {"int4_matvec_f32_scaled", "int4_batched_matvec_f32_scaled"}) {
    DYNAMIC_SECTION(op) {
      fs::path spec = scratch_dir() / (std::string(op) + "_fast.json");
      write_text(spec, std::string(R"({"op": ")") + op + R"(", "n": 4096, "k": 4096, "schedule": "fast", )" +
                           (std::string(op) == "int4_matvec_f32_scaled" ? "" : R"("m": 1, )") +
                           R"("target": "sm_90"})");
      const json document = profile_json(spec.string() + " --device h100_sxm");
      const json& kernel = document["kernels"][0];
      // 1024 row groups x 4 k-subgroups = 4096 warps, one step each: 16 word loads of 4
      // sectors (128 contiguous bytes: 100% sector efficiency), 8 x loads of 32 sectors
      // (each lane's 16 bytes in its own 32-byte sector, the other half read by the
      // next load from L1) and one f32x4 load of the 4 row scales.
      CHECK(kernel["load_requests"] == 4096 * (16 + 8 + 1));
      CHECK(kernel["load_sectors"] == 4096 * (16 * 4 + 8 * 32 + 1));
      CHECK(kernel["unique_bytes_read"] == 4096 * 4096 / 2 + 4096 * 4 + 4096 * 4);
      CHECK(kernel["ctas"] == 1024);
      CHECK(kernel["threads_per_cta"] == 128);
      const double issued = kernel["warp_instructions"].get<double>() - kernel["pipe_instructions"]["move"].get<double>();
      CHECK(issued / (4096.0 * 4096 / 2) <= 0.35);
      // Modeled within 1.15x of the memory-bound time (>= 87% of HBM).
      const json& device = kernel["devices"]["h100_sxm"];
      INFO(device.dump());
      CHECK(device["hbm_fraction"].get<double>() >= 0.87);
      CHECK(device["modeled_us"].get<double>() <= 1.15 * device["memory_bound_us"].get<double>());
    }
  }
}

/// The entry of `kernel["buffers"]` named `name`.

TEST_CASE("quantc profile --json: the fast dequant_matmul schedules at 4096x4096 on the H100 model", "[cli][profile]") {
  // Every op reads whole 32-byte weight sectors. A warp owns one 32-byte sector of every
  // row (int8, fp8: 32 columns; int4, nvfp4: 64), eight lanes per sector, 4 k-lanes.
  // 4096 columns give 128 (int8, fp8) or 64 (int4, nvfp4) such warps, too few for 132
  // SMs, so K is split across the subgroups of a workgroup (k-subgroups, meeting in
  // shared memory; fp8 up to 2) and then over workgroups that meet through scratch
  // memory (ir/ops/SplitK.h): toward 2048 workgroups, as many splits as the chunks allow.
  // With 32-row chunks every k-lane of int8, int4 and nvfp4 has one chunk in 512-1024
  // workgroups, so the chunks halve to 16 rows: 4 k-subgroups x 16 splits; fp8 keeps 32
  // rows: 2 x 16. All but nvfp4 reach the DRAM limit; nvfp4's decode (E2M1 code books by
  // prmt, an E4M3 scale per 16 rows) leaves each warp's serial chain longer, and its
  // 16-row chunks (one scale block each) cost it 0.369 issued instructions per packed
  // byte, over the 0.35 target (0.343 with 32-row chunks, at 6.2 us instead of 3.6).
  struct Target {
    const char* op;
    const char* params;
    double bytes_per_element;
    std::uint32_t k_subgroups;
    std::uint32_t splits;
    bool at_dram_limit;
    double max_issued_per_weight_byte;
    std::uint32_t sector_columns() const { return bytes_per_element == 1.0 ? 128 : 64; }
  };
  for (const Target& target :
       {Target{"dequant_matmul_int8", R"("block_size": 64, "asymmetric": true)", 1.0, 4, 16, true, 0.35},
        Target{"dequant_matmul_fp8", R"("format": "e4m3")", 1.0, 2, 16, true, 0.35},
        Target{"dequant_matmul_int4", R"("block_size": 64, "asymmetric": true)", 0.5, 4, 16, true, 0.35},
        Target{"dequant_matmul_nvfp4", "", 0.5, 4, 16, false, 0.37}}) {
    DYNAMIC_SECTION(target.op) {
      fs::path spec = scratch_dir() / (std::string(target.op) + "_fast.json");
      std::string params = target.params;
      write_text(spec, std::string(R"({"op": ")") + target.op + R"(", "m": 1, "k": 4096, "n": 4096, )" +
                           (params.empty() ? "" : params + ", ") + R"("schedule": "fast", "target": "sm_90"})");
      const json document = profile_json(spec.string() + " --device h100_sxm");
      const json& kernel = document["kernels"][0];
      const json& device = kernel["devices"]["h100_sxm"];
      INFO(device.dump());
      CHECK(kernel["ctas"] == target.sector_columns() * target.splits);
      CHECK(kernel["threads_per_cta"] == 32 * target.k_subgroups);
      CHECK(device["spill_bytes"] == 0);
      if (target.at_dram_limit) {
        CHECK(device["limit"] == "dram_bandwidth");
        CHECK(device["hbm_fraction"].get<double>() >= 0.87);
      } else {
        check_serial_chain_bound(document["devices"], device, "h100_sxm");
      }
      // Issued warp instructions per packed-weight byte.
      const double weight_bytes = 4096.0 * 4096 * target.bytes_per_element;
      const double issued = kernel["warp_instructions"].get<double>() - kernel["pipe_instructions"]["move"].get<double>();
      CHECK(issued / weight_bytes <= target.max_issued_per_weight_byte);
      // Every weight byte is loaded once, 4 bytes per lane, eight lanes per 32-byte sector:
      // 128 bytes and 4 whole sectors per request, 100% sector efficiency.
      const json w = buffer_traffic(kernel, "w");
      CHECK(w["load_requests"] == weight_bytes / 128);
      CHECK(w["load_sectors"] == weight_bytes / 32);
      CHECK(w["load_bytes"] == weight_bytes);
      CHECK(w["load_sector_efficiency"] == 1.0);
      // The split-K scratch: each workgroup stores its columns' partial sums once, the
      // last of each unit reads them back; one ticket per workgroup.
      const json partials = buffer_traffic(kernel, "partials");
      CHECK(partials["store_bytes"] == 4.0 * 4096 * target.splits * 2);  // stored, then zeroed
      CHECK(partials["load_bytes"] == 4.0 * 4096 * target.splits);
      const json arrivals = buffer_traffic(kernel, "arrivals");
      CHECK(arrivals["load_requests"] == target.sector_columns() * target.splits);  // an atomic is a load and a store
      // DRAM: the weights, x, the sidecars (two f32 per 64-row block and column) and the
      // partial sums (written and read once per split).
      CHECK(device["dram_bytes"].get<double>() <=
            1.05 * weight_bytes + 4.0 * 4096 * (1 + 4096 / 64 * 2) + 2 * 4.0 * 4096 * target.splits);
    }
  }
}

TEST_CASE("quantc profile --json: the fast quantize/dequantize kernels at n = 4096*4096 stream near the DRAM limit",
          "[cli][profile][quantize]") {
  // The f32 side dominates the bytes (4 per element against half a byte packed), so the
  // memory-bound time counts x or y too. Dequantizers (n and group_size multiples of 8):
  // lane pairs share a u32 word of codes (64 consecutive packed bytes, 2 whole sectors per
  // request), each lane storing its half's four values with one f32x4 store, so a store
  // request writes 512 contiguous bytes (16 whole sectors): an H200 measured the earlier
  // word program, whose stores filled half of 32 sectors each, at 45-56% of copy bandwidth
  // against 77-87% for whole-sector stores. 0.26-0.33 warp instructions per packed byte,
  // within the 0.35 target: 16 slots a lane spread the index arithmetic, group 128's
  // sidecars come by f32x4 loads, NF4's shuffle lanes go unmasked.
  // Quantizers: each lane's word of eight values by two f32x4 loads of x (16 bytes at a
  // 32-byte stride: 32 sectors per request, the pair fills them; x crosses DRAM once), and
  // one u32 store of its eight codes (whole sectors of `packed`).
  const std::uint64_t n = 4096ull * 4096;
  struct Case {
    const char* spec;
    bool quantizer;
    // Dequantizers: 3 per code, 4 with a zero point; NF4 a shift, a shfl and a mul.
    // Quantizers: the seed's division, cvt.rni, clamp and NaN select per code (NF4: the
    // threshold search), the finite-value reduction and the packing, about 14 per element.
    double max_instructions_per_packed_byte;
  };
  for (const Case& c : {Case{R"("op": "dequantize_int4", "symmetric": true, "group_size": 128)", false, 0.27},
                        Case{R"("op": "dequantize_int4", "symmetric": false, "group_size": 128)", false, 0.34},
                        Case{R"("op": "dequantize_nf4", "group_size": 64)", false, 0.29},
                        Case{R"("op": "quantize_int4", "symmetric": true, "group_size": 64)", true, 1.15},
                        Case{R"("op": "quantize_int4", "symmetric": false, "group_size": 64)", true, 1.45},
                        Case{R"("op": "quantize_nf4", "group_size": 128)", true, 1.6}}) {
    DYNAMIC_SECTION(c.spec) {
      fs::path spec = scratch_dir() / "quantize_fast.json";
      write_text(spec, std::string("{") + c.spec + R"(, "n": 16777216, "schedule": "fast", "target": "sm_90"})");
      const json kernel = profile_json(spec.string() + " --device h100_sxm")["kernels"][0];
      const json& device = kernel["devices"]["h100_sxm"];
      INFO(device.dump());
      // Within 15% of the sustained-bandwidth time (measured on an H200: 77% of copy bandwidth
      // for the dequantizers, 54-59% for the quantizers before they stored words).
      CHECK(device["modeled_us"].get<double>() <= 1.15 * device["limits_us"]["dram_bandwidth"].get<double>());
      CHECK(device["hbm_fraction"].get<double>() >= 0.87);
      const double issued = kernel["warp_instructions"].get<double>() - kernel["pipe_instructions"]["move"].get<double>();
      CHECK(issued / (n / 2.0) <= c.max_instructions_per_packed_byte);
      if (c.quantizer) {
        const json x = buffer_traffic(kernel, "x");
        CHECK(x["load_sectors"].get<double>() / x["load_requests"].get<double>() == 32.0);
        CHECK(x["load_sectors"].get<double>() * 32 == 2 * 4.0 * n);  // every sector twice, half each time
        const json packed = buffer_traffic(kernel, "packed");
        CHECK(packed["store_sector_efficiency"] == 1.0);
        CHECK(packed["store_requests"].get<double>() * 32 * 4 == n / 2);  // a u32 word per lane
        CHECK(kernel["unique_bytes_read"] == 4 * n);
        CHECK(kernel["unique_bytes_written"].get<std::uint64_t>() >= n / 2);
      } else {
        const json packed = buffer_traffic(kernel, "packed");
        CHECK(packed["load_sector_efficiency"] == 1.0);
        CHECK(packed["load_sectors"].get<double>() / packed["load_requests"].get<double>() == 2.0);
        CHECK(packed["load_sectors"].get<double>() * 32 == n / 2);  // every packed sector once
        const json y = buffer_traffic(kernel, "y");
        CHECK(y["store_sector_efficiency"] == 1.0);
        CHECK(y["store_sectors"].get<double>() / y["store_requests"].get<double>() == 16.0);
        CHECK(y["store_sectors"].get<double>() * 32 == 4.0 * n);  // every sector once, whole
        CHECK(kernel["unique_bytes_written"] == 4 * n);
        CHECK(kernel["unique_bytes_read"].get<std::uint64_t>() >= n / 2);
      }
    }
  }
}

TEST_CASE("quantc profile --schedules: auto builds the schedule the cost model finds fastest", "[cli][profile]") {
  // One shape per op family at 1024 (small enough to emulate the seed programs quickly),
  // plus a batch the fast GEMV cannot run (auto falls back to the seed, the only candidate).
  struct Case {
    const char* spec;
    const char* expected;
  };
  for (const Case& c :
       {Case{R"("op": "linear_4bit_affine_grouped", "k": 1024, "n": 1024, "group_size": 128)", "fast"},
        // 3 groups for 16 k-lanes: the fast GEMV slices the groups so every lane streams rows
        Case{R"("op": "linear_4bit_affine_grouped", "k": 384, "n": 384, "group_size": 128)", "fast"},
        Case{R"("op": "nf4_gemm", "m": 1, "k": 1024, "n": 1024)", "fast"},
        Case{R"("op": "dequant_matmul_int8", "m": 1, "k": 1024, "n": 1024, "block_size": 64, "asymmetric": true)",
             "fast"},
        Case{R"("op": "int4_matvec_f32_scaled", "n": 1024, "k": 1024)", "fast"},
        Case{R"("op": "dequantize_nf4", "n": 1048576, "group_size": 64)", "fast"},
        Case{R"("op": "nf4_gemm", "m": 4, "k": 1024, "n": 1024)", "seed"}}) {
    DYNAMIC_SECTION(c.spec) {
      fs::path spec = scratch_dir() / "schedules.json";
      write_text(spec, std::string("{") + c.spec + R"(, "target": "sm_90"})");
      Result result = run_quantc("profile " + spec.string() + " --schedules --json");
      INFO(result.output);
      REQUIRE(result.exit_code == 0);
      const json document = json::parse(result.output);
      CHECK(document["device"] == "h100_sxm");
      CHECK(document["auto"] == c.expected);
      CHECK(document["best"] == document["auto"]);
      REQUIRE(document["schedules"].size() == 2);
      CHECK(document["schedules"][0]["schedule"] == "seed");
      CHECK(document["schedules"][1]["schedule"] == "fast");
      const json& fast = document["schedules"][1];
      if (std::string(c.expected) == "fast") {
        const double seed_us = document["schedules"][0]["kernel"]["devices"]["h100_sxm"]["modeled_us"].get<double>();
        const double fast_us = fast["kernel"]["devices"]["h100_sxm"]["modeled_us"].get<double>();
        CHECK(fast_us < seed_us);
      } else {
        CHECK_THAT(fast["error"].get<std::string>(), Catch::Contains("m=4") && Catch::Contains("\"schedule\": \"seed\""));
      }
    }
  }
  Result text = run_quantc("profile " + spec_path("linear_4bit_affine_grouped_seed.json") + " --schedules");
  INFO(text.output);
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.output, Catch::Contains("modeled us") && Catch::Contains("auto builds: "));
  Result single = run_quantc("profile " + spec_path("int4_dot_i32.json") + " --schedules");
  CHECK(single.exit_code == 1);
  CHECK_THAT(single.output, Catch::Contains("op int4_dot_i32 has one program"));
}

TEST_CASE("quantc profile: bad --device and --registers values exit 1 naming the value", "[cli][profile]") {
  const std::string spec = spec_path("dequantize_int4.json");
  Result device = run_quantc("profile " + spec + " --device h100");
  INFO(device.output);
  CHECK(device.exit_code == 1);
  CHECK_THAT(device.output, Catch::StartsWith("error: ") && Catch::Contains("unknown device 'h100'") &&
                                Catch::Contains("h100_sxm, h200, a100, l40s"));
  for (const char* registers : {"0", "256"}) {
    Result result = run_quantc("profile " + spec + " --json --registers " + registers);
    INFO(result.output);
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.output, Catch::StartsWith("error: ") &&
                                  Catch::Contains(std::string("--registers ") + registers + ": registers per thread must be 1..255"));
  }
  Result given = run_quantc("profile " + spec + " --json --registers 255 --device l40s");
  INFO(given.output);
  REQUIRE(given.exit_code == 0);
  const json kernel = json::parse(given.output)["kernels"][0];
  CHECK(kernel["registers"] == 255);
  CHECK(kernel["registers_source"] == "given");
  // 255 registers: 256 x 32 = 8192 per warp, 8 warps per SM: occupancy bound by registers.
  CHECK(kernel["devices"]["l40s"]["occupancy_limit"] == "registers");
  CHECK(kernel["devices"]["l40s"]["resident_warps_per_sm"] == 8);
}
