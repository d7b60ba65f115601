// A layer bundle: the folder `quantc convert -o DIR` and `quantc pack -o DIR` write and
// `quantc run DIR/spec.json --inputs DIR` reads.
//
//   DIR/spec.json      the op spec, ready for `quantc run` (and emit, check, profile)
//   DIR/<buffer>.npy   one file per weight-side buffer of the op (named, typed and shaped
//                      as the op declares it: ir/ops/BufferShape.h)
//   DIR/bias.npy       the layer's bias, f32 [out_features], when the checkpoint has one;
//                      ops with a bias buffer (linear_4bit_affine_grouped's `b`) also get
//                      it as that buffer (b.npy), the others leave adding it to the caller
//
// The activation input (x or a) is the caller's: `--input x=X.npy`, or an x.npy put in
// DIR. A bundle is for f32 activations unless set_activation made it f16 or bf16 (then
// spec.json has "activation" and the bias buffer b.npy holds that type; bias.npy stays f32). Every file is written through OutputFiles (runtime/io/AtomicFile.h): nothing is
// replaced unless every file could be staged.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "runtime/io/AtomicFile.h"
#include "runtime/io/Npy.h"

namespace quantc::runtime {

/// One named array of a bundle.
struct NamedArray {
  std::string name;
  NpyArray array;
};

struct Bundle {
  nlohmann::json spec;              // a flat JSON object, as ir::ops::parse_spec reads it
  std::vector<NamedArray> buffers;  // written as <name>.npy
  std::optional<NpyArray> bias;     // written as bias.npy
};

/// `values` as a buffer of `activation` (f32, f16 or bf16), each rounded once to nearest
/// even (f32: unchanged; f16/bf16 as numpy's astype and PTX cvt.rn.f16.f32 /
/// cvt.rn.bf16.f32 round, so |v| >= 65520 becomes inf in f16). Throws RuntimeError for
/// another element type.
HostBuffer rounded_to_activation(ir::ScalarType activation, const std::vector<float>& values);

/// Makes `bundle`, written for f32 activations, run with `activation` (ir/ops/Activation.h):
/// f32 leaves it as it is (the spec's default); f16 or bf16 sets the spec's "activation" and
/// rounds every buffer the op's registry entry marks activation-typed (the bias buffer `b` of
/// linear_4bit_affine_grouped; weights and scales keep their types) with
/// rounded_to_activation. bias.npy stays f32. Throws RuntimeError when the spec's op is not
/// registered or has no "activation" parameter, or such a buffer is not f32.
void set_activation(Bundle& bundle, ir::ScalarType activation);

/// The file name of the bundle's spec, "spec.json".
inline constexpr const char* kBundleSpecFile = "spec.json";

/// Writes bundles into one folder. The constructor checks the folder (OutputFolder) before
/// any work; write() creates it if needed, stages spec.json and every .npy, and commits
/// them together.
class BundleWriter {
 public:
  /// `option` names the flag in messages ("-o").
  explicit BundleWriter(std::string folder, std::string option = "-o");
  /// Writes `bundle`; returns the paths written, spec.json first. Throws RuntimeError for
  /// a file that cannot be written (nothing is replaced then), a buffer named "spec" or
  /// "bias", or two buffers with one name.
  std::vector<std::string> write(const Bundle& bundle);

 private:
  OutputFolder folder_;
};

}  // namespace quantc::runtime
