// quantc convert CHECKPOINT --format gptq|awq|bnb|gguf --layer PREFIX [-o DIR] [--batch M]
//                [--checkpoint-format gptq|gptq_v2] [--activation f32|f16|bf16]
// quantc convert CHECKPOINT --list [--format F]
// Repacks one quantized linear layer of a GPTQ, AWQ, bitsandbytes or GGUF checkpoint,
// exactly, into a layer bundle (spec.json + one .npy per op buffer + bias.npy) that
// `quantc run DIR/spec.json --inputs DIR` runs. The library is runtime/io/Convert.h.
#include <fmt/format.h>

#include <algorithm>

#include "ir/ops/Activation.h"
#include "runtime/io/Bundle.h"
#include "runtime/io/Convert.h"
#include "tools/CommandSupport.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {
namespace {

struct ConvertCommandOptions {
  std::string checkpoint;
  std::optional<std::string> format;
  std::optional<std::string> layer;
  std::optional<std::string> output;
  std::optional<std::string> checkpoint_format;
  std::string activation = "f32";
  std::uint32_t batch = 1;
  bool list = false;
};

void print_listing(const ConvertCommandOptions& options) {
  std::optional<runtime::convert::CheckpointFormat> only;
  if (options.format) only = runtime::convert::format_from_name(*options.format);
  std::vector<runtime::convert::LayerInfo> layers = runtime::convert::list_layers(options.checkpoint);
  std::size_t width = 5;
  for (const auto& layer : layers) width = std::max(width, layer.layer.size());
  fmt::print("{:<{}}  {:<6} {:>11} {:>11}  {}\n", "layer", width, "format", "in_features", "out_features",
             "type -> op (or why it is refused)");
  std::size_t shown = 0, convertible = 0;
  for (const auto& layer : layers) {
    if (only && layer.format != only) continue;
    ++shown;
    convertible += layer.refusal.empty() ? 1 : 0;
    const std::string format = layer.format ? runtime::convert::format_name(*layer.format) : "-";
    fmt::print("{:<{}}  {:<6} {:>11} {:>11}  {} -> {}\n", layer.layer, width, format, layer.in_features,
               layer.out_features, layer.type, layer.refusal.empty() ? layer.op : "refused: " + layer.refusal);
  }
  fmt::print("{} layers, {} convertible\n", shown, convertible);
}

/// The default bundle folder: the layer's name in the current folder.
std::string default_output(const std::string& layer) {
  std::string folder = layer;
  std::replace(folder.begin(), folder.end(), '/', '_');
  return folder;
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto options = std::make_shared<ConvertCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "convert", "Repack one layer of a GPTQ, AWQ, bitsandbytes or GGUF checkpoint exactly into an op's buffers");
  command->add_option("checkpoint", options->checkpoint,
                      "A .safetensors file or a folder of them (gptq, awq, bnb), or a .gguf file")
      ->required();
  command->add_option("--format", options->format, "The checkpoint's format: gptq, awq, bnb or gguf")
      ->check(CLI::IsMember({"gptq", "awq", "bnb", "gguf"}));
  command->add_option("--layer", options->layer,
                      "The layer prefix, e.g. model.layers.0.self_attn.q_proj (safetensors) or blk.0.attn_q (GGUF)");
  command->add_option("-o,--output", options->output,
                      "The bundle folder (created if needed; default: the layer's name): spec.json, BUFFER.npy, "
                      "bias.npy");
  command->add_option("--batch", options->batch, "m, the activation rows (nf4_gemm, dequant_matmul_*, linear_4bit_affine_grouped)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 262140u));
  command->add_option("--checkpoint-format", options->checkpoint_format,
                      "GPTQ's qzeros convention: gptq (v1: zero - 1 stored) or gptq_v2; default: the checkpoint "
                      "config's checkpoint_format, else gptq")
      ->check(CLI::IsMember({"gptq", "gptq_v2"}));
  command->add_option("--activation", options->activation,
                      "The spec's activation type: f32, or f16 / bf16 (written into spec.json; a bias buffer b, as "
                      "linear_4bit_affine_grouped's, is then rounded to it)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  command->add_flag("--list", options->list, "List the checkpoint's layers, their format and shape, and the op each "
                                             "converts to (or why it cannot)");
  command->callback([options, command] {
    if (options->list) {
      for (const char* name : {"--layer", "-o", "--batch", "--checkpoint-format", "--activation"}) {
        if (command->count(name) > 0) {
          throw CommandError(fmt::format("{} does not apply to --list; drop it (or drop --list to convert)", name));
        }
      }
      print_listing(*options);
      return;
    }
    if (!options->format || !options->layer) {
      throw CommandError(fmt::format("convert needs --format gptq|awq|bnb|gguf and --layer PREFIX (missing: {}); "
                                     "`quantc convert {} --list` lists the layers and their formats",
                                     !options->format ? (!options->layer ? "--format, --layer" : "--format") : "--layer",
                                     options->checkpoint));
    }
    runtime::convert::ConvertOptions convert;
    convert.format = runtime::convert::format_from_name(*options->format);
    convert.layer = *options->layer;
    convert.batch = options->batch;
    convert.checkpoint_format = options->checkpoint_format;
    if (options->checkpoint_format && convert.format != runtime::convert::CheckpointFormat::Gptq) {
      throw CommandError("--checkpoint-format applies to --format gptq (the qzeros convention); drop it");
    }
    const std::string folder = options->output.value_or(default_output(convert.layer));
    // The folder is checked before the checkpoint is read; nothing is written unless
    // every file of the bundle can be.
    runtime::BundleWriter writer(folder, "-o");
    const runtime::convert::ConvertedLayer layer = runtime::convert::convert_layer(options->checkpoint, convert);
    runtime::Bundle bundle = layer.bundle();
    runtime::set_activation(bundle, ir::ops::activation_from_name(options->activation));
    const std::vector<std::string> written = writer.write(bundle);
    fmt::print("converted {} ({}, in_features {}, out_features {}) -> {}\n", layer.layer, layer.source_type,
               layer.in_features, layer.out_features, layer.spec.value("op", "?"));
    for (const std::string& path : written) fmt::print("wrote {}\n", path);
    const std::string activation = layer.spec.value("op", "") == "nf4_gemm" ? "a" : "x";
    fmt::print("run: quantc run {}/spec.json --inputs {} --input {}=X.npy\n", folder, folder, activation);
  });
}

}  // namespace quantc::tools
