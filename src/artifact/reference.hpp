#pragma once
// The reference clef-flash artifact that `clef info` compares a model against: the head config
// of the HF release (joint_head_config.json, notes/artifact-layouts.md section 1) and its
// LayerNorm eps.

#include <string>
#include <vector>

#include "head/head_config.hpp"

namespace clef::artifact {

/// {"hidden_size":4096,"width":1024,"routing_layers":2,"layers":4,"heads":16,"feedforward":4096}.
head::HeadConfig reference_head_config();

/// The head's LayerNorm eps (torch default, hard-coded in the forward).
inline constexpr double kHeadLayerNormEps = 1e-5;

/// One line per field of `config` that differs from reference_head_config(), e.g.
/// "head width 32 (reference 1024)". Empty when equal.
std::vector<std::string> config_differences(const head::HeadConfig& config);

}  // namespace clef::artifact
