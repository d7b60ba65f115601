// quantc._quantc: the Python package's native core (nanobind). It is glue only: every
// call goes to the same library function the CLI calls (spec parsing, the kernel cache,
// the backends, the profiler, the packer, the converters), so results and error messages
// are the CLI's. The friendly API (NumPy arrays, framework tensors, dict specs) is the
// pure-Python quantc/__init__.py; this module trades in bytes, dtype names and shapes.
//
// Errors: every C++ exception becomes one of the exception classes of quantc/errors.py,
// chosen by its C++ type (translate_exception); the message is the exception's what(),
// the text the CLI prints after "error: ".
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "ir/Printer.h"
#include "ir/ops/BufferShape.h"
#include "ir/ops/HostPack.h"
#include "ir/ops/Spec.h"
#include "lower/KernelMetadata.h"
#include "lower/PassManager.h"
#include "lower/driver/Compiler.h"
#include "lower/driver/KernelCache.h"
#include "lower/driver/KernelMetadataJson.h"
#include "ptx/Assemble.h"
#include "ptx/NvJitLink.h"
#include "ptx/Ptxas.h"
#include "runtime/backends/Registry.h"
#include "runtime/backends/cuda/Driver.h"
#include "runtime/backends/cuda/Launch.h"
#include "runtime/backends/emulator/Profile.h"
#include "runtime/io/Convert.h"
#include "runtime/io/InputArrays.h"
#include "runtime/io/PackFile.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace quantc::python {
namespace {

/// (element type name, logical shape, little-endian bytes): how arrays cross the boundary.
using Array = std::tuple<std::string, std::vector<std::uint64_t>, nb::bytes>;

nb::bytes to_bytes(const std::vector<std::uint8_t>& bytes) {
  return nb::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}
nb::bytes to_bytes(const std::string& bytes) { return nb::bytes(bytes.data(), bytes.size()); }

std::vector<std::uint8_t> from_bytes(const nb::bytes& bytes) {
  const auto* data = static_cast<const std::uint8_t*>(bytes.data());
  return {data, data + bytes.size()};
}

ir::ScalarType element_named(const std::string& name) {
  if (std::optional<ir::ScalarType> type = ir::parse_scalar_type(name)) return *type;
  throw runtime::RuntimeError(fmt::format("unknown element type '{}'", name));
}

/// The logical shape of buffer `decl` of `spec`'s op where it covers the declared count,
/// else [count] (a buffer the registry does not describe, or declared larger).
std::vector<std::uint64_t> buffer_shape(const ir::ops::OpSpec& spec, const ir::BufferDecl& decl) {
  for (const ir::ops::BufferSpec& buffer : spec.op->buffers) {
    if (buffer.name != decl.name) continue;
    const std::optional<std::vector<std::uint64_t>> shape = ir::ops::logical_shape(buffer, spec.args);
    if (!shape) break;
    std::uint64_t count = 1;
    for (std::uint64_t dim : *shape) count *= dim;
    if (count == decl.count) return *shape;
  }
  return {decl.count};
}

/// One compiled spec: what quantc.compile returns (wrapped by quantc.Kernel).
class Kernel {
 public:
  Kernel(const std::string& spec_text, const std::string& source, std::optional<std::string> target,
         std::optional<std::string> opt_level)
      : spec_(lower::parse_spec_with_target(spec_text, source)) {
    // Bad values of the arguments are spec errors, as their spelling in a spec would be.
    try {
      passes_ = lower::resolve_pass_options(spec_, opt_level, std::nullopt);
      target_ = lower::resolve_target(target, spec_);
    } catch (const lower::PassError& error) {
      throw ir::ops::SpecError(error.what());
    } catch (const std::invalid_argument& error) {
      throw ir::ops::SpecError(error.what());
    }
    program_ = ir::ops::build_program(spec_, std::string(target_.name()));
    // PTX through the kernel cache, as `quantc emit` does.
    lower::KernelCache cache = lower::KernelCache::from_environment();
    key_ = lower::CacheKey::for_spec(spec_, target_.name(), lower::pipeline_name(passes_));
    ptx_ = cache.get_or_build(key_, lower::ArtifactKind::Ptx,
                              [&] { return lower::compile(program_, {target_, passes_}).ptx; });
  }

