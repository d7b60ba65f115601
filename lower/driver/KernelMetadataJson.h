// KernelMetadata (lower/KernelMetadata.h) as JSON: what `quantc emit --metadata FILE`
// writes beside the PTX. Keys (every one always present):
//   entry                 string, the `.entry` name to pass to cuModuleGetFunction
//   target                string, e.g. "sm_90"
//   grid, block           [x, y, z] arrays of integers: cuLaunchKernel's gridDim and
//                         blockDim (CTAs, threads per CTA; x fastest)
//   dynamic_shared_bytes  integer, sharedMemBytes for cuLaunchKernel
//   static_shared_bytes   integer, `.shared` the module declares (informational)
//   parameters            array in kernel-parameter order, one object per `.param .u64`
//                         (each a device pointer): param (its PTX name), binding,
//                         buffer (name), access ("read_only" | "read_write" |
//                         "write_only"), element (e.g. "f32"), count (elements), bytes,
//                         and result_bytes [begin, end) for written buffers: the byte
//                         range that holds the result (the rest is launch padding)
#pragma once

#include <string>

#include "lower/KernelMetadata.h"

namespace quantc::lower {

/// The JSON text (pretty-printed, two-space indent, ending in a newline).
std::string metadata_json(const KernelMetadata& metadata);

}  // namespace quantc::lower
