// `quantc convert`: quantized checkpoints (GPTQ, AWQ, bitsandbytes, GGUF) to the op spec
// and buffers of one quantc op, exactly. A converter reads one linear layer's tensors,
// checks every dtype and shape, and repacks the codes losslessly into the op's layout;
// scales are widened exactly (f16 and bf16 to f32) or formed by the format's own f32
// arithmetic. Where a format cannot be expressed exactly by today's ops, it refuses with
// UnsupportedFormatError naming the op feature that is missing; it never approximates.
//
// Orientation: every op computes out = x @ W with W [in_features, out_features] (the
// ops' k = in_dim is the reduction). PyTorch checkpoints store nn.Linear weights
// [out_features, in_features]; GGUF stores ne = [in_features, out_features] (ne[0]
// fastest), the same memory order.
//
// Which format maps to which op (per-format details at each converter below):
//
//   format                                   op                          why it is exact
//   GPTQ 4-bit (AutoGPTQ, GPTQModel;         linear_4bit_affine_grouped  qweight is the op's `w` bit for bit;
//     v1 and v2 qzeros, sym and asym,                                    zero points are the integer codes;
//     act-order g_idx too)                                               (q - z) * s is exact in f32; act-order:
//                                                                        rows sorted by group, x read via perm
//   AWQ 4-bit GEMM (AutoAWQ)                 linear_4bit_affine_grouped  a nibble permutation of GPTQ's layout
//   bitsandbytes NF4 and FP4, blocksize      nf4_gemm ("quant_type":     the same code book; bnb's absmax per
//     a multiple of 64                         "fp4" for FP4)            64-row block; double quantization
//                                                                        resolved in bnb's f32 order
//   GGUF Q8_0                                dequant_matmul_int8 (b 32)  d * q, d widened from f16
//   GGUF Q4_0                                dequant_matmul_int4 (b 32)  (q - 8) * d: asymmetric, zero point 8
//   GGUF Q6_K                                dequant_matmul_int8 (b 16)  (d * sc) * (q - 32), d * sc exact in f32
//
// Refused, with the missing op feature: GPTQ 2/3/8-bit (other code widths), AWQ
// GEMV/Marlin layouts, bitsandbytes blocksize 32 (one scale per 64 rows in nf4_gemm), a
// custom quant_map, LLM.int8 (per-row scale SCB/127 and outlier decomposition), the GGUF
// quantizations other than Q8_0, Q4_0, Q4_1, Q4_K, Q5_K and Q6_K (their code widths or
// scale formats), and unquantized F32/F16/BF16 tensors (`quantc pack` quantizes those).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/Buffers.h"
#include "runtime/io/Bundle.h"
#include "runtime/io/Gguf.h"
#include "runtime/io/Safetensors.h"

