// Common-subexpression elimination on pure expressions (see Passes.h).
//
// Pure: no loads from writable buffers (another statement may store between two
// evaluations), no atomics (side effects) and no subgroup operations (their value
// depends on which lanes run).
// Loads from read-only buffers are pure within a kernel; loads from workgroup arrays
// (Program::shared) never are, so none is reused across a Barrier or a Store.
//
// Each Block is handled in three steps:
//  1. Count. Every candidate subexpression a statement evaluates unconditionally (its
//     Let/Assign value, Store index and value, If condition, Loop bounds; not below the
//     right operand of && / ||, which may be skipped) is counted under a key: the tree
//     (hashed with the structural hash the nodes carry) plus the versions of the
//     assigned variables it reads. A variable's version changes at every Assign to it,
//     so two occurrences share a key only when no assignment ran in between. An
//     occurrence inside a nested body (an If branch, a Loop body) counts too when an
//     occurrence at the block's own level came first: that one dominates it. Nested
//     occurrences never count for expressions that read assigned variables.
//  2. Choose. Keys counted twice or more, largest tree first; binding one removes the
//     extra evaluations of its parts (their counts drop), so `(g*4096 + o)` used twice
//     is bound once and `g*4096` is not bound again.
//  3. Rewrite. A new `let common = e` goes right before the statement holding the first
//     occurrence, never higher (so it never moves above a guard or a Return it did not
//     follow); when that first occurrence is the whole value of a never-assigned `let`,
//     that let's variable serves instead. Later occurrences, in nested blocks too, read
//     the variable.
//
// Costs: each statement is walked once per enclosing block; counts live in a hash map
// keyed on the nodes' cached hashes, so nothing is compared against every earlier
// expression and no node is rebuilt to be counted.
#include <algorithm>
#include <array>
#include <unordered_map>

#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/analysis/Structure.h"
#include "lower/passes/Passes.h"

namespace quantc::lower {
namespace {

using namespace ir;

bool is_leaf(const ExprBase& expr) {
  return expr.kind == ExprKind::Literal || expr.kind == ExprKind::Var || expr.kind == ExprKind::Builtin ||
         expr.kind == ExprKind::BufferLength;
}

/// A skipped operand: the right side of && / || is evaluated only sometimes.
bool conditional_operand(const ExprBase& parent, const Expr& child) {
  if (parent.kind != ExprKind::Binary) return false;
  const Binary& binary = static_cast<const Binary&>(parent);
  return (binary.op == BinaryOp::LogicalAnd || binary.op == BinaryOp::LogicalOr) && child.same_as(binary.rhs);
}

std::uint64_t mix(std::uint64_t value) {
  value ^= value >> 31;
  value *= 0x9e3779b97f4a7c15ull;
  value ^= value >> 29;
  return value;
}

/// An expression at a program point: the tree and the versions of the assigned
/// variables it reads (0 when it reads none).
struct Key {
  const ExprBase* expr;
  std::uint64_t versions;
};
struct KeyHash {
  std::size_t operator()(const Key& key) const { return key.expr->structural_hash() ^ mix(key.versions); }
};
struct KeyEqual {
  bool operator()(const Key& a, const Key& b) const {
    return a.versions == b.versions && analysis::structurally_equal(a.expr, b.expr);
  }
};

/// A small open-addressing map from node pointers to values: the per-node memos below
/// are asked for nearly every node, and std::unordered_map allocates per entry.
template <class Value>
class PointerMap {
 public:
  PointerMap() { slots_.resize(64); }
  const Value* find(const void* key) const {
    for (std::size_t i = index(key);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == key) return &slots_[i].value;
      if (slots_[i].key == nullptr) return nullptr;
    }
  }
  void insert(const void* key, Value value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(key, value);
  }
  void clear() {
    if (size_ == 0) return;
    for (Slot& slot : slots_) slot.key = nullptr;
    size_ = 0;
  }

