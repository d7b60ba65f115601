#include "ptx/Entries.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace quantc::ptx {

namespace {

struct Token {
  std::string_view text;
  std::uint32_t line;
};

bool is_word_character(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}

/// Words, numbers, quoted strings and single punctuation characters, without comments.
std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  std::uint32_t line = 1;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (text.compare(i, 2, "/*") == 0) {
      std::size_t end = text.find("*/", i + 2);
      end = end == std::string_view::npos ? text.size() : end + 2;
      for (std::size_t j = i; j < end; ++j) line += text[j] == '\n';
      i = end;
    } else if (c == '"') {
      std::size_t end = i + 1;
      while (end < text.size() && text[end] != '"' && text[end] != '\n') end += text[end] == '\\' ? 2 : 1;
      end = std::min(end + 1, text.size());
      tokens.push_back({text.substr(i, end - i), line});
      i = end;
    } else if (is_word_character(c)) {
      std::size_t end = i;
      while (end < text.size() && is_word_character(text[end])) ++end;
      tokens.push_back({text.substr(i, end - i), line});
      i = end;
    } else {
      tokens.push_back({text.substr(i, 1), line});
      ++i;
    }
  }
  return tokens;
}

bool is_identifier(std::string_view word) {
  if (word.empty() || word[0] == '.' || std::isdigit(static_cast<unsigned char>(word[0]))) return false;
  for (char c : word) {
    if (!is_word_character(c) || c == '.') return false;
  }
  return true;
}

class EntryReader {
 public:
  explicit EntryReader(std::string_view text) : tokens_(tokenize(text)) {}

  std::vector<Entry> read() {
    std::vector<Entry> entries;
    while (position_ < tokens_.size()) {
      const Token& token = tokens_[position_++];
      if (token.text != ".entry") continue;
      Entry entry;
      entry.line = token.line;
      const Token& name = next(token, "a kernel name after .entry");
      if (!is_identifier(name.text)) fail(name, fmt::format("expected a kernel name after .entry, found '{}'", name.text));
      entry.name = std::string(name.text);
      if (position_ < tokens_.size() && tokens_[position_].text == "(") {
        ++position_;
        read_parameters(entry);
      }
      entries.push_back(std::move(entry));
    }
    return entries;
  }

 private:
  const Token& next(const Token& after, std::string_view expected) {
    if (position_ >= tokens_.size()) fail(after, fmt::format("the module ends where {} was expected", expected));
    return tokens_[position_++];
  }

  [[noreturn]] static void fail(const Token& token, const std::string& message) {
    throw PtxSyntaxError(fmt::format("PTX line {}: {}", token.line, message));
  }

  std::uint32_t number(const Token& after) {
    const Token& token = next(after, "a number");
    std::uint32_t value = 0;
    auto [end, error] = std::from_chars(token.text.data(), token.text.data() + token.text.size(), value);
    if (error != std::errc() || end != token.text.data() + token.text.size()) {
      fail(token, fmt::format("expected a number, found '{}'", token.text));
    }
    return value;
  }

  void read_parameters(Entry& entry) {
    const Token* previous = &tokens_[position_ - 1];
    while (true) {
      const Token& start = next(*previous, "a parameter or ')'");
      if (start.text == ")") return;
      if (start.text != ".param") {
        fail(start, fmt::format("kernel {}: expected .param or ')' in the parameter list, found '{}'", entry.name,
                                start.text));
      }
      EntryParameter parameter;
      const Token* word = &next(start, "a parameter type");
      for (; word->text.starts_with("."); word = &next(*word, "a parameter name")) {
        if (word->text == ".align") {
          number(*word);
        } else if (word->text == ".ptr" || word->text == ".global" || word->text == ".const" ||
                   word->text == ".shared" || word->text == ".local") {
          // pointer attributes: informational only
        } else if (auto type = parse_value_type(word->text.substr(1)); type && *type != ValueType::Pred) {
          parameter.type = *type;
        } else {
          fail(*word, fmt::format("kernel {}: unknown parameter type or attribute '{}'", entry.name, word->text));
        }
      }
      if (parameter.type == ValueType::None) fail(start, fmt::format("kernel {}: a parameter without a type", entry.name));
      if (!is_identifier(word->text)) {
        fail(*word, fmt::format("kernel {}: expected a parameter name, found '{}'", entry.name, word->text));
      }
      parameter.name = std::string(word->text);
      previous = word;
      const Token* after = &next(*previous, "',' or ')'");
      if (after->text == "[") {
        parameter.array = true;
        parameter.count = number(*after);
        after = &next(tokens_[position_ - 1], "']'");
        if (after->text != "]") fail(*after, fmt::format("expected ']', found '{}'", after->text));
        after = &next(*after, "',' or ')'");
      }
      entry.parameters.push_back(std::move(parameter));
      if (after->text == ")") return;
      if (after->text != ",") {
        fail(*after, fmt::format("kernel {}: expected ',' or ')' after parameter {}, found '{}'", entry.name,
                                 entry.parameters.back().name, after->text));
      }
      previous = after;
    }
  }

  std::vector<Token> tokens_;
  std::size_t position_ = 0;
};

}  // namespace

std::string EntryParameter::spelling() const {
  std::string text = fmt::format(".{}", to_string(type));
  if (array) text += fmt::format("[{}]", count);
  return text;
}

std::vector<Entry> read_entries(std::string_view ptx_text) { return EntryReader(ptx_text).read(); }

std::string entry_names(const std::vector<Entry>& entries) {
  std::string names;
  for (const Entry& entry : entries) names += (names.empty() ? "" : ", ") + entry.name;
  return names;
}

}  // namespace quantc::ptx
