// The verifier reports each class of ill-formed program with a message naming it.
#include <catch2/catch.hpp>

#include "ir/Builder.h"
#include "ir/Verifier.h"

#include <functional>

using namespace quantc::ir;

namespace {
Program base_program() {
  Program program;
  program.name = "base";
  program.buffers = {BufferDecl{"x", 0, BufferAccess::ReadOnly, ScalarType::F32, 4, std::nullopt},
                     BufferDecl{"y", 1, BufferAccess::ReadWrite, ScalarType::F32, 4, std::nullopt}};
  program.workgroup_size = {32, 1, 1};
  program.entry = Block::make();
  return program;
}

std::string problems_of(const Program& program) {
  std::string all;
  for (const std::string& problem : verify(program)) all += problem + "\n";
  return all;
}
}  // namespace

TEST_CASE("a well-formed program has no problems", "[verifier]") { CHECK(verify(base_program()).empty()); }

TEST_CASE("undeclared variables and buffers are reported", "[verifier]") {
  Program program = base_program();
  program.entry = Block::make({Store::make("y", Var::make(ScalarType::U32, "i"), Load::make(ScalarType::F32, "z", u32(0)))});
  std::string problems = problems_of(program);
  CHECK_THAT(problems, Catch::Contains("use of undeclared variable 'i'"));
  CHECK_THAT(problems, Catch::Contains("load from undeclared buffer 'z'"));
}

TEST_CASE("type mismatches against declarations are reported", "[verifier]") {
  Program program = base_program();
  program.entry = Block::make({Let::make("i", u32(0)), Store::make("y", Var::make(ScalarType::U32, "i"), u32(1)),
                               Assign::make("i", f32(1.0f)), Let::make("v", Load::make(ScalarType::U32, "x", u32(0))),
                               Let::make("w", Var::make(ScalarType::F32, "i"))});
  std::string problems = problems_of(program);
  CHECK_THAT(problems, Catch::Contains("store of u32 to 'y' which holds f32"));
  CHECK_THAT(problems, Catch::Contains("assignment of f32 to 'i' declared u32"));
  CHECK_THAT(problems, Catch::Contains("load from 'x' has type u32 but the buffer holds f32"));
  CHECK_THAT(problems, Catch::Contains("variable 'i' is used as f32 but declared u32"));
}

TEST_CASE("stores to read-only buffers are reported", "[verifier]") {
  Program program = base_program();
  program.entry = Block::make({Store::make("x", u32(0), f32(1.0f))});
  CHECK_THAT(problems_of(program), Catch::Contains("store to read-only buffer 'x'"));
}

TEST_CASE("bindings out of order, duplicated names and zero-sized buffers are reported", "[verifier]") {
  Program program = base_program();
  program.buffers[1].binding = 0;
  program.buffers.push_back(BufferDecl{"x", 2, BufferAccess::ReadOnly, ScalarType::U32, 0, std::nullopt});
  std::string problems = problems_of(program);
  CHECK_THAT(problems, Catch::Contains("buffer 'y' has binding 0 but is declared at position 1"));
  CHECK_THAT(problems, Catch::Contains("duplicate buffer name 'x'"));
  CHECK_THAT(problems, Catch::Contains("buffer 'x' has zero elements"));
}

TEST_CASE("launch shapes and output ranges are checked", "[verifier]") {
  Program program = base_program();
  program.workgroup_size = {64, 32, 1};
  program.workgroup_count = {0, 1, 1};
  program.buffers[1].output_byte_range = ByteRange{0, 17};
  std::string problems = problems_of(program);
  CHECK_THAT(problems, Catch::Contains("2048 invocations per workgroup exceed the CUDA limit of 1024"));
  CHECK_THAT(problems, Catch::Contains("workgroup_count.x is 0"));
  CHECK_THAT(problems, Catch::Contains("output byte range [0, 17) lies outside its 16 bytes"));

  Program resident = base_program();  // 32 invocations a workgroup
  resident.min_resident_workgroups = 64;
  CHECK(verify(resident).empty());
  resident.min_resident_workgroups = 65;
  CHECK_THAT(problems_of(resident), Catch::Contains("min_resident_workgroups 65 of 32 invocations each exceed the "
                                                    "2048 threads an SM holds; ask for at most 64 workgroups"));
}