 private:
  struct Slot {
    const void* key = nullptr;
    Value value{};
  };
  std::size_t index(const void* key) const {
    return static_cast<std::size_t>(mix(reinterpret_cast<std::uintptr_t>(key))) & (slots_.size() - 1);
  }
  void place(const void* key, Value value) {
    std::size_t i = index(key);
    while (slots_[i].key != nullptr && slots_[i].key != key) i = (i + 1) & (slots_.size() - 1);
    if (slots_[i].key == nullptr) ++size_;
    slots_[i] = Slot{key, value};
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (const Slot& slot : old) {
      if (slot.key != nullptr) place(slot.key, slot.value);
    }
  }
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

struct Occurrences {
  Expr expr;            // the first occurrence
  int count = 0;
  std::size_t first = 0;  // index of the statement holding the first occurrence
  const Let* whole_let = nullptr;  // the first occurrence is this never-assigned let's value
};

/// The block's counts: open addressing over indices into a vector, so counting a tree
/// costs a hash probe and no allocation.
class Counts {
 public:
  explicit Counts(std::size_t expected) {
    std::size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    table_.assign(capacity, -1);
    entries_.reserve(expected);
  }
  bool empty() const { return entries_.empty(); }
  /// The entry for `key`, or nullptr.
  Occurrences* find(const Key& key);
  /// The entry for `key`, created (count 0) when missing; `inserted` says which.
  Occurrences& emplace(const Key& key, bool& inserted);
  std::vector<std::pair<Key, Occurrences>>& entries() { return entries_; }

 private:
  std::size_t slot(const Key& key) const {
    std::size_t i = KeyHash()(key) & (table_.size() - 1);
    while (table_[i] >= 0 && !KeyEqual()(entries_[static_cast<std::size_t>(table_[i])].first, key)) {
      i = (i + 1) & (table_.size() - 1);
    }
    return i;
  }
  void grow();
  std::vector<std::int32_t> table_;
  std::vector<std::pair<Key, Occurrences>> entries_;
};


Occurrences* Counts::find(const Key& key) {
  std::int32_t index = table_[slot(key)];
  return index < 0 ? nullptr : &entries_[static_cast<std::size_t>(index)].second;
}

Occurrences& Counts::emplace(const Key& key, bool& inserted) {
  std::size_t i = slot(key);
  inserted = table_[i] < 0;
  if (!inserted) return entries_[static_cast<std::size_t>(table_[i])].second;
  if (2 * (entries_.size() + 1) > table_.size()) {
    grow();
    i = slot(key);
  }
  table_[i] = static_cast<std::int32_t>(entries_.size());
  entries_.emplace_back(key, Occurrences{});
  return entries_.back().second;
}

void Counts::grow() {
  table_.assign(table_.size() * 2, -1);
  for (std::size_t e = 0; e < entries_.size(); ++e) table_[slot(entries_[e].first)] = static_cast<std::int32_t>(e);
}

class Eliminator : public IRMutator {
 public:
  explicit Eliminator(const Program& program) : names_(program.entry) {
    for (const BufferDecl& buffer : program.buffers) {
      if (buffer.is_written()) writable_.push_back(buffer.name);
    }
    // Workgroup arrays are written by other invocations between barriers: never pure.
    for (const SharedDecl& array : program.shared) writable_.push_back(array.name);
    for (const std::string& name : analysis::assigned_variables(program.entry)) {
      assigned_.emplace(name, static_cast<std::uint32_t>(assigned_.size()));
    }
    versions_.assign(assigned_.size(), 0);
  }

  /// Reads of available expressions become their variables.
  Expr mutate(const Expr& expr) override {
    if (!expr.defined()) return expr;
    if (maybe_available(*expr.get())) {
      auto found = available_.find(key_of(expr.get()));
      if (found != available_.end()) return found->second;
    }
    return IRMutator::mutate(expr);
  }
  using IRMutator::mutate;

