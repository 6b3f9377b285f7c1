#include "info/head_info.hpp"

#include <vector>

#include "artifact/head_identity.hpp"
#include "head/head_parameters.hpp"
#include "head/safetensors.hpp"
#include "util/error.hpp"

namespace clef::info {

namespace {

std::string shape_str(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// Joins at most `limit` items, then "and N more".
std::string join_some(const std::vector<std::string>& items, std::size_t limit = 5) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < limit; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > limit) out += " and " + std::to_string(items.size() - limit) + " more";
  return out;
}

}  // namespace

HeadInfo read_head_info(const std::filesystem::path& weights,
                        const std::filesystem::path& config_path) {
  HeadInfo h;
  h.weights = weights;
  h.config_path = config_path;
  h.config = head::read_head_config(config_path);
  for (const auto& [key, value] : {std::pair{"routing_layers", h.config.routing_layers},
                                   std::pair{"layers", h.config.layers}}) {
    if (value == 0) {
      throw model_error(config_path.string() + ": " + key + " must be a positive integer");
    }
  }
  const head::SafetensorsFile st(weights);
  h.file_size = std::filesystem::file_size(weights);
  h.identity = artifact::identify_head(weights).describe();
  const std::string file = weights.string();

  std::vector<std::string> missing, misshapen, unexpected;
  std::set<std::string> expected_names;
  for (const head::ParamSpec& p : head::head_parameter_specs(h.config)) {
    expected_names.insert(p.name);
    const head::TensorInfo* t = st.find(p.name);
    if (t == nullptr) {
      missing.push_back(p.name);
    } else if (t->shape != p.shape) {
      misshapen.push_back(p.name + " " + shape_str(t->shape) + " (expected " + shape_str(p.shape) +
                          ")");
    }
  }
  for (const head::TensorInfo& t : st.tensors()) {
    if (!expected_names.count(t.name)) unexpected.push_back(t.name);
    h.dtypes.insert(std::string(head::dtype_name(t.dtype)));
    h.n_params += static_cast<std::uint64_t>(t.numel());
  }
  h.n_tensors = st.tensors().size();
  const std::string against = " against " + config_path.string();
  if (!missing.empty()) {
    throw model_error(file + ": missing head parameters" + against + ": " + join_some(missing));
  }
  if (!misshapen.empty()) {
    throw model_error(file + ": head parameters with wrong shapes" + against + ": " +
                      join_some(misshapen));
  }
  if (!unexpected.empty()) {
    throw model_error(file + ": unexpected head parameters" + against + ": " +
                      join_some(unexpected));
  }
  for (const std::string& d : h.dtypes) {
    if (d != "BF16" && d != "F32") {
      throw model_error(file + ": head dtype " + d + " is not supported (BF16 or F32)");
    }
  }
  return h;
}

}  // namespace clef::info
