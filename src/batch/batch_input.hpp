#pragma once
// The input of `clef batch`: JSON Lines, each a SystemOne request, or {"id": ..., "request":
// {...}} to name it. A line that cannot be read becomes an error record, not a stopped run.

#include <optional>
#include <string>
#include <vector>

#include "json/value.hpp"

namespace clef::batch {

/// One input line.
struct BatchItem {
  int line = 0;      ///< 1-based line number in the input
  json::Value id;    ///< the line's "id", else its line number
  std::string body;  ///< the request's JSON text as sent (the line itself for a bare request)
  std::optional<json::Value> request;  ///< null when the line is not usable
  std::string error;  ///< why not (invalid JSON, not an object, "request" not an object)
  /// Lower-case hex SHA-256 of the line's bytes (its line end aside): its records carry it, so
  /// that --resume knows a record of this line from one of another input's line of that number.
  std::string line_sha256;
};

/// Reads JSONL text; blank lines are skipped (they keep their numbers).
std::vector<BatchItem> parse_batch_input(std::string_view text);

}  // namespace clef::batch