 protected:
  Node mutate_Block(const Block& node, const Node& self) override {
    const std::vector<Node>& stmts = node.stmts;
    const std::vector<std::uint32_t> entry_versions = versions_;

    // 1. Count.
    Counts counts(4 * stmts.size());
    counted_hashes_.fill(0);
    Snapshots snapshots;  // versions before each statement
    if (!assigned_.empty()) snapshots.reserve(stmts.size() * assigned_.size());
    for (std::size_t i = 0; i < stmts.size(); ++i) {
      if (!assigned_.empty()) snapshots.insert(snapshots.end(), versions_.begin(), versions_.end());
      statement_versions_.clear();
      const NodeBase& stmt = *stmts[i].get();
      analysis::for_each_operand(stmt, [&](const Expr& operand) { count_top(operand, i, counts); });
      if (stmt.kind == NodeKind::Let) note_whole_let(static_cast<const Let&>(stmt), i, counts);
      if (!counts.empty()) {
        for_each_nested_body(stmt, [&](const Node& body) {
          analysis::for_each_statement(body, [&](const NodeBase& nested) {
            analysis::for_each_operand(nested, [&](const Expr& operand) { count_nested(operand, counts); });
          });
        });
      }
      if (stmts[i].kind() == NodeKind::Let) bump(static_cast<const Let&>(*stmts[i].get()).name);  // a new variable
      bump_assigned(stmts[i]);
    }

    // 2. Choose, largest first.
    std::vector<std::pair<Key, Occurrences*>> chosen;
    for (auto& [key, occurrences] : counts.entries()) {
      if (occurrences.count >= 2) chosen.emplace_back(key, &occurrences);
    }
    std::sort(chosen.begin(), chosen.end(), [](const auto& a, const auto& b) {
      std::uint32_t size_a = a.first.expr->subtree_size(), size_b = b.first.expr->subtree_size();
      return size_a != size_b ? size_a > size_b : a.second->first < b.second->first;
    });
    std::vector<std::pair<Key, Occurrences*>> bindings;
    for (const auto& [key, occurrences] : chosen) {
      if (occurrences->count < 2) continue;  // its repeats sit inside a larger binding
      bindings.emplace_back(key, occurrences);
      set_versions(snapshots, occurrences->first);
      const int extra = occurrences->count - 1;
      for_each_counted_child(*key.expr, [&](const Expr& part) { discount(part, extra, counts); });
    }
    if (bindings.empty() && available_.empty()) {
      versions_ = entry_versions;
      return mutate_nested_only(node, self, snapshots);
    }
    // Smallest first at one statement, so a binding's parts are bound before it.
    std::stable_sort(bindings.begin(), bindings.end(), [](const auto& a, const auto& b) {
      return a.second->first != b.second->first ? a.second->first < b.second->first
                                                : a.first.expr->subtree_size() < b.first.expr->subtree_size();
    });

    // 3. Rewrite.
    const std::size_t scope = undo_.size();
    std::vector<Node> result;
    result.reserve(stmts.size() + bindings.size());
    bool changed = false;
    std::size_t next = 0;
    for (std::size_t i = 0; i < stmts.size(); ++i) {
      set_versions(snapshots, i);
      std::size_t end = next;
      while (end < bindings.size() && bindings[end].second->first == i) ++end;
      for (std::size_t b = next; b < end; ++b) {
        const auto& [key, occurrences] = bindings[b];
        if (occurrences->whole_let) continue;
        Expr value = mutate(occurrences->expr);
        std::string name = names_.fresh("common");
        result.push_back(Let::make(name, value));
        make_available(key, Var::make(value.type(), name));
        changed = true;
      }
      Node mutated = available_.empty() && !has_nested_body(*stmts[i].get()) ? stmts[i] : mutate(stmts[i]);
      changed |= !mutated.same_as(stmts[i]);
      result.push_back(mutated);
      for (std::size_t b = next; b < end; ++b) {
        const auto& [key, occurrences] = bindings[b];
        if (occurrences->whole_let) make_available(key, Var::make(key.expr->type, occurrences->whole_let->name));
      }
      next = end;
    }
    while (undo_.size() > scope) {
      auto& [key, previous] = undo_.back();
      --available_buckets_[key.expr->structural_hash() & (available_buckets_.size() - 1)];
      if (previous.defined()) {
        available_[key] = previous;
      } else {
        available_.erase(key);
      }
      undo_.pop_back();
    }
    versions_ = entry_versions;
    statement_versions_.clear();
    return changed ? Block::make(std::move(result)) : self;
  }

  Node mutate_If(const If& node, const Node& self) override {
    Expr cond = mutate(node.cond);
    Node then_body = mutate(node.then_body);  // each body starts from the versions at the If
    Node else_body = mutate(node.else_body);
    if (cond.same_as(node.cond) && then_body.same_as(node.then_body) && else_body.same_as(node.else_body)) return self;
    return If::make(cond, then_body, else_body);
  }