namespace quantc::runtime::convert {

/// A checkpoint that cannot be converted as given: a missing tensor, a wrong dtype or
/// shape, contradictory settings. The message names the tensor, what was expected, what
/// was found and the fix.
class ConvertError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

/// A well-formed checkpoint whose format (or variant) today's ops cannot express exactly;
/// the message names the op and the feature it lacks.
class UnsupportedFormatError : public ConvertError {
 public:
  using ConvertError::ConvertError;
};

enum class CheckpointFormat { Gptq, Awq, Bnb, Gguf };
/// "gptq", "awq", "bnb", "gguf".
std::string format_name(CheckpointFormat format);
/// The format named `name`; ConvertError listing the four otherwise.
CheckpointFormat format_from_name(const std::string& name);

/// The quantization settings a checkpoint folder records, from (first found wins per key)
/// config.json's "quantization_config" (transformers), quantize_config.json (AutoGPTQ,
/// GPTQModel) and quant_config.json (AutoAWQ). Used to cross-check the tensors and to
/// pick GPTQ's qzeros convention; every field is optional.
struct QuantizationConfig {
  std::vector<std::string> sources;               // the files read
  std::optional<std::string> quant_method;        // "gptq", "awq", "bitsandbytes"
  std::optional<std::string> checkpoint_format;   // GPTQ: "gptq" (v1) or "gptq_v2"
  std::optional<std::int64_t> bits;               // "bits" / "w_bit"
  std::optional<std::int64_t> group_size;         // "group_size" / "q_group_size" (-1: one group)
  std::optional<bool> desc_act;                   // GPTQ act-order
  std::optional<bool> sym;
  std::optional<std::string> version;             // AWQ: "gemm", "gemv", ...
};

/// The tensors of a safetensors checkpoint: one .safetensors file, or every
/// *.safetensors file of a folder (a sharded model), plus the folder's QuantizationConfig
/// (the folder of the file, for a file).
class SafetensorsCheckpoint {
 public:
  /// Opens and validates every file (runtime/io/Safetensors.h); RuntimeError naming the
  /// file for any format error, ConvertError for a folder without .safetensors files or a
  /// tensor name found in two shards, or a malformed config file.
  static SafetensorsCheckpoint open(const std::string& path);
  const std::string& label() const { return label_; }
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  /// The tensor, or nullptr.
  const SafetensorsTensor* find(const std::string& name) const;
  /// The tensor; ConvertError "<label>: no tensor '<name>' (<role>)" with the layer's
  /// tensors that exist, when absent.
  const SafetensorsTensor& tensor(const std::string& name, const std::string& role) const;
  /// The file holding `name` (which must exist), for to_f32.
  const SafetensorsFile& file_of(const std::string& name) const;
  /// Every tensor name, sorted.
  std::vector<std::string> names() const;
  const QuantizationConfig& config() const { return config_; }

 private:
  std::string label_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, std::size_t> index_;  // tensor name -> file
  QuantizationConfig config_;
};

/// What every converter returns: the op spec and the op's weight-side buffers.
struct ConvertedLayer {
  std::string layer;                 // the prefix converted
  CheckpointFormat format = CheckpointFormat::Gptq;
  std::string source_type;           // e.g. "GPTQ v1 4-bit, group_size 128", "GGUF Q4_0"
  std::uint32_t in_features = 0, out_features = 0;
  /// {"op", its dimensions, group/block size, "schedule": "auto"}: parses with
  /// ir::ops::parse_spec and builds (checked before returning).
  nlohmann::json spec;
  /// Each weight-side buffer of the op, with the op's name, element type, element count
  /// and logical shape (ir/ops/BufferShape.h); the activation input is the caller's.
  /// An op with a bias buffer gets it here (the checkpoint's bias, or zeros).
  std::vector<NamedArray> buffers;
  /// The checkpoint's bias widened to f32 [out_features], when it has one.
  std::optional<std::vector<float>> bias;
  /// The checkpoint tensors that were read.
  std::vector<std::string> tensors;

