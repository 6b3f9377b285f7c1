#pragma once
// clef::artifact::open_model: one entry point that reads a clef-flash model in any published
// layout (layout.hpp) and returns what the runtime needs: how to load the backbone, the joint
// schema head as clef::head::HeadWeights, and the GGUF whose output.weight rows give the lexical
// prior (contract 5.3).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "artifact/layout.hpp"
#include "head/head_weights.hpp"

namespace clef::artifact {

/// A vision projector's file name: mmproj*.gguf (what a model directory's mmproj is called).
bool is_mmproj_name(const std::filesystem::path& p);

/// The files of one model. `gguf` is the backbone GGUF (layout A) or the whole model (B, C, D).
struct ModelPaths {
  std::filesystem::path gguf;
  std::optional<std::filesystem::path> mmproj;
  std::optional<std::filesystem::path> head_weights;  ///< joint_head.safetensors (layout A)
  std::optional<std::filesystem::path> head_config;   ///< joint_head_config.json (layout A)
};

/// The files in `dir`: `backbone.gguf`, else `model.gguf`, else the one *.gguf whose name does
/// not start with "mmproj"; the one mmproj*.gguf if any; joint_head.safetensors and
/// joint_head_config.json when present (only layout A needs them). Throws clef::Error
/// (model_error) when `dir` is not a directory, holds no model GGUF or several candidates, or
/// several mmproj*.gguf.
ModelPaths find_model_paths(const std::filesystem::path& dir);

/// How to load the backbone with libllama (backbone_loader.hpp does it).
struct BackboneSource {
  std::filesystem::path gguf;
  /// Loadable as it is with llama_model_load_from_file (layout A). Otherwise the metadata is
  /// rewritten in memory (keys `rename_from` -> "qwen35." and general.architecture = qwen35, the
  /// keys under `drop_key_prefixes` removed) and only the tensors not in the head are loaded,
  /// their data read from `gguf`.
  bool loads_directly = true;
  std::string rename_from;                     ///< "clef." for layout B, "" otherwise
  std::vector<std::string> drop_key_prefixes;  ///< the head's keys
  /// A tensor whose name starts with one of these belongs to the head, not the backbone.
  std::vector<std::string> head_tensor_prefixes;
};

/// A model read and checked, ready for the runtime.
struct OpenedModel {
  Layout layout = Layout::hf_head;
  ModelPaths paths;
  BackboneSource backbone;
  head::HeadWeights head;
  /// The GGUF holding the untied LM head `output.weight` (lexical::LexicalTable's path).
  std::filesystem::path lexical_gguf;
  std::int64_t n_embd = 0;  ///< the backbone's embedding_length
  /// What differs from the published artifact (the nearest published head config, BF16
  /// safetensors, raw scalars), one line each, for `clef info` and logs.
  std::vector<std::string> differences;
};

/// Detects the layout of `paths.gguf` (detect_layout), reads the head (from the safetensors pair
/// for layout A, from the GGUF otherwise) and checks it against the backbone. Throws clef::Error
/// (model_error) with an explanation when:
///  - the GGUF is not a clef-flash model, or its decision.type is unknown;
///  - layout A and the head files are missing ("a qwen35 GGUF without a joint schema head");
///  - the backbone has no output.weight (a tied LM head: the lexical prior needs the untied one);
///  - any head tensor is missing, extra or misshapen, or the head's hidden size is not the
///    backbone's embedding_length.
OpenedModel open_model(const ModelPaths& paths);

/// open_model(find_model_paths(dir)).
OpenedModel open_model_dir(const std::filesystem::path& dir);

}  // namespace clef::artifact