  Node mutate_Loop(const Loop& node, const Node& self) override {
    Expr from = mutate(node.from);
    Expr to = mutate(node.to);
    // A later iteration sees the body's assignments: its reads are new versions.
    const std::vector<std::uint32_t> entry_versions = versions_;
    bump_assigned(node.body);
    statement_versions_.clear();
    Node body = mutate(node.body);
    versions_ = entry_versions;
    statement_versions_.clear();
    if (from.same_as(node.from) && to.same_as(node.to) && body.same_as(node.body)) return self;
    return Loop::make(node.var, from, to, body);
  }

 private:
  enum : std::uint8_t { kReadsAssigned = 1, kImpure = 2 };

  /// Whether `expr` reads an assigned variable, and whether it is impure; memoised per
  /// node (only nodes of the input program are asked, and the input outlives the pass).
  std::uint8_t facts(const ExprBase* expr) {
    switch (expr->kind) {
      case ExprKind::Var:
        return assigned_id(*static_cast<const Var*>(expr)) != kNotAssigned ? kReadsAssigned : 0;
      case ExprKind::Literal:
      case ExprKind::Builtin:
      case ExprKind::BufferLength:
        return 0;
      default:
        break;
    }
    if (assigned_.empty() && !expr->subtree_has_load()) return expr->subtree_has_subgroup_op() ? kImpure : 0;
    if (const std::uint8_t* found = facts_.find(expr)) return *found;
    std::uint8_t result = expr->subtree_has_subgroup_op() || expr->subtree_has_side_effect() ? kImpure : 0;
    if (expr->kind == ExprKind::Load) {
      const std::string& buffer = static_cast<const Load*>(expr)->buffer;
      if (std::find(writable_.begin(), writable_.end(), buffer) != writable_.end()) result |= kImpure;
    }
    analysis::for_each_child(*expr, [&](const Expr& child) { result |= facts(child.get()); });
    facts_.insert(expr, result);
    return result;
  }

  /// The versions of the assigned variables `expr` reads, at the current statement.
  std::uint64_t versions_of(const ExprBase* expr) {
    if (expr->kind == ExprKind::Var) {
      const std::uint32_t id = assigned_id(*static_cast<const Var*>(expr));
      if (id == kNotAssigned) return 0;
      return mix((std::uint64_t{id} << 32) | versions_[id]) | 1;
    }
    if (const std::uint64_t* found = statement_versions_.find(expr)) return *found;
    std::uint64_t result = 0;
    analysis::for_each_child(*expr, [&](const Expr& child) {
      if (facts(child.get()) & kReadsAssigned) result = mix(result * 31 + versions_of(child.get())) | 1;
    });
    statement_versions_.insert(expr, result);
    return result;
  }

  static constexpr std::uint32_t kNotAssigned = ~std::uint32_t{0};
  /// The id of the assigned variable `var` reads, or kNotAssigned; memoised per Var node
  /// (a let's Var is one node shared by all its reads), so names are hashed once.
  std::uint32_t assigned_id(const Var& var) {
    if (assigned_.empty()) return kNotAssigned;
    if (const std::uint32_t* found = var_ids_.find(&var)) return *found;
    auto found = assigned_.find(var.name);
    const std::uint32_t id = found == assigned_.end() ? kNotAssigned : found->second;
    var_ids_.insert(&var, id);
    return id;
  }

  Key key_of(const ExprBase* expr) {
    return Key{expr, (facts(expr) & kReadsAssigned) ? versions_of(expr) : 0};
  }

  template <class Visit>
  void for_each_counted_child(const ExprBase& expr, Visit&& visit) {
    analysis::for_each_child(expr, [&](const Expr& child) {
      if (!conditional_operand(expr, child)) visit(child);
    });
  }

  void count_top(const Expr& expr, std::size_t statement, Counts& counts) {
    if (!expr.defined() || is_leaf(*expr.get())) return;
    const std::uint8_t flags = facts(expr.get());
    Key key{expr.get(), (flags & kReadsAssigned) ? versions_of(expr.get()) : 0};
    if (maybe_available(*expr.get()) && available_.count(key)) return;  // becomes a variable read
    if (!(flags & kImpure)) {
      bool inserted = false;
      Occurrences& entry = counts.emplace(key, inserted);
      if (inserted) {
        entry.expr = expr;
        entry.first = statement;
        if (key.versions == 0) note_counted_hash(expr.get()->structural_hash());
      }
      ++entry.count;
    }
    for_each_counted_child(*expr.get(), [&](const Expr& child) { count_top(child, statement, counts); });
  }

