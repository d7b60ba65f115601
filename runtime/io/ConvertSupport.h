// Helpers shared by the checkpoint converters (runtime/io/Convert*.cpp): tensor checks
// with messages that name the tensor, what was expected, what was found and the fix; exact
// widening of scales; the final check of a converted layer against its op.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "runtime/io/Convert.h"

namespace quantc::runtime::convert::detail {

/// "F16, BF16 or F32".
std::string dtype_list(std::initializer_list<SafetensorsDtype> dtypes);

/// ConvertError unless `tensor` has one of `dtypes`; `role` says what the tensor is
/// ("GPTQ packed 4-bit codes"), `fix` how to get a conforming file.
void expect_dtype(const SafetensorsCheckpoint& checkpoint, const SafetensorsTensor& tensor, const std::string& role,
                  std::initializer_list<SafetensorsDtype> dtypes, const std::string& fix = "");

/// ConvertError unless `tensor.shape == expected`; `layout` names the dimensions
/// ("[in/8, out]"), `hint` adds a likely cause.
void expect_shape(const SafetensorsCheckpoint& checkpoint, const SafetensorsTensor& tensor, const std::string& role,
                  const std::vector<std::uint64_t>& expected, const std::string& layout, const std::string& hint = "");

/// ConvertError unless `tensor` is 2-D; returns its shape.
std::vector<std::uint64_t> expect_rank2(const SafetensorsCheckpoint& checkpoint, const SafetensorsTensor& tensor,
                                        const std::string& role, const std::string& layout);

/// A dimension as u32; ConvertError naming the tensor when it exceeds 2^32-1.
std::uint32_t to_u32(const std::string& what, std::uint64_t value);

/// The tensor's values as f32, exactly: F32 copied, F16 and BF16 widened. The dtype must
/// be one of those three (checked by the caller with expect_dtype).
std::vector<float> exact_f32(const SafetensorsCheckpoint& checkpoint, const std::string& name);

/// The tensor's raw little-endian 32-bit words (I32/U32).
std::vector<std::uint32_t> words(const SafetensorsTensor& tensor);

/// The optional bias P.bias: none when absent; checked to be F16/BF16/F32 [out].
std::optional<std::vector<float>> read_bias(const SafetensorsCheckpoint& checkpoint, const std::string& layer,
                                            std::uint32_t out_features, std::vector<std::string>& tensors);

/// A buffer with the op's element type and logical shape.
NamedArray make_array(const std::string& name, ir::ScalarType element, std::vector<std::uint64_t> shape,
                      std::vector<std::uint8_t> bytes);
template <class T>
NamedArray make_array(const std::string& name, ir::ScalarType element, std::vector<std::uint64_t> shape,
                      const std::vector<T>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return make_array(name, element, std::move(shape), std::move(bytes));
}

/// Parses and builds layer.spec (ir::ops::parse_spec, build_program) and checks every
/// buffer against the program: declared, same element type and count, and shaped as the
/// op's logical shape. An OpError of the op (a dimension it cannot take) becomes an
/// UnsupportedFormatError naming the layer. A mismatch is a converter bug: RuntimeError.
void check_against_op(const ConvertedLayer& layer);

/// The converters with every check, filling `layer` as they go (a refusal leaves what was
/// learnt before it: dimensions, type); `repack` = false skips building the buffers (what
/// list_layers runs). ConvertGptq.cpp (GPTQ, AWQ), ConvertBnb.cpp, ConvertGguf.cpp.
void plan_gptq(ConvertedLayer& layer, const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options,
               bool repack);
void plan_awq(ConvertedLayer& layer, const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options,
              bool repack);
void plan_bnb(ConvertedLayer& layer, const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options,
              bool repack);
void plan_gguf(ConvertedLayer& layer, const GgufFile& file, const ConvertOptions& options, bool repack);

}  // namespace quantc::runtime::convert::detail
