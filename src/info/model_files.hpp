#pragma once
// Finds the files of a clef model from a directory or a list of files.
// A directory holds the GGUFs artifact::find_model_paths picks (backbone.gguf, else model.gguf,
// else the single *.gguf whose name does not start with "mmproj"; optionally one mmproj*.gguf),
// and joint_head.safetensors + joint_head_config.json unless the GGUF holds the head itself
// (llama.cpp's clef layout, Ollama's; src/artifact/layout.hpp).

#include <filesystem>
#include <optional>
#include <vector>

namespace clef::info {

struct ModelFiles {
  std::optional<std::filesystem::path> backbone;
  std::optional<std::filesystem::path> mmproj;
  std::optional<std::filesystem::path> head;         ///< joint_head.safetensors
  std::optional<std::filesystem::path> head_config;  ///< joint_head_config.json
};

/// Files of the model directory `dir`, chosen as the runtime chooses them
/// (artifact::find_model_paths). Throws model_error when `dir` is not a directory, holds no model
/// GGUF or several candidates, several mmproj*.gguf, or, when the GGUF has no head inside
/// (artifact layout A), no joint_head.safetensors / joint_head_config.json.
ModelFiles find_model_files(const std::filesystem::path& dir);

/// Classifies explicit paths: a directory expands with find_model_files; *.safetensors is the head
/// (its config is joint_head_config.json beside it unless given), *.json the head config, any other
/// file a GGUF (mmproj when its name starts with "mmproj" or general.architecture is clip,
/// else backbone). Throws model_error for a missing path, a non-GGUF, or two files of one kind.
ModelFiles classify_model_files(const std::vector<std::filesystem::path>& paths);

}  // namespace clef::info
