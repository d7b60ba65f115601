// Lexically scoped name -> value tables: the symbol table that the verifier, the
// interpreter's compiler and the PTX lowering each keep while walking a program.
// Blocks and loop bodies open a scope; a name resolves to its innermost binding.
// Built on LLVM's ADT: scopes are StringMaps (no std::string per lookup) in a
// SmallVector (programs rarely nest more than a few levels).
#pragma once

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>

namespace quantc::ir {

template <class Value>
class ScopedTable {
 public:
  ScopedTable() { push_scope(); }  // the outermost scope always exists

  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() { scopes_.pop_back(); }

  /// Binds `name` in the innermost scope (replacing a binding of that scope).
  void declare(llvm::StringRef name, Value value) { scopes_.back()[name] = std::move(value); }

  /// The innermost binding of `name`, or nullptr when no scope binds it.
  const Value* lookup(llvm::StringRef name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto found = scope->find(name);
      if (found != scope->end()) return &found->second;
    }
    return nullptr;
  }

  /// Opens a scope for the guard's lifetime.
  class Scope {
   public:
    explicit Scope(ScopedTable& table) : table_(table) { table_.push_scope(); }
    ~Scope() { table_.pop_scope(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ScopedTable& table_;
  };

 private:
  llvm::SmallVector<llvm::StringMap<Value>, 8> scopes_;
};

}  // namespace quantc::ir
