// Writing user-named output files so they are either untouched or complete: the bytes
// go to a temporary file in the same folder, which is then renamed over the target
// (rename is atomic within one file system). Used for every file quantc writes on a
// user's behalf: `-o`, `--output`, `quantc pack` outputs.
#pragma once

#include <string>
#include <string_view>

namespace quantc::runtime {

/// Writes `bytes` to `path` atomically. Throws RuntimeError naming the path and the
/// cause (folder missing or not writable, disk full, rename failure); the temporary
/// file is removed and `path` keeps its previous contents on every failure.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace quantc::runtime
