#pragma once
// The local model store: ${XDG_CACHE_HOME:-~/.cache}/clef/models/NAME/VARIANT/ (or --models-dir)
// holds a registry variant's files under their repository file names, and `.verified.json`,
// a record of each file verified (size, mtime, sha256) so the next start does not hash gigabytes
// again. Missing files are downloaded from the hub (pull::HubClient: resumable, verified against
// the pinned sha256, or the hub's for unpinned files) after saying what will be fetched.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "registry/registry.hpp"
#include "util/byte_size.hpp"

namespace clef::registry {

struct StoreOptions {
  std::filesystem::path models_dir;  ///< empty: ${XDG_CACHE_HOME:-~/.cache}/clef/models
  std::string endpoint = "https://huggingface.co";
  bool offline = false;  ///< never touch the network: missing files are an error
  /// TEST ONLY: the free bytes to assume instead of asking the file system.
  std::optional<std::uint64_t> free_bytes;
};

/// Where a variant's files are.
struct StoredModel {
  std::filesystem::path dir;
  std::filesystem::path model, mmproj, head, head_config;  ///< empty when the variant has none
  std::size_t downloaded = 0;                              ///< files fetched by this call
  std::size_t hashed = 0;  ///< files hashed by this call (0 on a start from a verified store)
};

/// The store directory of `resolved` under `options`.
std::filesystem::path store_dir(const Resolved& resolved, const StoreOptions& options);

/// Makes every file of the variant present and verified in the store and returns their paths.
/// Writes the plan (files, sizes, total, free space) and progress to `progress` before anything
/// is downloaded. Throws clef::Error: model_error naming the file when a download does not verify
/// (the file is deleted) or a stored file changed and it is offline; invalid_request ("offline")
/// when files are missing with `offline`; model_error ("disk_full") when the free space cannot
/// hold what is missing; unavailable ("hub_unreachable") without a network.
StoredModel ensure_model(const Resolved& resolved, const StoreOptions& options,
                         std::ostream& progress);

/// Hashes every stored file of the variant again and compares (pinned: the registry's sha256;
/// unpinned: the recorded one). Returns one line per file ("ok" or what is wrong), or one line
/// saying the variant was never downloaded (its folder is not in the store; nothing is written).
std::vector<std::string> verify_stored(const Resolved& resolved, const StoreOptions& options);

using util::human_bytes;

}  // namespace clef::registry
