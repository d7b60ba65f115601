// Greedy longest-match-first WordPiece tokenization as BERT's uncased tokenizer does it
// (Devlin et al. 2019; google-research/bert tokenization.py): lowercase, split on
// whitespace and around ASCII punctuation, then per word take the longest vocabulary
// prefix, continuing with "##"-prefixed pieces; a word with no full segmentation becomes
// [UNK]. ASCII only (accent stripping and CJK splitting are not needed for the report's
// English sentence).
#pragma once

#include <cctype>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace quantc::examples {

class WordPiece {
 public:
  /// Reads vocab.txt (one token a line; the line number is the token id). Throws
  /// std::runtime_error naming the file when it cannot be read or is empty.
  explicit WordPiece(const std::string& vocab_path) {
    std::ifstream file(vocab_path);
    if (!file) throw std::runtime_error(vocab_path + ": cannot open the WordPiece vocabulary");
    std::string line;
    for (int id = 0; std::getline(file, line); ++id) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      ids_.emplace(line, id);
    }
    if (ids_.empty()) throw std::runtime_error(vocab_path + ": empty vocabulary");
  }

  struct Token {
    std::string text;
    int id;
  };

  std::vector<Token> tokenize(const std::string& sentence) const {
    std::vector<Token> tokens;
    for (const std::string& word : split(sentence)) encode_word(word, tokens);
    return tokens;
  }

 private:
  static std::vector<std::string> split(const std::string& sentence) {
    std::vector<std::string> words;
    std::string current;
    auto flush = [&] {
      if (!current.empty()) words.push_back(current);
      current.clear();
    };
    for (unsigned char c : sentence) {
      if (std::isspace(c)) {
        flush();
      } else if (std::ispunct(c)) {
        flush();
        words.emplace_back(1, static_cast<char>(c));
      } else {
        current += static_cast<char>(std::tolower(c));
      }
    }
    flush();
    return words;
  }

  void encode_word(const std::string& word, std::vector<Token>& tokens) const {
    std::vector<Token> pieces;
    for (std::size_t start = 0; start < word.size();) {
      std::size_t end = word.size();
      const Token* found = nullptr;
      Token candidate;
      for (; end > start; --end) {
        candidate.text = (start > 0 ? "##" : "") + word.substr(start, end - start);
        auto it = ids_.find(candidate.text);
        if (it != ids_.end()) {
          candidate.id = it->second;
          found = &candidate;
          break;
        }
      }
      if (!found) {
        tokens.push_back({"[UNK]", ids_.count("[UNK]") ? ids_.at("[UNK]") : 0});
        return;
      }
      pieces.push_back(*found);
      start = end;
    }
    tokens.insert(tokens.end(), pieces.begin(), pieces.end());
  }

  std::map<std::string, int> ids_;
};

}  // namespace quantc::examples
