#include "ir/Verifier.h"

#include <fmt/format.h>

#include <set>
#include <unordered_map>

#include "ir/IRVisitor.h"
#include "ir/Printer.h"
#include "ir/ScopedTable.h"
#include "ir/analysis/Uniformity.h"
#include "ir/analysis/ValueRange.h"

namespace quantc::ir {
namespace {

struct Binding {
  Type type;
  bool is_loop_variable;
};

/// Bytes one element occupies in memory: 1 for bool (stored as u8), 0 for the sub-byte
/// storage types (u4, i4), which cannot be a buffer element (reported elsewhere).
unsigned memory_bytes(ScalarType element) {
  if (element == ScalarType::Bool) return 1;
  return is_storage_only(element) ? 0 : byte_size(element);
}

class StatementChecker : public IRVisitor {
 public:
  StatementChecker(const Program& program, std::vector<std::string>& problems)
      : program_(program), problems_(problems), ranges_(program) {}

 protected:
  void visit_Var(const Var& node) override {
    const Binding* binding = lookup(node.name);
    if (binding == nullptr) {
      report("use of undeclared variable '{}'", node.name);
    } else if (binding->type != node.type) {
      report("variable '{}' is used as {} but declared {}", node.name, to_string(node.type),
             to_string(binding->type));
    }
  }

  void visit_Load(const Load& node) override {
    if (const SharedDecl* array = program_.find_shared(node.buffer)) {
      if (node.reinterpret) {
        check_reinterpreting_load(node, array->element, true);
      } else if (array->element != node.type.element()) {
        report("load from workgroup array '{}' has type {} but the array holds {}", node.buffer, to_string(node.type),
               to_string(array->element));
      } else {
        check_alignment("load from", node.buffer, node.index, node.type, node.alignment);
      }
      IRVisitor::visit_Load(node);
      return;
    }
    if (const BufferDecl* buffer = find_buffer(node.buffer, "load from")) {
      if (node.reinterpret) {
        check_reinterpreting_load(node, buffer->element, false);
      } else if (buffer->element != node.type.element()) {
        report("load from '{}' has type {} but the buffer holds {}", node.buffer, to_string(node.type),
               to_string(buffer->element));
      } else {
        check_alignment("load from", node.buffer, node.index, node.type, node.alignment);
      }
    }
    IRVisitor::visit_Load(node);
  }

  void visit_AsyncCopy(const AsyncCopy& node) override {
    IRVisitor::visit_AsyncCopy(node);
    const SharedDecl* array = program_.find_shared(node.array);
    const BufferDecl* buffer = program_.find_buffer(node.buffer);
    if (array == nullptr) {
      report("async_copy writes workgroup array '{}', which is not declared{}", node.array,
             program_.find_buffer(node.array) ? " as one (cp.async copies global memory into shared memory)" : "");
    }
    if (buffer == nullptr) {
      report("async_copy reads buffer '{}', which is not declared{}", node.buffer,
             program_.find_shared(node.buffer) ? " as a global buffer (cp.async reads global memory)" : "");
    }
    if (array == nullptr || buffer == nullptr) return;
    // Bytes move as they are: the two element types may differ (u8 weights into a u32
    // array), but each side's index must land on whole elements at `bytes` alignment.
    bool whole = true;
    for (ScalarType element : {array->element, buffer->element}) {
      const unsigned element_bytes = memory_bytes(element);
      if (element_bytes == 0 || node.bytes % element_bytes != 0) {
        report("async_copy of {} bytes does not hold whole {} elements", node.bytes, to_string(element));
        whole = false;
      }
    }
    if (!whole) return;
    check_alignment("async_copy to", node.array, node.array_index, array->element, node.bytes,
                    memory_bytes(array->element));
    check_alignment("async_copy from", node.buffer, node.buffer_index, buffer->element, node.bytes,
                    memory_bytes(buffer->element));
  }