TEST_CASE("redeclaration in scope and assignment to loop variables are reported", "[verifier]") {
  Program program = base_program();
  program.entry = Block::make({Let::make("i", u32(0)), Let::make("i", u32(1)),
                               Loop::make("k", u32(0), u32(4), Block::make({Assign::make("k", u32(2))}))});
  std::string problems = problems_of(program);
  CHECK_THAT(problems, Catch::Contains("variable 'i' is declared again"));
  CHECK_THAT(problems, Catch::Contains("assignment to loop variable 'k'"));
}

TEST_CASE("a let inside a loop body is one declaration, and sibling scopes may reuse names", "[verifier]") {
  Program program = base_program();
  program.entry = Block::make({Loop::make("k", u32(0), u32(4), Block::make({Let::make("t", u32(1))})),
                               If::make(boolean(true), Block::make({Let::make("t", u32(2))}))});
  CHECK(verify(program).empty());
}

TEST_CASE("ProgramBuilder::build throws with every problem listed", "[verifier]") {
  ProgramBuilder builder("broken");
  BufferRef x = builder.input("x", ScalarType::F32, 4);
  builder.body([&](Body& body) { body.store(x, u32(0), f32(0.0f)); });
  CHECK_THROWS_WITH(builder.build(), Catch::Contains("program 'broken' failed verification") &&
                                         Catch::Contains("store to read-only buffer 'x'"));
}

TEST_CASE("vector accesses must be provably aligned, and the message names buffer, index and alignment", "[verifier]") {
  auto program_with = [](const std::function<void(Body&, BufferRef&, BufferRef&)>& body_builder) {
    Program program;
    program.name = "vectors";
    program.buffers = {BufferDecl{"x", 0, BufferAccess::ReadOnly, ScalarType::F32, 256, std::nullopt},
                       BufferDecl{"y", 1, BufferAccess::ReadWrite, ScalarType::F32, 256, std::nullopt}};
    program.workgroup_size = {32, 1, 1};
    Body body;
    BufferRef x{"x", ScalarType::F32}, y{"y", ScalarType::F32};
    body_builder(body, x, y);
    program.entry = body.build();
    return problems_of(program);
  };
  // Provably aligned: i * 4 (let facts carry divisibility), loop variables times 4,
  // constants, and (i & 7) * 4 + 2 for 8 bytes.
  CHECK(program_with([](Body& body, BufferRef& x, BufferRef& y) {
          Expr i = body.let("i", local_id(0));
          Expr at = body.let("at", i * 4u);
          body.store(y, at, x.load(at, 4));
          body.loop("k", u32(0), u32(8), [&](Body& loop, Expr k) { loop.store(y, k * 4u, x.load(k * 4u + 32u, 4)); });
          body.store(y, u32(8), x.load(u32(12), 4));
          body.store(y, (i & 7u) * 4u + 2u, x.load((i & 7u) * 4u + 2u, 4, 8), 8);
          body.store(y, i, x.load(i, 2, 4), 4);  // 4-byte alignment states nothing beyond the element
        }).empty());
  std::string problems = program_with([](Body& body, BufferRef& x, BufferRef& y) {
    Expr i = body.let("i", local_id(0));
    body.store(y, u32(0), x.load(i, 4));
    body.store(y, i * 2u, x.load(u32(0), 4));
    body.store(y, u32(0), x.load(u32(6), 4, 16));
  });
  CHECK_THAT(problems, Catch::Contains("load from 'x' at index `i` is a f32x4 access stating 16-byte alignment, but "
                                       "the index is only known to be a multiple of 1 (4 bytes)"));
  CHECK_THAT(problems, Catch::Contains("store to 'y' at index `(i * 2u32)`") && Catch::Contains("multiple of 2 (8 bytes)"));
  CHECK_THAT(problems, Catch::Contains("load from 'x' at index `6u32`") && Catch::Contains("multiple of 6 (24 bytes)"));
  CHECK_THAT(problems, Catch::Contains("prove it aligned (e.g. multiply by 4) or state a smaller alignment"));
}

