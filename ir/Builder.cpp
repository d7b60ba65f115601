#include "ir/Builder.h"

#include <fmt/format.h>

#include "ir/Verifier.h"

namespace quantc::ir {

Expr literal(ScalarType type, double value) { return Literal::from_double(type, value); }
Expr u32(std::uint32_t value) { return Literal::u32(value); }
Expr i32(std::int32_t value) { return Literal::i32(value); }
Expr f32(float value) { return Literal::f32(value); }
Expr f64(double value) { return Literal::f64(value); }
Expr boolean(bool value) { return Literal::boolean(value); }

Expr invocation_id(unsigned axis) { return Builtin::make(BuiltinKind::InvocationId, axis); }
Expr workgroup_id(unsigned axis) { return Builtin::make(BuiltinKind::WorkgroupId, axis); }
Expr local_id(unsigned axis) { return Builtin::make(BuiltinKind::LocalId, axis); }
Expr subgroup_local_id() { return Builtin::make(BuiltinKind::SubgroupLocalId); }
Expr subgroup_size() { return Builtin::make(BuiltinKind::SubgroupSize); }

Expr literal_like(Type type, double value) {
  Expr scalar = literal(type.element(), value);
  return type.is_vector() ? MakeVector::broadcast(scalar, type.lanes()) : scalar;
}

Expr cast(Type type, Expr value) { return Cast::make(type, std::move(value)); }
Expr bitcast(Type type, Expr value) { return Bitcast::make(type, std::move(value)); }
Expr make_vector(std::vector<Expr> lanes) { return MakeVector::make(std::move(lanes)); }
Expr broadcast(Expr value, unsigned lanes) { return MakeVector::broadcast(std::move(value), lanes); }
Expr extract_lane(Expr vector, unsigned lane) { return ExtractLane::make(std::move(vector), lane); }
Expr insert_lane(Expr vector, unsigned lane, Expr value) {
  return InsertLane::make(std::move(vector), lane, std::move(value));
}
Expr permute(Expr a, Expr b, Expr selector) { return Permute::make(std::move(a), std::move(b), std::move(selector)); }
Expr select(Expr cond, Expr if_true, Expr if_false) {
  return Select::make(std::move(cond), std::move(if_true), std::move(if_false));
}
Expr fma(Expr a, Expr b, Expr c) { return Fma::make(std::move(a), std::move(b), std::move(c)); }
Expr min(Expr a, Expr b) { return Binary::make(BinaryOp::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return Binary::make(BinaryOp::Max, std::move(a), std::move(b)); }
Expr eq(Expr a, Expr b) { return Binary::make(BinaryOp::Eq, std::move(a), std::move(b)); }
Expr ne(Expr a, Expr b) { return Binary::make(BinaryOp::Ne, std::move(a), std::move(b)); }
Expr logical_and(Expr a, Expr b) { return Binary::make(BinaryOp::LogicalAnd, std::move(a), std::move(b)); }
Expr logical_or(Expr a, Expr b) { return Binary::make(BinaryOp::LogicalOr, std::move(a), std::move(b)); }
Expr abs(Expr value) { return Unary::make(UnaryOp::Abs, std::move(value)); }
Expr round_even(Expr value) { return Unary::make(UnaryOp::Round, std::move(value)); }
Expr subgroup_shuffle(Expr value, Expr lane) { return SubgroupShuffle::make(std::move(value), std::move(lane)); }
Expr subgroup_add(Expr value) { return SubgroupReduce::make(SubgroupReduceOp::Add, std::move(value)); }
Expr subgroup_max(Expr value) { return SubgroupReduce::make(SubgroupReduceOp::Max, std::move(value)); }
Expr subgroup_min(Expr value) { return SubgroupReduce::make(SubgroupReduceOp::Min, std::move(value)); }
Expr subgroup_ballot(Expr cond) { return SubgroupBallot::make(std::move(cond)); }
Expr subgroup_load_matrix(const BufferRef& array, Expr index, unsigned matrices, bool transpose) {
  return SubgroupLoadMatrix::make(array.name, std::move(index), matrices, transpose);
}
Expr subgroup_mma(ScalarType input, Expr a, Expr b, Expr c) {
  return SubgroupMma::make(input, std::move(a), std::move(b), std::move(c));
}

#define QUANTC_DEFINE_OPERATOR(symbol, op)                                                     \
  Expr operator symbol(Expr lhs, Expr rhs) { return Binary::make(BinaryOp::op, lhs, rhs); }    \
  Expr operator symbol(Expr lhs, double rhs) {                                                 \
    Type type = lhs.type();                                                                    \
    return Binary::make(BinaryOp::op, lhs, literal_like(type, rhs));                           \
  }                                                                                            \
  Expr operator symbol(double lhs, Expr rhs) {                                                 \
    Type type = rhs.type();                                                                    \
    return Binary::make(BinaryOp::op, literal_like(type, lhs), rhs);                           \
  }
QUANTC_DEFINE_OPERATOR(+, Add)
QUANTC_DEFINE_OPERATOR(-, Sub)
QUANTC_DEFINE_OPERATOR(*, Mul)
QUANTC_DEFINE_OPERATOR(/, Div)
QUANTC_DEFINE_OPERATOR(%, Rem)
QUANTC_DEFINE_OPERATOR(&, BitAnd)
QUANTC_DEFINE_OPERATOR(|, BitOr)
QUANTC_DEFINE_OPERATOR(^, BitXor)
QUANTC_DEFINE_OPERATOR(<<, Shl)
QUANTC_DEFINE_OPERATOR(>>, Shr)
QUANTC_DEFINE_OPERATOR(<, Lt)
QUANTC_DEFINE_OPERATOR(<=, Le)
QUANTC_DEFINE_OPERATOR(>, Gt)
QUANTC_DEFINE_OPERATOR(>=, Ge)
#undef QUANTC_DEFINE_OPERATOR

Expr operator-(Expr value) { return Unary::make(UnaryOp::Neg, std::move(value)); }
Expr operator!(Expr value) { return Unary::make(UnaryOp::Not, std::move(value)); }

Expr BufferRef::operator[](Expr index) const { return Load::make(element, name, std::move(index)); }
Expr BufferRef::operator[](std::uint32_t index) const { return Load::make(element, name, u32(index)); }
Expr BufferRef::load(Expr index, unsigned lanes, unsigned alignment) const {
  return Load::make(Type(element, lanes), name, std::move(index), alignment);
}

Expr BufferRef::load_words(Expr index, unsigned lanes) const {
  return Load::make(Type(ScalarType::U32, lanes), name, std::move(index), 0, true);
}

Expr Body::let(const std::string& name, Expr value) {
  Type type = value.type();
  stmts_.push_back(Let::make(name, std::move(value)));
  return Var::make(type, name);
}

void Body::assign(const Expr& variable, Expr value) {
  const Var* var = variable.as<Var>();
  if (var == nullptr) throw IRError("Body::assign: the target must be a variable returned by let()");
  stmts_.push_back(Assign::make(var->name, std::move(value)));
}

void Body::store(const BufferRef& buffer, Expr index, Expr value, unsigned alignment) {
  stmts_.push_back(Store::make(buffer.name, std::move(index), std::move(value), alignment));
}

void Body::store_words(const BufferRef& buffer, Expr index, Expr value) {
  stmts_.push_back(Store::make(buffer.name, std::move(index), std::move(value), 0, true));
}

void Body::if_then(Expr cond, const Builder& then_builder) {
  Body then_body;
  then_builder(then_body);
  stmts_.push_back(If::make(std::move(cond), then_body.build()));
}

void Body::if_then_else(Expr cond, const Builder& then_builder, const Builder& else_builder) {
  Body then_body, else_body;
  then_builder(then_body);
  else_builder(else_body);
  stmts_.push_back(If::make(std::move(cond), then_body.build(), else_body.build()));
}

void Body::loop(const std::string& var, Expr from, Expr to, const LoopBuilder& body_builder) {
  Body loop_body;
  Type type = from.type();
  body_builder(loop_body, Var::make(type, var));
  stmts_.push_back(Loop::make(var, std::move(from), std::move(to), loop_body.build()));
}

void Body::region(const std::string& op_id, const Builder& body_builder) {
  Body region_body;
  body_builder(region_body);
  stmts_.push_back(Region::make(op_id, region_body.build()));
}

void Body::barrier() { stmts_.push_back(Barrier::make()); }
void Body::fence() { stmts_.push_back(Fence::make()); }
void Body::async_copy(const BufferRef& array, Expr array_index, const BufferRef& buffer, Expr buffer_index,
                      unsigned bytes) {
  stmts_.push_back(AsyncCopy::make(array.name, std::move(array_index), buffer.name, std::move(buffer_index), bytes));
}
void Body::async_commit() { stmts_.push_back(AsyncCommit::make()); }
void Body::async_wait(unsigned pending) { stmts_.push_back(AsyncWait::make(pending)); }

Expr Body::atomic_add(const std::string& name, const BufferRef& buffer, Expr index, Expr value) {
  return let(name, AtomicAdd::make(buffer.name, std::move(index), std::move(value)));
}
void Body::return_() { stmts_.push_back(Return::make()); }
void Body::append(Node stmt) { stmts_.push_back(std::move(stmt)); }

ProgramBuilder::ProgramBuilder(std::string name) { program_.name = std::move(name); }

BufferRef ProgramBuilder::input(const std::string& name, ScalarType element, std::uint32_t count) {
  auto binding = static_cast<std::uint32_t>(program_.buffers.size());
  program_.buffers.push_back(BufferDecl{name, binding, BufferAccess::ReadOnly, element, count, std::nullopt});
  return BufferRef{name, element};
}

BufferRef ProgramBuilder::output(const std::string& name, ScalarType element, std::uint32_t count,
                                 BufferAccess access) {
  auto binding = static_cast<std::uint32_t>(program_.buffers.size());
  program_.buffers.push_back(BufferDecl{name, binding, access, element, count, std::nullopt});
  return BufferRef{name, element};
}

BufferRef ProgramBuilder::scratch(const std::string& name, ScalarType element, std::uint32_t count) {
  return output(name, element, count, BufferAccess::Scratch);
}

BufferRef ProgramBuilder::shared(const std::string& name, ScalarType element, std::uint32_t count) {
  program_.shared.push_back(SharedDecl{name, element, count});
  return BufferRef{name, element};
}

void ProgramBuilder::set_output_byte_range(const std::string& name, ByteRange range) {
  for (BufferDecl& buffer : program_.buffers) {
    if (buffer.name == name) {
      buffer.output_byte_range = range;
      return;
    }
  }
  throw IRError(fmt::format("set_output_byte_range: no buffer named '{}'", name));
}

void ProgramBuilder::launch(std::array<std::uint32_t, 3> workgroup_size,
                            std::array<std::uint32_t, 3> workgroup_count) {
  program_.workgroup_size = workgroup_size;
  program_.workgroup_count = workgroup_count;
}

void ProgramBuilder::body(const Body::Builder& builder) { builder(body_); }

Program ProgramBuilder::build(const VerifyOptions& options) const {
  Program program = program_;
  program.entry = body_.build();
  verify_or_throw(program, options);
  return program;
}

}  // namespace quantc::ir