  const std::string& ptx() const { return ptx_; }
  std::string target() const { return std::string(target_.name()); }
  std::string name() const { return program_.name; }
  std::string spec_json() const { return spec_.canonical_json(); }
  std::string ir() const { return ir::print(optimized()); }
  std::string metadata_json() const {
    return lower::metadata_json(lower::KernelMetadata::of(program_, std::string(target_.name())));
  }

  /// (name, element, shape, role) per buffer in binding order; role "input", "output"
  /// (written and read back) or "scratch".
  std::vector<std::tuple<std::string, std::string, std::vector<std::uint64_t>, std::string>> buffers() const {
    std::vector<std::tuple<std::string, std::string, std::vector<std::uint64_t>, std::string>> result;
    for (const ir::BufferDecl& decl : program_.buffers) {
      const char* role = decl.is_scratch() ? "scratch" : decl.is_output() ? "output" : "input";
      result.emplace_back(decl.name, std::string(ir::to_string(decl.element)), buffer_shape(spec_, decl), role);
    }
    return result;
  }

  nb::bytes cubin() const {
    lower::KernelCache cache = lower::KernelCache::from_environment();
    return to_bytes(cache.get_or_build(key_, lower::ArtifactKind::Cubin,
                                       [&] { return ptx::link_cubin(ptx_, target_).cubin; }));
  }

  /// `quantc check`'s figures for `target` (default: this kernel's) as JSON text.
  std::string check(std::optional<std::string> target, const std::string& assembler) const {
    ptx::Target assembled = target_;
    try {
      if (target) assembled = ptx::parse_target(*target);
    } catch (const std::invalid_argument& error) {
      throw ir::ops::SpecError(error.what());
    }
    const std::string text = assembled.name() == target_.name() ? ptx_ : lower::compile(program_, {assembled, passes_}).ptx;
    if (assembler != "ptxas" && assembler != "nvjitlink") {
      throw runtime::RuntimeError(fmt::format("assembler '{}' is not ptxas or nvjitlink", assembler));
    }
    const ptx::AssemblyReport result = ptx::assemble(assembler, text, assembled);
    const nlohmann::json report = {{"target", assembled.name()}, {"assembler", assembler}, {"ok", result.success},
                                   {"registers", result.registers}, {"spill_store_bytes", result.spill_store_bytes},
                                   {"spill_load_bytes", result.spill_load_bytes}, {"log", result.log}};
    return report.dump();
  }

  /// `quantc profile --json` for this kernel on the emulator's random inputs of `seed`.
  std::string profile(std::uint64_t seed, const std::vector<std::string>& devices) const {
    runtime::emulator::ProfileOptions options;
    options.devices = devices;
    const nlohmann::ordered_json document = {
        {"kernels", nlohmann::ordered_json::array({runtime::emulator::profile_json(
                        runtime::emulator::profile_program(program_, ptx_, seed, options))})}};
    return document.dump();
  }

  /// The inputs `quantc run --random-inputs SEED` uses.
  std::map<std::string, Array> random_inputs(std::uint64_t seed) const {
    runtime::BufferSet buffers = runtime::random_buffers(program_, seed);
    std::map<std::string, Array> result;
    for (const ir::BufferDecl& decl : program_.buffers) {
      if (decl.is_written()) continue;
      result.emplace(decl.name, Array{std::string(ir::to_string(decl.element)), buffer_shape(spec_, decl),
                                      to_bytes(buffers.at(decl.name).bytes)});
    }
    return result;
  }

