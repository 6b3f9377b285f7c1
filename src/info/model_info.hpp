#pragma once
// `clef info`: reads every file of a model, checks them against each other, and prints a summary.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "info/backbone_info.hpp"
#include "info/head_info.hpp"
#include "info/mmproj_info.hpp"
#include "info/model_files.hpp"

namespace clef::info {

struct ModelReport {
  std::optional<BackboneInfo> backbone;
  std::optional<MmprojInfo> mmproj;
  std::optional<HeadInfo> head;  ///< for layouts B/C/D, the head inside the GGUF
  /// artifact::layout_description of the backbone GGUF's layout; empty without a backbone.
  std::string layout;
  /// Every difference from the published head nearest its config (clef-flash's or Clef 27B's
  /// joint_head_config.json, artifact::published_heads; BF16 safetensors, raw scalars): config
  /// values, tensor types, folded scales, ...
  std::vector<std::string> differences;
  std::vector<std::string> warnings;
};

/// Reads the given files. The backbone GGUF's layout is detected (artifact::detect_layout); a
/// head inside the GGUF (layouts B, C, D) is read and checked with artifact::open_model. Throws
/// model_error for the first unusable file, and when the pieces disagree: head hidden_size !=
/// backbone n_embd, mmproj output dim != backbone n_embd, a head both inside the GGUF and beside
/// it.
ModelReport inspect_files(const ModelFiles& files);

/// inspect_files(classify_model_files(paths)).
ModelReport inspect_model(const std::vector<std::filesystem::path>& paths);

/// Human-readable multi-line summary (one block per file, then warnings).
std::string format_report(const ModelReport& report);

}  // namespace clef::info
