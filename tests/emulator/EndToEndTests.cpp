// End to end: every registered op, on its test shapes and a few odd shapes, for every
// supported target: IR -> (passes) -> PTX text -> emulator, compared bit for bit with
// the reference interpreter on the same random inputs. The emulator's bounds checks
// make this a memory checker too: any out-of-bounds access fails the test.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <sstream>

#include "ir/Printer.h"
#include "ir/ops/Quantize.h"
#include "ir/ops/Registry.h"
#include "lower/driver/Compiler.h"
#include "lower/LowerToPtx.h"
#include "lower/passes/Passes.h"
#include "ptx/Target.h"
#include "runtime/Buffers.h"
#include "runtime/backends/emulator/Emulator.h"
#include "runtime/backends/reference/Interpreter.h"
#include "tests/passes/RandomProgram.h"
#include "tests/ptx/PtxTestSupport.h"
#include "tests/ptx/SharedMemoryProgram.h"
#include "tests/ptx/SplitReductionProgram.h"

using namespace quantc;

namespace {

std::string describe(const ir::ops::OpArgs& args) {
  std::ostringstream text;
  for (const auto& [name, value] : args.values()) {
    text << name << "=";
    if (const auto* number = std::get_if<std::uint32_t>(&value)) text << *number;
    else if (const auto* flag = std::get_if<bool>(&value)) text << (*flag ? "true" : "false");
    else text << std::get<std::string>(value);
    text << " ";
  }
  return text.str();
}

/// Odd shapes: each u32 parameter of the first two test shapes nudged to the next
/// value the constructor accepts (+1, +3, +8, +64, x3), at most two per op, none equal
/// to a registered test shape. They exercise partial warps, partial CTAs and tails.
std::vector<ir::ops::OpArgs> odd_shapes(const ir::ops::OpInfo& op) {
  std::set<std::string> seen;
  for (const auto& args : op.test_shapes) seen.insert(describe(args));
  std::vector<ir::ops::OpArgs> shapes;
  for (std::size_t s = 0; s < std::min<std::size_t>(2, op.test_shapes.size()) && shapes.size() < 2; ++s) {
    for (const auto& [name, value] : op.test_shapes[s].values()) {
      const auto* number = std::get_if<std::uint32_t>(&value);
      if (!number || shapes.size() >= 2) continue;
      for (std::uint64_t candidate : {*number + 1ull, *number + 3ull, *number + 8ull, *number + 64ull, *number * 3ull}) {
        ir::ops::OpArgs args = op.test_shapes[s];
        args.set(name, static_cast<std::uint32_t>(candidate));
        if (seen.count(describe(args))) continue;
        try {
          op.build(args);
        } catch (const ir::ops::OpError&) {
          continue;
        }
        seen.insert(describe(args));
        shapes.push_back(args);
        break;
      }
    }
  }
  return shapes;
}

/// Bitwise equality of the readable bytes of every written buffer; two NaNs of the same
/// float type (f16, bf16, f32, f64) compare equal whatever their sign and payload.
void require_same_outputs(const ir::Program& program, const runtime::BufferSet& expected,
                          const runtime::BufferSet& actual, const std::string& context) {
  for (const ir::BufferDecl& buffer : program.buffers) {
    if (!buffer.is_output()) continue;
    ir::ByteRange range = buffer.readable_range();
    const auto& want = expected.at(buffer.name).bytes;
    const auto& got = actual.at(buffer.name).bytes;
    unsigned size = ir::byte_size(buffer.element);
    std::size_t mismatches = 0;
    std::ostringstream first;
    for (std::uint64_t offset = range.begin; offset + size <= range.end; offset += size) {
      if (std::memcmp(want.data() + offset, got.data() + offset, size) == 0) continue;
      std::uint64_t want_bits = 0, got_bits = 0;
      std::memcpy(&want_bits, want.data() + offset, size);
      std::memcpy(&got_bits, got.data() + offset, size);
      if (quantc::testing::both_nan(buffer.element, want_bits, got_bits)) continue;
      if (buffer.element == ir::ScalarType::F32) {
        float a, b;
        std::memcpy(&a, want.data() + offset, 4);
        std::memcpy(&b, got.data() + offset, 4);
        if (mismatches == 0)
          first << "element " << offset / size << ": reference " << a << " (0x" << std::hex << std::bit_cast<std::uint32_t>(a)
                << "), emulator " << b << " (0x" << std::bit_cast<std::uint32_t>(b) << std::dec << ")";
      } else if (mismatches == 0) {
        std::uint64_t a = 0, b = 0;
        std::memcpy(&a, want.data() + offset, size);
        std::memcpy(&b, got.data() + offset, size);
        first << "element " << offset / size << ": reference 0x" << std::hex << a << ", emulator 0x" << b << std::dec;
      }
      ++mismatches;
    }
    INFO(context << " buffer '" << buffer.name << "': " << mismatches << " mismatching elements; first " << first.str());
    REQUIRE(mismatches == 0);
  }
}

/// Emulates `program` (op `op_name` at `args`) at every optimization level on every sweep
/// target and requires its outputs to equal the interpreter's bit for bit on the same
/// random inputs (seeded by `runs`, which counts the launches).
void check_op_program(const std::string& op_name, const ir::ops::OpArgs& args, const ir::Program& program,
                      std::size_t& runs) {
  runtime::BufferSet inputs = runtime::random_buffers(program, 20260 + runs);
  // -O2 fuses a*b+c (lower::contract_fma), the other levels keep every rounding.
  runtime::BufferSet uncontracted = inputs, contracted = inputs;
  runtime::reference::run(program, uncontracted);
  runtime::reference::run(lower::contract_fma(program), contracted);
  // Each sweep configuration (a target and an optimization level), verified after every pass.
  for (const auto& [target, level] : testing::sweep_configurations()) {
    std::string context = op_name + " " + describe(args) + "on " + target.name();
    INFO(context);
    lower::PassOptions passes;
    passes.level = level;
    passes.verify_each = true;
    lower::CompiledKernel compiled = lower::compile(program, {target, passes});
    INFO("at -O" << static_cast<int>(level));
    runtime::BufferSet actual = inputs;
    runtime::emulator::LaunchCounters counters = runtime::emulator::run(compiled.ptx, compiled.program, actual);
    require_same_outputs(program, level == lower::OptimizationLevel::O2 ? contracted : uncontracted, actual,
                         context);
    CHECK(counters.warp_instructions > 0);
    ++runs;
  }
}

bool takes_activation(const ir::ops::OpInfo& op) {
  for (const ir::ops::ParamSpec& param : op.params) {
    if (param.name == "activation") return true;
  }
  return false;
}

}  // namespace