  void count_nested(const Expr& expr, Counts& counts) {
    if (!expr.defined() || is_leaf(*expr.get())) return;
    // Only trees already counted at the block's level count here; most are not.
    const std::uint8_t flags = counted_hash(expr.get()->structural_hash()) ? facts(expr.get()) : std::uint8_t{kReadsAssigned};
    if (!(flags & kReadsAssigned)) {
      Key key{expr.get(), 0};
      if (maybe_available(*expr.get()) && available_.count(key)) return;
      if (!(flags & kImpure)) {
        if (Occurrences* found = counts.find(key)) ++found->count;  // dominated by a block-level occurrence
      }
    }
    for_each_counted_child(*expr.get(), [&](const Expr& child) { count_nested(child, counts); });
  }

  /// `let name = e` holding the first occurrence of `e`: the let's variable can serve.
  void note_whole_let(const Let& let, std::size_t statement, Counts& counts) {
    if (assigned_.count(let.name) || is_leaf(*let.value.get())) return;
    const std::uint8_t flags = facts(let.value.get());
    if (flags & kImpure) return;
    Occurrences* found = counts.find(Key{let.value.get(), (flags & kReadsAssigned) ? versions_of(let.value.get()) : 0});
    if (found != nullptr && found->first == statement && found->count == 1) found->whole_let = &let;
  }

  /// Removes `extra` occurrences of `expr` and of its parts from the counts.
  void discount(const Expr& expr, int extra, Counts& counts) {
    if (!expr.defined() || is_leaf(*expr.get())) return;
    const std::uint8_t flags = facts(expr.get());
    Key key{expr.get(), (flags & kReadsAssigned) ? versions_of(expr.get()) : 0};
    if (maybe_available(*expr.get()) && available_.count(key)) return;
    if (!(flags & kImpure)) {
      if (Occurrences* found = counts.find(key)) found->count -= extra;
    }
    for_each_counted_child(*expr.get(), [&](const Expr& child) { discount(child, extra, counts); });
  }

  /// A bit per hash bucket of the block's counted trees (those without versions).
  bool counted_hash(std::uint64_t hash) const { return (counted_hashes_[(hash >> 6) & 63] >> (hash & 63)) & 1; }
  void note_counted_hash(std::uint64_t hash) { counted_hashes_[(hash >> 6) & 63] |= std::uint64_t{1} << (hash & 63); }

  void make_available(const Key& key, Expr variable) {
    auto [entry, inserted] = available_.try_emplace(key, variable);
    undo_.emplace_back(key, inserted ? Expr() : entry->second);
    if (!inserted) entry->second = std::move(variable);
    ++available_buckets_[key.expr->structural_hash() & (available_buckets_.size() - 1)];
  }

  /// False when no available expression shares the tree's hash bucket (most trees): the
  /// map lookup, which needs the tree's versions, is skipped.
  bool maybe_available(const ExprBase& expr) const {
    return !available_.empty() && !is_leaf(expr) &&
           available_buckets_[expr.structural_hash() & (available_buckets_.size() - 1)] != 0;
  }

  /// A new version for every variable assigned in `node`. (A Let nested in `node` ends
  /// with it: only the enclosing block's own Lets start new variables, see bump.)
  void bump_assigned(const Node& node) {
    if (assigned_.empty()) return;
    analysis::for_each_statement(node, [&](const NodeBase& stmt) {
      if (stmt.kind == NodeKind::Assign) bump(static_cast<const Assign&>(stmt).name);
    });
  }

  void bump(const std::string& name) {
    if (assigned_.empty()) return;
    auto found = assigned_.find(name);
    if (found != assigned_.end()) versions_[found->second] = ++version_counter_;
  }

  using Snapshots = std::vector<std::uint32_t>;
  void set_versions(const Snapshots& snapshots, std::size_t statement) {
    if (assigned_.empty()) return;
    const std::size_t width = assigned_.size();
    std::copy(snapshots.begin() + static_cast<long>(statement * width),
              snapshots.begin() + static_cast<long>((statement + 1) * width), versions_.begin());
    statement_versions_.clear();
  }

  static bool has_nested_body(const NodeBase& stmt) {
    return stmt.kind == NodeKind::If || stmt.kind == NodeKind::Loop || stmt.kind == NodeKind::Region ||
           stmt.kind == NodeKind::Block;
  }

