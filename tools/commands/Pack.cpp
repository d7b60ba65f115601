// quantc pack MODEL.safetensors --tensor NAME --scheme int4-affine-grouped|nf4|int4-symmetric
//             [--group-size G] [--block 64] [--transpose] -o OUT.safetensors [--npy-dir DIR]
// Host-side quantization of a real tensor into exactly the buffers an op expects.
#include <fmt/format.h>

#include <cstdio>

#include "runtime/io/PackFile.h"
#include "tools/commands/Commands.h"

namespace quantc::tools {

void add_pack_command(CLI::App& app) {
  auto options = std::make_shared<runtime::pack::PackOptions>();
  auto scheme = std::make_shared<std::string>("int4-affine-grouped");
  CLI::App* command = app.add_subcommand("pack", "Quantize a safetensors tensor into an op's packed buffers");
  command->add_option("model", options->model_path, "MODEL.safetensors")->required();
  command->add_option("--tensor", options->tensor, "Tensor name in the model")->required();
  command->add_option("--scheme", *scheme, "int4-affine-grouped (linear_4bit_affine_grouped), nf4 (nf4_gemm), "
                                           "int4-symmetric (int4_matvec_f32_scaled)")
      ->check(CLI::IsMember({"int4-affine-grouped", "nf4", "int4-symmetric"}))
      ->capture_default_str();
  command->add_option("--group-size", options->group_size, "Elements per scale group (int4-affine-grouped)")->capture_default_str();
  command->add_option("--block", options->block, "Elements per NF4 block (nf4; 64)")->capture_default_str();
  command->add_flag("--transpose", options->transpose,
                    "The tensor is [out_features, in_features] (a PyTorch nn.Linear weight): in_dim is axis 1");
  command->add_option("-o,--output", options->output_path, "OUT.safetensors (tensors named like the op's buffers; - for standard output)")->required();
  command->add_option("--npy-dir", options->npy_dir, "Also write one BUFFER.npy per packed buffer here (created if needed)");
  command->callback([options, scheme] {
    options->scheme = ir::ops::pack::scheme_from_name(*scheme);
    runtime::pack::PackResult result = runtime::pack::pack_file(*options);
    // With -o - the safetensors bytes are standard output; the report goes to stderr.
    std::FILE* report = options->output_path == "-" ? stderr : stdout;
    for (const auto& tensor : result.tensors) fmt::print(report, "packed {}\n", tensor.name);
  });
}

}  // namespace quantc::tools