TEST_CASE("a reinterpreting load reads u32 words of a byte buffer at a proven 4*lanes-byte index", "[verifier]") {
  Program program = base_program();
  program.buffers[0].element = ScalarType::U8;
  program.buffers[0].count = 64;
  Expr i = Var::make(ScalarType::U32, "i");
  program.entry = Block::make({Let::make("i", local_id(0)),
                               Let::make("good", Load::make(Type(ScalarType::U32, 4), "x", i * 16u, 0, true)),
                               Let::make("pair", Load::make(Type(ScalarType::U32, 2), "x", u32(40), 0, true)),
                               Let::make("bad", Load::make(Type(ScalarType::U32, 4), "x", i * 8u, 0, true)),
                               Let::make("from_f32", Load::make(Type(ScalarType::U32, 4), "y", u32(0), 0, true))});
  std::string problems = problems_of(program);
  CHECK_THAT(problems, Catch::Contains("load from 'x' at index `(i * 8u32)` is a u32x4 access stating 16-byte "
                                       "alignment, but the index is only known to be a multiple of 8 (8 bytes)"));
  CHECK_THAT(problems, Catch::Contains("reinterpreting load of u32x4 from 'y' needs a buffer of 8- or 16-bit elements "
                                       "(u8, i8, u16, f16, bf16), but the buffer holds f32"));
  CHECK_THAT(problems, !Catch::Contains("`(i * 16u32)`") && !Catch::Contains("`40u32`"));
  CHECK_THROWS_WITH(Load::make(Type(ScalarType::F32, 4), "x", u32(0), 0, true), Catch::Contains("reads u32 words"));
  CHECK_THROWS_WITH(Load::make(Type(ScalarType::U32, 4), "x", u32(0), 4, true),
                    Catch::Contains("needs its natural 16-byte alignment"));
}

TEST_CASE("a reinterpreting load reads u32 words of a 16-bit buffer at an index of 2*lanes elements", "[verifier]") {
  // f16 activations stream as u32x4 words: 8 halves per load, the index counting halves.
  for (ScalarType element : {ScalarType::F16, ScalarType::BF16, ScalarType::U16}) {
    Program program = base_program();
    program.buffers[0].element = element;
    program.buffers[0].count = 64;
    Expr i = Var::make(ScalarType::U32, "i");
    program.entry = Block::make({Let::make("i", local_id(0)),
                                 Let::make("good", Load::make(Type(ScalarType::U32, 4), "x", i * 8u, 0, true)),
                                 Let::make("pair", Load::make(Type(ScalarType::U32, 2), "x", u32(4), 0, true)),
                                 Let::make("bad", Load::make(Type(ScalarType::U32, 4), "x", i * 4u, 0, true))});
    std::string problems = problems_of(program);
    INFO(to_string(element));
    CHECK_THAT(problems, Catch::Contains("load from 'x' at index `(i * 4u32)` is a u32x4 access stating 16-byte "
                                         "alignment, but the index is only known to be a multiple of 4 (8 bytes)"));
    CHECK_THAT(problems, !Catch::Contains("`(i * 8u32)`") && !Catch::Contains("`4u32`"));
  }
  Program wide = base_program();
  wide.buffers[0].element = ScalarType::U32;
  wide.entry = Block::make({Let::make("w", Load::make(Type(ScalarType::U32, 2), "x", u32(0), 0, true))});
  CHECK_THAT(problems_of(wide), Catch::Contains("needs a buffer of 8- or 16-bit elements") &&
                                    Catch::Contains("the buffer holds u32"));
}

TEST_CASE("a reinterpreting store writes u32 words over a byte buffer at a proven 4*lanes-byte index", "[verifier]") {
  Program program = base_program();
  program.buffers[1].element = ScalarType::U8;
  program.buffers[1].count = 64;
  Expr i = Var::make(ScalarType::U32, "i");
  Expr word = Var::make(ScalarType::U32, "word");
  program.entry = Block::make({Let::make("i", local_id(0)), Let::make("word", u32(7)),
                               Store::make("y", i * 4u, word, 0, true),
                               Store::make("y", i * 2u, word, 0, true),
                               Store::make("x", u32(0), word, 0, true)});
  std::string problems = problems_of(program);
  CHECK_THAT(problems, Catch::Contains("store to 'y' at index `(i * 2u32)` is a u32 access stating 4-byte "
                                       "alignment, but the index is only known to be a multiple of 2 (2 bytes)"));
  CHECK_THAT(problems, Catch::Contains("reinterpreting store of u32 to 'x' needs a buffer of 8- or 16-bit elements"));
  CHECK_THAT(problems, !Catch::Contains("`(i * 4u32)`"));
  CHECK_THROWS_WITH(Store::make("y", u32(0), f32(1.0f), 0, true), Catch::Contains("writes u32 words"));
  // A sub-byte buffer (u4) is named, not a crash (found by the ir_text fuzzer).
  Program nibbles = base_program();
  nibbles.buffers[1].element = ScalarType::U4;
  nibbles.entry = Block::make({Store::make("y", u32(0), u32(1), 0, true)});
  CHECK_THAT(problems_of(nibbles), Catch::Contains("needs a buffer of 8- or 16-bit elements"));
  CHECK_THROWS_WITH(Store::make("y", u32(0), MakeVector::make({word, word}), 4, true),
                    Catch::Contains("a reinterpreting u32x2 store needs its natural 8-byte alignment, not 4"));
}

