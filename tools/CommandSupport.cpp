#include "tools/CommandSupport.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

namespace quantc::tools {

std::string read_text_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw CommandError(fmt::format("cannot read '{}': it is a folder; name a file", path));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int saved = errno;
    throw CommandError(fmt::format("cannot read '{}': {}", path, std::strerror(saved)));
  }
  std::string text(std::istreambuf_iterator<char>(file), {});
  if (file.bad()) throw CommandError(fmt::format("cannot read '{}': I/O error", path));
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    throw CommandError(fmt::format("'{}': NUL byte at offset {}; quantc reads text here (a JSON spec, PTX or IR), "
                                   "not a binary file",
                                   path, nul));
  }
  return text;
}

ir::ops::OpSpec parse_spec_text(const std::string& text, const std::string& path) {
  return lower::parse_spec_with_target(text, path);
}

ir::ops::OpSpec load_spec(const std::string& path) { return parse_spec_text(read_text_file(path), path); }

ptx::Target resolve_target(const std::optional<std::string>& command_line, const ir::ops::OpSpec& spec) {
  try {
    return lower::resolve_target(command_line, spec);
  } catch (const std::invalid_argument& error) {
    throw CommandError(error.what());
  }
}

std::optional<ptx::Target> requested_target(const std::optional<std::string>& command_line,
                                            const ir::ops::OpSpec& spec) {
  if (!command_line && !spec.target) return std::nullopt;
  return resolve_target(command_line, spec);
}

void PipelineFlags::add_to(CLI::App& command) {
  command.add_option("-O", level, "Optimization level 0, 1 or 2 (-O0 none, -O1 fold+dce, -O2 everything; default 2)");
  command.add_option("--fp-contract", fp_contract,
                     "on (default): -O2 fuses a*b+c into fma; off: every product is rounded (nvcc --fmad=false)")
      ->check(CLI::IsMember({"on", "off"}));
  command.add_option("--passes", passes, "Run exactly these passes, comma-separated, instead of an -O pipeline");
  command.add_flag("--print-ir-after-all", print_ir_after_all, "Print the IR to stderr after every pass that changed it");
  command.add_option("--print-ir-after", print_ir_after, "Print the IR to stderr after pass NAME (repeatable)");
  command.add_flag("--time-passes", time_passes, "Print per-pass wall time and IR size before/after to stderr");
  command.add_flag("--verify-each", verify_each, "Run the IR verifier after every pass");
}

lower::PassOptions PipelineFlags::pass_options(const ir::ops::OpSpec* spec) const {
  lower::PassOptions options;
  try {
    options = lower::resolve_pass_options(spec != nullptr ? *spec : ir::ops::OpSpec{}, level, fp_contract);
    if (!passes.empty()) options.passes = lower::parse_pass_list(passes);
    for (const std::string& name : print_ir_after) lower::parse_pass_list(name);  // validates the name
  } catch (const lower::PassError& error) {
    throw CommandError(error.what());
  }
  options.print_ir_after_all = print_ir_after_all;
  options.print_ir_after = print_ir_after;
  options.time_passes = time_passes;
  options.verify_each = verify_each;
  if (observes_pipeline()) options.log = &std::cerr;
  return options;
}

std::pair<std::string, std::string> split_binding(const std::string& text, const std::string& option) {
  auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
    throw CommandError(fmt::format("{} expects NAME=FILE.npy, got '{}'", option, text));
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

std::string format_buffer(const std::string& label, const runtime::HostBuffer& buffer) {
  return format_buffer(label, buffer, 0, buffer.count());
}

std::string format_buffer(const std::string& label, const runtime::HostBuffer& buffer, std::size_t first,
                          std::size_t count) {
  std::string values;
  for (std::size_t i = 0; i < count; ++i) {
    if (count > 12 && i == 8) {
      values += " ...";
      i = count - 4;
    }
    values += fmt::format("{}{:g}", i == 0 ? "" : " ", runtime::element_as_double(buffer, first + i));
  }
  return fmt::format("{} ({} x {}): [{}]\n", label, count, ir::to_string(buffer.element), values);
}

namespace {

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

}  // namespace

std::uint64_t host_memory_limit() {
  if (const char* text = std::getenv("QUANTC_HOST_MEMORY_LIMIT"); text != nullptr && *text != '\0') {
    std::string value = text;
    std::uint64_t scale = 1;
    const std::string suffixes = "KMGT";
    if (const std::size_t unit = suffixes.find(static_cast<char>(std::toupper(value.back())));
        unit != std::string::npos) {
      scale = std::uint64_t{1} << (10 * (unit + 1));
      value.pop_back();
    }
    std::uint64_t number = 0;
    const char* end = value.data() + value.size();
    auto [stop, error] = std::from_chars(value.data(), end, number);
    std::uint64_t limit = 0;
    if (value.empty() || error != std::errc() || stop != end || __builtin_mul_overflow(number, scale, &limit)) {
      throw CommandError(fmt::format("QUANTC_HOST_MEMORY_LIMIT='{}': expected a byte count, e.g. 8589934592 or 8G",
                                     text));
    }
    return limit;
  }
  // The memory the kernel says can be had without swapping (MemAvailable), which
  // other processes' use lowers; else the physical memory.
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) return std::uint64_t{kib} * 1024;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return UINT64_MAX;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

void check_host_memory(const ir::Program& program, std::uint64_t copies, const std::string& what) {
  std::uint64_t total = 0;
  const ir::BufferDecl* largest = nullptr;
  for (const ir::BufferDecl& decl : program.buffers) {
    total += decl.byte_size();  // each at most 2^32 elements of 8 bytes: no overflow
    if (largest == nullptr || decl.byte_size() > largest->byte_size()) largest = &decl;
  }
  const std::uint64_t limit = host_memory_limit();
  if (largest == nullptr || total <= limit / copies) return;
  throw CommandError(fmt::format(
      "{} needs about {} of host memory ({} copies of the buffers, {} each), more than the limit of {} "
      "(QUANTC_HOST_MEMORY_LIMIT when set, else the memory available now); the largest buffer is '{}', {} x {} = {} "
      "bytes: use smaller dimensions in the spec",
      what, human_bytes(total > UINT64_MAX / copies ? UINT64_MAX : total * copies), copies, human_bytes(total),
      human_bytes(limit), largest->name, largest->count, ir::to_string(largest->element), largest->byte_size()));
}

ProgressLine::ProgressLine(std::string label) : label_(std::move(label)) {
  const char* setting = std::getenv("QUANTC_PROGRESS");
  if (setting != nullptr && std::string(setting) == "1") {
    enabled_ = true;
  } else if (setting != nullptr && std::string(setting) == "0") {
    enabled_ = false;
  } else {
    enabled_ = ::isatty(STDERR_FILENO) == 1;
  }
}

ProgressLine::~ProgressLine() {
  if (shown_) fmt::print(stderr, "\r{:{}}\r", "", label_.size() + 48);
}

std::function<void(std::uint64_t, std::uint64_t)> ProgressLine::callback() {
  if (!enabled_) return {};
  return [this](std::uint64_t done, std::uint64_t total) { update(done, total); };
}

void ProgressLine::update(std::uint64_t done, std::uint64_t total) {
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  if (shown_ && done != total && now - last_ns_ < 200'000'000) return;
  last_ns_ = now;
  shown_ = true;
  fmt::print(stderr, "\r{}: {}/{} CTAs ({}%)", label_, done, total, total == 0 ? 100 : done * 100 / total);
  std::fflush(stderr);
}

}  // namespace quantc::tools
