#include "info/head_info.hpp"

#include <rapidjson/document.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "info/safetensors_header.hpp"
#include "testmodel/head_layout.hpp"
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

testmodel::HeadConfig read_head_config(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::ifstream f(path, std::ios::binary);
  if (!f) throw model_error(file + ": no such file (the head needs its joint_head_config.json)");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) throw model_error(file + " is not a JSON object");
  const auto get = [&](const char* key) -> std::uint32_t {
    if (!doc.HasMember(key) || !doc[key].IsUint() || doc[key].GetUint() == 0) {
      throw model_error(file + ": " + key + " must be a positive integer");
    }
    return doc[key].GetUint();
  };
  testmodel::HeadConfig c{};
  c.hidden_size = get("hidden_size");
  c.width = get("width");
  c.routing_layers = get("routing_layers");
  c.layers = get("layers");
  c.heads = get("heads");
  c.feedforward = get("feedforward");
  if (c.width % c.heads != 0) {
    throw model_error(file + ": width " + std::to_string(c.width) + " is not a multiple of heads " +
                      std::to_string(c.heads));
  }
  return c;
}

HeadInfo read_head_info(const std::filesystem::path& weights,
                        const std::filesystem::path& config_path) {
  HeadInfo h;
  h.weights = weights;
  h.config_path = config_path;
  h.config = read_head_config(config_path);
  const SafetensorsHeader st = read_safetensors_header(weights);
  h.file_size = st.file_size;
  const std::string file = weights.string();

  std::vector<std::string> missing, misshapen, unexpected;
  std::set<std::string> expected_names;
  for (const testmodel::HeadParam& p : testmodel::head_parameters(h.config)) {
    expected_names.insert(p.name);
    const auto it = st.tensors.find(p.name);
    if (it == st.tensors.end()) {
      missing.push_back(p.name);
    } else if (it->second.shape != p.shape) {
      misshapen.push_back(p.name + " " + shape_str(it->second.shape) + " (expected " +
                          shape_str(p.shape) + ")");
    }
  }
  for (const auto& [name, e] : st.tensors) {
    if (!expected_names.count(name)) unexpected.push_back(name);
    h.dtypes.insert(e.dtype);
    std::uint64_t n = 1;
    for (std::int64_t d : e.shape) n *= static_cast<std::uint64_t>(d);
    h.n_params += n;
  }
  h.n_tensors = st.tensors.size();
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