  void visit_SubgroupLoadMatrix(const SubgroupLoadMatrix& node) override {
    const SharedDecl* array = program_.find_shared(node.array);
    if (array == nullptr) {
      report("subgroup_load_matrix reads workgroup array '{}', which is not declared{}", node.array,
             program_.find_buffer(node.array) ? " as one (ldmatrix reads shared memory; stage the buffer there)" : "");
    } else if (bit_width(array->element) != 16 && bit_width(array->element) != 32) {
      report("subgroup_load_matrix reads rows of 16 bytes from a 16- or 32-bit workgroup array, but '{}' holds {}",
             node.array, to_string(array->element));
    } else {
      // Each row is 16 bytes at a 16-byte aligned address.
      check_alignment("ldmatrix row of", node.array, node.index, array->element, 16);
    }
    IRVisitor::visit_SubgroupLoadMatrix(node);
  }

  void visit_BufferLength(const BufferLength& node) override {
    if (const SharedDecl* array = program_.find_shared(node.buffer)) {
      report("len({}) of a workgroup array: its size is static ({} elements); use that constant", node.buffer,
             array->count);
      return;
    }
    find_buffer(node.buffer, "length of");
  }

  void visit_AtomicAdd(const AtomicAdd& node) override {
    if (&node != let_value_) {
      report("atomic_add({}[...], ...) must be the whole value of a let (`let old: u32 = atomic_add(...)`), so that "
             "its side effect happens once, where the let stands",
             node.buffer);
    }
    let_value_ = nullptr;  // an atomic inside its own operands is not the let's value
    if (program_.find_shared(node.buffer) != nullptr) {
      report("atomic_add on workgroup array '{}': atomics act on global buffers only", node.buffer);
    } else if (const BufferDecl* buffer = find_buffer(node.buffer, "atomic add on")) {
      if (!buffer->is_written()) report("atomic_add on read-only buffer '{}'", node.buffer);
      if (buffer->element != node.value.type().element()) {
        report("atomic_add of {} on '{}' which holds {}", to_string(node.value.type()), node.buffer,
               to_string(buffer->element));
      }
    }
    IRVisitor::visit_AtomicAdd(node);
  }

  void visit_Let(const Let& node) override {
    let_value_ = node.value.get();
    IRVisitor::visit_Let(node);
    let_value_ = nullptr;
    declare(node.name, {node.value.type(), false});
    for (const auto& [name, range] : analysis::let_facts(node, ranges_)) {
      ranges_.push(name, range);
      ++block_facts_.back();
    }
  }

  void visit_Assign(const Assign& node) override {
    IRVisitor::visit_Assign(node);
    const Binding* binding = lookup(node.name);
    if (binding == nullptr) {
      report("assignment to undeclared variable '{}'", node.name);
    } else if (binding->is_loop_variable) {
      report("assignment to loop variable '{}'", node.name);
    } else if (binding->type != node.value.type()) {
      report("assignment of {} to '{}' declared {}", to_string(node.value.type()), node.name,
             to_string(binding->type));
    }
  }

  void visit_Store(const Store& node) override {
    IRVisitor::visit_Store(node);
    if (const SharedDecl* array = program_.find_shared(node.buffer)) {
      if (node.reinterpret) {
        report("reinterpreting store of {} to workgroup array '{}': only global 8- or 16-bit buffers may be written "
               "as u32 words; declare the array with the element type you store",
               to_string(node.value.type()), node.buffer);
      } else if (array->element != node.value.type().element()) {
        report("store of {} to workgroup array '{}' which holds {}", to_string(node.value.type()), node.buffer,
               to_string(array->element));
      } else {
        check_alignment("store to", node.buffer, node.index, node.value.type(), node.alignment);
      }
      return;
    }
    const BufferDecl* buffer = find_buffer(node.buffer, "store to");
    if (buffer == nullptr) return;
    if (buffer->access == BufferAccess::ReadOnly) report("store to read-only buffer '{}'", node.buffer);
    if (node.reinterpret) {
      const unsigned element_bytes = buffer->element == ScalarType::Bool ? 0 : memory_bytes(buffer->element);
      if (element_bytes != 1 && element_bytes != 2) {
        report("reinterpreting store of {} to '{}' needs a buffer of 8- or 16-bit elements (u8, i8, u16, f16, "
               "bf16), but the buffer holds {}",
               to_string(node.value.type()), node.buffer, to_string(buffer->element));
      } else {
        check_alignment("store to", node.buffer, node.index, node.value.type(), node.alignment, element_bytes);
      }
    } else if (buffer->element != node.value.type().element()) {
      report("store of {} to '{}' which holds {}", to_string(node.value.type()), node.buffer,
             to_string(buffer->element));
    } else {
      check_alignment("store to", node.buffer, node.index, node.value.type(), node.alignment);
    }
  }

