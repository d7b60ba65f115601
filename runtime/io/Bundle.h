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
// DIR. Every file is written through OutputFiles (runtime/io/AtomicFile.h): nothing is
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
