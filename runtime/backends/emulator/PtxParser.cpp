// PTX text -> decoded Module (see PtxModule.h). A tokenizer, a recursive reader for
// module-level directives and kernel bodies, and one decoder per instruction family.
#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "ir/Arithmetic.h"
#include "runtime/backends/emulator/PtxModule.h"

namespace quantc::runtime::emulator {

namespace {

std::optional<ValueType> type_named(std::string_view directive_word) {
  // ".b32" -> ValueType::B32
  if (!directive_word.starts_with(".")) return std::nullopt;
  return ptx::parse_value_type(directive_word.substr(1));
}

}  // namespace

const Kernel* Module::find(const std::string& name) const {
  for (const Kernel& kernel : kernels)
    if (kernel.name == name) return &kernel;
  return nullptr;
}

namespace {

struct Token {
  std::string text;
  std::uint32_t line = 0;
  bool is_punctuation() const { return text.size() == 1 && std::strchr(",;:{}()[]<>+-|!@=", text[0]); }
};

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}

/// "2.5e", "1E", ".5e": digits and at most a point, then the exponent letter, so a
/// following '+' or '-' is the exponent's sign, not an operator.
bool is_decimal_mantissa_with_exponent(std::string_view word) {
  if (word.size() < 2 || (word.back() != 'e' && word.back() != 'E')) return false;
  bool digit = false, point = false;
  for (char c : word.substr(0, word.size() - 1)) {
    if (std::isdigit(static_cast<unsigned char>(c))) digit = true;
    else if (c == '.' && !point) point = true;
    else return false;
  }
  return digit;
}

std::vector<Token> tokenize(const std::string& text) {
  std::vector<Token> tokens;
  std::uint32_t line = 1;
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') { ++line; ++i; continue; }
    if (std::isspace(static_cast<unsigned char>(c))) { ++i; continue; }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      i += 2;
      while (i + 1 < text.size() && !(text[i] == '*' && text[i + 1] == '/')) {
        if (text[i] == '\n') ++line;
        ++i;
      }
      i += 2;
      continue;
    }
    if (c == '"') {  // string literal (only in .pragma / .file): one token
      std::size_t start = i++;
      while (i < text.size() && text[i] != '"') ++i;
      tokens.push_back({text.substr(start, ++i - start), line});
      continue;
    }
    if (is_word_char(c)) {
      std::size_t start = i;
      // "::" belongs to words like .shared::cta and .L2::128B; a lone ':' ends a label.
      while (i < text.size() && (is_word_char(text[i]) || (text[i] == ':' && i + 1 < text.size() && text[i + 1] == ':' &&
                                                           i + 2 < text.size() && is_word_char(text[i + 2])))) {
        i += (text[i] == ':') ? 2 : 1;
      }
      // The signed exponent of a decimal float (2.5e-1, 1E+3) belongs to the literal.
      if (is_decimal_mantissa_with_exponent(std::string_view(text).substr(start, i - start)) && i + 1 < text.size() &&
          (text[i] == '+' || text[i] == '-') && std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
        ++i;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
      }
      tokens.push_back({text.substr(start, i - start), line});
      continue;
    }
    if (std::strchr(",;:{}()[]<>+-|!@=", c)) {
      tokens.push_back({std::string(1, c), line});
      ++i;
      continue;
    }
    throw PtxParseError(fmt::format("PTX line {}: unexpected character '{}'", line, c));
  }
  return tokens;
}

/// A literal as written: an integer, or float bits from 0f/0d or a decimal float.
struct Literal {
  enum class Kind { Integer, Float32, Float64 } kind = Kind::Integer;
  std::uint64_t bits = 0;
};