  /// Runs on a CPU backend (or "cuda" with host copies); inputs by buffer name, each
  /// checked as `quantc run --input` checks a file (runtime::accept_input_array). With
  /// `seed`, inputs not given are random_buffers'; without, every input is required.
  std::map<std::string, Array> run(const std::string& backend_name, const std::map<std::string, Array>& inputs,
                                   std::optional<std::uint64_t> seed, unsigned threads) const {
    for (const auto& [name, array] : inputs) runtime::input_buffer(program_, name, fmt::format("argument '{}'", name));
    runtime::BufferSet buffers = seed ? runtime::random_buffers(program_, *seed) : runtime::allocate_buffers(program_);
    std::string missing;
    for (const ir::BufferDecl& decl : program_.buffers) {
      auto given = inputs.find(decl.name);
      if (given == inputs.end()) {
        if (!seed && !decl.is_written()) missing += (missing.empty() ? "" : ", ") + decl.name;
        continue;
      }
      const auto& [element, shape, bytes] = given->second;
      runtime::NpyArray array{{element_named(element), from_bytes(bytes)}, shape};
      buffers[decl.name] = runtime::accept_input_array(spec_, decl, std::move(array),
                                                       fmt::format("argument '{}'", decl.name), "array");
    }
    if (!missing.empty()) {
      throw runtime::RuntimeError(fmt::format("missing inputs: {}; pass each as a keyword argument (NAME=array), or "
                                              "seed=N for random inputs",
                                              missing));
    }
    std::unique_ptr<runtime::Backend> backend = runtime::make_backend(backend_name);
    // A PTX backend runs the PTX compiled (or read from the cache) above; the interpreter
    // runs the optimized IR.
    runtime::BackendKernel kernel{program_, ptx_, target_};
    if (backend->form() == runtime::KernelForm::Ir) {
      runtime::CompileOptions options;
      options.passes = passes_;
      kernel = backend->compile(program_, options);
    }
    runtime::RunOptions run_options;
    run_options.threads = threads;
    {
      nb::gil_scoped_release unlocked;
      backend->run(kernel, buffers, run_options);
    }
    std::map<std::string, Array> outputs;
    for (const ir::BufferDecl& decl : program_.buffers) {
      if (!decl.is_output()) continue;
      const ir::ByteRange range = decl.readable_range();
      const std::vector<std::uint8_t>& bytes = buffers.at(decl.name).bytes;
      std::vector<std::uint64_t> shape = buffer_shape(spec_, decl);
      if (range.end - range.begin != bytes.size()) shape = {(range.end - range.begin) / ir::byte_size(decl.element)};
      outputs.emplace(decl.name,
                      Array{std::string(ir::to_string(decl.element)), shape,
                            nb::bytes(reinterpret_cast<const char*>(bytes.data()) + range.begin, range.end - range.begin)});
    }
    return outputs;
  }

  /// Launches on the GPU on device memory the caller owns: (pointer, bytes) per buffer
  /// name; `stream` a CUstream handle (0: the legacy default stream), else the backend's.
  void launch(const std::map<std::string, std::pair<std::uintptr_t, std::size_t>>& pointers,
              std::optional<std::uintptr_t> stream) const {
    std::map<std::string, runtime::cuda::DevicePointer> buffers;
    for (const auto& [name, pointer] : pointers) buffers[name] = {static_cast<CUdeviceptr>(pointer.first), pointer.second};
    runtime::cuda::CudaBackend& gpu = cuda_backend();
    std::optional<CUstream> handle;
    if (stream) handle = reinterpret_cast<CUstream>(*stream);
    // PTX JIT-compiles for the device it loads on, so any target up to the GPU's runs.
    if (target_.sm > gpu.target().sm) {
      throw runtime::RuntimeError(fmt::format("kernel compiled for {}, newer than the GPU ({}); compile with "
                                              "target='{}' (quantc.cuda_target())",
                                              target_.name(), gpu.target().name(), gpu.target().name()));
    }
    gpu.launch(program_, runtime::cuda::KernelImage::ptx(ptx_), buffers, handle);
  }

  static runtime::cuda::CudaBackend& cuda_backend() {
    static std::mutex mutex;
    static std::unique_ptr<runtime::cuda::CudaBackend> backend;
    std::lock_guard<std::mutex> lock(mutex);
    if (!backend) backend = std::make_unique<runtime::cuda::CudaBackend>();
    return *backend;
  }

 private:
  ir::Program optimized() const { return lower::optimize(program_, passes_); }