TEST_CASE("every registered op: emulated PTX equals the reference interpreter bit for bit", "[emulator][end-to-end]") {
  std::size_t runs = 0;
  for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) {
    std::vector<ir::ops::OpArgs> shapes = op.test_shapes;
    for (auto& odd : odd_shapes(op)) shapes.push_back(odd);
    for (const ir::ops::OpArgs& args : shapes) check_op_program(op.name, args, op.build(args), runs);
  }
  CHECK(runs > 0);
}

TEST_CASE("f16 and bf16 activations: emulated PTX equals the interpreter on every f32 shape and odd shape",
          "[emulator][end-to-end][activation]") {
  // The registry's f16/bf16 test shapes run in the sweep above. Here every other shape of
  // the linear and matmul ops (split-K, sliced groups, batch tiles, partial warps and
  // tails: the f32 test shapes and the odd shapes) runs with f16 and with bf16
  // activations, so the widening loads, the rounding stores and the split-K meeting of
  // 16-bit outputs are checked wherever the f32 programs are.
  std::size_t runs = 0, ops = 0;
  for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) {
    if (!takes_activation(op)) continue;
    ++ops;
    std::set<std::string> registered;
    for (const ir::ops::OpArgs& args : op.test_shapes) registered.insert(describe(args));
    std::vector<ir::ops::OpArgs> shapes;
    for (const ir::ops::OpArgs& args : op.test_shapes) {
      if (!args.has("activation")) shapes.push_back(args);
    }
    for (auto& odd : odd_shapes(op)) shapes.push_back(odd);
    for (const ir::ops::OpArgs& f32_args : shapes) {
      for (const char* activation : {"f16", "bf16"}) {
        ir::ops::OpArgs args = f32_args;
        args.set("activation", std::string(activation));
        if (registered.count(describe(args))) continue;  // already in the sweep above
        check_op_program(op.name, args, op.build(args), runs);
      }
    }
  }
  CHECK(ops == 10);
  CHECK(runs > 0);
}

