// quantc pack MODEL.safetensors --tensor NAME --scheme int4-affine-grouped|nf4|int4-symmetric
//             [--group-size G] [--block 64] [--layout out,in|in,out] [--batch M] [--activation f32|f16|bf16]
//             -o DIR | -o OUT.safetensors [--npy-dir DIR]
// Host-side quantization of a real tensor into exactly the buffers an op expects: a layer
// bundle (spec.json + one .npy per buffer, as `quantc convert` writes) or one safetensors
// file. The tensor is a PyTorch nn.Linear weight [out, in] unless --layout in,out.
#include <fmt/format.h>

#include <cstdio>

#include "ir/ops/Activation.h"
#include "runtime/io/PackFile.h"
#include "tools/CommandSupport.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {

void add_pack_command(CLI::App& app) {
  auto options = std::make_shared<runtime::pack::PackOptions>();
  auto scheme = std::make_shared<std::string>("int4-affine-grouped");
  auto layout = std::make_shared<std::optional<std::string>>();
  auto transpose = std::make_shared<bool>(false);
  auto activation = std::make_shared<std::string>("f32");
  CLI::App* command = app.add_subcommand("pack", "Quantize a safetensors tensor into an op's packed buffers");
  command->add_option("model", options->model_path, "MODEL.safetensors")->required();
  command->add_option("--tensor", options->tensor, "Tensor name in the model (its <prefix>.bias is packed too)")
      ->required();
  command->add_option("--scheme", *scheme, "int4-affine-grouped (linear_4bit_affine_grouped), nf4 (nf4_gemm), "
                                           "int4-symmetric (int4_matvec_f32_scaled)")
      ->check(CLI::IsMember({"int4-affine-grouped", "nf4", "int4-symmetric"}))
      ->capture_default_str();
  CLI::Option* group_size = command->add_option("--group-size", options->group_size,
                                                "Elements per scale group (int4-affine-grouped only)")
                                ->capture_default_str();
  CLI::Option* block = command->add_option("--block", options->block, "Elements per NF4 block (nf4 only; nf4_gemm's is 64)")
                           ->capture_default_str();
  CLI::Option* batch = command->add_option("--batch", options->batch, "m, the activation rows, in the spec (nf4, int4-affine-grouped)")
                           ->capture_default_str()
                           ->check(CLI::Range(1u, 65535u));
  command->add_option("--layout", *layout,
                      "How the tensor is stored: out,in (a PyTorch nn.Linear weight [out_features, in_features], the "
                      "default) or in,out (the ops' W [in_features, out_features])")
      ->check(CLI::IsMember({"out,in", "in,out"}));
  command->add_option("--activation", *activation,
                      "The spec's activation type: f32, or f16 / bf16 (written into spec.json; the bias buffer b of "
                      "int4-affine-grouped is then rounded to it)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  command->add_flag("--transpose", *transpose, "Same as --layout out,in (the default; kept for old scripts)");
  command->add_option("-o,--output", options->output_path,
                      "DIR: a bundle folder (spec.json + BUFFER.npy + bias.npy, created if needed; `quantc run "
                      "DIR/spec.json --inputs DIR` runs it), or OUT.safetensors (tensors named like the op's buffers; - "
                      "for standard output)")
      ->required();
  command->add_option("--npy-dir", options->npy_dir,
                      "With a .safetensors output: also write one BUFFER.npy per packed buffer here (created if needed)");
  command->callback([options, scheme, layout, transpose, activation, group_size, block, batch] {
    options->scheme = ir::ops::pack::scheme_from_name(*scheme);
    options->activation = ir::ops::activation_from_name(*activation);
    if (*transpose && layout->value_or("out,in") != "out,in") {
      throw CommandError(fmt::format("--transpose means --layout out,in, which contradicts --layout {}; give one",
                                     **layout));
    }
    options->layout = runtime::pack::weight_layout_from_name(layout->value_or("out,in"));
    using ir::ops::pack::Scheme;
    if (group_size->count() > 0 && options->scheme != Scheme::Int4AffineGrouped) {
      throw CommandError(fmt::format("--group-size applies to --scheme int4-affine-grouped; {} ignores it ({}); drop "
                                     "--group-size",
                                     *scheme,
                                     options->scheme == Scheme::Nf4 ? "nf4_gemm has one scale per block of 64, see --block"
                                                                    : "int4_matvec_f32_scaled has one scale per row"));
    }
    if (block->count() > 0 && options->scheme != Scheme::Nf4) {
      throw CommandError(fmt::format("--block applies to --scheme nf4; {} ignores it; drop --block (int4-affine-grouped "
                                     "takes --group-size)",
                                     *scheme));
    }
    if (options->scheme == Scheme::Nf4 && options->block != ir::ops::pack::kNf4GemmBlock) {
      throw CommandError(fmt::format("--block {}: nf4_gemm reads one scale per {} consecutive input features (its block "
                                     "is fixed at {}); use --block {} or leave it out",
                                     options->block, ir::ops::pack::kNf4GemmBlock, ir::ops::pack::kNf4GemmBlock,
                                     ir::ops::pack::kNf4GemmBlock));
    }
    if (batch->count() > 0 && options->scheme == Scheme::Int4Symmetric) {
      throw CommandError(fmt::format("--batch applies to --scheme nf4 and int4-affine-grouped (their ops' m); the op "
                                     "of {} is a batch-1 GEMV; drop --batch",
                                     *scheme));
    }
    runtime::pack::PackResult result = runtime::pack::pack_file(*options);
    // With -o - the safetensors bytes are standard output; the report goes to stderr.
    std::FILE* report = options->output_path == "-" ? stderr : stdout;
    for (const auto& tensor : result.tensors) fmt::print(report, "packed {}\n", tensor.name);
    if (runtime::pack::is_bundle_output(options->output_path)) {
      for (const std::string& path : result.written) fmt::print(report, "wrote {}\n", path);
      const std::string activation = options->scheme == Scheme::Nf4 ? "a" : "x";
      fmt::print(report, "run: quantc run {}/spec.json --inputs {} --input {}=X.npy\n", options->output_path,
                 options->output_path, activation);
    }
  });
}

}  // namespace quantc::tools
