// PTX text -> decoded Module (see PtxModule.h). A tokenizer, a recursive reader for
// module-level directives and kernel bodies, and one decoder per instruction family.
#include <bit>
#include <cctype>
#include <charconv>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "runtime/backends/emulator/FloatRounding.h"
#include "runtime/backends/emulator/PtxModule.h"

namespace quantc::runtime::emulator {

unsigned bit_width(ValueType type) {
  switch (type) {
    case ValueType::None: return 0;
    case ValueType::Pred: return 1;
    case ValueType::B8: case ValueType::U8: case ValueType::S8: return 8;
    case ValueType::B16: case ValueType::U16: case ValueType::S16: case ValueType::F16: case ValueType::BF16: return 16;
    case ValueType::B32: case ValueType::U32: case ValueType::S32: case ValueType::F32:
    case ValueType::F16x2: case ValueType::BF16x2: return 32;
    case ValueType::B64: case ValueType::U64: case ValueType::S64: case ValueType::F64: return 64;
  }
  return 0;
}

bool is_signed_integer(ValueType type) {
  return type == ValueType::S8 || type == ValueType::S16 || type == ValueType::S32 || type == ValueType::S64;
}

bool is_float(ValueType type) {
  return type == ValueType::F16 || type == ValueType::F16x2 || type == ValueType::BF16 ||
         type == ValueType::BF16x2 || type == ValueType::F32 || type == ValueType::F64;
}

namespace {

const std::map<std::string_view, ValueType>& type_names() {
  static const std::map<std::string_view, ValueType> names = {
      {"pred", ValueType::Pred}, {"b8", ValueType::B8},     {"b16", ValueType::B16},     {"b32", ValueType::B32},
      {"b64", ValueType::B64},   {"u8", ValueType::U8},     {"u16", ValueType::U16},     {"u32", ValueType::U32},
      {"u64", ValueType::U64},   {"s8", ValueType::S8},     {"s16", ValueType::S16},     {"s32", ValueType::S32},
      {"s64", ValueType::S64},   {"f16", ValueType::F16},   {"f16x2", ValueType::F16x2}, {"bf16", ValueType::BF16},
      {"bf16x2", ValueType::BF16x2}, {"f32", ValueType::F32}, {"f64", ValueType::F64}};
  return names;
}

}  // namespace

const char* to_string(ValueType type) {
  for (const auto& [name, value] : type_names())
    if (value == type) return name.data();
  return "none";
}

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

std::vector<std::string_view> split_dots(std::string_view word) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= word.size()) {
    std::size_t dot = word.find('.', start);
    if (dot == std::string_view::npos) dot = word.size();
    parts.push_back(word.substr(start, dot - start));
    start = dot + 1;
  }
  return parts;
}

/// A literal as written: an integer, or float bits from 0f/0d or a decimal float.
struct Literal {
  enum class Kind { Integer, Float32, Float64 } kind = Kind::Integer;
  std::uint64_t bits = 0;
};

std::optional<Literal> parse_literal(std::string_view text, bool negative) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])))) return std::nullopt;
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
  if (text.find('.') != std::string_view::npos || text.find('e') != std::string_view::npos) {
    double number = std::stod(std::string(text));
    literal.kind = Literal::Kind::Float64;
    literal.bits = std::bit_cast<std::uint64_t>(negative ? -number : number);
    return literal;
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) { base = 16; text.remove_prefix(2); }
  else if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) { base = 2; text.remove_prefix(2); }
  else if (text.size() > 1 && text[0] == '0') { base = 8; text.remove_prefix(1); }
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

