#pragma once
// Which joint schema head a file is: its SHA-256, whether it is a published head's file, and
// what `clef tune` wrote into a head of one's own (the epoch, and the head it was tuned from).
// `clef info`, the server's startup log and /v1/models say it.

#include <filesystem>
#include <string>

#include "artifact/reference.hpp"

namespace clef::artifact {

struct HeadIdentity {
  std::string sha256;                        ///< of the file, lowercase hex
  const PublishedHead* published = nullptr;  ///< the published head it is, or null
  std::string tuned_from;  ///< `clef tune`'s record of the starting head's SHA-256, or ""
  std::string tune_note;   ///< `clef tune`'s note ("epoch 17"), or ""

  /// "sha256 19cdcec8c81d...: clef-flash's published head (Cloudflare/clef-flash)", or
  /// "sha256 3f2a...: not a published head; clef tune epoch 17, tuned from clef-flash's
  /// published head (19cdcec8c81d...)".
  std::string describe() const;
};

/// The identity of joint_head.safetensors `weights`. Throws clef::Error (model_error) when the
/// file cannot be read.
HeadIdentity identify_head(const std::filesystem::path& weights);

/// The safetensors metadata keys `clef tune` writes into a head.
inline constexpr const char* kTunedFromKey = "clef_tuned_from";
inline constexpr const char* kTuneNoteKey = "clef_tune";

}  // namespace clef::artifact
