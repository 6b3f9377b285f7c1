#include "head/head_weights.hpp"

#include <algorithm>
#include <cmath>
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

/// Throws unless the names in `present` equal the names of `specs` exactly.
void check_names(const std::vector<ParamSpec>& specs, const std::vector<std::string>& present,
                 const std::string& source, const HeadConfig& config) {
  std::set<std::string_view> expected;
  for (const auto& s : specs) expected.insert(s.name);
  const std::set<std::string_view> have(present.begin(), present.end());
  std::vector<std::string> missing;
  for (const auto& s : specs) {
    if (!have.contains(s.name)) missing.push_back(s.name);
  }
  std::vector<std::string> unexpected;
  for (const auto& n : present) {
    if (!expected.contains(n)) unexpected.push_back(n);
  }
  if (!missing.empty() || !unexpected.empty()) {
    std::string msg =
        source + ": the tensor names do not match the joint schema head " + config.describe() + ":";
    if (!missing.empty()) msg += " missing " + name_list(missing) + ";";
    if (!unexpected.empty()) msg += " unexpected " + name_list(unexpected) + ";";
    msg.pop_back();
    throw model_error(msg);
  }
}

void check_shape(const ParamSpec& s, const std::vector<std::int64_t>& shape,
                 const std::string& source, const HeadConfig& config) {
  if (shape != s.shape) {
    throw model_error(source + ": tensor \"" + s.name + "\" has shape " + shape_string(shape) +
                      " but the config " + config.describe() + " needs " + shape_string(s.shape));
  }
}

void check_hidden_size(const HeadConfig& c, std::optional<std::int64_t> expected,
                       const std::string& source) {
  if (expected && *expected != c.hidden_size) {
    throw model_error(source + ": the joint schema head's hidden_size " +
                      std::to_string(c.hidden_size) + " does not match the backbone's " +
                      "hidden size (n_embd) " + std::to_string(*expected) +
                      ": the head and the backbone are from different models");
  }
}

/// head_parameter_specs(config) without the raw scalars when `folded`.
std::vector<ParamSpec> specs_for(const HeadConfig& config, bool folded) {
  auto specs = head_parameter_specs(config);
  if (folded) {
    std::erase_if(specs, [](const ParamSpec& s) {
      return s.name == kScalarNames[0] || s.name == kScalarNames[1] || s.name == kScalarNames[2];
    });
  }
  return specs;
}

}  // namespace

FoldedScales fold_scales(float prior_logit_scale, float joint_logit_scale, float residual_gate) {
  const double ln100 = std::log(100.0);
  FoldedScales f;
  f.prior = static_cast<float>(std::exp(std::min(static_cast<double>(prior_logit_scale), ln100)));
  f.joint = static_cast<float>(std::exp(std::min(static_cast<double>(joint_logit_scale), ln100)));
  f.gate = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(residual_gate))));
  return f;
}

HeadWeights HeadWeights::from_tensors(const HeadConfig& config, TensorMap tensors,
                                      std::optional<FoldedScales> folded, const std::string& source,
                                      std::optional<std::int64_t> expected_hidden_size) {
  validate_head_config(config, source);
  check_hidden_size(config, expected_hidden_size, source);
  const auto specs = specs_for(config, folded.has_value());
  std::vector<std::string> present;
  for (const auto& [name, t] : tensors) present.push_back(name);
  check_names(specs, present, source, config);
  for (const auto& s : specs) {
    const HeadTensor& t = tensors.find(s.name)->second;
    check_shape(s, t.shape, source, config);
    std::size_t n = 1;
    for (std::int64_t d : t.shape) n *= static_cast<std::size_t>(d);
    if (t.values.size() != n) {
      throw model_error(source + ": tensor \"" + s.name + "\" holds " +
                        std::to_string(t.values.size()) + " values for shape " +
                        shape_string(t.shape));
    }
  }
  HeadWeights out;
  out.config_ = config;
  out.tensors_ = std::move(tensors);
  out.folded_ = folded;
  return out;
}

HeadWeights HeadWeights::folded() const {
  if (folded_) return *this;
  HeadWeights out = *this;
  out.folded_ = fold_scales(at(kScalarNames[0]).values.at(0), at(kScalarNames[1]).values.at(0),
                            at(kScalarNames[2]).values.at(0));
  for (std::string_view n : kScalarNames) out.tensors_.erase(out.tensors_.find(n));
  return out;
}

HeadWeights HeadWeights::load(const std::filesystem::path& weights,
                              const std::filesystem::path& config,
                              std::optional<std::int64_t> expected_hidden_size) {
  require_file(config, "config");
  require_file(weights, "weights");
  HeadWeights out;
  out.config_ = read_head_config(config);
  check_hidden_size(out.config_, expected_hidden_size, config.string());

  const SafetensorsFile file(weights);
  const auto specs = head_parameter_specs(out.config_);
  std::vector<std::string> present;
  for (const auto& t : file.tensors()) present.push_back(t.name);
  check_names(specs, present, weights.string(), out.config_);
  for (const auto& s : specs) {
    const TensorInfo& t = *file.find(s.name);
    check_shape(s, t.shape, weights.string(), out.config_);
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
