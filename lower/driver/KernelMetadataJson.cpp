#include "lower/driver/KernelMetadataJson.h"

#include <nlohmann/json.hpp>

namespace quantc::lower {

std::string metadata_json(const KernelMetadata& metadata) {
  nlohmann::ordered_json json;
  json["entry"] = metadata.entry;
  json["target"] = metadata.target;
  json["grid"] = metadata.grid;
  json["block"] = metadata.block;
  json["dynamic_shared_bytes"] = metadata.dynamic_shared_bytes;
  json["static_shared_bytes"] = metadata.static_shared_bytes;
  json["min_ctas_per_sm"] = metadata.min_ctas_per_sm;
  json["parameters"] = nlohmann::ordered_json::array();
  for (const KernelMetadata::Parameter& parameter : metadata.parameters) {
    const ir::BufferDecl& buffer = parameter.buffer;
    nlohmann::ordered_json entry;
    entry["param"] = parameter.param;
    entry["binding"] = buffer.binding;
    entry["buffer"] = buffer.name;
    entry["access"] = std::string(ir::to_string(buffer.access));
    entry["element"] = std::string(ir::to_string(buffer.element));
    entry["count"] = buffer.count;
    entry["bytes"] = buffer.byte_size();
    if (buffer.is_output()) {
      const ir::ByteRange range = buffer.readable_range();
      entry["result_bytes"] = {range.begin, range.end};
    }
    json["parameters"].push_back(std::move(entry));
  }
  return json.dump(2) + "\n";
}

}  // namespace quantc::lower