std::optional<Literal> parse_literal(std::string_view text, bool negative) {
  // A digit first, or a decimal float starting with its point (.5).
  const bool leading_point = text.size() > 1 && text[0] == '.' && std::isdigit(static_cast<unsigned char>(text[1]));
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || leading_point)) return std::nullopt;
  Literal literal;
  auto parse_hex = [](std::string_view digits, std::uint64_t& value) {
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
    return error == std::errc() && end == digits.data() + digits.size();
  };
  if (text.size() > 2 && (text[1] == 'f' || text[1] == 'F') && text[0] == '0') {
    if (!parse_hex(text.substr(2), literal.bits)) return std::nullopt;
    literal.kind = Literal::Kind::Float32;
    if (negative) literal.bits ^= 0x80000000u;
    return literal;
  }
  if (text.size() > 2 && (text[1] == 'd' || text[1] == 'D') && text[0] == '0') {
    if (!parse_hex(text.substr(2), literal.bits)) return std::nullopt;
    literal.kind = Literal::Kind::Float64;
    if (negative) literal.bits ^= 0x8000000000000000ull;
    return literal;
  }
  if (text.back() == 'U' || text.back() == 'u') text.remove_suffix(1);
  std::uint64_t value = 0;
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;  // checked before the decimal-float test: 0xea is an integer
    text.remove_prefix(2);
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    base = 2;
    text.remove_prefix(2);
  } else if (text.find_first_of(".eE") != std::string_view::npos) {
    // A decimal float literal (PTX ISA 4.5.1: digits with '.' and/or an exponent).
    double number = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    literal.kind = Literal::Kind::Float64;
    literal.bits = std::bit_cast<std::uint64_t>(negative ? -number : number);
    return literal;
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;
    text.remove_prefix(1);
  }
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  literal.bits = negative ? (~value + 1) : value;
  return literal;
}

std::optional<SpecialRegister> parse_special(std::string_view name) {
  static const std::unordered_map<std::string_view, SpecialRegister> names = {
      {"%tid.x", SpecialRegister::TidX},       {"%tid.y", SpecialRegister::TidY},
      {"%tid.z", SpecialRegister::TidZ},       {"%ntid.x", SpecialRegister::NtidX},
      {"%ntid.y", SpecialRegister::NtidY},     {"%ntid.z", SpecialRegister::NtidZ},
      {"%ctaid.x", SpecialRegister::CtaidX},   {"%ctaid.y", SpecialRegister::CtaidY},
      {"%ctaid.z", SpecialRegister::CtaidZ},   {"%nctaid.x", SpecialRegister::NctaidX},
      {"%nctaid.y", SpecialRegister::NctaidY}, {"%nctaid.z", SpecialRegister::NctaidZ},
      {"%laneid", SpecialRegister::LaneId},    {"%warpid", SpecialRegister::WarpId},
      {"%nwarpid", SpecialRegister::NwarpId},  {"WARP_SZ", SpecialRegister::WarpSize},
      {"%lanemask_eq", SpecialRegister::LanemaskEq}, {"%lanemask_lt", SpecialRegister::LanemaskLt},
      {"%lanemask_le", SpecialRegister::LanemaskLe}, {"%lanemask_gt", SpecialRegister::LanemaskGt},
      {"%lanemask_ge", SpecialRegister::LanemaskGe}, {"%clock", SpecialRegister::Clock},
      {"%clock64", SpecialRegister::Clock64},  {"%smid", SpecialRegister::SmId},
      {"%nsmid", SpecialRegister::NsmId},      {"%gridid", SpecialRegister::GridId},
  };
  auto it = names.find(name);
  if (it == names.end()) return std::nullopt;
  return it->second;
}

/// An operand before types are known (immediates need the instruction type).
struct RawOperand {
  enum class Kind { Register, Literal, Vector, Address, Label, Sink } kind = Kind::Register;
  bool negate = false;
  std::uint32_t reg = 0;
  Literal literal;
  std::vector<RawOperand> elements;  // vector
  std::int64_t offset = 0;           // address
  std::string label;
};

/// The module's `.target` and `.version`, against which every instruction form is checked.
struct DeclaredTarget {
  std::string name = "(none)";
  int sm = 1000;                            // no .target: every form is allowed
  ptx::PtxVersion version{99, 0};           // no .version: likewise
};

struct Symbol {
  StateSpace space;
  std::uint32_t address;
};

class KernelParser {
 public:
  KernelParser(const std::vector<Token>& tokens, std::size_t& position, const std::map<std::string, Symbol>& module_shared,
               std::uint32_t module_shared_bytes, const DeclaredTarget& target)
      : tokens_(tokens), pos_(position), position_ref_(position), module_symbols_(module_shared), target_(target) {
    kernel_.static_shared_bytes = module_shared_bytes;
  }

  Kernel parse() {
    kernel_.name = next().text;
    parse_parameters();
    parse_performance_directives();
    expect("{");
    scopes_.emplace_back();
    zero_slot_ = constant_slot(0);
    sink_slot_ = new_slot();
    parse_body();
    finish();
    position_ref_ = pos_;
    return std::move(kernel_);
  }

