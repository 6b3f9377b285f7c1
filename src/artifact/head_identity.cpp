#include "artifact/head_identity.hpp"

#include "head/safetensors.hpp"
#include "util/digest.hpp"

namespace clef::artifact {
namespace {

std::string short_hash(const std::string& sha256) {
  return sha256.substr(0, 12) + "...";
}

}  // namespace

std::string HeadIdentity::describe() const {
  std::string s = "sha256 " + short_hash(sha256) + ": ";
  if (published != nullptr) {
    return s + published->model + "'s published head (" + published->repository + ")";
  }
  s += "not a published head";
  if (!tune_note.empty() || !tuned_from.empty()) {
    s += "; clef tune";
    if (!tune_note.empty()) s += " " + tune_note;
    if (!tuned_from.empty()) {
      const PublishedHead* from = published_head_with_sha256(tuned_from);
      s += ", tuned from " +
           (from != nullptr ? from->model + "'s published head (" + short_hash(tuned_from) + ")"
                            : "the head " + short_hash(tuned_from));
    }
  }
  return s;
}

HeadIdentity identify_head(const std::filesystem::path& weights) {
  HeadIdentity id;
  id.sha256 = util::sha256_file(weights);
  id.published = published_head_with_sha256(id.sha256);
  const head::SafetensorsFile file(weights);
  for (const auto& [key, value] : file.metadata()) {
    if (key == kTunedFromKey) id.tuned_from = value;
    if (key == kTuneNoteKey) id.tune_note = value;
  }
  return id;
}

}  // namespace clef::artifact
