#include "ptx/NvJitLink.h"

#include <nvJitLink.h>

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ptx/Ptxas.h"
#include "ptx/PtxasReport.h"

namespace quantc::ptx {

namespace {

/// Owns an nvJitLinkHandle.
class LinkHandle {
 public:
  explicit LinkHandle(const std::vector<std::string>& options) {
    std::vector<const char*> pointers;
    for (const std::string& option : options) pointers.push_back(option.c_str());
    const nvJitLinkResult result =
        nvJitLinkCreate(&handle_, static_cast<std::uint32_t>(pointers.size()), pointers.data());
    if (result != NVJITLINK_SUCCESS) {
      throw LinkError(fmt::format("nvJitLinkCreate failed (nvJitLinkResult {}) for options {}",
                                  static_cast<int>(result), fmt::join(options, " ")));
    }
  }
  ~LinkHandle() { nvJitLinkDestroy(&handle_); }
  LinkHandle(const LinkHandle&) = delete;
  LinkHandle& operator=(const LinkHandle&) = delete;

  nvJitLinkHandle get() const { return handle_; }

  std::string error_log() const {
    size_t size = 0;
    if (nvJitLinkGetErrorLogSize(handle_, &size) != NVJITLINK_SUCCESS || size == 0) return {};
    std::string log(size, '\0');
    if (nvJitLinkGetErrorLog(handle_, log.data()) != NVJITLINK_SUCCESS) return {};
    return trim(log);
  }
  std::string info_log() const {
    size_t size = 0;
    if (nvJitLinkGetInfoLogSize(handle_, &size) != NVJITLINK_SUCCESS || size == 0) return {};
    std::string log(size, '\0');
    if (nvJitLinkGetInfoLog(handle_, log.data()) != NVJITLINK_SUCCESS) return {};
    return trim(log);
  }
  void check(nvJitLinkResult result, const char* call) const {
    if (result == NVJITLINK_SUCCESS) return;
    const std::string log = error_log();
    throw LinkError(fmt::format("{} failed (nvJitLinkResult {}){}{}", call, static_cast<int>(result),
                                log.empty() ? "" : ":\n", log));
  }

 private:
  static std::string trim(std::string log) {
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
  }
  nvJitLinkHandle handle_ = nullptr;
};

}  // namespace

std::vector<std::string> link_options(const Target& target, int optimization_level) {
  std::vector<std::string> options = {fmt::format("-arch={}", target.name())};
  // The embedded ptxas gets exactly the options `ptxas` gets in relocatable mode (which
  // nvJitLink always uses; ptxas_options also checks the level), so both report the
  // same registers. The level goes through -Xptxas=-O<n>, not nvJitLink's own -O<n>: that
  // one accepts only 0 and 3.
  for (const std::string& option : ptxas_options(optimization_level, AssemblyMode::Relocatable)) {
    options.push_back("-Xptxas=" + option);
  }
  return options;
}

LinkedCubin link_cubin(std::string_view ptx, const Target& target, int optimization_level) {
  LinkHandle link(link_options(target, optimization_level));
  const std::string text(ptx);  // nvJitLink reads PTX as a NUL-terminated string
  link.check(nvJitLinkAddData(link.get(), NVJITLINK_INPUT_PTX, text.c_str(), text.size() + 1, "quantc.ptx"),
             "nvJitLinkAddData");
  link.check(nvJitLinkComplete(link.get()), "nvJitLinkComplete");
  size_t size = 0;
  link.check(nvJitLinkGetLinkedCubinSize(link.get(), &size), "nvJitLinkGetLinkedCubinSize");
  LinkedCubin linked;
  linked.cubin.resize(size);
  link.check(nvJitLinkGetLinkedCubin(link.get(), linked.cubin.data()), "nvJitLinkGetLinkedCubin");
  linked.info_log = link.info_log();
  linked.functions = parse_ptxas_report(linked.info_log);
  return linked;
}

std::string nvjitlink_version() {
  unsigned major = 0;
  unsigned minor = 0;
  if (nvJitLinkVersion(&major, &minor) != NVJITLINK_SUCCESS) return "unknown";
  return fmt::format("{}.{}", major, minor);
}

}  // namespace quantc::ptx
