#pragma once
// Where each joint schema head parameter (torch name, head/head_parameters.hpp) lives in the GGUF
// layouts. Layout B names: llama.cpp gguf-py tensor_mapping.py as applied by conversion/clef.py
// (notes/artifact-layouts.md section 2.2): routing blocks first (`dec.blk.i`, i < routing_layers),
// then the field decoder layers (`dec.blk.(routing_layers + j)`); each packed in_proj is cut into
// q, k, v rows; the three scalars are folded into `decision.scales`.
// Layouts C and D: `clef.` + the torch name (section 3.2).

#include <string>
#include <string_view>
#include <vector>

#include "head/head_config.hpp"

namespace clef::artifact {

/// One torch parameter and its GGUF tensor(s): one name, or three (q, k, v) whose rows, in that
/// order, make the packed in_proj weight [3W, W] or bias [3W].
struct GgufHeadName {
  std::string torch;
  std::vector<std::string> gguf;
};

/// Layout B's folded scalars: F32 [3] = [prior, joint, gate] multipliers.
inline constexpr std::string_view kScalesTensor = "decision.scales";

/// Every head parameter except the three scalars, in head_parameter_specs order, with its
/// layout B name(s): 160 - 1 GGUF tensors for clef-flash's config (plus decision.scales).
std::vector<GgufHeadName> llama_cpp_head_names(const head::HeadConfig& config);

/// True for a name in layout B's head namespace: "dec.", "decision." or "token_types.".
bool is_llama_cpp_head_tensor(std::string_view name);

/// Layout C / D prefix of every head tensor.
inline constexpr std::string_view kTorchPrefix = "clef.";

}  // namespace clef::artifact