  void visit_Loop(const Loop& node) override {
    visit(node.from);
    visit(node.to);
    ScopedTable<Binding>::Scope scope(bindings_);
    declare(node.var, {node.from.type(), true});
    analysis::RangeScope facts(ranges_, analysis::loop_facts(node, ranges_));
    visit(node.body);
  }

  void visit_If(const If& node) override {
    visit(node.cond);
    {
      analysis::RangeScope facts(ranges_, analysis::guard_facts(node.cond, ranges_));
      visit(node.then_body);
    }
    visit(node.else_body);
  }

  void visit_Block(const Block& node) override {
    ScopedTable<Binding>::Scope scope(bindings_);
    block_facts_.push_back(0);
    IRVisitor::visit_Block(node);
    for (std::size_t i = 0; i < block_facts_.back(); ++i) ranges_.pop();
    block_facts_.pop_back();
  }

 private:
  template <class... Args>
  void report(fmt::format_string<Args...> format, Args&&... args) {
    problems_.push_back(fmt::format(format, std::forward<Args>(args)...));
  }

  const BufferDecl* find_buffer(const std::string& name, std::string_view what) {
    const BufferDecl* buffer = program_.find_buffer(name);
    if (buffer == nullptr) report("{} undeclared buffer '{}'", what, name);
    return buffer;
  }

  const Binding* lookup(const std::string& name) const { return bindings_.lookup(name); }

  /// A vector access stating more than its element's alignment must be provably
  /// aligned: buffers start 256-byte aligned, so the index (in elements) times the
  /// element size must be a multiple of the alignment for every invocation.
  /// `index_bytes` is the byte size of one index step (the buffer's element; 0: the
  /// access type's element, which is the buffer's except for reinterpreting loads).
  /// A reinterpreting load reads u32 words from a buffer or workgroup array (`shared`) of 8-
  /// or 16-bit elements, at an index whose byte offset is a multiple of the words' size.
  void check_reinterpreting_load(const Load& node, ScalarType element, bool shared) {
    const unsigned element_bytes = element == ScalarType::Bool ? 0 : memory_bytes(element);
    if (element_bytes == 1 || element_bytes == 2) {
      check_alignment("load from", node.buffer, node.index, node.type, node.alignment, element_bytes);
      return;
    }
    const char* holder = shared ? "array" : "buffer";
    report("reinterpreting load of {} from {}'{}' needs {} {} of 8- or 16-bit elements (u8, i8, u16, f16, bf16), but "
           "the {} holds {}",
           to_string(node.type), shared ? "workgroup array " : "", node.buffer, shared ? "an" : "a", holder, holder,
           to_string(element));
  }

  void check_alignment(std::string_view what, const std::string& buffer, const Expr& index, Type type,
                       unsigned alignment, unsigned index_bytes = 0) {
    const unsigned element_bytes = index_bytes != 0 ? index_bytes : byte_size(type.element());
    if (alignment <= element_bytes) return;
    analysis::ValueRange range = analysis::range_of(index, ranges_);
    std::uint64_t multiple = range.is_constant() ? (range.min == 0 ? alignment : range.min) : range.multiple_of;
    if ((multiple * element_bytes) % alignment == 0) return;
    report("{} '{}' at index `{}` is a {} access stating {}-byte alignment, but the index is only known to be a "
           "multiple of {} ({} bytes); prove it aligned (e.g. multiply by {}) or state a smaller alignment",
           what, buffer, print(index), to_string(type), alignment, multiple, multiple * element_bytes,
           alignment / element_bytes);
  }

