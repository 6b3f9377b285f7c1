#include "head/head_weights.hpp"

#include <set>

#include "head/head_parameters.hpp"
#include "head/safetensors.hpp"
#include "util/error.hpp"

namespace clef::head {

namespace {

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

/// "a", "b", "c" and 4 more
std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(names.size(), 5);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i) s += ", ";
    s += "\"" + names[i] + "\"";
  }
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}

void require_file(const std::filesystem::path& p, const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) {
    throw model_error(std::string("joint schema head ") + what + " not found: " + p.string());
  }
}

}  // namespace

HeadWeights HeadWeights::load(const std::filesystem::path& weights,
                              const std::filesystem::path& config,
                              std::optional<std::int64_t> expected_hidden_size) {
  require_file(config, "config");
  require_file(weights, "weights");
  HeadWeights out;
  out.config_ = read_head_config(config);
  if (expected_hidden_size && *expected_hidden_size != out.config_.hidden_size) {
    throw model_error(config.string() + ": the joint schema head's hidden_size " +
                      std::to_string(out.config_.hidden_size) + " does not match the backbone's " +
                      "hidden size (n_embd) " + std::to_string(*expected_hidden_size) +
                      ": the head and the backbone are from different models");
  }

  const SafetensorsFile file(weights);
  const auto specs = head_parameter_specs(out.config_);
  std::set<std::string_view> expected;
  std::vector<std::string> missing;
  for (const auto& s : specs) {
    expected.insert(s.name);
    if (file.find(s.name) == nullptr) missing.push_back(s.name);
  }
  std::vector<std::string> unexpected;
  for (const auto& t : file.tensors()) {
    if (!expected.contains(t.name)) unexpected.push_back(t.name);
  }
  if (!missing.empty() || !unexpected.empty()) {
    std::string msg = weights.string() + ": the tensor names do not match the joint schema head " +
                      out.config_.describe() + ":";
    if (!missing.empty()) msg += " missing " + name_list(missing) + ";";
    if (!unexpected.empty()) msg += " unexpected " + name_list(unexpected) + ";";
    msg.pop_back();
    throw model_error(msg);
  }
  for (const auto& s : specs) {
    const TensorInfo& t = *file.find(s.name);
    if (t.shape != s.shape) {
      throw model_error(weights.string() + ": tensor \"" + s.name + "\" has shape " +
                        shape_string(t.shape) + " but the config " + out.config_.describe() +
                        " needs " + shape_string(s.shape));
    }
    out.tensors_.emplace(s.name, HeadTensor{s.shape, file.to_f32(t)});
  }
  return out;
}

HeadWeights HeadWeights::load_dir(const std::filesystem::path& dir,
                                  std::optional<std::int64_t> expected_hidden_size) {
  return load(dir / kWeightsFile, dir / kConfigFile, expected_hidden_size);
}

const HeadTensor& HeadWeights::at(std::string_view name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    throw Error(ErrorKind::internal, "internal",
                "joint schema head has no parameter \"" + std::string(name) + "\"");
  }
  return it->second;
}

}  // namespace clef::head
