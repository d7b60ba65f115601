// Floating-point contraction: `a * b + c` -> fma(a, b, c), as nvcc does by default
// (--fmad=true) and clang's -ffp-contract=on: within one expression, never across
// variables. See Passes.h for the rules and why this pass alone changes rounding.
#include "ir/Builder.h"
#include "ir/IRMutator.h"
#include "lower/passes/Passes.h"

namespace quantc::lower {
namespace {

/// f32 and f64, scalar or vector: the types whose Fma the interpreter and every target
/// compute with one rounding (fma.rn.f32 / fma.rn.f64). 16-bit floats stay unfused.
bool contractible(ir::Type type) {
  return type.element() == ir::ScalarType::F32 || type.element() == ir::ScalarType::F64;
}

const ir::Binary* as_product(const ir::Expr& expr) {
  const ir::Binary* binary = expr.as<ir::Binary>();
  return binary != nullptr && binary->op == ir::BinaryOp::Mul ? binary : nullptr;
}

class Contractor : public ir::IRMutator {
  ir::Expr mutate_Binary(const ir::Binary& node, const ir::Expr& self) override {
    ir::Expr mutated = IRMutator::mutate_Binary(node, self);  // operands first: inner sums fuse first
    const ir::Binary* sum = mutated.as<ir::Binary>();
    if (sum == nullptr || !contractible(sum->type) ||
        (sum->op != ir::BinaryOp::Add && sum->op != ir::BinaryOp::Sub)) {
      return mutated;
    }
    // The left product is fused when both operands are products (a*b + c*d).
    if (const ir::Binary* product = as_product(sum->lhs)) {
      ir::Expr addend = sum->op == ir::BinaryOp::Add ? sum->rhs : -sum->rhs;  // a*b - c = fma(a, b, -c)
      return ir::Fma::make(product->lhs, product->rhs, addend);
    }
    if (const ir::Binary* product = as_product(sum->rhs)) {
      ir::Expr factor = sum->op == ir::BinaryOp::Add ? product->lhs : -product->lhs;  // c - a*b = fma(-a, b, c)
      return ir::Fma::make(factor, product->rhs, sum->lhs);
    }
    return mutated;
  }
};

}  // namespace

ir::Program contract_fma(ir::Program program) {
  program.entry = Contractor().mutate(program.entry);
  return program;
}

}  // namespace quantc::lower