TEST_CASE("the word dequantizers with 16 slots a lane: emulated PTX equals the interpreter bit for bit",
          "[emulator][end-to-end]") {
  // Only grids past the warps 132 SMs hold take 16 slots (ir/ops/Quantize.cpp,
  // word_dequant_slots): n = 4225 * 2048, one target and level (the registered shapes
  // sweep the rest of the program at 8 slots).
  const lower::CompileOptions options{ptx::parse_target("sm_90"), lower::PassOptions{}};
  for (const ir::Program& program : {ir::ops::dequantize_int4(4225 * 2048, 128, false, ir::ops::KernelSchedule::Fast),
                                     ir::ops::dequantize_nf4(4225 * 2048, 64, ir::ops::KernelSchedule::Fast)}) {
    INFO(program.name);
    REQUIRE(program.workgroup_count[0] == 529);  // 4225 subgroups of 16 slots
    runtime::BufferSet expected = runtime::random_buffers(program, 20261207);
    runtime::BufferSet actual = expected;
    runtime::reference::run(lower::contract_fma(program), expected);
    const lower::CompiledKernel compiled = lower::compile(program, options);
    runtime::emulator::run(compiled.ptx, compiled.program, actual);
    require_same_outputs(program, expected, actual, program.name);
  }
}

TEST_CASE("odd shapes exist for every op so partial warps and tails are covered", "[emulator][end-to-end]") {
  for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) {
    INFO(op.name);
    CHECK(!odd_shapes(op).empty());
  }
}

TEST_CASE("every IR construct and type, vectors and bf16 included: emulated PTX equals the interpreter on every target",
          "[emulator][end-to-end]") {
  // Legalization and instruction selection differ per target (bf16 arithmetic is native
  // on sm_90, fma-based on sm_80..89, widened through f32 on sm_75; f16 min/max from
  // sm_80; packed conversions from sm_80), so every target runs the whole program.
  ir::Program program = quantc::testing::every_construct_program(true);
  runtime::BufferSet inputs = runtime::random_buffers(program, 7);
  // Outputs start as random data too: the program also reads them (ld.global).
  std::mt19937_64 random(11);
  for (const ir::BufferDecl& buffer : program.buffers) {
    if (!buffer.is_output()) continue;
    for (auto& byte : inputs.at(buffer.name).bytes) byte = static_cast<std::uint8_t>(random());
    if (buffer.element == ir::ScalarType::Bool) {
      for (auto& byte : inputs.at(buffer.name).bytes) byte &= 1;
    }
  }
  runtime::BufferSet uncontracted = inputs, contracted = inputs;
  runtime::reference::run(program, uncontracted);
  runtime::reference::run(lower::contract_fma(program), contracted);
  for (const ptx::Target& target : ptx::supported_targets()) {
    for (lower::OptimizationLevel level : {lower::OptimizationLevel::O0, lower::OptimizationLevel::O2}) {
      INFO("every_construct on " << target.name() << " at -O" << static_cast<int>(level));
      const runtime::BufferSet& expected = level == lower::OptimizationLevel::O2 ? contracted : uncontracted;
      lower::PassOptions passes;
      passes.level = level;
      lower::CompiledKernel compiled = lower::compile(program, {target, passes});
      runtime::BufferSet actual = inputs;
      runtime::emulator::run(compiled.ptx, compiled.program, actual);
      require_same_outputs(program, expected, actual, "every_construct on " + target.name());
    }
  }
}

