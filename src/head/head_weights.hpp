#pragma once
// clef::head::HeadWeights: the joint schema head's parameters, loaded from
// joint_head.safetensors + joint_head_config.json (decision contract, section 5) and held as f32.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "head/head_config.hpp"

namespace clef::head {

/// One parameter widened to f32: row-major values and the torch shape ([] for a scalar).
struct HeadTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

/// All parameters of one joint schema head, validated against its config.
class HeadWeights {
 public:
  /// Standard file names inside a model directory.
  static constexpr std::string_view kWeightsFile = "joint_head.safetensors";
  static constexpr std::string_view kConfigFile = "joint_head_config.json";

  /// Loads `weights` (safetensors; each tensor F32, F16 or BF16, widened exactly to f32) and
  /// `config` (JSON). Strict like torch's load_state_dict(strict=True): the set of tensor names
  /// must equal head_parameter_specs(config) exactly, and every shape must match. When
  /// `expected_hidden_size` is given (the backbone's n_embd), config.hidden_size must equal it.
  /// Throws clef::Error (model_error) for a missing file, a corrupt or truncated safetensors
  /// file, a missing or unexpected name, a wrong shape or a hidden size mismatch.
  static HeadWeights load(const std::filesystem::path& weights, const std::filesystem::path& config,
                          std::optional<std::int64_t> expected_hidden_size = std::nullopt);

  /// load(dir / kWeightsFile, dir / kConfigFile, expected_hidden_size).
  static HeadWeights load_dir(const std::filesystem::path& dir,
                              std::optional<std::int64_t> expected_hidden_size = std::nullopt);

  const HeadConfig& config() const noexcept { return config_; }
  /// The parameter called `name` (a torch state_dict key). Throws clef::Error (internal) if absent.
  const HeadTensor& at(std::string_view name) const;
  /// All parameters by name.
  const std::map<std::string, HeadTensor, std::less<>>& tensors() const noexcept {
    return tensors_;
  }

 private:
  HeadConfig config_;
  std::map<std::string, HeadTensor, std::less<>> tensors_;
};

}  // namespace clef::head
