// The kernel entries of a PTX module and their parameter lists, read from the text
// without decoding any instruction: what a launcher needs to check arguments against a
// kernel written by anyone (nvcc, Triton, quantc) before handing it to a backend, also
// for PTX whose instructions the emulator does not implement.
//
// Grammar read (PTX ISA 8.x, section 11.1 "Kernel and function directives" and 5.1.6.1
// "Kernel function parameters"): `.entry NAME ( .param [.align N] [.ptr ...] .TYPE
// NAME[[COUNT]], ... )`, optionally preceded by `.visible`/`.weak`/`.extern`. Comments
// (`//`, `/* */`) are skipped; `.func` declarations are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptx/Isa.h"

namespace quantc::ptx {

struct EntryParameter {
  std::string name;
  ValueType type = ValueType::None;  // the element type of an array parameter
  std::uint32_t count = 1;           // elements: 1, or N for `.b8 name[N]` (a by-value struct)
  bool array = false;

  std::uint32_t bytes() const { return bit_width(type) / 8 * count; }
  /// A parameter that can hold a global pointer: a scalar .u64 or .b64.
  bool holds_pointer() const { return !array && (type == ValueType::U64 || type == ValueType::B64); }
  /// ".u64", ".f32", ".b8[16]": the declaration as written, for messages.
  std::string spelling() const;
};

struct Entry {
  std::string name;
  std::vector<EntryParameter> parameters;  // in declaration order
  std::uint32_t line = 0;                  // 1-based line of `.entry`
};

/// Every `.entry` of `ptx_text`, in order. Throws PtxSyntaxError naming the line for a
/// parameter list that does not follow the grammar above (unknown type, missing name,
/// unbalanced parentheses). A text without any `.entry` returns an empty list.
std::vector<Entry> read_entries(std::string_view ptx_text);

/// "a, b, c": the entry names, for messages.
std::string entry_names(const std::vector<Entry>& entries);

}  // namespace quantc::ptx