 private:
  const Token& peek(std::size_t ahead = 0) const {
    if (pos_ + ahead >= tokens_.size()) {
      static const Token end{"<end of file>", 0};
      return end;
    }
    return tokens_[pos_ + ahead];
  }
  const Token& next() {
    const Token& token = peek();
    if (pos_ >= tokens_.size()) fail(token, "unexpected end of PTX text");
    ++pos_;
    return token;
  }
  void expect(std::string_view text) {
    const Token& token = next();
    if (token.text != text) fail(token, fmt::format("expected '{}' but found '{}'", text, token.text));
  }
  [[noreturn]] void fail(const Token& token, const std::string& message) const {
    throw PtxParseError(fmt::format("PTX line {} (kernel {}): {}", token.line, kernel_.name, message));
  }
  std::uint32_t parse_unsigned(const Token& token) {
    auto literal = parse_literal(token.text, false);
    if (!literal || literal->kind != Literal::Kind::Integer) fail(token, fmt::format("expected an integer, found '{}'", token.text));
    return static_cast<std::uint32_t>(literal->bits);
  }

  std::uint32_t new_slot() { return kernel_.register_count++; }
  std::uint32_t constant_slot(std::uint64_t value) {
    auto [it, inserted] = constants_.try_emplace(value, 0);
    if (inserted) {
      it->second = new_slot();
      kernel_.constants.emplace_back(it->second, value);
    }
    return it->second;
  }
  std::uint32_t special_slot(SpecialRegister special) {
    auto [it, inserted] = specials_.try_emplace(static_cast<int>(special), 0);
    if (inserted) {
      it->second = new_slot();
      kernel_.special_slots.emplace_back(it->second, special);
    }
    return it->second;
  }

  void parse_parameters() {
    expect("(");
    std::uint32_t offset = 0;
    while (peek().text != ")") {
      const Token& start = next();
      if (start.text != ".param") fail(start, fmt::format("expected .param, found '{}'", start.text));
      std::uint32_t align = 0;
      ValueType type = ValueType::None;
      while (peek().text.starts_with(".")) {
        const Token& word = next();
        if (word.text == ".align") { align = parse_unsigned(next()); continue; }
        if (word.text == ".ptr" || word.text == ".global" || word.text == ".const" || word.text == ".shared" || word.text == ".local")
          continue;  // pointer attributes: informational only
        auto parsed = type_named(word.text);
        if (!parsed) fail(word, fmt::format("unsupported parameter attribute '{}'", word.text));
        type = *parsed;
      }
      if (type == ValueType::None) fail(start, "kernel parameter without a type");
      std::string name = next().text;
      std::uint32_t size = ptx::bit_width(type) / 8;
      if (peek().text == "[") {
        next();
        size *= parse_unsigned(next());
        expect("]");
      }
      if (align == 0) align = ptx::bit_width(type) / 8;
      offset = (offset + align - 1) / align * align;
      kernel_.parameters.push_back({name, type, offset, size});
      symbols().emplace(name, Symbol{StateSpace::Param, offset});
      offset += size;
      if (peek().text == ",") next();
    }
    expect(")");
    kernel_.parameter_bytes = offset;
  }

  void parse_performance_directives() {
    while (peek().text != "{") {
      const Token& directive = next();
      if (directive.text == ".maxntid" || directive.text == ".reqntid") {
        std::array<std::uint32_t, 3> sizes{1, 1, 1};
        for (int i = 0; i < 3; ++i) {
          sizes[i] = parse_unsigned(next());
          if (peek().text != ",") break;
          next();
        }
        kernel_.max_threads = sizes;
      } else if (directive.text == ".minnctapersm" || directive.text == ".maxnreg" || directive.text == ".maxnctapersm") {
        next();
      } else if (directive.text == ".noreturn") {
      } else {
        fail(directive, fmt::format("unsupported kernel directive '{}'", directive.text));
      }
      if (peek().text == ";") next();
    }
  }

  std::map<std::string, Symbol>& symbols() { return symbols_; }

