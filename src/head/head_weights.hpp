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

/// The three scalars of the head already turned into the multipliers the forward applies
/// (contract section 5, step 9; llama.cpp's `decision.scales`):
///   prior = exp(min(prior_logit_scale, ln 100)), joint = exp(min(joint_logit_scale, ln 100)),
///   gate = sigmoid(residual_gate).
struct FoldedScales {
  float prior = 0.0f;
  float joint = 0.0f;
  float gate = 0.0f;
};

/// Folds raw scalars as llama.cpp's converter (conversion/clef.py, ClefModel.modify_tensors) and
/// Ollama's migrator do: each formula in double precision, then rounded once to f32.
FoldedScales fold_scales(float prior_logit_scale, float joint_logit_scale, float residual_gate);

/// Names of the three raw scalars, which a head with folded scales does not hold.
inline constexpr std::string_view kScalarNames[3] = {"prior_logit_scale", "joint_logit_scale",
                                                     "residual_gate"};

/// All parameters of one joint schema head, validated against its config. The scalars are either
/// raw (the torch parameters, as in joint_head.safetensors) or folded (FoldedScales, as in a
/// llama.cpp `clef` GGUF); the forward uses whichever it holds.
class HeadWeights {
 public:
  using TensorMap = std::map<std::string, HeadTensor, std::less<>>;

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

  /// A head from tensors already widened to f32 (e.g. read from a GGUF by src/artifact), checked
  /// like load(): `config` must be valid (validate_head_config), the names must equal
  /// head_parameter_specs(config) exactly, minus the three raw scalars when `folded` is given,
  /// and every shape must match (values.size() == product of shape). `source` names the origin in
  /// error messages. Throws clef::Error (model_error) naming missing, unexpected or misshapen
  /// tensors, or a hidden size that differs from `expected_hidden_size`.
  static HeadWeights from_tensors(const HeadConfig& config, TensorMap tensors,
                                  std::optional<FoldedScales> folded, const std::string& source,
                                  std::optional<std::int64_t> expected_hidden_size = std::nullopt);

  /// A copy whose raw scalars are replaced by fold_scales() of them (a no-op copy when already
  /// folded).
  HeadWeights folded() const;

  const HeadConfig& config() const noexcept { return config_; }
  /// The folded scales, when the head holds them instead of the raw scalars.
  const std::optional<FoldedScales>& folded_scales() const noexcept { return folded_; }
  /// The parameter called `name` (a torch state_dict key). Throws clef::Error (internal) if absent.
  const HeadTensor& at(std::string_view name) const;
  /// All parameters by name.
  const TensorMap& tensors() const noexcept { return tensors_; }

 private:
  HeadConfig config_;
  TensorMap tensors_;
  std::optional<FoldedScales> folded_;
};

}  // namespace clef::head