TEST_CASE("workgroup arrays: emulated PTX equals the interpreter on every target", "[emulator][end-to-end][shared]") {
  // Per-CTA .shared state, bar.sync ordering between the CTA's 4 warps, 32-bit shared
  // addresses, vector and constant-index accesses, on each target at -O0 and -O2.
  const ir::Program program = quantc::testing::shared_memory_program();
  runtime::BufferSet inputs = runtime::random_buffers(program, 5);
  runtime::BufferSet uncontracted = inputs, contracted = inputs;
  runtime::reference::run(program, uncontracted);
  runtime::reference::run(lower::contract_fma(program), contracted);
  for (const ptx::Target& target : ptx::supported_targets()) {
    for (lower::OptimizationLevel level : {lower::OptimizationLevel::O0, lower::OptimizationLevel::O2}) {
      INFO("shared_memory on " << target.name() << " at -O" << static_cast<int>(level));
      lower::PassOptions passes;
      passes.level = level;
      lower::CompiledKernel compiled = lower::compile(program, {target, passes});
      runtime::BufferSet actual = inputs;
      runtime::emulator::LaunchCounters counters = runtime::emulator::run(compiled.ptx, compiled.program, actual);
      require_same_outputs(program, level == lower::OptimizationLevel::O2 ? contracted : uncontracted, actual,
                           "shared_memory on " + target.name());
      CHECK(counters.barriers == 2 * 3);  // releases: 2 CTAs x 3 barriers
      CHECK(counters.shared_load_requests == 2 * 4 * 10);
      CHECK(counters.shared_store_requests == 2 * 4 * 6 + 2 * 2);
    }
  }
}

TEST_CASE("random programs: emulated PTX equals the interpreter on every target", "[emulator][end-to-end][random]") {
  // The programs of the pass tests' random generator, compiled at -O0 and -O2 for the
  // oldest, the middle and the newest legalization (sm_75, sm_80, sm_90), on inputs with
  // NaNs, infinities, signed zeros and subnormals.
  // QUANTC_RANDOM_EMULATED=N changes the number of programs (default 300),
  // QUANTC_RANDOM_FIRST_SEED=S the first seed (default 0: reproduce a failure with S).
  int programs = 300, first_seed = 0;
  if (const char* count = std::getenv("QUANTC_RANDOM_EMULATED")) programs = std::atoi(count);
  if (const char* seed = std::getenv("QUANTC_RANDOM_FIRST_SEED")) first_seed = std::atoi(seed);
  int runs = 0;
  for (int seed = first_seed; seed < first_seed + programs; ++seed) {
    ir::Program program = quantc::testing::RandomProgram(static_cast<std::uint64_t>(seed)).generate();
    runtime::BufferSet inputs = quantc::testing::random_inputs(program, static_cast<std::uint64_t>(seed));
    runtime::BufferSet uncontracted = inputs, contracted = inputs;
    runtime::reference::run(program, uncontracted);
    runtime::reference::run(lower::contract_fma(program), contracted);
    for (int sm : {75, 80, 90}) {
      for (lower::OptimizationLevel level : {lower::OptimizationLevel::O0, lower::OptimizationLevel::O2}) {
        const runtime::BufferSet& expected = level == lower::OptimizationLevel::O2 ? contracted : uncontracted;
        lower::PassOptions passes;
        passes.level = level;
        std::string context = "random program " + std::to_string(seed) + " on sm_" + std::to_string(sm) + " at -O" +
                              std::to_string(static_cast<int>(level));
        INFO(context << "\n" << ir::print(program));
        lower::CompiledKernel compiled = lower::compile(program, {ptx::Target{sm}, passes});
        runtime::BufferSet actual = inputs;
        runtime::emulator::run(compiled.ptx, compiled.program, actual);
        require_same_outputs(program, expected, actual, context);
        ++runs;
      }
    }
  }
  CHECK(runs == programs * 6);
}