  ir::ops::OpSpec spec_;
  lower::PassOptions passes_;
  ptx::Target target_ = ptx::default_target();
  ir::Program program_;
  lower::CacheKey key_;
  std::string ptx_;
};

/// The GPU target of device 0, or None when no driver or device is present.
std::optional<std::string> cuda_target() {
  try {
    return std::string(Kernel::cuda_backend().target().name());
  } catch (const runtime::BackendUnavailable&) {
    return std::nullopt;
  }
}

/// quantc pack on an in-memory weight: f32 values [rows, columns] in `layout` ("out,in":
/// PyTorch nn.Linear, or "in,out"), an optional f32 bias [out]. Returns (spec JSON,
/// [(name, array)], metadata).
std::tuple<std::string, std::vector<std::pair<std::string, Array>>, std::map<std::string, std::string>> pack(
    const nb::bytes& weight_f32, std::uint32_t rows, std::uint32_t columns, const std::string& layout,
    std::optional<nb::bytes> bias_f32, const std::string& scheme, std::uint32_t group_size, std::uint32_t block,
    std::uint32_t batch, const std::string& activation) {
  const std::size_t count = std::size_t{rows} * columns;
  if (weight_f32.size() != count * 4) {
    throw runtime::RuntimeError(fmt::format("weight: {} bytes given for [{}, {}] f32 ({} bytes)", weight_f32.size(),
                                            rows, columns, count * 4));
  }
  std::vector<float> values(count);
  std::memcpy(values.data(), weight_f32.data(), count * 4);
  ir::ops::pack::LinearWeight weight;
  if (runtime::pack::weight_layout_from_name(layout) == runtime::pack::WeightLayout::OutIn) {
    weight = {columns, rows, std::move(values)};
  } else {  // [in, out] -> the packer's [out, in]
    weight = {rows, columns, std::vector<float>(count)};
    for (std::uint32_t k = 0; k < rows; ++k) {
      for (std::uint32_t i = 0; i < columns; ++i) weight.values[std::size_t{i} * rows + k] = values[std::size_t{k} * columns + i];
    }
  }
  std::optional<std::vector<float>> bias;
  if (bias_f32) {
    bias.emplace(bias_f32->size() / 4);
    std::memcpy(bias->data(), bias_f32->data(), bias->size() * 4);
  }
  ir::ops::pack::SchemeOptions options;
  options.scheme = ir::ops::pack::scheme_from_name(scheme);
  options.group_size = group_size;
  options.block = block;
  const ir::ScalarType activation_type = element_named(activation);
  const ir::ops::pack::PackedWeight packed = runtime::pack::pack_layer(weight, bias, options, activation_type);
  const nlohmann::json spec = runtime::pack::spec_for(options, weight, batch, activation_type);
  std::vector<std::pair<std::string, Array>> arrays;
  for (const ir::ops::pack::PackedBuffer& buffer : packed.buffers) {
    arrays.emplace_back(buffer.name, Array{std::string(ir::to_string(buffer.element)), buffer.shape, to_bytes(buffer.bytes)});
  }
  return {spec.dump(), arrays, packed.metadata};
}

/// quantc convert: (spec JSON, [(name, array)], bias f32 or None, source type).
std::tuple<std::string, std::vector<std::pair<std::string, Array>>, std::optional<nb::bytes>, std::string> convert(
    const std::string& path, const std::string& format, const std::string& layer, std::uint32_t batch,
    std::optional<std::string> checkpoint_format) {
  runtime::convert::ConvertOptions options;
  options.format = runtime::convert::format_from_name(format);
  options.layer = layer;
  options.batch = batch;
  options.checkpoint_format = std::move(checkpoint_format);
  const runtime::convert::ConvertedLayer converted = runtime::convert::convert_layer(path, options);
  std::vector<std::pair<std::string, Array>> arrays;
  for (const runtime::NamedArray& named : converted.buffers) {
    arrays.emplace_back(named.name, Array{std::string(ir::to_string(named.array.buffer.element)), named.array.shape,
                                          to_bytes(named.array.buffer.bytes)});
  }
  std::optional<nb::bytes> bias;
  if (converted.bias) {
    bias = nb::bytes(reinterpret_cast<const char*>(converted.bias->data()), converted.bias->size() * sizeof(float));
  }
  return {converted.spec.dump(), arrays, bias, converted.source_type};
}

/// Raises quantc.errors.<name>(message).
void raise(const char* name, const char* message) {
  nb::object errors = nb::module_::import_("quantc.errors");
  nb::object type = errors.attr(name);
  PyErr_SetString(type.ptr(), message);
}

/// C++ exception type -> quantc.errors class; the most specific types first.
void translate_exception(const std::exception_ptr& exception, void*) {
  try {
    std::rethrow_exception(exception);
  } catch (const ir::ops::SpecError& error) {
    raise("SpecError", error.what());
  } catch (const ir::ops::OpError& error) {
    raise("OpError", error.what());
  } catch (const ir::ops::pack::PackError& error) {
    raise("PackError", error.what());
  } catch (const runtime::convert::ConvertError& error) {
    raise("ConvertError", error.what());
  } catch (const runtime::BackendUnavailable& error) {
    raise("BackendUnavailable", error.what());
  } catch (const runtime::RuntimeError& error) {
    raise("RunError", error.what());
  } catch (const ir::IRError& error) {
    raise("CompileError", error.what());
  } catch (const lower::PassError& error) {
    raise("CompileError", error.what());
  } catch (const ptx::PtxasError& error) {
    raise("CompileError", error.what());
  } catch (const ptx::LinkError& error) {
    raise("CompileError", error.what());
  } catch (const runtime::emulator::CostModelError& error) {
    raise("RunError", error.what());
  } catch (const std::exception& error) {
    raise("Error", error.what());
  }
}

}  // namespace
}  // namespace quantc::python