  void declare(const std::string& name, Binding binding) {
    if (lookup(name) != nullptr) {
      report("variable '{}' is declared again while already in scope; choose a fresh name", name);
    }
    bindings_.declare(name, binding);
  }

  const Program& program_;
  std::vector<std::string>& problems_;
  const ExprBase* let_value_ = nullptr;  // the value of the Let being visited (where an AtomicAdd may stand)
  ScopedTable<Binding> bindings_;
  analysis::RangeEnvironment ranges_;
  std::vector<std::size_t> block_facts_{0};  // Let facts pushed in each enclosing block
};

void check_buffers(const Program& program, std::vector<std::string>& problems) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < program.buffers.size(); ++i) {
    const BufferDecl& buffer = program.buffers[i];
    if (buffer.name.empty()) problems.push_back(fmt::format("buffer at position {} has an empty name", i));
    if (!names.insert(buffer.name).second) problems.push_back(fmt::format("duplicate buffer name '{}'", buffer.name));
    if (buffer.binding != i) {
      problems.push_back(fmt::format("buffer '{}' has binding {} but is declared at position {}; bindings must be "
                                     "0, 1, 2, ... in declaration order without gaps or duplicates",
                                     buffer.name, buffer.binding, i));
    }
    if (buffer.count == 0) {
      problems.push_back(fmt::format("buffer '{}' has zero elements; every buffer needs count >= 1", buffer.name));
    }
    if (i > 0 && program.buffers[i - 1].is_scratch() && !buffer.is_scratch()) {
      problems.push_back(fmt::format("buffer '{}' follows scratch buffer '{}'; declare scratch buffers after the "
                                     "inputs and outputs, so that the caller's bindings do not depend on them",
                                     buffer.name, program.buffers[i - 1].name));
    }
    if (is_storage_only(buffer.element)) {
      problems.push_back(fmt::format("buffer '{}' has sub-byte element type {}; pack codes into u32 or u8 words",
                                     buffer.name, to_string(buffer.element)));
      continue;
    }
    if (buffer.output_byte_range) {
      const ByteRange& range = *buffer.output_byte_range;
      if (range.begin > range.end || range.end > buffer.byte_size()) {
        problems.push_back(fmt::format("buffer '{}' output byte range [{}, {}) lies outside its {} bytes", buffer.name,
                                       range.begin, range.end, buffer.byte_size()));
      }
    }
  }
}

void check_shared(const Program& program, std::vector<std::string>& problems) {
  std::set<std::string> names;
  for (const BufferDecl& buffer : program.buffers) names.insert(buffer.name);
  bool sized = true;  // every element type has a byte size
  for (std::size_t i = 0; i < program.shared.size(); ++i) {
    const SharedDecl& array = program.shared[i];
    if (array.name.empty()) problems.push_back(fmt::format("workgroup array at position {} has an empty name", i));
    if (!names.insert(array.name).second) {
      problems.push_back(fmt::format("workgroup array '{}' reuses the name of another buffer or workgroup array; "
                                     "choose a fresh name",
                                     array.name));
    }
    if (array.count == 0) {
      problems.push_back(fmt::format("workgroup array '{}' has zero elements; every array needs count >= 1", array.name));
    }
    if (is_storage_only(array.element) || array.element == ScalarType::Bool) {
      sized = sized && !is_storage_only(array.element);
      problems.push_back(fmt::format("workgroup array '{}' has element type {}; use a byte-or-wider type such as u8 or "
                                     "u32",
                                     array.name, to_string(array.element)));
    }
  }
  if (!sized) return;
  const std::uint64_t bytes = program.static_shared_bytes();
  if (bytes > kMaxStaticSharedBytes) {
    problems.push_back(fmt::format("workgroup arrays take {} bytes of shared memory (each rounded up to {} bytes), over "
                                   "the {}-byte static limit per workgroup; shrink them or split the work over more "
                                   "workgroups",
                                   bytes, kSharedAlignment, kMaxStaticSharedBytes));
  } else if (bytes + program.reserved_shared_bytes > kMaxLaunchSharedBytes) {
    problems.push_back(fmt::format("reserved_shared_bytes {} with the workgroup arrays' {} bytes exceed the {}-byte "
                                   "limit per workgroup of every supported target; reserve at most {} bytes",
                                   program.reserved_shared_bytes, bytes, kMaxLaunchSharedBytes,
                                   kMaxLaunchSharedBytes - bytes));
  }
}