  std::optional<std::uint32_t> find_register(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto it = scope->find(name);
      if (it != scope->end()) return it->second;
    }
    return std::nullopt;
  }

  void parse_register_declaration() {
    // .reg .b32 %r<6>;   .reg .f32 %f1, %f2;   .reg .v2 .b32 ... (unsupported)
    const Token& type_token = next();
    if (type_token.text == ".v2" || type_token.text == ".v4") fail(type_token, "vector registers are not supported");
    if (!type_named(type_token.text)) fail(type_token, fmt::format("unknown register type '{}'", type_token.text));
    while (true) {
      std::string name = next().text;
      if (peek().text == "<") {
        next();
        std::uint32_t count = parse_unsigned(next());
        expect(">");
        for (std::uint32_t i = 0; i < count; ++i) scopes_.back()[name + std::to_string(i)] = new_slot();
      } else {
        scopes_.back()[name] = new_slot();
      }
      if (peek().text == ",") { next(); continue; }
      break;
    }
    expect(";");
  }

  void parse_variable(StateSpace space, bool external) {
    // .shared .align 4 .b8 name[128];   .local .align 8 .b8 __local_depot0[32];
    std::uint32_t align = 1, element_size = 1;
    while (peek().text.starts_with(".")) {
      const Token& word = next();
      if (word.text == ".align") { align = parse_unsigned(next()); continue; }
      auto type = type_named(word.text);
      if (!type) fail(word, fmt::format("unsupported variable attribute '{}'", word.text));
      element_size = std::max(1u, ptx::bit_width(*type) / 8);
      align = std::max(align, element_size);
    }
    const Token& name = next();
    std::uint32_t count = 1;
    if (peek().text == "[") {
      next();
      if (peek().text == "]") {
        if (!external || space != StateSpace::Shared) fail(name, "only `.extern .shared` arrays may be unsized");
        count = 0;
      } else {
        count = parse_unsigned(next());
      }
      expect("]");
    }
    if (peek().text == "=") fail(name, fmt::format("initialized variable '{}' is not supported", name.text));
    expect(";");
    std::uint32_t& size = space == StateSpace::Shared ? kernel_.static_shared_bytes : kernel_.local_bytes;
    size = (size + align - 1) / align * align;
    if (external) {  // dynamic shared memory lives in its own window of the shared space
      symbols().emplace(name.text, Symbol{space, kDynamicSharedBase});
      return;
    }
    symbols().emplace(name.text, Symbol{space, size});
    size += count * element_size;
  }

  void parse_body() {
    while (true) {
      const Token& token = peek();
      if (token.text == "}") {
        next();
        scopes_.pop_back();
        if (scopes_.empty()) return;
        continue;
      }
      if (token.text == "{") { next(); scopes_.emplace_back(); continue; }
      if (token.text == ".reg") { next(); parse_register_declaration(); continue; }
      if (token.text == ".shared") { next(); parse_variable(StateSpace::Shared, false); continue; }
      if (token.text == ".local") { next(); parse_variable(StateSpace::Local, false); continue; }
      if (token.text == ".extern") {
        next();
        if (next().text != ".shared") fail(token, "only `.extern .shared` is supported inside a kernel");
        parse_variable(StateSpace::Shared, true);
        continue;
      }
      if (token.text == ".pragma") { while (next().text != ";") {} continue; }
      if (token.text == ".loc" || token.text == ".file") { skip_line(token.line); continue; }
      if (token.text.starts_with(".")) fail(token, fmt::format("unsupported directive '{}' in a kernel body", token.text));
      if (peek(1).text == ":" && token.text != "@") {
        labels_[token.text] = static_cast<std::uint32_t>(kernel_.code.size());
        next();
        next();
        continue;
      }
      parse_instruction();
    }
  }

  void skip_line(std::uint32_t line) {
    while (pos_ < tokens_.size() && tokens_[pos_].line == line) ++pos_;
  }

  RawOperand parse_register_or_symbol(const Token& token) {
    RawOperand operand;
    if (token.text == "_") { operand.kind = RawOperand::Kind::Sink; return operand; }
    if (auto reg = find_register(token.text)) { operand.reg = *reg; return operand; }
    if (auto special = parse_special(token.text)) { operand.reg = special_slot(*special); return operand; }
    auto symbol = find_symbol(token.text);
    if (symbol) {
      operand.kind = RawOperand::Kind::Literal;
      operand.literal.bits = symbol->address;
      return operand;
    }
    if (auto literal = parse_literal(token.text, false)) {
      operand.kind = RawOperand::Kind::Literal;
      operand.literal = *literal;
      return operand;
    }
    // A label (bra target); resolved after the body.
    operand.kind = RawOperand::Kind::Label;
    operand.label = token.text;
    return operand;
  }

  std::optional<Symbol> find_symbol(const std::string& name) {
    auto it = symbols_.find(name);
    if (it != symbols_.end()) return it->second;
    auto module_it = module_symbols_.find(name);
    if (module_it != module_symbols_.end()) return module_it->second;
    return std::nullopt;
  }

  RawOperand parse_operand() {
    const Token& token = next();
    if (token.text == "[") {
      RawOperand operand;
      operand.kind = RawOperand::Kind::Address;
      operand.reg = zero_slot_;
      bool first = true;
      while (peek().text != "]") {
        const Token& part = next();
        bool negative = false;
        if (part.text == "+" || part.text == "-") {
          negative = part.text == "-";
          const Token* value = &next();
          if (value->text == "-") { negative = !negative; value = &next(); }
          auto literal = parse_literal(value->text, negative);
          if (!literal) fail(*value, fmt::format("bad address offset '{}'", value->text));
          operand.offset += static_cast<std::int64_t>(literal->bits);
          continue;
        }
        if (!first) fail(part, fmt::format("unexpected '{}' in an address", part.text));
        RawOperand base = parse_register_or_symbol(part);
        if (base.kind == RawOperand::Kind::Register) operand.reg = base.reg;
        else if (base.kind == RawOperand::Kind::Literal) operand.offset += static_cast<std::int64_t>(base.literal.bits);
        else fail(part, fmt::format("unknown register or symbol '{}' in an address", part.text));
        first = false;
      }
      next();
      return operand;
    }
    if (token.text == "{") {
      RawOperand operand;
      operand.kind = RawOperand::Kind::Vector;
      while (true) {
        operand.elements.push_back(parse_operand());
        const Token& separator = next();
        if (separator.text == "}") break;
        if (separator.text != ",") fail(separator, "expected ',' or '}' in a vector operand");
      }
      return operand;
    }
    if (token.text == "!") {
      RawOperand operand = parse_operand();
      operand.negate = true;
      return operand;
    }
    if (token.text == "-") {
      const Token& value = next();
      auto literal = parse_literal(value.text, true);
      if (!literal) fail(value, fmt::format("bad literal '-{}'", value.text));
      RawOperand operand;
      operand.kind = RawOperand::Kind::Literal;
      operand.literal = *literal;
      return operand;
    }
    if (token.is_punctuation()) fail(token, fmt::format("unexpected '{}' in an operand list", token.text));
    RawOperand operand = parse_register_or_symbol(token);
    if (operand.kind == RawOperand::Kind::Label && token.text.starts_with("%"))
      fail(token, fmt::format("undeclared register '{}'", token.text));
    return operand;
  }

  void parse_instruction() {
    std::size_t start = pos_;
    Instruction instruction;
    instruction.line = peek().line;
    if (peek().text == "@") {
      next();
      if (peek().text == "!") { next(); instruction.guard_negate = true; }
      const Token& predicate = next();
      auto reg = find_register(predicate.text);
      if (!reg) fail(predicate, fmt::format("undeclared guard predicate '{}'", predicate.text));
      instruction.guard = static_cast<std::int32_t>(*reg);
    }
    const Token& opcode = next();
    try {  // an unknown opcode is reported before its operands, which may not parse as ours
      ptx::parse_mnemonic(opcode.text);
    } catch (const ptx::PtxSyntaxError& error) {
      fail(opcode, error.what());
    }
    std::vector<RawOperand> operands;
    while (peek().text != ";") {
      operands.push_back(parse_operand());
      if (peek().text == "|") {
        next();
        RawOperand predicate = parse_operand();
        if (predicate.kind != RawOperand::Kind::Register) fail(opcode, "expected a predicate register after '|'");
        instruction.predicate_destination = static_cast<std::int32_t>(predicate.reg);
      }
      if (peek().text == ",") next();
      else if (peek().text != ";") fail(peek(), fmt::format("expected ',' or ';' but found '{}'", peek().text));
    }
    next();
    std::string text;
    for (std::size_t i = start; i < pos_; ++i) {
      if (!text.empty() && tokens_[i].text != "," && tokens_[i].text != ";" && tokens_[i].text != "]" && text.back() != '[' &&
          text.back() != '@' && text.back() != '!' && tokens_[i].text != "|" && text.back() != '|')
        text += ' ';
      text += tokens_[i].text;
    }
    try {
      decode(opcode.text, operands, instruction);
    } catch (const PtxParseError& error) {
      throw PtxParseError(fmt::format("PTX line {} (kernel {}): {} in '{}'", opcode.line, kernel_.name, error.what(), text));
    }
    kernel_.code.push_back(instruction);
    kernel_.source_text.push_back(std::move(text));
  }

  // ----- decoding -------------------------------------------------------------------

  [[noreturn]] static void unsupported(const std::string& message) { throw PtxParseError(message); }

  /// Resolves the mnemonic to its row of the instruction table, checks that the module's
  /// target and PTX version can run that form, then checks and types the operands by
  /// the row's signature (an immediate takes the type of the slot it fills).
  void decode(const std::string& word, const std::vector<RawOperand>& raw, Instruction& in) {
    try {
      static_cast<ptx::Mnemonic&>(in) = ptx::parse_mnemonic(word);
      in.form = &ptx::find_form(in);
    } catch (const ptx::PtxSyntaxError& error) {
      unsupported(error.what());
    }
    const ptx::InstructionForm& form = *in.form;
    if (target_.sm < form.min_sm || target_.version < form.min_ptx) {
      unsupported(fmt::format("'{}' needs sm_{} and PTX ISA {}, but the module declares .target {} and .version {}",
                              word, form.min_sm, form.min_ptx.to_string(), target_.name, target_.version.to_string()));
    }
    std::vector<std::pair<char, bool>> slots;  // (class letter, optional)
    bool optional = false;
    for (char c : form.operands) {
      if (c == '[') optional = true;
      else if (c == ']') optional = false;
      else slots.emplace_back(c, optional);
    }
    std::size_t required = 0;
    for (const auto& [letter, is_optional] : slots) required += is_optional ? 0 : 1;
    if (raw.size() < required || raw.size() > slots.size()) {
      unsupported(required == slots.size()
                      ? fmt::format("expected {} operands, found {}", slots.size(), raw.size())
                      : fmt::format("expected {} to {} operands, found {}", required, slots.size(), raw.size()));
    }
    for (std::size_t i = 0; i < raw.size(); ++i) {
      char letter = slots[i].first;
      if (letter == 'a' && raw[i].kind != RawOperand::Kind::Address)
        unsupported(fmt::format("operand {} must be an address [..]", i + 1));
      if (letter == 'l' && raw[i].kind != RawOperand::Kind::Label) unsupported("expected a label");
      in.operands[i] = resolve(raw[i], slot_type(letter, in));
    }
    in.operand_count = static_cast<std::uint8_t>(raw.size());
    if (in.opcode == Opcode::Ldmatrix) {
      // ldmatrix reads shared memory only; one b32 register per matrix.
      if (in.space != StateSpace::Shared) unsupported("ldmatrix reads .shared memory only");
      const Operand& d = in.operands[0];
      if (d.count != in.matrices)
        unsupported(fmt::format("ldmatrix .x{} needs {} destination registers, found {}", in.matrices, in.matrices, d.count));
    }
    if (in.opcode == Opcode::Mma) {
      // m16n8k16 with f16/bf16 inputs: D and C 4 f32 registers, A 4 and B 2 registers of packed halves.
      constexpr std::array<std::uint8_t, 4> kCounts = {4, 4, 2, 4};
      for (std::size_t i = 0; i < kCounts.size(); ++i) {
        if (in.operands[i].kind != Operand::Kind::Vector || in.operands[i].count != kCounts[i])
          unsupported(fmt::format("mma.m16n8k16 operand {} must be a {{...}} of {} registers (D, A, B, C: 4, 4, 2, 4)",
                                  i + 1, kCounts[i]));
      }
    }
    if ((in.opcode == Opcode::Ld || in.opcode == Opcode::Ldu || in.opcode == Opcode::St) && in.vector > 1) {
      const Operand& value = in.operands[in.opcode == Opcode::St ? 1 : 0];
      if (value.kind != Operand::Kind::Vector || value.count != in.vector)
        unsupported(fmt::format("a .v{} access needs a {{...}} operand with {} registers", in.vector, in.vector));
    }
  }

  /// The type an operand slot of signature class `letter` holds (see InstructionTable.h).
  static ValueType slot_type(char letter, const Instruction& in) {
    switch (letter) {
      case 't': return in.type;
      case 's': return in.source_type;
      case 'u': return ValueType::U32;
      case 'p': return ValueType::Pred;
      case 'w':
        if (in.mul_mode != MulMode::Wide) return in.type;
        switch (in.type) {
          case ValueType::U16: return ValueType::U32;
          case ValueType::S16: return ValueType::S32;
          case ValueType::U32: return ValueType::U64;
          case ValueType::S32: return ValueType::S64;
          default: return in.type;
        }
      default: return ValueType::None;  // addresses and labels
    }
  }

  std::uint64_t convert_literal(const Literal& literal, ValueType type) {
    if (type == ValueType::F32) {
      if (literal.kind == Literal::Kind::Float32) return literal.bits;
      if (literal.kind == Literal::Kind::Float64)
        return ir::arith::round_to_format(std::bit_cast<double>(literal.bits), ir::arith::FloatFormat::binary32());
      return std::bit_cast<std::uint32_t>(static_cast<float>(static_cast<std::int64_t>(literal.bits)));
    }
    if (type == ValueType::F64) {
      if (literal.kind == Literal::Kind::Float64) return literal.bits;
      if (literal.kind == Literal::Kind::Float32)
        return std::bit_cast<std::uint64_t>(static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(literal.bits))));
      return std::bit_cast<std::uint64_t>(static_cast<double>(static_cast<std::int64_t>(literal.bits)));
    }
    if (ptx::is_half(type) && literal.kind == Literal::Kind::Integer) return literal.bits;  // a bit pattern
    if (literal.kind != Literal::Kind::Integer && type != ValueType::None && !ptx::is_float(type) &&
        ptx::bit_width(type) == 32)
      return literal.bits & 0xffffffffu;  // 0f literal moved into a .b32
    return literal.bits;
  }

  Operand resolve(const RawOperand& raw, ValueType type) {
    Operand operand;
    operand.negate = raw.negate;
    switch (raw.kind) {
      case RawOperand::Kind::Register:
        operand.kind = Operand::Kind::Register;
        operand.regs[0] = raw.reg;
        operand.count = 1;
        break;
      case RawOperand::Kind::Sink:
        operand.kind = Operand::Kind::Register;
        operand.regs[0] = sink_slot_;
        operand.count = 1;
        break;
      case RawOperand::Kind::Literal:
        operand.kind = Operand::Kind::Register;
        operand.regs[0] = constant_slot(convert_literal(raw.literal, type));
        operand.count = 1;
        break;
      case RawOperand::Kind::Vector:
        if (raw.elements.size() > 4) unsupported("vector operands have at most 4 elements");
        operand.kind = Operand::Kind::Vector;
        operand.count = static_cast<std::uint8_t>(raw.elements.size());
        for (std::size_t i = 0; i < raw.elements.size(); ++i) {
          Operand element = resolve(raw.elements[i], type);
          if (element.kind != Operand::Kind::Register) unsupported("vector elements must be registers");
          operand.regs[i] = element.regs[0];
        }
        break;
      case RawOperand::Kind::Address:
        operand.kind = Operand::Kind::Address;
        operand.regs[0] = raw.reg;
        operand.offset = raw.offset;
        operand.count = 1;
        break;
      case RawOperand::Kind::Label:
        operand.kind = Operand::Kind::Label;
        label_fixups_.emplace_back(kernel_.code.size(), raw.label);
        break;
    }
    return operand;
  }

  void finish() {
    Instruction exit;
    exit.opcode = Opcode::Exit;
    exit.form = &ptx::form(ptx::Form::Exit);
    exit.line = tokens_[pos_ - 1].line;
    kernel_.code.push_back(exit);
    kernel_.source_text.push_back("exit; (implicit at the end of the kernel)");
    for (const auto& [index, label] : label_fixups_) {
      auto it = labels_.find(label);
      if (it == labels_.end())
        throw PtxParseError(fmt::format("PTX line {} (kernel {}): unknown label or symbol '{}'", kernel_.code[index].line,
                                        kernel_.name, label));
      for (Operand& operand : kernel_.code[index].operands)
        if (operand.kind == Operand::Kind::Label) operand.offset = it->second;
    }
  }

  const std::vector<Token>& tokens_;
  std::size_t pos_;
  std::size_t& position_ref_;
  const std::map<std::string, Symbol>& module_symbols_;
  const DeclaredTarget& target_;
  Kernel kernel_;
  std::vector<std::map<std::string, std::uint32_t>> scopes_;
  std::map<std::string, Symbol> symbols_;
  std::map<std::uint64_t, std::uint32_t> constants_;
  std::map<int, std::uint32_t> specials_;
  std::map<std::string, std::uint32_t> labels_;
  std::vector<std::pair<std::size_t, std::string>> label_fixups_;
  std::uint32_t zero_slot_ = 0;
  std::uint32_t sink_slot_ = 0;
};

