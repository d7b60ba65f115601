// Writing user-named output files so that a failed command leaves every existing file as
// it was. Used for every file quantc writes on a user's behalf: `-o`, `--output`,
// `quantc pack` outputs.
//
// A command first names all its outputs (OutputFiles::add checks each one before any
// work is done), then stages each one's bytes (a temporary file `.qc.XXXXXX` in the
// target's folder), and only when everything succeeded commits them all (renames the
// temporaries over the targets). What a path means:
//   - "-" is standard output, where the caller allows it (an output that is the
//     command's only stream);
//   - an existing character device or FIFO (/dev/null, /dev/stdout, a named pipe) is
//     opened and written in place at commit, never replaced;
//   - a symbolic link is followed (to any depth): its final target is replaced
//     atomically and the link stays a link;
//   - a regular file (existing or new) is replaced atomically by rename; an existing
//     file keeps its permission bits (new files get 0666 minus the umask);
//   - a folder, a socket or a block device is an error, as is a missing or unwritable
//     folder, or two outputs that are the same file.
// Staged temporaries are removed when the OutputFiles is destroyed without commit, and
// also when the process is stopped by SIGINT, SIGTERM or SIGHUP while they exist (the
// signal handler unlinks them and re-raises the signal).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace quantc::runtime {

class OutputFiles {
 public:
  OutputFiles() = default;
  ~OutputFiles();
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  /// Checks `path` now (see the file comment) and returns the index stage() takes.
  /// `allow_stdout`: whether "-" means standard output (at most one output may be "-").
  /// Throws RuntimeError naming the path, the problem and the fix.
  std::size_t add(const std::string& path, bool allow_stdout = false);
  /// Writes output `index`'s bytes to its temporary file (kept in memory for standard
  /// output, character devices and FIFOs). Throws RuntimeError naming the path and the
  /// system's reason (disk full, ...); the temporary is removed then.
  void stage(std::size_t index, std::string_view bytes);
  /// Replaces every target with its staged bytes: first the renames, then the writes
  /// in place (devices, FIFOs), then standard output. Every output must be staged.
  void commit();

  /// Whether some output is standard output (commands then print their report to
  /// stderr, so stdout carries only the output's bytes).
  bool writes_stdout() const;
  std::size_t size() const { return outputs_.size(); }

 private:
  enum class Kind { Stdout, InPlace, Replace };
  struct Output {
    std::string path;      // as the user gave it (messages)
    std::string target;    // after following symbolic links
    std::string folder;    // target's folder, where the temporary goes
    Kind kind = Kind::Replace;
    std::optional<mode_t> mode;  // an existing file's permission bits
    std::optional<std::pair<uid_t, gid_t>> owner;
    std::string temporary;       // the staged file (Replace)
    int registration = -1;       // slot in the signal handler's list of temporaries
    std::optional<std::string> bytes;  // staged bytes (Stdout, InPlace)
    bool staged = false;
  };
  void discard(Output& output);

  std::vector<Output> outputs_;
  bool committed_ = false;
};

/// One output, written at once: OutputFiles::add (with "-" as standard output), stage,
/// commit. Throws RuntimeError as those do; `path` keeps its previous contents on every
/// failure.
void write_file_atomically(const std::string& path, std::string_view bytes);

/// A folder that a command's outputs go into (`quantc pack --npy-dir`, the bundle folder
/// of `quantc convert -o` and `quantc pack -o`), created with its missing parents only
/// when the command is about to write, and removed again (those it created, if still
/// empty) when the command fails before keep().
class OutputFolder {
 public:
  /// Checks `path` now: an existing writable folder, or missing folders under a writable
  /// one. Throws RuntimeError "<option> '<path>': ..." naming the component that is not
  /// a folder or not writable. `option` names the flag in messages ("--npy-dir", "-o").
  OutputFolder(std::string path, std::string option);
  ~OutputFolder();
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  /// Creates the missing folders (outermost first). Throws RuntimeError naming the
  /// folder and the system's reason.
  void create();
  /// The command succeeded: the folders stay.
  void keep() { keep_ = true; }
  const std::string& path() const { return path_; }
  /// `name` inside the folder.
  std::string file(const std::string& name) const;

 private:
  std::string path_, option_;
  std::vector<std::string> missing_;  // outermost first
  std::vector<std::string> created_;
  bool keep_ = false;
};

}  // namespace quantc::runtime
