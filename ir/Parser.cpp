#include "ir/Parser.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

namespace quantc::ir {

ParseError::ParseError(const std::string& source, int line, int column, const std::string& message)
    : IRError(fmt::format("{}:{}:{}: error: {}", source, line, column, message)), line_(line), column_(column) {}

namespace {

enum class TokenKind : std::uint8_t { Identifier, Number, String, Symbol, End };

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;  // identifier, number (with sign and suffix), string contents, or symbol
  int line = 1;
  int column = 1;
};

/// Splits IR text into tokens. Numbers keep their type suffix (`8u32`, `-0.5f32`); a
/// `-` directly followed by a digit starts a number, because the printer always puts
/// spaces around the binary minus.
class Lexer {
 public:
  Lexer(std::string_view text, std::string source) : text_(text), source_(std::move(source)) {}

  std::vector<Token> tokenize() {
    std::vector<Token> tokens;
    for (;;) {
      skip_space_and_comments();
      Token token;
      token.line = line_;
      token.column = column_;
      if (at_end()) {
        tokens.push_back(token);
        return tokens;
      }
      char c = peek();
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        token.kind = TokenKind::Identifier;
        while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')) token.text += take();
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '-' && std::isdigit(static_cast<unsigned char>(peek(1))))) {
        token.kind = TokenKind::Number;
        token.text = lex_number();
      } else if (c == '"') {
        token.kind = TokenKind::String;
        take();
        while (!at_end() && peek() != '"' && peek() != '\n') token.text += take();
        if (at_end() || peek() != '"') throw ParseError(source_, token.line, token.column, "unterminated string");
        take();
      } else {
        token.kind = TokenKind::Symbol;
        static constexpr std::string_view kTwoCharSymbols[] = {"<<", ">>", "<=", ">=", "==", "!=", "&&", "||", ".."};
        std::string_view rest = text_.substr(position_);
        for (std::string_view symbol : kTwoCharSymbols) {
          if (rest.substr(0, 2) == symbol) token.text = symbol;
        }
        if (token.text.empty()) {
          static constexpr std::string_view kOneCharSymbols = "+-*/%&|^<>=()[]{},:@.!";
          if (kOneCharSymbols.find(c) == std::string_view::npos) {
            throw ParseError(source_, line_, column_, fmt::format("unexpected character '{}'", c));
          }
          token.text = std::string(1, c);
        }
        for (std::size_t i = 0; i < token.text.size(); ++i) take();
      }
      tokens.push_back(std::move(token));
    }
  }

 private:
  bool at_end() const { return position_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return position_ + ahead < text_.size() ? text_[position_ + ahead] : '\0';
  }
  char take() {
    char c = text_[position_++];
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    return c;
  }
  void skip_space_and_comments() {
    while (!at_end()) {
      if (std::isspace(static_cast<unsigned char>(peek()))) {
        take();
      } else if (peek() == '/' && peek(1) == '/') {
        while (!at_end() && peek() != '\n') take();
      } else {
        return;
      }
    }
  }
  std::string lex_number() {
    std::string text;
    if (peek() == '-') text += take();
    if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X')) {
      text += take();
      text += take();
      while (std::isxdigit(static_cast<unsigned char>(peek()))) text += take();
      return text;
    }
    while (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '.') {
      if (peek() == '.' && peek(1) == '.') break;  // the range operator `..`
      text += take();
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (std::isdigit(static_cast<unsigned char>(peek(1))) ||
         ((peek(1) == '+' || peek(1) == '-') && std::isdigit(static_cast<unsigned char>(peek(2)))))) {
      text += take();
      if (peek() == '+' || peek() == '-') text += take();
      while (std::isdigit(static_cast<unsigned char>(peek()))) text += take();
    }
    while (std::isalnum(static_cast<unsigned char>(peek()))) text += take();  // type suffix
    return text;
  }

  std::string_view text_;
  std::string source_;
  std::size_t position_ = 0;
  int line_ = 1;
  int column_ = 1;
};

class Parser {
 public:
  Parser(std::string_view text, std::string source, const Program* program)
      : source_(std::move(source)), tokens_(Lexer(text, source_).tokenize()), program_(program) {}