TEST_CASE("split reduction across workgroups through scratch memory with atomics and fences agrees on every target",
          "[emulator][end-to-end][atomic]") {
  // Workgroups of one output meet through scratch memory: each stores its partial,
  // fences and draws a ticket; the last one adds the partials in split order. The sum
  // must not depend on which workgroup finishes last: the interpreter runs workgroups
  // on 8 host threads (any order), the emulator in grid order, and both must give the
  // same bits, equal to adding the partials in split order, and leave the scratch zeroed.
  const ir::Program program = quantc::testing::split_reduction_program();
  runtime::BufferSet inputs = runtime::random_buffers(program, 17);
  runtime::BufferSet expected = inputs;
  runtime::reference::RunOptions threaded;
  threaded.threads = 8;
  runtime::reference::run(program, expected, threaded);
  auto scratch_is_zero = [&](const runtime::BufferSet& buffers) {
    for (const ir::BufferDecl& buffer : program.buffers) {
      if (!buffer.is_scratch()) continue;
      for (std::uint8_t byte : buffers.at(buffer.name).bytes) {
        if (byte != 0) return false;
      }
    }
    return true;
  };
  REQUIRE(scratch_is_zero(expected));
  // The oracle: every element in order within an invocation, the subgroup butterfly,
  // the two subgroups, then the splits in order; checked against a double sum.
  const auto& x = inputs.at("x").bytes;
  auto element = [&](std::size_t i) {
    float value;
    std::memcpy(&value, x.data() + 4 * i, 4);
    return value;
  };
  for (std::uint32_t row = 0; row < quantc::testing::kSplitOutputs; ++row) {
    double exact = 0;
    const std::size_t row_length = quantc::testing::kSplits * quantc::testing::kSplitThreads * quantc::testing::kSplitChunk;
    for (std::size_t i = 0; i < row_length; ++i) exact += element(row * row_length + i);
    float got;
    std::memcpy(&got, expected.at("out").bytes.data() + 4 * row, 4);
    CHECK(got == Approx(exact).margin(1e-4));
  }
  for (int repeat = 0; repeat < 5; ++repeat) {
    runtime::BufferSet again = inputs;
    runtime::reference::run(program, again, threaded);
    REQUIRE(again.at("out").bytes == expected.at("out").bytes);
  }
  for (const ptx::Target& target : testing::sweep_targets()) {
    for (lower::OptimizationLevel level : {lower::OptimizationLevel::O0, lower::OptimizationLevel::O2}) {
      INFO("split_reduction on " << target.name() << " at -O" << static_cast<int>(level));
      lower::PassOptions passes;
      passes.level = level;
      lower::CompiledKernel compiled = lower::compile(program, {target, passes});
      CHECK(compiled.ptx.find("atom.global.add.u32") != std::string::npos);
      CHECK(compiled.ptx.find("fence.acq_rel.gpu;") != std::string::npos);
      // Launched twice on the same scratch: the first launch must have cleared it.
      runtime::BufferSet actual = inputs;
      runtime::emulator::run(compiled.ptx, compiled.program, actual);
      runtime::emulator::run(compiled.ptx, compiled.program, actual);
      require_same_outputs(program, expected, actual, "split_reduction on " + target.name());
      CHECK(scratch_is_zero(actual));
    }
  }
}
