// Hand-written kernels shared by the CUDA tests: a program and PTX that agree on the
// lowering contract (entry named after the program, one .param .u64 per buffer in
// binding order).
#pragma once

#include <string>

#include "ir/Program.h"

namespace quantc::test {

constexpr unsigned kScaleCount = 1000;  // not a multiple of the CTA: exercises the bounds check

/// y[i] = 2 * x[i] for i < 1000; f32 buffers x (binding 0) and y (binding 1, output with
/// byte range [0, 4000)); workgroups of 256 x 4.
ir::Program scale_by_two_program();

/// PTX for scale_by_two_program() with `.target` sm_<sm> (the PTX ISA version the
/// target needs, ptx::Target::min_ptx_version).
std::string scale_by_two_ptx(int sm = 80);

}  // namespace quantc::test
