// Content hashes for cache keys, cache entries and the in-process module cache.
#pragma once

#include <string>
#include <string_view>

namespace quantc::lower {

/// SHA-256 (FIPS 180-4, computed by OpenSSL's EVP interface) of `bytes`, as 64
/// lowercase hexadecimal digits. Throws std::runtime_error only if OpenSSL fails to
/// initialise a digest context (out of memory).
std::string sha256_hex(std::string_view bytes);

}  // namespace quantc::lower
