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

/// The labeled requests of a file, and the lines that could not be used.
struct LabeledSet {
  std::vector<LabeledRequest> requests;
  /// "line N: why" for each line that is not a JSON object, has no "gold" object, a gold value of
  /// the wrong kind (-1, 1.5, an object) or no labeled question: skipped and counted, never a stop
  /// (one rule for every bad line, as for a label the request's options lack once decided).
  std::vector<std::string> skipped;
};

/// Reads a JSONL file of labeled requests (blank lines ignored). Throws clef::Error only for a
/// file that cannot be read (util::read_lines_file).
LabeledSet load_labeled_set(const std::filesystem::path& file);

/// The same from text.
LabeledSet parse_labeled_set(std::string_view text);

}  // namespace clef::eval