/// Module-scope `.shared` (static, shared by every kernel's CTA layout) or
/// `.extern .shared` (dynamic) variable.
void parse_module_shared(const std::vector<Token>& tokens, std::size_t& pos, bool external,
                         std::map<std::string, Symbol>& symbols, std::uint32_t& bytes) {
  if (external) ++pos;  // ".shared"
  std::uint32_t align = 1, element_size = 1;
  auto line_of = [&]() { return pos < tokens.size() ? tokens[pos].line : 0; };
  while (pos < tokens.size() && tokens[pos].text.starts_with(".")) {
    const std::string& word = tokens[pos++].text;
    if (word == ".align") { align = static_cast<std::uint32_t>(std::stoul(tokens.at(pos++).text)); continue; }
    auto type = type_named(word);
    if (!type) throw PtxParseError(fmt::format("PTX line {}: unsupported .shared attribute '{}'", line_of(), word));
    element_size = std::max(1u, ptx::bit_width(*type) / 8);
    align = std::max(align, element_size);
  }
  std::string name = tokens.at(pos++).text;
  std::uint32_t count = 1;
  if (pos < tokens.size() && tokens[pos].text == "[") {
    ++pos;
    if (tokens.at(pos).text != "]") count = static_cast<std::uint32_t>(std::stoul(tokens.at(pos++).text, nullptr, 0));
    ++pos;
  }
  if (pos < tokens.size() && tokens[pos].text == "=")
    throw PtxParseError(fmt::format("PTX line {}: initialized .shared variable '{}' is not supported", line_of(), name));
  ++pos;  // ';'
  if (external) {
    symbols.emplace(name, Symbol{StateSpace::Shared, kDynamicSharedBase});
    return;
  }
  bytes = (bytes + align - 1) / align * align;
  symbols.emplace(name, Symbol{StateSpace::Shared, bytes});
  bytes += count * element_size;
}

}  // namespace

