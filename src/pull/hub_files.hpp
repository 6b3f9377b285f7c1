#pragma once
// The file listing of a Hugging Face-style hub repository and the choice of the files one clef
// model needs.
// Listing: GET {endpoint}/api/models/{repo}/tree/{revision}?recursive=true, a JSON array of
// {"type": "file"|"directory", "path", "size", "oid" (git blob sha1), "lfs": {"oid" (sha256),
// "size", "pointerSize"}} (huggingface.js ListFileEntry); long listings continue at the URL of
// the `Link: <...>; rel="next"` response header.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clef::pull {

/// One file of a repository.
struct HubFile {
  std::string path;        ///< inside the repository, "/"-separated
  std::uint64_t size = 0;  ///< bytes of the real content (the LFS object's for LFS files)
  std::optional<std::string> sha256;  ///< lower-case hex, for LFS files
  std::string git_oid;                ///< git blob sha1 (of the pointer for LFS files)

  /// The last path component.
  std::string name() const;
};

/// Parses one page of the tree listing. Directories are skipped. Throws clef::Error
/// (model_error) when the text is not such a JSON array.
std::vector<HubFile> parse_tree_listing(std::string_view json);

/// "owner/name[:QUANT]".
struct ModelReference {
  std::string repo;
  std::string quant;  ///< empty when not given
};

/// Parses `text`. Throws clef::Error (invalid_request, param "model") unless the repository is
/// "owner/name" of [A-Za-z0-9._-] parts and the quant, when given, is non-empty [A-Za-z0-9_.-].
ModelReference parse_model_reference(std::string_view text);

/// What `clef pull` fetches from one repository.
struct Selection {
  HubFile model;                       ///< the backbone GGUF (layout A) or whole-model GGUF
  std::optional<HubFile> mmproj;       ///< the vision projector
  std::optional<HubFile> head;         ///< joint_head.safetensors, when the repository has one
  std::optional<HubFile> head_config;  ///< joint_head_config.json, likewise
};

/// True when `name` carries `quant` as a token: case-insensitive, bounded by the name's start or
/// one of "-_." before and by "-" or "." after ("Q4_K_M" is in "x-Q4_K_M.gguf", not in
/// "x-Q4_K_M_L.gguf").
bool name_has_quant(std::string_view name, std::string_view quant);

/// Chooses the files:
///  - the model: the .gguf files whose name does not start with "mmproj" and holds no "imatrix";
///    with a quant, the one carrying it; without, the only one, else the Q4_K_M one (llama.cpp's
///    `-hf` default);
///  - the mmproj: among mmproj*.gguf, the one carrying the quant, else BF16, F16, F32, the first;
///  - the head pair wherever it is in the repository (the shallowest path wins).
/// Throws clef::Error (model_error) naming the choices when there is no model GGUF, the quant
/// matches none or several, or several remain without a quant; split GGUFs (-00001-of-0000N)
/// are refused as not supported.
Selection select_files(const std::vector<HubFile>& files, std::string_view quant);

}  // namespace clef::pull