  Program parse_program() {
    Program program;
    program_ = &program;
    expect_identifier("program");
    program.name = expect(TokenKind::String, "the program name in quotes").text;
    expect_identifier("workgroup_size");
    program.workgroup_size = parse_triple();
    expect_identifier("workgroup_count");
    program.workgroup_count = parse_triple();
    if (peek_identifier("min_resident_workgroups")) {
      take();
      expect_symbol("(");
      program.min_resident_workgroups = parse_u32();
      expect_symbol(")");
    }
    if (peek_identifier("reserved_shared_bytes")) {
      take();
      expect_symbol("(");
      program.reserved_shared_bytes = parse_u32();
      expect_symbol(")");
    }
    while (peek_identifier("buffer")) program.buffers.push_back(parse_buffer());
    while (peek_identifier("shared")) program.shared.push_back(parse_shared());
    program.entry = parse_block();
    expect_end();
    return program;
  }

  Expr parse_standalone_expr(const std::map<std::string, Type>& variables) {
    scopes_.emplace_back(variables.begin(), variables.end());
    Expr expr = parse_expr();
    expect_end();
    return expr;
  }

 private:
  // --- tokens -----------------------------------------------------------------------
  const Token& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(position_ + ahead, tokens_.size() - 1)];
  }
  const Token& take() {
    const Token& token = peek();
    if (position_ < tokens_.size() - 1) ++position_;
    return token;
  }
  [[noreturn]] void fail(const Token& at, const std::string& message) const {
    throw ParseError(source_, at.line, at.column, message);
  }
  static std::string describe(const Token& token) {
    switch (token.kind) {
      case TokenKind::End:
        return "end of input";
      case TokenKind::String:
        return fmt::format("string \"{}\"", token.text);
      default:
        return fmt::format("'{}'", token.text);
    }
  }
  bool peek_symbol(std::string_view symbol, std::size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Symbol && peek(ahead).text == symbol;
  }
  bool peek_identifier(std::string_view name, std::size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Identifier && peek(ahead).text == name;
  }
  const Token& expect(TokenKind kind, std::string_view what) {
    if (peek().kind != kind) fail(peek(), fmt::format("expected {}, found {}", what, describe(peek())));
    return take();
  }
  void expect_symbol(std::string_view symbol) {
    if (!peek_symbol(symbol)) fail(peek(), fmt::format("expected '{}', found {}", symbol, describe(peek())));
    take();
  }
  void expect_identifier(std::string_view name) {
    if (!peek_identifier(name)) fail(peek(), fmt::format("expected '{}', found {}", name, describe(peek())));
    take();
  }
  void expect_end() {
    if (peek().kind != TokenKind::End) fail(peek(), fmt::format("unexpected {} after the end", describe(peek())));
  }
  std::string expect_name(std::string_view what) { return expect(TokenKind::Identifier, what).text; }

  std::uint64_t parse_unsigned(std::uint64_t max) {
    const Token& token = expect(TokenKind::Number, "an unsigned number");
    std::uint64_t value = 0;
    auto [end, error] = std::from_chars(token.text.data(), token.text.data() + token.text.size(), value);
    if (error != std::errc() || end != token.text.data() + token.text.size() || value > max) {
      fail(token, fmt::format("expected an unsigned number up to {}, found '{}'", max, token.text));
    }
    return value;
  }
  std::uint32_t parse_u32() { return static_cast<std::uint32_t>(parse_unsigned(0xffffffffu)); }

  Type parse_type() {
    const Token& token = expect(TokenKind::Identifier, "a type name (u32, f32, f16x2, ...)");
    std::optional<Type> type = ir::parse_type(token.text);
    if (!type) {
      fail(token, fmt::format("unknown type '{}'; expected one of bool, u8, i8, u16, u32, i32, u64, i64, f16, bf16, "
                              "f32, f64, or a vector u32x2, u32x4, i32x2, i32x4, f32x2, f32x4, f16x2, bf16x2",
                              token.text));
    }
    return *type;
  }

  ScalarType parse_scalar_type_name() {
    const Token& token = peek();
    Type type = parse_type();
    if (type.is_vector()) fail(token, fmt::format("expected a scalar type, found {}", to_string(type)));
    return type.element();
  }

  /// After `buffer[index]`: `.v2`/`.v4` for a vector access and `.align(N)` when it
  /// states less than the natural alignment (Printer.h). Returns (lanes, alignment or 0).
  std::pair<unsigned, unsigned> parse_access_suffix() {
    unsigned lanes = 1, alignment = 0;
    if (peek_symbol(".") && (peek_identifier("v2", 1) || peek_identifier("v4", 1))) {
      take();
      lanes = take().text == "v2" ? 2 : 4;
    }
    if (peek_symbol(".") && peek_identifier("align", 1)) {
      take();
      take();
      expect_symbol("(");
      alignment = static_cast<unsigned>(parse_unsigned(256));
      expect_symbol(")");
    }
    return {lanes, alignment};
  }

  // --- program header -------------------------------------------------------------
  std::array<std::uint32_t, 3> parse_triple() {
    std::array<std::uint32_t, 3> values{};
    expect_symbol("(");
    for (int axis = 0; axis < 3; ++axis) {
      if (axis) expect_symbol(",");
      values[axis] = parse_u32();
    }
    expect_symbol(")");
    return values;
  }

  BufferDecl parse_buffer() {
    expect_identifier("buffer");
    BufferDecl buffer;
    expect_symbol("@");
    buffer.binding = parse_u32();
    buffer.name = expect_name("a buffer name");
    expect_symbol(":");
    const Token& access = expect(TokenKind::Identifier, "read_only, read_write, write_only or scratch");
    if (access.text == "read_only") {
      buffer.access = BufferAccess::ReadOnly;
    } else if (access.text == "read_write") {
      buffer.access = BufferAccess::ReadWrite;
    } else if (access.text == "write_only") {
      buffer.access = BufferAccess::WriteOnly;
    } else if (access.text == "scratch") {
      buffer.access = BufferAccess::Scratch;
    } else {
      fail(access, fmt::format("unknown buffer access '{}'; expected read_only, read_write, write_only or scratch",
                               access.text));
    }
    buffer.element = parse_scalar_type_name();
    expect_symbol("[");
    buffer.count = parse_u32();
    expect_symbol("]");
    if (peek_identifier("output_bytes")) {
      take();
      expect_symbol("(");
      ByteRange range;
      range.begin = parse_unsigned(std::numeric_limits<std::uint64_t>::max());
      expect_symbol(",");
      range.end = parse_unsigned(std::numeric_limits<std::uint64_t>::max());
      expect_symbol(")");
      buffer.output_byte_range = range;
    }
    return buffer;
  }

  /// `shared name: f32[count]`
  SharedDecl parse_shared() {
    expect_identifier("shared");
    SharedDecl array;
    array.name = expect_name("a workgroup array name");
    expect_symbol(":");
    array.element = parse_scalar_type_name();
    expect_symbol("[");
    array.count = parse_u32();
    expect_symbol("]");
    return array;
  }

  // --- nesting --------------------------------------------------------------------
  /// Counts one level of nesting while it lives. The parser recurses once per node it
  /// nests (a statement, a block, an expression), so its count is the depth of the node
  /// being parsed: refusing a count over kMaxNestingDepth bounds the parser's own
  /// recursion before it builds a node that make() would refuse anyway.
  class Nested {
   public:
    explicit Nested(Parser& parser) : parser_(parser) {
      if (++parser_.depth_ > kMaxNestingDepth) parser_.fail(parser_.peek(), nesting_error(parser_.depth_));
    }
    ~Nested() { --parser_.depth_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    Parser& parser_;
  };

  // --- statements -----------------------------------------------------------------
  Node parse_block() {
    Nested nested(*this);
    expect_symbol("{");
    scopes_.emplace_back();
    std::vector<Node> stmts;
    while (!peek_symbol("}")) {
      if (peek().kind == TokenKind::End) fail(peek(), "expected '}' before the end of input");
      stmts.push_back(parse_stmt());
    }
    take();
    scopes_.pop_back();
    return Block::make(std::move(stmts));
  }

  Node parse_stmt() {
    Nested nested(*this);
    const Token& start = peek();
    if (start.kind != TokenKind::Identifier) fail(start, fmt::format("expected a statement, found {}", describe(start)));
    bool is_target = peek_symbol("=", 1) || peek_symbol("[", 1);  // `name = ...` or `name[...] = ...`
    if (!is_target) {
      if (start.text == "let") return parse_let();
      if (start.text == "if") return parse_if();
      if (start.text == "for") return parse_loop();
      if (start.text == "region") {
        take();
        std::string op_id = expect(TokenKind::String, "the region's op id in quotes").text;
        return Region::make(op_id, parse_block());
      }
      if (start.text == "barrier") {
        take();
        return Barrier::make();
      }
      if (start.text == "fence") {
        take();
        return Fence::make();
      }
      if (start.text == "async_commit") {
        take();
        return AsyncCommit::make();
      }
      if (start.text == "async_wait") {  // async_wait(0)
        take();
        expect_symbol("(");
        const Token& count = expect(TokenKind::Number, "how many committed groups may stay in flight");
        unsigned pending = 0;
        auto [stop, error] = std::from_chars(count.text.data(), count.text.data() + count.text.size(), pending);
        if (error != std::errc() || stop != count.text.data() + count.text.size() || pending > 255)
          fail(count, fmt::format("async_wait({}): give a count of groups from 0 to 255", count.text));
        expect_symbol(")");
        return AsyncWait::make(pending);
      }
      if (start.text == "async_copy") {  // async_copy(tile[i], x[j], 16)
        take();
        expect_symbol("(");
        const std::string array = expect(TokenKind::Identifier, "a workgroup array").text;
        expect_symbol("[");
        Expr array_index = parse_expr();
        expect_symbol("]");
        expect_symbol(",");
        const std::string buffer = expect(TokenKind::Identifier, "a buffer").text;
        expect_symbol("[");
        Expr buffer_index = parse_expr();
        expect_symbol("]");
        expect_symbol(",");
        const Token& size = expect(TokenKind::Number, "the bytes to copy: 4, 8 or 16");
        const unsigned bytes = size.text == "4" ? 4 : size.text == "8" ? 8 : size.text == "16" ? 16 : 0;
        if (bytes == 0) fail(size, fmt::format("async_copy copies 4, 8 or 16 bytes, not {}", size.text));
        expect_symbol(")");
        return build(start, [&] { return AsyncCopy::make(array, array_index, buffer, buffer_index, bytes); });
      }
      if (start.text == "return") {
        take();
        return Return::make();
      }
    }
    std::string name = take().text;
    if (peek_symbol("[")) {
      take();
      buffer_element(name, start);
      Expr index = parse_expr();
      expect_symbol("]");
      if (peek_symbol(".") && peek_identifier("as", 1) && peek_symbol("<", 2)) {  // w[i].as<u32> = v
        take();
        take();
        Type type = parse_type_argument();
        expect_symbol("=");
        Expr value = parse_expr();
        if (value.type() != type) {
          fail(start, fmt::format("store to {}[...].as<{}> of a {} value; the value must be {}", name,
                                  to_string(type), to_string(value.type()), to_string(type)));
        }
        return build(start, [&] { return Store::make(name, index, value, 0, true); });
      }
      // Not a structured binding: clang before 16 cannot capture one in the lambda below
      // (the libFuzzer targets build this file with clang-14).
      const auto [lanes, alignment_value] = parse_access_suffix();
      const unsigned alignment = alignment_value;
      expect_symbol("=");
      Expr value = parse_expr();
      if (value.type().lanes() != lanes) {
        fail(start, fmt::format("store to {}[...]{} of a {} value; write .v{} for a {}-lane store", name,
                                lanes > 1 ? fmt::format(".v{}", lanes) : "", to_string(value.type()),
                                value.type().lanes(), value.type().lanes()));
      }
      return build(start, [&] { return Store::make(name, index, value, alignment); });
    }
    if (!peek_symbol("=")) fail(peek(), fmt::format("expected '=' or '[' after '{}', found {}", name, describe(peek())));
    take();
    if (!lookup(name)) fail(start, fmt::format("assignment to undeclared variable '{}'", name));
    Expr value = parse_expr();
    return build(start, [&] { return Assign::make(name, value); });
  }

  Node parse_let() {
    const Token& start = take();
    std::string name = expect_name("a variable name");
    expect_symbol(":");
    const Token& type_token = peek();
    Type type = parse_type();
    expect_symbol("=");
    Expr value = parse_expr();
    if (value.type() != type) {
      fail(type_token, fmt::format("let {} is declared {} but its value has type {}", name, to_string(type),
                                   to_string(value.type())));
    }
    scopes_.back()[name] = type;
    return build(start, [&] { return Let::make(name, value); });
  }

  Node parse_if() {
    const Token& start = take();
    Expr cond = parse_expr();
    Node then_body = parse_block();
    Node else_body;
    if (peek_identifier("else")) {
      take();
      else_body = parse_block();
    }
    return build(start, [&] { return If::make(cond, then_body, else_body); });
  }

  Node parse_loop() {
    const Token& start = take();
    std::string var = expect_name("a loop variable name");
    expect_symbol(":");
    const Token& type_token = peek();
    Type type = parse_type();
    expect_identifier("in");
    Expr from = parse_expr();
    expect_symbol("..");
    Expr to = parse_expr();
    if (from.type() != type || to.type() != type) {
      fail(type_token, fmt::format("loop {} is declared {} but its bounds have types {} and {}", var, to_string(type),
                                   to_string(from.type()), to_string(to.type())));
    }
    scopes_.push_back({{var, type}});
    Node body = parse_block();
    scopes_.pop_back();
    return build(start, [&] { return Loop::make(var, from, to, body); });
  }

  // --- expressions ----------------------------------------------------------------
  Expr parse_expr() {
    Nested nested(*this);
    const Token& start = peek();
    if (start.kind == TokenKind::Number) return parse_number_literal(take());
    if (start.kind == TokenKind::Symbol && start.text == "(") return parse_binary();
    if (start.kind != TokenKind::Identifier) fail(start, fmt::format("expected an expression, found {}", describe(start)));
    const std::string& name = start.text;
    if (name == "true" || name == "false") {
      take();
      return Literal::boolean(name == "true");
    }
    bool is_call = peek_symbol("(", 1);
    if (is_call) {
      if (std::optional<ScalarType> type = parse_scalar_type(name); type && is_float(*type)) {
        return parse_special_float(*type);
      }
      if (Expr call = parse_call(); call.defined()) return call;
    }
    if ((name == "cast" || name == "bitcast") && peek_symbol("<", 1)) {
      take();
      Type type = parse_type_argument();
      std::vector<Expr> args = parse_arguments(1);
      if (name == "bitcast") return build(start, [&] { return Bitcast::make(type, args[0]); });
      return build(start, [&] { return Cast::make(type, args[0]); });
    }
    if (name == "subgroup_load_matrix" && peek_symbol("<", 1)) {  // subgroup_load_matrix<4, trans>(tile[i])
      take();
      expect_symbol("<");
      const Token& count_token = expect(TokenKind::Number, "the number of 8x8 matrices, 1, 2 or 4");
      const unsigned matrices = count_token.text == "1" ? 1 : count_token.text == "2" ? 2 : count_token.text == "4" ? 4 : 0;
      if (matrices == 0) fail(count_token, fmt::format("subgroup_load_matrix<{}>: ldmatrix loads 1, 2 or 4 matrices", count_token.text));
      bool transpose = false;
      if (peek_symbol(",")) {
        take();
        const Token& word = expect(TokenKind::Identifier, "trans");
        if (word.text != "trans") fail(word, fmt::format("expected 'trans' after the matrix count, found '{}'", word.text));
        transpose = true;
      }
      expect_symbol(">");
      expect_symbol("(");
      const Token& array_token = expect(TokenKind::Identifier, "a workgroup array");
      const std::string array = array_token.text;
      expect_symbol("[");
      Expr index = parse_expr();
      expect_symbol("]");
      expect_symbol(")");
      return build(start, [&] { return SubgroupLoadMatrix::make(array, index, matrices, transpose); });
    }
    if (name == "subgroup_mma" && peek_symbol("<", 1)) {  // subgroup_mma<f16>(a, b, c)
      take();
      const Token& type_token = peek();
      const Type input = parse_type_argument();
      if (input.is_vector()) fail(type_token, fmt::format("subgroup_mma<{}>: name the element type, f16 or bf16", to_string(input)));
      std::vector<Expr> args = parse_arguments(3);
      return build(start, [&] { return SubgroupMma::make(input.element(), args[0], args[1], args[2]); });
    }
    if (name == "lookup" && peek_symbol("<", 1)) return parse_lookup();
    if (Expr builtin = parse_builtin(); builtin.defined()) return builtin;
    take();
    if (peek_symbol("[")) {
      take();
      ScalarType element = buffer_element(name, start);
      Expr index = parse_expr();
      expect_symbol("]");
      if (peek_symbol(".") && peek_identifier("as", 1) && peek_symbol("<", 2)) {  // w[i].as<u32x4>
        take();
        take();
        Type type = parse_type_argument();
        return build(start, [&] { return Load::make(type, name, index, 0, true); });
      }
      const std::pair<unsigned, unsigned> access = parse_access_suffix();  // captured: no structured binding
      return build(start, [&] { return Load::make(Type(element, access.first), name, index, access.second); });
    }
    std::optional<Type> type = lookup(name);
    if (!type) fail(start, fmt::format("use of undeclared variable '{}'", name));
    return Var::make(*type, name);
  }

  Expr parse_binary() {
    const Token& start = take();  // "("
    Expr lhs = parse_expr();
    const Token& op_token = peek();
    std::optional<BinaryOp> op;
#define QUANTC_MATCH(name, symbol) \
  if (op_token.kind == TokenKind::Symbol && op_token.text == symbol) op = BinaryOp::name;
    QUANTC_BINARY_OPS(QUANTC_MATCH)
#undef QUANTC_MATCH
    if (!op || *op == BinaryOp::Min || *op == BinaryOp::Max) {
      fail(op_token, fmt::format("expected a binary operator, found {}", describe(op_token)));
    }
    take();
    Expr rhs = parse_expr();
    expect_symbol(")");
    return build(start, [&] { return Binary::make(*op, lhs, rhs); });
  }

  /// Named calls `name(args)`; undefined when `name` is not a call form.
  Expr parse_call() {
    const Token& start = peek();
    const std::string name = start.text;
    auto unary = [&](UnaryOp op) {
      take();
      std::vector<Expr> args = parse_arguments(1);
      return build(start, [&] { return Unary::make(op, args[0]); });
    };
    auto reduce = [&](SubgroupReduceOp op) {
      take();
      std::vector<Expr> args = parse_arguments(1);
      return build(start, [&] { return SubgroupReduce::make(op, args[0]); });
    };
    if (name == "min" || name == "max") {
      take();
      std::vector<Expr> args = parse_arguments(2);
      return build(start, [&] { return Binary::make(name == "min" ? BinaryOp::Min : BinaryOp::Max, args[0], args[1]); });
    }
    if (name == "neg") return unary(UnaryOp::Neg);
    if (name == "not") return unary(UnaryOp::Not);
    if (name == "abs") return unary(UnaryOp::Abs);
    if (name == "round") return unary(UnaryOp::Round);
    if (name == "subgroup_add") return reduce(SubgroupReduceOp::Add);
    if (name == "subgroup_max") return reduce(SubgroupReduceOp::Max);
    if (name == "subgroup_min") return reduce(SubgroupReduceOp::Min);
    if (name == "select") {
      take();
      std::vector<Expr> args = parse_arguments(3);
      return build(start, [&] { return Select::make(args[0], args[1], args[2]); });
    }
    if (name == "fma") {
      take();
      std::vector<Expr> args = parse_arguments(3);
      return build(start, [&] { return Fma::make(args[0], args[1], args[2]); });
    }
    if (name == "subgroup_shuffle") {
      take();
      std::vector<Expr> args = parse_arguments(2);
      return build(start, [&] { return SubgroupShuffle::make(args[0], args[1]); });
    }
    if (name == "permute") {
      take();
      std::vector<Expr> args = parse_arguments(3);
      return build(start, [&] { return Permute::make(args[0], args[1], args[2]); });
    }
    if (name == "make_vector") {
      take();
      std::vector<Expr> args = parse_argument_list();
      return build(start, [&] { return MakeVector::make(args); });
    }
    if (name == "extract_lane" || name == "insert_lane") {
      take();
      expect_symbol("(");
      Expr vector = parse_expr();
      expect_symbol(",");
      auto lane = static_cast<unsigned>(parse_unsigned(255));  // the factory names a lane past the vector
      if (name == "extract_lane") {
        expect_symbol(")");
        return build(start, [&] { return ExtractLane::make(vector, lane); });
      }
      expect_symbol(",");
      Expr value = parse_expr();
      expect_symbol(")");
      return build(start, [&] { return InsertLane::make(vector, lane, value); });
    }
    if (name == "subgroup_ballot") {
      take();
      std::vector<Expr> args = parse_arguments(1);
      return build(start, [&] { return SubgroupBallot::make(args[0]); });
    }
    if (name == "atomic_add") {  // atomic_add(buffer[index], value)
      take();
      expect_symbol("(");
      const Token& buffer_token = peek();
      std::string buffer = expect_name("a buffer name");
      buffer_element(buffer, buffer_token);
      expect_symbol("[");
      Expr index = parse_expr();
      expect_symbol("]");
      expect_symbol(",");
      Expr value = parse_expr();
      expect_symbol(")");
      return build(start, [&] { return AtomicAdd::make(buffer, index, value); });
    }
    if (name == "len") {
      take();
      expect_symbol("(");
      const Token& buffer_token = peek();
      std::string buffer = expect_name("a buffer name");
      buffer_element(buffer, buffer_token);
      expect_symbol(")");
      return BufferLength::make(buffer);
    }
    return Expr();
  }

  Expr parse_builtin() {
    const Token& start = peek();
    static constexpr std::pair<std::string_view, BuiltinKind> kAxisBuiltins[] = {
        {"invocation_id", BuiltinKind::InvocationId},
        {"workgroup_id", BuiltinKind::WorkgroupId},
        {"local_id", BuiltinKind::LocalId}};
    for (const auto& [text, kind] : kAxisBuiltins) {
      if (start.text != text || !peek_symbol(".", 1)) continue;
      take();
      take();
      const Token& axis = expect(TokenKind::Identifier, "an axis x, y or z");
      static constexpr std::string_view kAxes = "xyz";
      std::size_t index = axis.text.size() == 1 ? kAxes.find(axis.text[0]) : std::string_view::npos;
      if (index == std::string_view::npos) fail(axis, fmt::format("unknown axis '{}'; expected x, y or z", axis.text));
      return Builtin::make(kind, static_cast<unsigned>(index));
    }
    if (start.text == "subgroup_local_id" || start.text == "subgroup_size") {
      take();
      return Builtin::make(start.text == "subgroup_size" ? BuiltinKind::SubgroupSize : BuiltinKind::SubgroupLocalId);
    }
    return Expr();
  }

  Expr parse_lookup() {
    const Token& start = take();
    expect_symbol("<");
    ScalarType type = parse_scalar_type_name();
    expect_symbol(">");
    expect_symbol("[");
    std::vector<std::uint64_t> table;
    while (!peek_symbol("]")) {
      if (!table.empty()) expect_symbol(",");
      const Token& entry_token = peek();
      Expr entry = parse_expr();
      const Literal* literal = entry.as<Literal>();
      if (literal == nullptr || literal->scalar() != type) {
        fail(entry_token, fmt::format("lookup<{}> table entries must be {} literals", to_string(type), to_string(type)));
      }
      table.push_back(literal->bits);
    }
    take();
    std::vector<Expr> args = parse_arguments(1);
    return build(start, [&] { return Lookup::make(type, table, args[0]); });
  }

  Type parse_type_argument() {
    expect_symbol("<");
    Type type = parse_type();
    expect_symbol(">");
    return type;
  }

  /// `(a, b, ...)` with at least one argument.
  std::vector<Expr> parse_argument_list() {
    expect_symbol("(");
    std::vector<Expr> args{parse_expr()};
    while (peek_symbol(",")) {
      take();
      args.push_back(parse_expr());
    }
    expect_symbol(")");
    return args;
  }

  std::vector<Expr> parse_arguments(std::size_t count) {
    expect_symbol("(");
    std::vector<Expr> args;
    for (std::size_t i = 0; i < count; ++i) {
      if (i) expect_symbol(",");
      args.push_back(parse_expr());
    }
    expect_symbol(")");
    return args;
  }

  /// `f32(inf)`, `f32(-inf)`, `f32(nan 0x7fc00000)`.
  Expr parse_special_float(ScalarType type) {
    take();
    expect_symbol("(");
    bool negative = false;
    if (peek_symbol("-")) {
      take();
      negative = true;
    }
    const Token& word = expect(TokenKind::Identifier, "inf or nan");
    Expr result;
    if (word.text == "inf") {
      double infinity = std::numeric_limits<double>::infinity();
      result = Literal::from_double(type, negative ? -infinity : infinity);
    } else if (word.text == "nan" && !negative) {
      const Token& bits_token = expect(TokenKind::Number, "the NaN's bits in hexadecimal (0x7fc00000)");
      std::uint64_t bits = 0;
      const char* begin = bits_token.text.data();
      const char* end = begin + bits_token.text.size();
      bool hex = bits_token.text.size() > 2 && bits_token.text[0] == '0' && (bits_token.text[1] == 'x');
      auto [stop, error] = std::from_chars(begin + (hex ? 2 : 0), end, bits, hex ? 16 : 10);
      if (error != std::errc() || stop != end) fail(bits_token, fmt::format("bad NaN bits '{}'", bits_token.text));
      result = Literal::make(type, bits);
      if (result.as<Literal>()->bits != bits || !std::isnan(result.as<Literal>()->as_double())) {
        fail(bits_token, fmt::format("'{}' is not the bit pattern of a {} NaN", bits_token.text, to_string(type)));
      }
    } else {
      fail(word, fmt::format("expected inf, -inf or nan BITS inside {}(...), found '{}'", to_string(type), word.text));
    }
    expect_symbol(")");
    return result;
  }

  Expr parse_number_literal(const Token& token) {
    const std::string& text = token.text;
    std::size_t suffix_at = text.find_first_of("uifb");
    if (suffix_at == std::string::npos) {
      fail(token, fmt::format("literal '{}' lacks its type suffix (write e.g. {}u32 or {}f32)", text, text, text));
    }
    std::string_view digits(text.data(), suffix_at);
    std::optional<ScalarType> type = parse_scalar_type(std::string_view(text).substr(suffix_at));
    if (!type || *type == ScalarType::Bool || is_storage_only(*type)) {
      fail(token, fmt::format("unknown literal type suffix '{}'", text.substr(suffix_at)));
    }
    if (is_float(*type)) {
      std::string owned(digits);
      char* end = nullptr;
      double value = *type == ScalarType::F64 ? std::strtod(owned.c_str(), &end) : std::strtof(owned.c_str(), &end);
      if (owned.empty() || end != owned.c_str() + owned.size()) fail(token, fmt::format("bad float literal '{}'", text));
      return *type == ScalarType::F32 ? Literal::f32(static_cast<float>(value)) : Literal::from_double(*type, value);
    }
    std::uint64_t bits = 0;
    std::errc error{};
    const char* end = nullptr;
    if (is_signed(*type)) {
      std::int64_t value = 0;
      auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      error = result.ec;
      end = result.ptr;
      bits = static_cast<std::uint64_t>(value);
    } else {
      auto result = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
      error = result.ec;
      end = result.ptr;
    }
    if (error != std::errc() || end != digits.data() + digits.size()) {
      fail(token, fmt::format("bad integer literal '{}'", text));
    }
    Expr literal = Literal::make(*type, bits);
    if (literal.as<Literal>()->bits != bits) {
      fail(token, fmt::format("literal '{}' is out of range for {}", text, to_string(*type)));
    }
    return literal;
  }

  // --- names and factories --------------------------------------------------------
  std::optional<Type> lookup(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto found = scope->find(name);
      if (found != scope->end()) return found->second;
    }
    return std::nullopt;
  }

  ScalarType buffer_element(const std::string& name, const Token& at) const {
    if (const SharedDecl* array = program_ ? program_->find_shared(name) : nullptr) return array->element;
    const BufferDecl* buffer = program_ ? program_->find_buffer(name) : nullptr;
    if (buffer == nullptr) fail(at, fmt::format("use of undeclared buffer '{}'", name));
    return buffer->element;
  }

  /// Runs a validating factory, reporting its IRError at `at`.
  template <class Factory>
  auto build(const Token& at, Factory factory) -> decltype(factory()) {
    try {
      return factory();
    } catch (const ParseError&) {
      throw;
    } catch (const IRError& error) {
      fail(at, error.what());
    }
  }

  std::string source_;
  std::vector<Token> tokens_;
  std::size_t position_ = 0;
  const Program* program_;
  std::vector<std::map<std::string, Type>> scopes_;
  std::uint32_t depth_ = 0;  // see Nested
};

}  // namespace

Program parse_program(std::string_view text, std::string_view source_name) {
  return Parser(text, std::string(source_name), nullptr).parse_program();
}

Expr parse_expr(std::string_view text, const std::map<std::string, Type>& variables, const Program* program) {
  return Parser(text, "<expr>", program).parse_standalone_expr(variables);
}

}  // namespace quantc::ir