  /// The buffer called `name`; RuntimeError when absent.
  const NpyArray& buffer(const std::string& name) const;
  /// spec.json + buffers + bias.npy (runtime/io/Bundle.h).
  Bundle bundle() const;
};

/// Settings of one conversion.
struct ConvertOptions {
  CheckpointFormat format = CheckpointFormat::Gptq;
  std::string layer;           // e.g. model.layers.0.self_attn.q_proj (safetensors), blk.0.attn_q (GGUF)
  std::uint32_t batch = 1;     // m, the activation rows of every op convert writes
  /// GPTQ's qzeros convention: "gptq" (v1: zero - 1 stored) or "gptq_v2" (zero stored);
  /// unset, the checkpoint config's checkpoint_format decides, else v1.
  std::optional<std::string> checkpoint_format;
};

// ---- the converters ---------------------------------------------------------------------

/// GPTQ, as AutoGPTQ (auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py `pack`) and
/// GPTQModel (gptqmodel/nn_modules/qlinear/__init__.py `pack`) save it, 4-bit, int32
/// packing. Tensors of layer P:
///   P.qweight  I32 [in/8, out]      word (k/8, n) holds k%8 at bits 4*(k%8): exactly
///                                   linear_4bit_affine_grouped's `w`, copied bit for bit
///   P.qzeros   I32 [groups, out/8]  word (g, n/8) holds column n%8 at bits 4*(n%8)
///   P.scales   F16 [groups, out]    (BF16, F32 also accepted: widened exactly)
///   P.g_idx    I32 [in]             group of input k (I64 accepted); optional
///   P.bias     F16 [out]            optional
/// -> linear_4bit_affine_grouped {in_dim, out_dim, group_size, "schedule": "auto"}:
///    w = qweight, scale = f32(scales), zero_point u32 [groups, out] unpacked, b = bias
///    (zeros without one). The op's weight (q - z) * s is the exact value of GPTQ's
///    dequantization scales[g] * (q - zeros[g]) (AutoGPTQ and GPTQModel's torch path
///    compute it in f16, which rounds it only where |q - z| * s needs more than 11 bits).
/// qzeros conventions: v1 (checkpoint_format "gptq", AutoGPTQ and GPTQModel's default
/// save) stores zero - 1; reading it adds 1 to each word as a 32-bit integer
/// (GPTQModel's convert_gptq_v1_to_v2_format_module, gptqmodel/utils/model.py: the
/// exact inverse of its v2 -> v1 subtraction). A v1 zero point of 0 is stored as
/// nibble 15 with a borrow (GPTQModel) or with every higher nibble set (AutoGPTQ's OR of
/// -1); where reading such a word per nibble (AutoGPTQ's (nibble + 1) & 15) and per word
/// disagree, the zero points are ambiguous and the converter refuses (re-save as
/// gptq_v2). v2 ("gptq_v2") stores the zero points as they are.
/// group_size: from the config when present (-1: one group), else the size of g_idx's
/// group 0, else in/groups. g_idx must be a GPTQ group map: one entry per input feature,
/// each in 0 .. groups-1, every group holding group_size input features and the last one
/// the rest (auto_gptq/quantization/gptq.py writes (arange(in) // group_size)[invperm]).
/// g_idx equal to k / group_size for every k (no act-order, or static_groups) is ignored.
/// Any other g_idx is act-order (desc_act=True; the groups are scattered over k) and maps
/// to the op's "act_order": true, as ExLlama, ExLlamaV2 (exllamav2_ext/cuda/q_matrix.cu,
/// QMatrix::make_sequential) and Marlin (vLLM marlin_utils.py marlin_sort_g_idx,
/// gptq_marlin_repack) load such layers: perm = the input features sorted by g_idx,
/// stably (perm[j] is the j-th feature in (group, index) order), w row j = qweight row
/// perm[j] nibble for nibble, the buffer perm u32 [in] written, scales and zero points
/// unchanged ([groups, out]: group g is now rows g*group_size ..). The op reads x[perm[j]]
/// for row j, so out = x @ W with W the checkpoint's scales[g_idx[k]] * (q[k] -
/// zeros[g_idx[k]]), exactly as without act-order (ir/ops/Linear4Bit.h says why the op
/// gathers x instead of indexing the sidecars by g_idx). source_type ends in ", act-order".
/// Errors: ConvertError for a missing tensor, a wrong dtype or shape, a group_size that
/// contradicts the tensors, a g_idx that is no group map of the layer (an entry outside 0
/// .. groups-1, named with its index and value; a length other than qweight's rows * 8;
/// a group of another size, named with its count), a v1/v2 flag that contradicts the
/// config, ambiguous v1 qzeros; UnsupportedFormatError for bits other than 4, a
/// kernel-specific checkpoint_format (marlin, ...). A batch other than 1 becomes the
/// spec's "m".
ConvertedLayer convert_gptq(const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options);

/// AWQ in AutoAWQ's GEMM format (awq/modules/linear/gemm.py WQLinear_GEMM.from_linear;
/// unpacked by awq/utils/packing_utils.py dequantize_gemm), 4-bit. Tensors of layer P:
///   P.qweight  I32 [in, out/8]      word (k, n/8) holds column 8*(n/8) + AWQ_ORDER[i] in
///                                   nibble i, AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]
///   P.qzeros   I32 [groups, out/8]  the same order; the zero points as they are (AWQ
///                                   has no zero - 1 convention)
///   P.scales   F16 [groups, out]
///   P.bias     F16 [out]            optional
/// -> linear_4bit_affine_grouped, like GPTQ: column n's code is nibble
///    AWQ_REVERSE_ORDER[n%8] (= [0, 4, 1, 5, 2, 6, 3, 7]) of qweight[k, n/8], repacked
///    to nibble k%8 of w[k/8, n]; zero_point likewise; group_size = in/groups. AWQ's
///    dequantization (iweight - izeros) * scales is computed exactly, as for GPTQ.
/// Errors: as GPTQ; UnsupportedFormatError for a config version other than "gemm" (GEMV,
/// Marlin, exllama layouts) and bits other than 4.
ConvertedLayer convert_awq(const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options);

/// bitsandbytes 4-bit as transformers saves a Linear4bit (bitsandbytes/nn/modules.py
/// Linear4bit._save_to_state_dict with QuantState.as_dict(packed=True),
/// bitsandbytes/functional.py). Tensors of layer P:
///   P.weight                            U8 [ceil(out*in/2), 1]: the flattened [out, in]
///                                       weight's 4-bit codes, element 2i in the HIGH
///                                       nibble of byte i (csrc kQuantizeBlockwise)
///   P.weight.absmax                     F32 [blocks] (U8 [blocks] when nested)
///   P.weight.quant_map                  F32 [16], the code book
///   P.weight.quant_state.bitsandbytes__nf4  U8: JSON {quant_type, blocksize, dtype,
///     (__fp4 for FP4)
///                                       shape [out, in], and when nested:
///                                       nested_blocksize, nested_dtype, nested_offset}
///   P.weight.nested_absmax              F32 [ceil(blocks/nested_blocksize)] (nested)
///   P.weight.nested_quant_map           F32 [256] (nested)
///   P.bias                              optional
/// -> nf4_gemm {m: batch, n: out, k: in, "schedule": "auto"} (plus "quant_type": "fp4"
///    for FP4) when blocksize is a multiple of 64, in % 64 == 0 and quant_map is the
///    type's table bit for bit (kNf4Table, or kBnbFp4Table: get_4bit_type("fp4"), the
///    values of bnb's dDequantizeFP4Tree): row n's 64 consecutive elements j*64.. are then
///    nf4_gemm's (column n, block j) in the same order, inside one bnb block, so b_scales
///    = that block's absmax (bnb's absmax itself for blocksize 64, each repeated
///    blocksize/64 times otherwise) and b_nf4 = the bytes with their nibbles swapped. Double quantization (compress_statistics) is resolved as bnb's
///    dequantize_4bit does it (functional.py: dequantize_blockwise, then += offset):
///    absmax[i] = f32(f32(nested_quant_map[q[i]] * nested_absmax[i / nested_blocksize])
///    + nested_offset), each operation rounded to f32 separately (no FMA). The op's
///    weight table[code] * absmax is bnb's f32 product (its output for dtype float32; bnb
///    then casts to the quant state's dtype). The bias goes to bias.npy (nf4_gemm has no
///    bias buffer).
/// Errors: ConvertError for a missing tensor, a wrong dtype or shape, malformed quant
/// state JSON; UnsupportedFormatError for a blocksize that is not a multiple of 64 (32),
/// in % 64 != 0, a custom quant_map, and LLM.int8 (8-bit) layers.
ConvertedLayer convert_bnb(const SafetensorsCheckpoint& checkpoint, const ConvertOptions& options);

/// GGUF (runtime/io/Gguf.h; ggml's block layouts, ggml/src/ggml-common.h, and
/// dequantize_row_* of ggml-quants.c). Tensor P.weight with ne = [in, out] (2-D), and
/// P.bias (F32/F16/BF16 [out]) when present. Element (k, n) of the op's W [k, n] is
/// tensor element n*in + k: block (n*in + k) / block_size, element k % block_size.
///   Q8_0 -> dequant_matmul_int8 {m, k, n, block_size 32, asymmetric false}: w i8 [k, n]
///           = qs; scales [k/32, n] = f32(d). ggml: qs * d.
///   Q4_0 -> dequant_matmul_int4 {block 32, asymmetric true}: w nibbles [k, n] (element
///           k*n + n' in the low nibble of byte (k*n + n')/2 when even), the codes of
///           ggml's block (element j in the low nibble of qs[j], element j + 16 in the
///           high nibble of qs[j]); scales = f32(d); zero_points = 8.0. ggml: (q - 8) * d;
///           the op's (f32(q) - 8) * d is the same product.
///   Q4_1 -> dequant_matmul_int4 {block 32, offset true}: w nibbles as for Q4_0 (ggml's
///           block_q4_1 packs its codes as block_q4_0 does); scales = f32(d); offsets =
///           f32(m). ggml (dequantize_row_q4_1): q * d + m, the product rounded, then the
///           sum: the op's offset mode f32(q) * s + o is that expression. q * d is exact
///           (4 + 11 significant bits), so -O2's fused fma(q, s, o) rounds once, as ggml.
///   Q4_K -> dequant_matmul_int4 {block 32, offset true}: one op block per 32-element
///           sub-block j of each 256-element super-block; w = the 4-bit codes (element i
///           of the super-block: low nibble of qs[32*(i/64) + i%32] for i%64 < 32, else
///           the high nibble), repacked as for Q4_0; with sc_j, m_j the 6-bit scale and
///           min (ggml's get_scale_min_k4, Gguf.h ggml_k4_scale_min), scales [k/32, n] =
///           f32(d) * f32(sc_j) and offsets = -(f32(dmin) * f32(m_j)): ggml's d1 and -m1
///           (dequantize_row_q4_K), each product exact (11 + 6 significant bits). ggml:
///           d1 * q - m1 = d1 * q + (-m1) (IEEE subtraction is addition of the negation,
///           signed zeros included), the op's value bit for bit; d1 * q is exact (21 bits).
///   Q5_K -> dequant_matmul_int8 {block 32, offset true}: as Q4_K with the 5-bit codes
///           (the fifth bit from qh, Gguf.h GgmlBlockQ5_K::quant) stored as i8 0..31, one
///           byte per weight (as Q6_K: no op reads 5-bit codes; 8 bits against Q5_K's 5.5);
///           ggml (dequantize_row_q5_K): d1 * q - m1, d1 * q exact (22 bits).
///   Q6_K -> dequant_matmul_int8 {block 16, asymmetric false}: w = q - 32 (i8, -32..31),
///           scales [k/16, n] = f32(d) * f32(sc) for sub-block sc: exact, since d has 11
///           significant bits and |sc| <= 128 (19 bits < 24); ggml: (d * sc) * (q - 32).
/// Every mapped weight is ggml's f32 dequantized value bit for bit (NaN payloads aside,
/// for files with non-finite f16 d, dmin or m, which ggml's quantizers do not write).
/// Errors: ConvertError for a missing tensor, a tensor that is not 2-D;
/// UnsupportedFormatError for F32/F16/BF16 (not quantized), Q5_0/Q5_1 (5-bit codes; no
/// op reads them, and this converter has no block readers for them) and every other
/// type.
ConvertedLayer convert_gguf(const GgufFile& file, const ConvertOptions& options);

/// Opens `path` (a .gguf file, a .safetensors file or a folder of them) and runs the
/// converter of options.format. ConvertError when the file is not of that format.
ConvertedLayer convert_layer(const std::string& path, const ConvertOptions& options);

// ---- listing ----------------------------------------------------------------------------

/// One layer a checkpoint holds, as `quantc convert --list` prints it.
struct LayerInfo {
  std::string layer;                       // the --layer prefix
  std::optional<CheckpointFormat> format;  // none for an unquantized weight
  std::string type;                        // "GPTQ 4-bit g128 v1", "Q4_0", "F16", ...
  std::uint64_t in_features = 0, out_features = 0;
  std::string op;                          // the op it converts to; empty when refused
  std::string refusal;                     // why it cannot be converted; empty when it can
};

/// Every quantized linear layer of the checkpoint (and every unquantized 2-D weight,
/// marked refused), in name order (GGUF: file order). The checks are the converters' own
/// minus the repacking, so a layer listed with an op converts.
std::vector<LayerInfo> list_layers(const std::string& path);

/// True when `path` starts with the GGUF magic.
bool is_gguf_file(const std::string& path);

}  // namespace quantc::runtime::convert