const std::map<std::string_view, Opcode>& opcode_table() {
  static const std::map<std::string_view, Opcode> table = {
        {"add", Opcode::Add},   {"sub", Opcode::Sub},     {"mul", Opcode::Mul},     {"mad", Opcode::Mad},
        {"div", Opcode::Div},   {"rem", Opcode::Rem},     {"abs", Opcode::Abs},     {"neg", Opcode::Neg},
        {"min", Opcode::Min},   {"max", Opcode::Max},     {"popc", Opcode::Popc},   {"clz", Opcode::Clz},
        {"brev", Opcode::Brev}, {"bfind", Opcode::Bfind}, {"shl", Opcode::Shl},     {"shr", Opcode::Shr},
        {"and", Opcode::And},   {"or", Opcode::Or},       {"xor", Opcode::Xor},     {"not", Opcode::Not},
        {"cnot", Opcode::Cnot}, {"lop3", Opcode::Lop3},   {"prmt", Opcode::Prmt},   {"bfe", Opcode::Bfe},
        {"bfi", Opcode::Bfi},   {"shf", Opcode::Shf},     {"dp4a", Opcode::Dp4a},   {"dp2a", Opcode::Dp2a},
        {"fma", Opcode::Fma},   {"rcp", Opcode::Rcp},     {"sqrt", Opcode::Sqrt},   {"rsqrt", Opcode::Rsqrt},
        {"ex2", Opcode::Ex2},   {"lg2", Opcode::Lg2},     {"sin", Opcode::Sin},     {"cos", Opcode::Cos},
        {"tanh", Opcode::Tanh}, {"copysign", Opcode::Copysign}, {"testp", Opcode::Testp},
        {"setp", Opcode::Setp}, {"selp", Opcode::Selp},   {"set", Opcode::Set},     {"mov", Opcode::Mov},
        {"cvt", Opcode::Cvt},   {"cvta", Opcode::Cvta},   {"ld", Opcode::Ld},       {"st", Opcode::St},
        {"atom", Opcode::Atom}, {"red", Opcode::Red},     {"shfl", Opcode::Shfl},   {"vote", Opcode::Vote},
        {"activemask", Opcode::Activemask}, {"bra", Opcode::Bra}, {"ret", Opcode::Ret}, {"exit", Opcode::Exit},
        {"bar", Opcode::Bar},   {"barrier", Opcode::Bar}, {"membar", Opcode::Nop},  {"fence", Opcode::Nop},
        {"ldu", Opcode::Ld}};
  return table;
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

struct Symbol {
  StateSpace space;
  std::uint32_t address;
};

class KernelParser {
 public:
  KernelParser(const std::vector<Token>& tokens, std::size_t& position, const std::map<std::string, Symbol>& module_shared,
               std::uint32_t module_shared_bytes)
      : tokens_(tokens), pos_(position), position_ref_(position), module_symbols_(module_shared) {
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
        auto it = type_names().find(std::string_view(word.text).substr(1));
        if (it == type_names().end()) fail(word, fmt::format("unsupported parameter attribute '{}'", word.text));
        type = it->second;
      }
      if (type == ValueType::None) fail(start, "kernel parameter without a type");
      std::string name = next().text;
      std::uint32_t size = bit_width(type) / 8;
      if (peek().text == "[") {
        next();
        size *= parse_unsigned(next());
        expect("]");
      }
      if (align == 0) align = bit_width(type) / 8;
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
    auto it = type_names().find(std::string_view(type_token.text).substr(1));
    if (it == type_names().end()) fail(type_token, fmt::format("unknown register type '{}'", type_token.text));
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
      auto it = type_names().find(std::string_view(word.text).substr(1));
      if (it == type_names().end()) fail(word, fmt::format("unsupported variable attribute '{}'", word.text));
      element_size = std::max(1u, bit_width(it->second) / 8);
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
    std::string_view base_name = std::string_view(opcode.text).substr(0, opcode.text.find('.'));
    if (!opcode_table().count(base_name))
      fail(opcode, fmt::format("unsupported instruction '{}' in '{}'", base_name, opcode.text));
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
  [[noreturn]] static void unknown_modifier(std::string_view modifier, std::string_view base) {
    unsupported(fmt::format("unsupported modifier '.{}' for '{}'", modifier, base));
  }

  static std::optional<ValueType> as_type(std::string_view part) {
    auto it = type_names().find(part);
    if (it == type_names().end()) return std::nullopt;
    return it->second;
  }

  static std::optional<Rounding> as_rounding(std::string_view part) {
    static const std::map<std::string_view, Rounding> names = {
        {"rn", Rounding::Nearest},     {"rz", Rounding::Zero},     {"rm", Rounding::Down},     {"rp", Rounding::Up},
        {"rni", Rounding::NearestInt}, {"rzi", Rounding::ZeroInt}, {"rmi", Rounding::DownInt}, {"rpi", Rounding::UpInt}};
    auto it = names.find(part);
    if (it == names.end()) return std::nullopt;
    return it->second;
  }

  static std::optional<Compare> as_compare(std::string_view part) {
    static const std::map<std::string_view, Compare> names = {
        {"eq", Compare::Eq},   {"ne", Compare::Ne},   {"lt", Compare::Lt},   {"le", Compare::Le},   {"gt", Compare::Gt},
        {"ge", Compare::Ge},   {"lo", Compare::Lo},   {"ls", Compare::Ls},   {"hi", Compare::Hi},   {"hs", Compare::Hs},
        {"equ", Compare::Equ}, {"neu", Compare::Neu}, {"ltu", Compare::Ltu}, {"leu", Compare::Leu}, {"gtu", Compare::Gtu},
        {"geu", Compare::Geu}, {"num", Compare::Num}, {"nan", Compare::Nan}};
    auto it = names.find(part);
    if (it == names.end()) return std::nullopt;
    return it->second;
  }

  static std::optional<StateSpace> as_space(std::string_view part) {
    if (part == "global") return StateSpace::Global;
    if (part == "shared" || part == "shared::cta") return StateSpace::Shared;
    if (part == "local") return StateSpace::Local;
    if (part == "param" || part == "param::entry") return StateSpace::Param;
    if (part == "const") return StateSpace::Const;
    return std::nullopt;
  }

  /// Memory-model and cache qualifiers that do not change a single-threaded-per-lane
  /// emulation's results.
  static bool is_ignorable_memory_qualifier(std::string_view part) {
    static const std::set<std::string_view> names = {
        "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "weak", "volatile", "relaxed", "acquire", "release", "acq_rel",
        "sc", "cta", "gpu", "sys", "cluster", "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first",
        "L1::evict_last", "L1::no_allocate", "L2::evict_normal", "L2::evict_first", "L2::evict_last", "L2::64B",
        "L2::128B", "L2::256B", "sync", "aligned"};
    return names.count(part) != 0;
  }

  void decode(const std::string& word, const std::vector<RawOperand>& raw, Instruction& in) {
    auto parts = split_dots(word);
    std::string_view base = parts[0];
    std::vector<std::string_view> modifiers(parts.begin() + 1, parts.end());
    std::vector<ValueType> types;

    const auto& simple = opcode_table();
    auto op_it = simple.find(base);
    if (op_it == simple.end()) unsupported(fmt::format("unsupported instruction '{}'", base));
    in.opcode = op_it->second;
    if (base == "bar" && !modifiers.empty() && modifiers[0] == "warp") {
      in.opcode = Opcode::BarWarpSync;
      modifiers.clear();
    }
    if (base == "ldu") in.space = StateSpace::Global;

    for (std::string_view m : modifiers) {
      if (auto type = as_type(m)) { types.push_back(*type); continue; }
      switch (in.opcode) {
        case Opcode::Setp: case Opcode::Set:
          if (auto compare = as_compare(m)) { in.compare = *compare; continue; }
          if (m == "and") { in.bool_op = BoolOp::And; continue; }
          if (m == "or") { in.bool_op = BoolOp::Or; continue; }
          if (m == "xor") { in.bool_op = BoolOp::Xor; continue; }
          if (m == "ftz") { in.ftz = true; continue; }
          unknown_modifier(m, base);
        case Opcode::Mul: case Opcode::Mad:
          if (m == "lo") { in.mul_mode = MulMode::Lo; continue; }
          if (m == "hi") { in.mul_mode = MulMode::Hi; continue; }
          if (m == "wide") { in.mul_mode = MulMode::Wide; continue; }
          break;
        case Opcode::Ld: case Opcode::St: case Opcode::Atom: case Opcode::Red:
          if (auto space = as_space(m)) { in.space = *space; continue; }
          if (m == "v2") { in.vector = 2; continue; }
          if (m == "v4") { in.vector = 4; continue; }
          if (is_ignorable_memory_qualifier(m)) continue;
          if (in.opcode == Opcode::Atom || in.opcode == Opcode::Red) {
            static const std::map<std::string_view, AtomicOp> atomics = {
                {"add", AtomicOp::Add}, {"min", AtomicOp::Min}, {"max", AtomicOp::Max},   {"inc", AtomicOp::Inc},
                {"dec", AtomicOp::Dec}, {"and", AtomicOp::And}, {"or", AtomicOp::Or},     {"xor", AtomicOp::Xor},
                {"exch", AtomicOp::Exch}, {"cas", AtomicOp::Cas}};
            auto it = atomics.find(m);
            if (it != atomics.end()) { in.mode = static_cast<std::uint8_t>(it->second); continue; }
            if (m == "ftz") continue;  // atom.add.ftz.f32 does not change results of normal inputs... see Executor
          }
          unknown_modifier(m, base);
        case Opcode::Shfl:
          if (m == "up") { in.mode = static_cast<std::uint8_t>(ShuffleMode::Up); continue; }
          if (m == "down") { in.mode = static_cast<std::uint8_t>(ShuffleMode::Down); continue; }
          if (m == "bfly") { in.mode = static_cast<std::uint8_t>(ShuffleMode::Butterfly); continue; }
          if (m == "idx") { in.mode = static_cast<std::uint8_t>(ShuffleMode::Index); continue; }
          if (m == "sync") continue;
          unknown_modifier(m, base);
        case Opcode::Vote:
          if (m == "all") { in.mode = static_cast<std::uint8_t>(VoteMode::All); continue; }
          if (m == "any") { in.mode = static_cast<std::uint8_t>(VoteMode::Any); continue; }
          if (m == "uni") { in.mode = static_cast<std::uint8_t>(VoteMode::Uni); continue; }
          if (m == "ballot") { in.mode = static_cast<std::uint8_t>(VoteMode::Ballot); continue; }
          if (m == "sync") continue;
          unknown_modifier(m, base);
        case Opcode::Prmt: {
          static const std::map<std::string_view, PermuteMode> modes = {
              {"f4e", PermuteMode::F4e}, {"b4e", PermuteMode::B4e}, {"rc8", PermuteMode::Rc8},
              {"ecl", PermuteMode::Ecl}, {"ecr", PermuteMode::Ecr}, {"rc16", PermuteMode::Rc16}};
          auto it = modes.find(m);
          if (it != modes.end()) { in.mode = static_cast<std::uint8_t>(it->second); continue; }
          unknown_modifier(m, base);
        }
        case Opcode::Shf:
          if (m == "l") { in.mode = 0; continue; }
          if (m == "r") { in.mode = 1; continue; }
          if (m == "wrap") { in.clamp = false; continue; }
          if (m == "clamp") { in.clamp = true; continue; }
          unknown_modifier(m, base);
        case Opcode::Bfind:
          if (m == "shiftamt") { in.clamp = true; continue; }
          unknown_modifier(m, base);
        case Opcode::Testp: {
          static const std::map<std::string_view, TestProperty> properties = {
              {"finite", TestProperty::Finite}, {"infinite", TestProperty::Infinite},
              {"number", TestProperty::Number}, {"notanumber", TestProperty::NotANumber},
              {"normal", TestProperty::Normal}, {"subnormal", TestProperty::Subnormal}};
          auto it = properties.find(m);
          if (it != properties.end()) { in.mode = static_cast<std::uint8_t>(it->second); continue; }
          unknown_modifier(m, base);
        }
        case Opcode::Cvta:
          if (m == "to") { in.to_generic = false; continue; }
          if (auto space = as_space(m)) { in.space = *space; continue; }
          unknown_modifier(m, base);
        case Opcode::Bra:
          if (m == "uni") continue;
          unknown_modifier(m, base);
        case Opcode::Bar:
          if (m == "sync" || m == "aligned" || m == "cta") continue;
          unknown_modifier(m, base);
        case Opcode::Nop:
          if (m == "sc" || m == "cta" || m == "gl" || m == "gpu" || m == "sys" || m == "acq_rel" || m == "release" ||
              m == "acquire")
            continue;
          unknown_modifier(m, base);
        case Opcode::Activemask:
          unknown_modifier(m, base);
        default:
          break;
      }
      if (auto rounding = as_rounding(m)) { in.rounding = *rounding; continue; }
      if (m == "ftz") { in.ftz = true; continue; }
      if (m == "sat" || m == "satfinite") { in.saturate = true; continue; }
      if (m == "approx") { in.approx = true; continue; }
      if (m == "full") { in.full = true; continue; }
      if (m == "NaN") { in.propagate_nan = true; continue; }
      if (m == "uni" && in.opcode == Opcode::Ret) continue;
      if (m == "lo" && (in.opcode == Opcode::Dp2a)) { in.mul_mode = MulMode::Lo; continue; }
      if (m == "hi" && (in.opcode == Opcode::Dp2a)) { in.mul_mode = MulMode::Hi; continue; }
      unknown_modifier(m, base);
    }
    finish_decode(base, types, raw, in);
  }

  void require_types(std::string_view base, const std::vector<ValueType>& types, std::size_t count) {
    if (types.size() != count)
      unsupported(fmt::format("'{}' needs {} type suffix(es), found {}", base, count, types.size()));
  }

  void finish_decode(std::string_view base, const std::vector<ValueType>& types, const std::vector<RawOperand>& raw,
                     Instruction& in) {
    // Operand types (for immediates) and the instruction class.
    std::vector<ValueType> operand_types(raw.size(), ValueType::None);
    auto all = [&](ValueType type) { std::fill(operand_types.begin(), operand_types.end(), type); };
    switch (in.opcode) {
      case Opcode::Bra: case Opcode::Ret: case Opcode::Exit: case Opcode::Bar: case Opcode::Nop:
      case Opcode::BarWarpSync:
        in.klass = InstructionClass::Control;
        all(ValueType::U32);
        break;
      case Opcode::Cvt:
        if (types.size() != 2) unsupported("'cvt' needs a destination and a source type");
        in.type = types[0];
        in.source_type = types[1];
        in.klass = InstructionClass::Conversion;
        all(in.source_type);
        if (!raw.empty()) operand_types[0] = in.type;
        break;
      case Opcode::Set:
        require_types(base, types, 2);
        in.type = types[0];
        in.source_type = types[1];
        in.klass = is_float(in.source_type) ? InstructionClass::Float : InstructionClass::Integer;
        all(in.source_type);
        operand_types[0] = in.type;
        if (raw.size() > 3) operand_types[3] = ValueType::Pred;
        break;
      case Opcode::Setp:
        require_types(base, types, 1);
        in.type = types[0];
        in.klass = is_float(in.type) ? InstructionClass::Float : InstructionClass::Integer;
        all(in.type);
        operand_types[0] = ValueType::Pred;
        if (raw.size() > 3) operand_types[3] = ValueType::Pred;
        break;
      case Opcode::Selp:
        require_types(base, types, 1);
        in.type = types[0];
        in.klass = is_float(in.type) ? InstructionClass::Float : InstructionClass::Integer;
        all(in.type);
        if (raw.size() > 3) operand_types[3] = ValueType::Pred;
        break;
      case Opcode::Ld: case Opcode::St: case Opcode::Atom: case Opcode::Red:
        require_types(base, types, 1);
        in.type = types[0];
        in.klass = InstructionClass::Memory;
        all(in.type);
        break;
      case Opcode::Shfl: case Opcode::Vote: case Opcode::Activemask:
        require_types(base, types, 1);
        in.type = types[0];
        in.klass = InstructionClass::Shuffle;
        all(ValueType::U32);
        break;
      case Opcode::Cvta:
        require_types(base, types, 1);
        in.type = types[0];
        in.klass = InstructionClass::Integer;
        all(in.type);
        break;
      case Opcode::Dp4a: case Opcode::Dp2a:
        require_types(base, types, 2);
        in.type = types[0];
        in.source_type = types[1];
        in.klass = InstructionClass::Integer;
        all(ValueType::U32);
        break;
      default:
        require_types(base, types, 1);
        in.type = types[0];
        in.klass = is_float(in.type) ? InstructionClass::Float : InstructionClass::Integer;
        all(in.type);
        if (in.opcode == Opcode::Shl || in.opcode == Opcode::Shr || in.opcode == Opcode::Bfe || in.opcode == Opcode::Bfi ||
            in.opcode == Opcode::Shf) {
          for (std::size_t i = 2; i < operand_types.size(); ++i) operand_types[i] = ValueType::U32;
          if (in.opcode == Opcode::Bfi || in.opcode == Opcode::Shf) operand_types[2] = in.type;
        }
        if (in.opcode == Opcode::Mul && in.mul_mode == MulMode::Wide) {
          // operands a, b have the type; d is twice as wide (immediates only matter for sources)
        }
        if (in.opcode == Opcode::Testp) operand_types[0] = ValueType::Pred;
        break;
    }
    check_support(in);
    if (raw.size() > in.operands.size()) unsupported("too many operands");
    for (std::size_t i = 0; i < raw.size(); ++i) in.operands[i] = resolve(raw[i], operand_types[i]);
    in.operand_count = static_cast<std::uint8_t>(raw.size());
    check_operand_count(in);
  }

  void check_support(const Instruction& in) {
    bool half = in.type == ValueType::F16 || in.type == ValueType::F16x2 || in.type == ValueType::BF16 ||
                in.type == ValueType::BF16x2;
    bool moves_bits = in.opcode == Opcode::Cvt || in.opcode == Opcode::Mov || in.opcode == Opcode::Ld ||
                      in.opcode == Opcode::St || in.opcode == Opcode::Selp;
    if (half && !moves_bits) unsupported(fmt::format("{} arithmetic is not supported", to_string(in.type)));
    if ((in.opcode == Opcode::Cvt) && (in.source_type == ValueType::F16x2 || in.source_type == ValueType::BF16x2))
      unsupported("cvt from packed half types is not supported");
    if (in.opcode == Opcode::Ld || in.opcode == Opcode::St) {
      if (in.space == StateSpace::Const) unsupported("the .const state space is not supported");
    }
    if ((in.opcode == Opcode::Atom || in.opcode == Opcode::Red) &&
        !(in.space == StateSpace::Global || in.space == StateSpace::Shared || in.space == StateSpace::Generic))
      unsupported("atomics only on .global/.shared/generic addresses");
  }

  void check_operand_count(const Instruction& in) {
    auto need = [&](int count) {
      if (in.operand_count != count)
        unsupported(fmt::format("expected {} operands, found {}", count, in.operand_count));
    };
    switch (in.opcode) {
      case Opcode::Ret: case Opcode::Exit: case Opcode::Nop: break;
      case Opcode::Bra: need(1); if (in.operands[0].kind != Operand::Kind::Label) unsupported("bra needs a label"); break;
      case Opcode::Bar: if (in.operand_count > 2) unsupported("bar.sync takes at most two operands"); break;
      case Opcode::BarWarpSync: case Opcode::Activemask: need(1); break;
      case Opcode::Abs: case Opcode::Neg: case Opcode::Popc: case Opcode::Clz: case Opcode::Brev: case Opcode::Bfind:
      case Opcode::Not: case Opcode::Cnot: case Opcode::Rcp: case Opcode::Sqrt: case Opcode::Rsqrt: case Opcode::Ex2:
      case Opcode::Lg2: case Opcode::Sin: case Opcode::Cos: case Opcode::Tanh: case Opcode::Testp: case Opcode::Mov:
      case Opcode::Cvta: case Opcode::Ld: case Opcode::St:
        need(2);
        break;
      case Opcode::Cvt: if (in.operand_count != 2 && in.operand_count != 3) need(2); break;
      case Opcode::Setp: case Opcode::Set: if (in.operand_count != 3 && in.operand_count != 4) need(3); break;
      case Opcode::Mad: case Opcode::Fma: case Opcode::Selp: case Opcode::Prmt: case Opcode::Bfe:
      case Opcode::Dp4a: case Opcode::Dp2a:
        need(4);
        break;
      case Opcode::Lop3: case Opcode::Bfi: case Opcode::Shfl: need(5); break;
      case Opcode::Shf: need(4); break;
      case Opcode::Vote: need(3); break;
      case Opcode::Atom: if (in.operand_count != 3 && in.operand_count != 4) need(3); break;
      case Opcode::Red: need(2); break;
      default: need(3); break;
    }
    if ((in.opcode == Opcode::Ld || in.opcode == Opcode::Atom) && in.operands[1].kind != Operand::Kind::Address)
      unsupported("expected an address [..] as the source");
    if ((in.opcode == Opcode::St || in.opcode == Opcode::Red) && in.operands[0].kind != Operand::Kind::Address)
      unsupported("expected an address [..] as the destination");
    if ((in.opcode == Opcode::Ld || in.opcode == Opcode::St) && in.vector > 1) {
      const Operand& value = in.operands[in.opcode == Opcode::Ld ? 0 : 1];
      if (value.kind != Operand::Kind::Vector || value.count != in.vector)
        unsupported(fmt::format("a .v{} access needs a {{...}} operand with {} registers", in.vector, in.vector));
    }
  }

  std::uint64_t convert_literal(const Literal& literal, ValueType type) {
    if (type == ValueType::F32) {
      if (literal.kind == Literal::Kind::Float32) return literal.bits;
      if (literal.kind == Literal::Kind::Float64)
        return round_to_format(std::bit_cast<double>(literal.bits), FloatFormat::binary32(), Rounding::Nearest, false);
      return std::bit_cast<std::uint32_t>(static_cast<float>(static_cast<std::int64_t>(literal.bits)));
    }
    if (type == ValueType::F64) {
      if (literal.kind == Literal::Kind::Float64) return literal.bits;
      if (literal.kind == Literal::Kind::Float32)
        return std::bit_cast<std::uint64_t>(static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(literal.bits))));
      return std::bit_cast<std::uint64_t>(static_cast<double>(static_cast<std::int64_t>(literal.bits)));
    }
    if (literal.kind != Literal::Kind::Integer && type != ValueType::None && !is_float(type) && bit_width(type) == 32)
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
    exit.klass = InstructionClass::Control;
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
    auto it = type_names().find(std::string_view(word).substr(1));
    if (it == type_names().end())
      throw PtxParseError(fmt::format("PTX line {}: unsupported .shared attribute '{}'", line_of(), word));
    element_size = std::max(1u, bit_width(it->second) / 8);
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
  auto fail = [&](const Token& token, const std::string& message) {
    throw PtxParseError(fmt::format("PTX line {}: {}", token.line, message));
  };
  while (pos < tokens.size()) {
    const Token& token = tokens[pos++];
    if (token.text == ".version") { module.version = tokens.at(pos++).text; continue; }
    if (token.text == ".target") {
      module.target = tokens.at(pos++).text;
      while (pos < tokens.size() && tokens[pos].text == ",") pos += 2;
      continue;
    }
    if (token.text == ".address_size") {
      if (tokens.at(pos).text != "64") fail(token, "only .address_size 64 is supported");
      ++pos;
      continue;
    }
    if (token.text == ".visible" || token.text == ".weak") continue;
    if (token.text == ".entry") {
      KernelParser parser(tokens, pos, module_shared, module_shared_bytes);
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
