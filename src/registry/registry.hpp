#pragma once
// The model registry: named models `NAME:TAG` whose variants pin every file a decision needs
// (repository, path, role, size, sha256), with engine defaults (registry/models.json, shipped
// beside the binary; a user's file overrides entries by name).
//   {"format": "clef-registry/1", "models": {NAME: {"description", "tags": {TAG: VARIANT},
//    "variants": {VARIANT: {"notes", "files": [{"role": "model"|"mmproj"|"head"|"head_config",
//    "repository": "owner/name", "path", "size"?, "sha256"?}], "engine": {"context_size"?,
//    "gpu_layers"?}}}}}}
// A file without "sha256" is unpinned: its size and hash are the hub's at download time.
// A user's own file (a head fitted with `clef tune`, say) is {"role", "local": PATH, "sha256"?}
// instead of repository and path: used where it is, never downloaded or copied into the store; a
// relative PATH is relative to the registry file's folder; a "sha256" is checked at every start.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "json/value.hpp"

namespace clef::registry {

struct RegistryFile {
  std::string role;  ///< "model", "mmproj", "head", "head_config"
  std::string repository;
  std::string path;
  std::filesystem::path local;  ///< a file on this machine (absolute), or empty: a hub file
  std::optional<std::uint64_t> size;
  std::optional<std::string> sha256;  ///< lower-case hex; unset: unpinned
};

struct Variant {
  std::string name;
  std::string notes;
  std::vector<RegistryFile> files;
  std::optional<int> context_size;
  std::optional<int> gpu_layers;
};

struct ModelEntry {
  std::string name;
  std::string description;
  std::map<std::string, std::string> tags;  ///< tag -> variant name
  std::map<std::string, Variant> variants;
};

/// A resolved `NAME:TAG`.
struct Resolved {
  const ModelEntry* model = nullptr;
  const Variant* variant = nullptr;
  std::string reference;  ///< "NAME:VARIANT" (what the store is keyed by)
};

class Registry {
 public:
  /// Adds the entries of a registry document; an entry whose name exists replaces it whole.
  /// Relative "local" paths are taken from `base_dir` (the document's folder; empty: the current
  /// directory). Throws clef::Error (invalid_request) naming `source` and the field for a
  /// malformed document.
  void add(const json::Value& document, const std::string& source,
           const std::filesystem::path& base_dir = {});
  /// add() of a file. Throws clef::Error (invalid_request) when it cannot be read or parsed.
  void add_file(const std::filesystem::path& file);

  /// `NAME` (its "latest" tag), `NAME:TAG` (a tag or a variant name). Throws clef::Error
  /// (invalid_request, param "model") for an unknown name or tag, suggesting close names.
  Resolved resolve(const std::string& reference) const;

  /// True when `text` looks like a registry reference (NAME or NAME:TAG, no "/" and no file of
  /// that name) rather than a path or a hub repository.
  static bool looks_like_reference(const std::string& text);

  const std::map<std::string, ModelEntry>& models() const { return models_; }

 private:
  std::map<std::string, ModelEntry> models_;
};

/// The registry clef uses: the shipped file (beside the executable, else the source tree's), then
/// the user's (${XDG_CONFIG_HOME:-~/.config}/clef/registry.json when present), then `extra` (the
/// --registry flag) when given. Throws clef::Error when a file is malformed.
Registry load_registry(const std::filesystem::path& extra = {});

}  // namespace clef::registry