  template <class Visit>
  static void for_each_nested_body(const NodeBase& stmt, Visit&& visit) {
    switch (stmt.kind) {
      case NodeKind::If:
        visit(static_cast<const If&>(stmt).then_body);
        visit(static_cast<const If&>(stmt).else_body);
        break;
      case NodeKind::Loop: visit(static_cast<const Loop&>(stmt).body); break;
      case NodeKind::Region: visit(static_cast<const Region&>(stmt).body); break;
      case NodeKind::Block:
        for (const Node& inner : static_cast<const Block&>(stmt).stmts) visit(inner);
        break;
      default:
        break;
    }
  }

  /// Nothing to bind or replace at this level: only nested blocks may change.
  Node mutate_nested_only(const Block& node, const Node& self, const Snapshots& snapshots) {
    std::vector<Node> result;
    bool changed = false;
    for (std::size_t i = 0; i < node.stmts.size(); ++i) {
      const Node& stmt = node.stmts[i];
      Node mutated = stmt;
      if (has_nested_body(*stmt.get())) {
        set_versions(snapshots, i);
        mutated = mutate(stmt);
      }
      if (!changed && !mutated.same_as(stmt)) {
        result.assign(node.stmts.begin(), node.stmts.begin() + static_cast<long>(i));
        changed = true;
      }
      if (changed) result.push_back(mutated);
    }
    if (!assigned_.empty() && !snapshots.empty()) set_versions(snapshots, 0);
    statement_versions_.clear();
    return changed ? Block::make(std::move(result)) : self;
  }

  analysis::NameSupply names_;
  std::vector<std::string> writable_;
  std::unordered_map<std::string, std::uint32_t> assigned_;  // assigned variable -> id
  std::vector<std::uint32_t> versions_;                      // by id
  std::uint32_t version_counter_ = 0;
  std::array<std::uint64_t, 64> counted_hashes_{};
  std::array<std::uint16_t, 1024> available_buckets_{};  // available expressions per hash bucket
  PointerMap<std::uint8_t> facts_;
  PointerMap<std::uint32_t> var_ids_;
  PointerMap<std::uint64_t> statement_versions_;
  std::unordered_map<Key, Expr, KeyHash, KeyEqual> available_;  // expression -> variable holding it
  std::vector<std::pair<Key, Expr>> undo_;                      // (key, value it replaced)
};

/// Whether two candidate trees anywhere in the program are structurally equal (or one
/// node is reached twice). The pass binds only trees counted twice, so without such a
/// pair it has nothing to do; checking costs one walk and a sort of the trees' hashes,
/// much less than the counting.
bool has_repeated_tree(const Program& program) {
  std::vector<std::uint64_t> hashes;
  struct Collector : IRVisitor {
    explicit Collector(std::vector<std::uint64_t>& hashes) : hashes(hashes) {}
    std::vector<std::uint64_t>& hashes;
    void note(const ExprBase& node) {
      if (!node.subtree_has_subgroup_op()) hashes.push_back(node.structural_hash());
    }
#define QUANTC_NOTE(name)                        \
  void visit_##name(const name& node) override { \
    note(node);                                  \
    IRVisitor::visit_##name(node);               \
  }
    QUANTC_NOTE(Load)
    QUANTC_NOTE(Binary)
    QUANTC_NOTE(Unary)
    QUANTC_NOTE(Cast)
    QUANTC_NOTE(Bitcast)
    QUANTC_NOTE(Select)
    QUANTC_NOTE(Fma)
    QUANTC_NOTE(MakeVector)
    QUANTC_NOTE(ExtractLane)
    QUANTC_NOTE(InsertLane)
    QUANTC_NOTE(Permute)
    QUANTC_NOTE(Lookup)
#undef QUANTC_NOTE
  } collector(hashes);
  collector.visit(program.entry);
  std::sort(hashes.begin(), hashes.end());
  return std::adjacent_find(hashes.begin(), hashes.end()) != hashes.end();
}

}  // namespace

ir::Program eliminate_common_subexpressions(ir::Program program) {
  if (!has_repeated_tree(program)) return program;
  Eliminator eliminator(program);
  ir::Node entry = eliminator.mutate(program.entry);
  program.entry = entry;
  return program;
}

}  // namespace quantc::lower
