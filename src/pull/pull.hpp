#pragma once
// `clef pull REPO[:QUANT]`: downloads the files one clef-flash model needs from a Hugging
// Face-style hub into a directory that artifact::open_model_dir reads:
//  1. list the repository (hub_client.hpp) and choose the model GGUF, the mmproj and, if present,
//     the HF head pair (hub_files.hpp select_files);
//  2. read the model GGUF's header with ranged requests (gguf/header_scan.hpp) and detect its
//  layout
//     (artifact/layout.hpp) before downloading it: a qwen35 GGUF without the head is usable only
//     with joint_head.safetensors + joint_head_config.json from the same repository;
//  3. download each file resumably and verify it (HubClient::download);
//  4. open the result with artifact::open_model to check that it loads.

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "artifact/open_model.hpp"

namespace clef::pull {

struct PullOptions {
  std::string reference;      ///< "owner/name[:QUANT]"
  std::filesystem::path dir;  ///< created if missing
  std::string endpoint = "https://huggingface.co";
  std::string revision = "main";
  /// "owner/name": where the joint schema head comes from when the model repository has none
  /// (the published files: the GGUFs in one repository, the head in the authors'). Empty: the
  /// model repository only.
  std::string head_from;
};

struct PullResult {
  artifact::Layout layout = artifact::Layout::hf_head;
  artifact::ModelPaths paths;
  std::vector<std::string> files;  ///< repository paths fetched (or found verified)
};

/// Runs the pull, writing progress bars to `progress`. Throws clef::Error: invalid_request for a
/// malformed reference or endpoint; model_error when the repository does not exist, holds no
/// usable model (no GGUF, an unknown architecture or decision.type, a head-less qwen35 GGUF and
/// no head files), or a file fails verification; unavailable when the hub cannot be reached.
PullResult pull_model(const PullOptions& options, std::ostream& progress);

}  // namespace clef::pull