NB_MODULE(_quantc, module) {
  using quantc::python::Kernel;
  module.doc() = "quantc's native core; use the quantc package (quantc/__init__.py), not this module";
  module.attr("version") = QUANTC_VERSION;
  nb::register_exception_translator(quantc::python::translate_exception);

  module.def("ops_json", [] {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& op : quantc::ir::ops::OpRegistry::builtin().all()) ops.push_back(quantc::ir::ops::op_json(op));
    return ops.dump();
  });
  // The small shapes every op's golden, ptxas and emulator sweeps use, as spec JSON.
  module.def("test_specs", [] {
    std::vector<std::string> specs;
    for (const auto& op : quantc::ir::ops::OpRegistry::builtin().all()) {
      for (const auto& args : op.test_shapes) {
        nlohmann::json spec = {{"op", op.name}};
        for (const auto& [name, value] : args.values()) std::visit([&](const auto& v) { spec[name] = v; }, value);
        specs.push_back(spec.dump());
      }
    }
    return specs;
  });
  // The compiler version in every kernel cache key (lower::quantc_version): release,
  // commit and this module's GNU build ID.
  module.def("compiler_version", [] { return std::string(quantc::lower::quantc_version()); });
  module.def("backend_names", [] { return quantc::runtime::backend_names(); });
  module.def("cuda_target", &quantc::python::cuda_target);
  module.def("pack", &quantc::python::pack, "weight_f32"_a, "rows"_a, "columns"_a, "layout"_a, "bias_f32"_a.none(), "scheme"_a,
             "group_size"_a, "block"_a, "batch"_a, "activation"_a);
  module.def("convert", &quantc::python::convert, "path"_a, "format"_a, "layer"_a, "batch"_a,
             "checkpoint_format"_a.none());

  nb::class_<Kernel>(module, "Kernel")
      .def(nb::init<const std::string&, const std::string&, std::optional<std::string>, std::optional<std::string>>(),
           "spec_text"_a, "source"_a, "target"_a.none(), "opt_level"_a.none())
      .def_prop_ro("ptx", &Kernel::ptx)
      .def_prop_ro("target", &Kernel::target)
      .def_prop_ro("name", &Kernel::name)
      .def_prop_ro("spec_json", &Kernel::spec_json)
      .def_prop_ro("ir", &Kernel::ir)
      .def_prop_ro("metadata_json", &Kernel::metadata_json)
      .def("buffers", &Kernel::buffers)
      .def("cubin", &Kernel::cubin)
      .def("check", &Kernel::check, "target"_a.none(), "assembler"_a)
      .def("profile", &Kernel::profile, "seed"_a, "devices"_a)
      .def("random_inputs", &Kernel::random_inputs, "seed"_a)
      .def("run", &Kernel::run, "backend"_a, "inputs"_a, "seed"_a.none(), "threads"_a)
      .def("launch", &Kernel::launch, "pointers"_a, "stream"_a.none());
}
