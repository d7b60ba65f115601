#include "runtime/io/AtomicFile.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "runtime/Buffers.h"

namespace quantc::runtime {
namespace {

namespace fs = std::filesystem;

// ---- temporaries removed on SIGINT/SIGTERM/SIGHUP --------------------------------------
//
// A fixed table the signal handler can walk without allocating or locking: a slot is
// free (0), being filled (1) or holds the path of a live temporary (2). Only slots in
// state 2 are unlinked, so a slot being filled or emptied is never read half-written.

constexpr int kSlotCount = 128;
struct TemporarySlot {
  std::atomic<int> state{0};
  char path[PATH_MAX]{};
};
TemporarySlot g_temporaries[kSlotCount];
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_temporaries_and_reraise(int signal_number) {
  const int saved_errno = errno;
  for (TemporarySlot& slot : g_temporaries) {
    if (slot.state.load() == 2) ::unlink(slot.path);
  }
  errno = saved_errno;
  // SA_RESETHAND restored the default action and SA_NODEFER left the signal unblocked:
  // re-raising ends the process the way the signal would have.
  ::raise(signal_number);
}

/// Installs the handler for each signal whose action is the default one; checked at
/// every registration, since SA_RESETHAND (or the program) may have reset it. An ignored
/// signal (nohup) or someone else's handler stays as it is.
void install_cleanup_handlers() {
  for (int signal_number : kCleanupSignals) {
    struct sigaction previous {};
    if (::sigaction(signal_number, nullptr, &previous) != 0) continue;
    if ((previous.sa_flags & SA_SIGINFO) || previous.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = remove_temporaries_and_reraise;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND | SA_NODEFER;
    ::sigaction(signal_number, &action, nullptr);
  }
}

/// Records `path` for the signal handler; -1 when the table is full (the temporary is
/// then only removed by the normal error paths).
int register_temporary(const std::string& path) {
  install_cleanup_handlers();
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlotCount; ++i) {
    int expected = 0;
    if (g_temporaries[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_temporaries[i].path, path.c_str(), path.size() + 1);
      g_temporaries[i].state.store(2);
      return i;
    }
  }
  return -1;
}

void unregister_temporary(int slot) {
  if (slot >= 0) g_temporaries[slot].state.store(0);
}

// ---- helpers ---------------------------------------------------------------------------

std::string error_text(int error) { return std::strerror(error); }

mode_t new_file_mode() {
  static const mode_t mode = [] {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

/// Writes all of `bytes` to `descriptor`; false with errno set on failure.
bool write_all(int descriptor, std::string_view bytes) {
  const char* data = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t written = ::write(descriptor, data, std::min<std::size_t>(left, std::size_t{1} << 30));
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  return true;
}

std::string parent_folder(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

/// Whether a path names one of this process's file descriptors (/dev/stdout,
/// /dev/fd/N, /proc/self/fd/N): those are written in place, never replaced.
bool is_descriptor_path(const std::string& path) {
  return path.starts_with("/proc/") || path.starts_with("/dev/fd/") || path == "/dev/stdout" ||
         path == "/dev/stderr";
}

struct Resolved {
  std::string target;
  bool through_descriptor = false;  // the link chain went through /proc or /dev/fd
};

/// Follows symbolic links from `path` to the file they finally name (which may not
/// exist yet: a dangling link names the file to create).
Resolved follow_links(const std::string& path) {
  Resolved resolved{path, is_descriptor_path(path)};
  for (int hops = 0; hops <= 40; ++hops) {
    struct stat status {};
    if (::lstat(resolved.target.c_str(), &status) != 0 || !S_ISLNK(status.st_mode)) return resolved;
    if (resolved.through_descriptor) return resolved;  // magic links ("pipe:[123]") are not paths
    std::string link(PATH_MAX, '\0');
    const ssize_t length = ::readlink(resolved.target.c_str(), link.data(), link.size());
    if (length < 0) {
      const int error = errno;
      throw RuntimeError(fmt::format("cannot write '{}': cannot read the symbolic link '{}': {}", path,
                                     resolved.target, error_text(error)));
    }
    link.resize(static_cast<std::size_t>(length));
    resolved.target = link.starts_with('/') ? link : (fs::path(parent_folder(resolved.target)) / link).string();
    resolved.through_descriptor = resolved.through_descriptor || is_descriptor_path(resolved.target);
  }
  throw RuntimeError(fmt::format("cannot write '{}': too many levels of symbolic links", path));
}

/// The folder's canonical path + the file name: one spelling per file, to find two
/// outputs that are the same file.
std::string identity(const std::string& folder, const std::string& target) {
  std::error_code error;
  const fs::path canonical = fs::canonical(folder, error);
  return ((error ? fs::path(folder) : canonical) / fs::path(target).filename()).string();
}

void check_folder(const std::string& path, const std::string& folder) {
  struct stat status {};
  if (::stat(folder.c_str(), &status) != 0) {
    const int error = errno;
    if (error == ENOENT) {
      throw RuntimeError(fmt::format("cannot write '{}': folder '{}' does not exist; create it first (mkdir -p {})",
                                     path, folder, folder));
    }
    throw RuntimeError(fmt::format("cannot write '{}': folder '{}': {}", path, folder, error_text(error)));
  }
  if (!S_ISDIR(status.st_mode)) {
    throw RuntimeError(fmt::format("cannot write '{}': '{}' is not a folder", path, folder));
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    const int error = errno;
    throw RuntimeError(fmt::format("cannot write '{}': folder '{}' is not writable ({}); choose another folder",
                                   path, folder, error_text(error)));
  }
}

void write_stdout(std::string_view bytes) {
  std::fflush(stdout);
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) {
    const int error = errno;
    throw RuntimeError(fmt::format("cannot write to standard output: {}", error_text(error)));
  }
}

}  // namespace

OutputFiles::~OutputFiles() {
  if (committed_) return;
  for (Output& output : outputs_) discard(output);
}

void OutputFiles::discard(Output& output) {
  if (!output.temporary.empty()) ::unlink(output.temporary.c_str());
  unregister_temporary(output.registration);
  output.temporary.clear();
  output.registration = -1;
  output.bytes.reset();
  output.staged = false;
}

bool OutputFiles::writes_stdout() const {
  for (const Output& output : outputs_) {
    if (output.kind == Kind::Stdout) return true;
  }
  return false;
}

std::size_t OutputFiles::add(const std::string& path, bool allow_stdout) {
  if (committed_) throw RuntimeError("OutputFiles::add after commit");
  Output output;
  output.path = path;
  if (path.empty()) throw RuntimeError("cannot write '': the output file name is empty");
  if (path == "-") {
    if (!allow_stdout) {
      throw RuntimeError("cannot write '-': standard output is not available for this output (the command prints "
                         "its report there); name a file");
    }
    if (writes_stdout()) {
      throw RuntimeError("cannot write '-' twice: only one output can go to standard output; name files for the others");
    }
    output.kind = Kind::Stdout;
    outputs_.push_back(std::move(output));
    return outputs_.size() - 1;
  }

  const Resolved resolved = follow_links(path);
  output.target = resolved.target;
  output.folder = parent_folder(output.target);
  struct stat status {};
  // stat follows what follow_links left: a magic /proc link, or nothing.
  if (::stat(output.target.c_str(), &status) == 0) {
    if (S_ISDIR(status.st_mode)) {
      throw RuntimeError(fmt::format("cannot write '{}': it is a folder; name a file (e.g. {}/out)", path,
                                     path.ends_with('/') ? path.substr(0, path.size() - 1) : path));
    }
    if (S_ISCHR(status.st_mode) || S_ISFIFO(status.st_mode) || resolved.through_descriptor) {
      if (::access(output.target.c_str(), W_OK) != 0) {
        const int error = errno;
        throw RuntimeError(fmt::format("cannot write '{}': {}", path, error_text(error)));
      }
      output.kind = Kind::InPlace;
    } else if (S_ISREG(status.st_mode)) {
      output.kind = Kind::Replace;
      output.mode = status.st_mode & 07777;
      output.owner = std::make_pair(status.st_uid, status.st_gid);
    } else {
      throw RuntimeError(fmt::format("cannot write '{}': it is a {}, not a regular file, character device or FIFO",
                                     path, S_ISSOCK(status.st_mode) ? "socket" : "block device"));
    }
  } else {
    const int error = errno;
    if (error != ENOENT) {
      if (error == ENOTDIR) check_folder(path, output.folder);  // names the component that is not a folder
      throw RuntimeError(fmt::format("cannot write '{}': {}", path, error_text(error)));
    }
    output.kind = Kind::Replace;
  }
  if (output.kind == Kind::Replace) {
    check_folder(path, output.folder);
    const std::string key = identity(output.folder, output.target);
    for (const Output& other : outputs_) {
      if (other.kind == Kind::Replace && identity(other.folder, other.target) == key) {
        throw RuntimeError(fmt::format("'{}' and '{}' are the same file; give each output its own file", other.path,
                                       path));
      }
    }
  }
  outputs_.push_back(std::move(output));
  return outputs_.size() - 1;
}

void OutputFiles::stage(std::size_t index, std::string_view bytes) {
  Output& output = outputs_.at(index);
  discard(output);
  if (output.kind != Kind::Replace) {
    output.bytes = std::string(bytes);
    output.staged = true;
    return;
  }
  std::string name = (fs::path(output.folder) / ".qc.XXXXXX").string();
  const int descriptor = ::mkstemp(name.data());
  if (descriptor < 0) {
    const int error = errno;
    throw RuntimeError(fmt::format("cannot write '{}': cannot create a temporary file in folder '{}': {}", output.path,
                                   output.folder, error_text(error)));
  }
  output.temporary = name;
  output.registration = register_temporary(name);
  ::fchmod(descriptor, output.mode.value_or(new_file_mode()));
  if (output.owner) {
    struct stat created {};
    if (::fstat(descriptor, &created) == 0 &&
        (created.st_uid != output.owner->first || created.st_gid != output.owner->second)) {
      // Keeps the owner when allowed (root, or a group the user is in); else the new
      // file is the user's, as any rewrite by them would be.
      if (::fchown(descriptor, output.owner->first, output.owner->second) != 0) {
        [[maybe_unused]] int ignored = ::fchown(descriptor, static_cast<uid_t>(-1), output.owner->second);
      }
      ::fchmod(descriptor, *output.mode);  // fchown may clear set-user/group-ID bits
    }
  }
  bool ok = write_all(descriptor, bytes);
  int error = ok ? 0 : errno;
  if (ok && ::fsync(descriptor) != 0 && errno != EINVAL && errno != EROFS) {
    ok = false;
    error = errno;
  }
  if (::close(descriptor) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (!ok) {
    discard(output);
    throw RuntimeError(fmt::format("cannot write '{}': {}", output.path, error_text(error)));
  }
  output.staged = true;
}

void OutputFiles::commit() {
  for (const Output& output : outputs_) {
    if (!output.staged) throw RuntimeError(fmt::format("internal error: output '{}' was never staged", output.path));
  }
  for (Output& output : outputs_) {
    if (output.kind != Kind::Replace) continue;
    if (::rename(output.temporary.c_str(), output.target.c_str()) != 0) {
      const int error = errno;
      const std::string message = fmt::format("cannot write '{}': renaming the temporary file '{}' over it failed: {}",
                                              output.path, output.temporary, error_text(error));
      for (Output& other : outputs_) discard(other);
      throw RuntimeError(message);
    }
    unregister_temporary(output.registration);
    output.registration = -1;
    output.temporary.clear();
  }
  committed_ = true;
  for (Output& output : outputs_) {
    if (output.kind != Kind::InPlace) continue;
    const int descriptor = ::open(output.target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_APPEND);
    if (descriptor < 0) {
      const int error = errno;
      throw RuntimeError(fmt::format("cannot write '{}': {}", output.path, error_text(error)));
    }
    std::fflush(stdout);  // the same file as stdout (/dev/stdout) keeps the order of what was printed
    const bool ok = write_all(descriptor, *output.bytes);
    const int error = ok ? 0 : errno;
    ::close(descriptor);
    if (!ok) throw RuntimeError(fmt::format("cannot write '{}': {}", output.path, error_text(error)));
  }
  for (Output& output : outputs_) {
    if (output.kind == Kind::Stdout) write_stdout(*output.bytes);
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  OutputFiles outputs;
  const std::size_t index = outputs.add(path, /*allow_stdout=*/true);
  outputs.stage(index, bytes);
  outputs.commit();
}

OutputFolder::OutputFolder(std::string path, std::string option) : path_(std::move(path)), option_(std::move(option)) {
  fs::path current = fs::path(path_).lexically_normal();
  if (current.empty()) current = ".";
  while (true) {
    struct stat status {};
    if (::stat(current.c_str(), &status) == 0) {
      if (!S_ISDIR(status.st_mode)) {
        throw RuntimeError(fmt::format("{} '{}': '{}' exists and is not a folder; name a folder", option_, path_,
                                       current.string()));
      }
      if (::access(current.c_str(), W_OK | X_OK) != 0) {
        const int error = errno;
        throw RuntimeError(fmt::format("{} '{}': folder '{}' is not writable ({})", option_, path_, current.string(),
                                       error_text(error)));
      }
      break;
    }
    const int error = errno;
    if (error == ENOTDIR) {
      throw RuntimeError(fmt::format("{} '{}': a component of '{}' is not a folder", option_, path_, current.string()));
    }
    if (error != ENOENT) {
      throw RuntimeError(fmt::format("{} '{}': '{}': {}", option_, path_, current.string(), error_text(error)));
    }
    missing_.insert(missing_.begin(), current.string());
    const fs::path parent = current.parent_path();
    if (parent == current) break;
    current = parent.empty() ? fs::path(".") : parent;  // a relative path's first component is in "."
  }
}

OutputFolder::~OutputFolder() {
  if (keep_) return;
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::rmdir(it->c_str());
}

void OutputFolder::create() {
  for (const std::string& folder : missing_) {
    if (::mkdir(folder.c_str(), 0777) == 0) {
      created_.push_back(folder);
    } else if (errno != EEXIST) {
      const int error = errno;
      throw RuntimeError(
          fmt::format("{} '{}': cannot create folder '{}': {}", option_, path_, folder, error_text(error)));
    }
  }
  missing_.clear();
}

std::string OutputFolder::file(const std::string& name) const { return (fs::path(path_) / name).string(); }

}  // namespace quantc::runtime