TEST_CASE("a vector access must match the buffer's element type", "[verifier]") {
  Program program = base_program();
  program.buffers[0].count = 64;
  program.entry = Block::make({Let::make("v", Load::make(Type(ScalarType::U32, 4), "x", u32(0)))});
  CHECK_THAT(problems_of(program), Catch::Contains("load from 'x' has type u32x4 but the buffer holds f32"));
}

TEST_CASE("workgroup arrays: declarations are checked", "[verifier][shared]") {
  Program program = base_program();
  program.shared = {SharedDecl{"tile", ScalarType::F32, 128}, SharedDecl{"x", ScalarType::U32, 4},
                    SharedDecl{"none", ScalarType::U32, 0}, SharedDecl{"flags", ScalarType::Bool, 4},
                    SharedDecl{"nibbles", ScalarType::U4, 4}, SharedDecl{"", ScalarType::U8, 1}};
  std::string problems = problems_of(program);
  CHECK_THAT(problems, Catch::Contains("workgroup array 'x' reuses the name of another buffer"));
  CHECK_THAT(problems, Catch::Contains("workgroup array 'none' has zero elements"));
  CHECK_THAT(problems, Catch::Contains("workgroup array 'flags' has element type bool"));
  CHECK_THAT(problems, Catch::Contains("workgroup array 'nibbles' has element type u4"));
  CHECK_THAT(problems, Catch::Contains("workgroup array at position 5 has an empty name"));
  CHECK_THAT(problems, !Catch::Contains("'tile'"));
}

TEST_CASE("workgroup arrays: the static size limit is 48 KiB, each array rounded up to 16 bytes", "[verifier][shared]") {
  Program program = base_program();
  program.shared = {SharedDecl{"a", ScalarType::U8, 1}, SharedDecl{"b", ScalarType::F32, 3}};
  CHECK(program.static_shared_bytes() == 16 + 12);
  CHECK(verify(program).empty());
  program.shared = {SharedDecl{"a", ScalarType::F32, 12 * 1024}};  // exactly 48 KiB
  CHECK(program.static_shared_bytes() == 48 * 1024);
  CHECK(verify(program).empty());
  program.shared.push_back(SharedDecl{"b", ScalarType::U8, 1});
  CHECK(program.static_shared_bytes() == 48 * 1024 + 1);
  CHECK_THAT(problems_of(program),
             Catch::Contains("workgroup arrays take 49153 bytes of shared memory (each rounded up to 16 bytes), over "
                             "the 49152-byte static limit"));
}

TEST_CASE("workgroup arrays: with reserved shared memory at most 64 KiB, what sm_75 launches", "[verifier][shared]") {
  Program program = base_program();
  program.shared = {SharedDecl{"a", ScalarType::F32, 1024}};  // 4 KiB
  program.reserved_shared_bytes = 60 * 1024;
  CHECK(verify(program).empty());
  program.reserved_shared_bytes = 60 * 1024 + 1;
  CHECK_THAT(problems_of(program), Catch::Contains("reserved_shared_bytes 61441 with the workgroup arrays' 4096 bytes "
                                                   "exceed the 65536-byte limit per workgroup of every supported "
                                                   "target; reserve at most 61440 bytes"));
}

