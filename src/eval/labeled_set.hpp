#pragma once
// The labeled requests `clef calibrate` fits on: JSON Lines, each a SystemOne request with one
// more member, "gold": question id -> the right option ("true" / "false" for noul, an option id
// for choice, a level index for score; null or absent: unlabeled, not used).

#include <filesystem>
#include <string>
#include <vector>

#include "json/value.hpp"

namespace clef::eval {

/// One labeled request.
struct LabeledRequest {
  int line = 0;         ///< 1-based line in the file
  json::Value request;  ///< the request without "gold"
  /// question id -> gold option id as the record names it ("true"/"false", the choice id, or the
  /// level index's digits for score).
  std::vector<std::pair<std::string, std::string>> gold;
};

/// The labeled requests of a file, and the lines that carry no labels.
struct LabeledSet {
  std::vector<LabeledRequest> requests;
  /// "line N: why" for each request line without a "gold" object or with no labeled question in
  /// it: skipped and counted, not a stop (an unlabeled request may sit among labeled ones).
  std::vector<std::string> skipped;
};

/// Reads a JSONL file of labeled requests (blank lines skipped). Throws clef::Error
/// (invalid_request) naming the line for a line that is not a JSON object, or a gold value of the
/// wrong kind (a broken file, not an unlabeled request).
LabeledSet load_labeled_set(const std::filesystem::path& file);

/// The same from text.
LabeledSet parse_labeled_set(std::string_view text);

}  // namespace clef::eval