Module parse_ptx(const std::string& text) {
  std::vector<Token> tokens = tokenize(text);
  Module module;
  std::map<std::string, Symbol> module_shared;
  std::uint32_t module_shared_bytes = 0;
  std::size_t pos = 0;
  DeclaredTarget declared;
  auto fail = [&](const Token& token, const std::string& message) {
    throw PtxParseError(fmt::format("PTX line {}: {}", token.line, message));
  };
  while (pos < tokens.size()) {
    const Token& token = tokens[pos++];
    if (token.text == ".version") {
      module.version = tokens.at(pos++).text;
      int major = 0, minor = 0;
      if (std::sscanf(module.version.c_str(), "%d.%d", &major, &minor) != 2)
        fail(token, fmt::format("malformed .version '{}'", module.version));
      declared.version = {major, minor};
      continue;
    }
    if (token.text == ".target") {
      module.target = tokens.at(pos++).text;
      while (pos < tokens.size() && tokens[pos].text == ",") pos += 2;
      int sm = 0;
      if (std::sscanf(module.target.c_str(), "sm_%d", &sm) == 1) {
        declared.name = module.target;
        declared.sm = sm;
      }
      continue;
    }
    if (token.text == ".address_size") {
      if (tokens.at(pos).text != "64") fail(token, "only .address_size 64 is supported");
      ++pos;
      continue;
    }
    if (token.text == ".visible" || token.text == ".weak") continue;
    if (token.text == ".entry") {
      KernelParser parser(tokens, pos, module_shared, module_shared_bytes, declared);
      module.kernels.push_back(parser.parse());
      continue;
    }
    if (token.text == ".shared" || (token.text == ".extern" && pos < tokens.size() && tokens[pos].text == ".shared")) {
      parse_module_shared(tokens, pos, token.text == ".extern", module_shared, module_shared_bytes);
      continue;
    }
    if (token.text == ".func" || token.text == ".extern")
      fail(token, "device functions (.func) and calls are not supported by the emulator");
    if (token.text == ".global" || token.text == ".const")
      fail(token, fmt::format("module-scope {} variables are not supported by the emulator", token.text));
    if (token.text == ".file" || token.text == ".section") {
      std::uint32_t line = token.line;
      while (pos < tokens.size() && tokens[pos].line == line) ++pos;
      continue;
    }
    fail(token, fmt::format("unsupported module-level directive '{}'", token.text));
  }
  return module;
}

}  // namespace quantc::runtime::emulator