void check_launch(const Program& program, std::vector<std::string>& problems) {
  static constexpr char kAxes[] = "xyz";
  std::uint64_t invocations = 1;
  for (int axis = 0; axis < 3; ++axis) {
    if (program.workgroup_size[axis] == 0) {
      problems.push_back(fmt::format("workgroup_size.{} is 0; every axis needs at least 1", kAxes[axis]));
    }
    if (program.workgroup_count[axis] == 0) {
      problems.push_back(fmt::format("workgroup_count.{} is 0; every axis needs at least 1", kAxes[axis]));
    }
    invocations *= program.workgroup_size[axis];
  }
  if (invocations > kMaxWorkgroupInvocations) {
    problems.push_back(fmt::format("{} invocations per workgroup exceed the CUDA limit of {}", invocations,
                                   kMaxWorkgroupInvocations));
  }
  if (invocations * program.min_resident_workgroups > kMaxResidentInvocations) {
    problems.push_back(fmt::format("min_resident_workgroups {} of {} invocations each exceed the {} threads an SM "
                                   "holds; ask for at most {} workgroups",
                                   program.min_resident_workgroups, invocations, kMaxResidentInvocations,
                                   kMaxResidentInvocations / invocations));
  }
}

/// shfl.sync/vote.sync with a full member mask under a divergent branch is undefined
/// behaviour on hardware, so subgroup operations must sit under provably uniform control.
void check_subgroup_uniformity(const Program& program, std::vector<std::string>& problems) {
  analysis::Uniformity uniformity(program);
  for (const analysis::DivergentSubgroupOp& op : uniformity.divergent_subgroup_ops()) {
    problems.push_back(fmt::format("subgroup operation `{}` may run with part of the subgroup inactive: {}; move it "
                                   "out of the divergent control flow or make the condition subgroup-uniform",
                                   op.op, op.reason));
  }
}

}  // namespace

std::vector<std::string> verify(const Program& program, const VerifyOptions& options) {
  std::vector<std::string> problems;
  check_buffers(program, problems);
  check_shared(program, problems);
  check_launch(program, problems);
  if (!program.entry.defined() || program.entry.kind() != NodeKind::Block) {
    problems.push_back("program entry must be a Block");
    return problems;
  }
  StatementChecker checker(program, problems);
  checker.visit(program.entry);
  if (problems.empty() && options.subgroup_uniformity) check_subgroup_uniformity(program, problems);
  return problems;
}

namespace {

bool same_program(const Program& a, const Program& b) {
  return a.entry.same_as(b.entry) && a.name == b.name && a.buffers == b.buffers && a.shared == b.shared &&
         a.workgroup_size == b.workgroup_size && a.workgroup_count == b.workgroup_count &&
         a.min_resident_workgroups == b.min_resident_workgroups && a.reserved_shared_bytes == b.reserved_shared_bytes;
}

}  // namespace

void verify_or_throw(const Program& program, const VerifyOptions& options) {
  // Holding the entry node keeps its address from being reused by another tree.
  thread_local Program last_verified;
  const bool default_options = options.subgroup_uniformity;
  if (default_options && program.entry.defined() && same_program(program, last_verified)) return;
  std::vector<std::string> problems = verify(program, options);
  if (problems.empty()) {
    if (default_options) last_verified = program;
    return;
  }
  std::string message = fmt::format("program '{}' failed verification:", program.name);
  for (const std::string& problem : problems) message += "\n  - " + problem;
  throw IRError(message);
}

}  // namespace quantc::ir