TEST_CASE("workgroup arrays: loads and stores are typed and their alignment proven", "[verifier][shared]") {
  Program program = base_program();
  program.shared = {SharedDecl{"tile", ScalarType::F32, 128}, SharedDecl{"raw", ScalarType::U8, 64}};
  Expr i = Var::make(ScalarType::U32, "i");
  program.entry = Block::make({
      Let::make("i", Builtin::make(BuiltinKind::LocalId)),
      Store::make("tile", i * u32(4), Load::make(Type(ScalarType::F32, 4), "tile", i * u32(4))),  // fine
      Store::make("tile", i, u32(1)),                                                          // wrong type
      Let::make("a", Load::make(ScalarType::U32, "tile", i)),                                   // wrong type
      Let::make("b", Load::make(Type(ScalarType::F32, 4), "tile", i * u32(2))),                 // unaligned
      Store::make("tile", i + u32(1), Load::make(Type(ScalarType::F32, 2), "tile", i, 4), 4),   // stated 4: fine
      Let::make("c", Load::make(ScalarType::U32, "tile", i, 0, true)),                          // reinterpret f32
      Let::make("e", Load::make(Type(ScalarType::U32, 2), "raw", i * u32(8), 0, true)),          // u8 as u32x2: fine
      Let::make("d", BufferLength::make("tile")),
  });
  std::string problems = problems_of(program);
  INFO(problems);
  CHECK_THAT(problems, Catch::Contains("store of u32 to workgroup array 'tile' which holds f32"));
  CHECK_THAT(problems, Catch::Contains("load from workgroup array 'tile' has type u32 but the array holds f32"));
  CHECK_THAT(problems, Catch::Contains("load from 'tile' at index `(i * 2u32)` is a f32x4 access stating 16-byte "
                                       "alignment, but the index is only known to be a multiple of 2"));
  CHECK_THAT(problems, Catch::Contains("reinterpreting load of u32 from workgroup array 'tile' needs an array of 8- "
                                       "or 16-bit elements"));
  CHECK_THAT(problems, Catch::Contains("len(tile) of a workgroup array: its size is static (128 elements)"));
  CHECK(verify(program).size() == 5);  // the stated-4 f32x2 access is fine
}

TEST_CASE("atomics stand alone as a let's value on a written u32/i32 global buffer", "[verifier][atomic]") {
  Program program = base_program();
  program.buffers.push_back(BufferDecl{"ids", 2, BufferAccess::ReadOnly, ScalarType::U32, 4, std::nullopt});
  program.buffers.push_back(BufferDecl{"counts", 3, BufferAccess::Scratch, ScalarType::U32, 4, std::nullopt});
  program.shared.push_back(SharedDecl{"tile", ScalarType::U32, 4});
  auto atomic = [](const char* buffer) { return AtomicAdd::make(buffer, u32(0), u32(1)); };
  program.entry = Block::make({Let::make("old", atomic("counts")), Fence::make()});
  CHECK(verify(program).empty());
  program.entry = Block::make({Let::make("sum", atomic("counts") + u32(1))});
  CHECK_THAT(problems_of(program), Catch::Contains("atomic_add(counts[...], ...) must be the whole value of a let"));
  program.entry = Block::make({Store::make("counts", u32(1), atomic("counts"))});
  CHECK_THAT(problems_of(program), Catch::Contains("must be the whole value of a let"));
  program.entry = Block::make({Let::make("old", atomic("ids"))});
  CHECK_THAT(problems_of(program), Catch::Contains("atomic_add on read-only buffer 'ids'"));
  program.entry = Block::make({Let::make("old", atomic("tile"))});
  CHECK_THAT(problems_of(program), Catch::Contains("atomic_add on workgroup array 'tile': atomics act on global buffers only"));
  program.entry = Block::make({Let::make("old", AtomicAdd::make("counts", u32(0), i32(1)))});
  CHECK_THAT(problems_of(program), Catch::Contains("atomic_add of i32 on 'counts' which holds u32"));
  CHECK_THROWS_WITH(AtomicAdd::make("y", u32(0), f32(1.0f)),
                    Catch::Contains("AtomicAdd y: the value must be u32 or i32 (a wrapping integer add), got f32"));
}

TEST_CASE("scratch buffers come after every input and output", "[verifier][atomic]") {
  Program program = base_program();
  program.buffers.insert(program.buffers.begin() + 1,
                         BufferDecl{"counts", 1, BufferAccess::Scratch, ScalarType::U32, 4, std::nullopt});
  program.buffers[2].binding = 2;
  CHECK_THAT(problems_of(program), Catch::Contains("buffer 'y' follows scratch buffer 'counts'; declare scratch "
                                                   "buffers after the inputs and outputs"));
  std::swap(program.buffers[1], program.buffers[2]);
  program.buffers[1].binding = 1;
  program.buffers[2].binding = 2;
  CHECK(problems_of(program) == "");
  CHECK(program.caller_buffers().size() == 2);
}
