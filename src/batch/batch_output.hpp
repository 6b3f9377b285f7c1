#pragma once
// The output of `clef batch`: JSON Lines, one record per input line,
//   {"id": ..., "line": N, "status": 200, "response": {...}}                 answered
//     (with "truncated_tokens": N when the state was cut to fit, "ignored_fields": [...] when
//     the request carried fields the contract does not know: what the response body cannot say;
//     "ignored_fields_unlisted": N for those a server's header had no room to name)
//   {"id": ..., "line": N, "status": 4xx|5xx|0, "error": {"code", "message"}} refused or failed
// (status 0: never reached a server), and what --resume reads back.

#include <filesystem>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "batch/batch_input.hpp"
#include "json/value.hpp"

namespace clef::batch {

/// Which input line a record is of: its id, its number and, when known, the SHA-256 of its bytes
/// ("line_sha256" in the record; none: not written).
struct RecordKey {
  json::Value id;
  int line = 0;
  std::string line_sha256;
};

/// The key of `item`'s records.
RecordKey record_key(const BatchItem& item);

/// One answered line; `truncated_tokens` > 0, a non-empty `ignored_fields` and
/// `ignored_fields_unlisted` > 0 are added as "truncated_tokens", "ignored_fields" and
/// "ignored_fields_unlisted".
std::string answer_record(const RecordKey& key, int status, std::string_view response,
                          int truncated_tokens = 0,
                          const std::vector<std::string>& ignored_fields = {},
                          int ignored_fields_unlisted = 0);

/// One line that got no answer: its status (0 when no server answered), a stable code, why, and
/// the field at fault ("" when none: null).
std::string error_record(const RecordKey& key, int status, const std::string& code,
                         const std::string& message, const std::string& param = {});

/// The input lines an output file already has a record for (every complete line whose "line" is
/// a number; a torn last line from a killed run is ignored and rewritten by the caller). Records
/// of lines no server decided (status 0, 401, 429, 503) do not count: --resume tries them again.
/// A missing file: none.
std::set<int> answered_lines(const std::filesystem::path& out);

/// Removes the records of lines no server decided (status 0, 401, 429, 503) from `out`, so --resume
/// writes one record per line when it decides them again. Returns how many were removed. Throws
/// clef::Error (invalid_request naming "out") for a complete line that is not a JSON object (OUT
/// is not the output of a run, or was edited), changing nothing; a torn last line is left for
/// cut_torn_line.
std::size_t drop_retryable_records(const std::filesystem::path& out);

/// Checks that the records of `out` are this input's: each record's "line" is a line of `items`
/// with the same "id" (the line's own id, else its number) and, when the record says it, the same
/// "line_sha256" (the same bytes: another input of bare requests has the same ids). Throws
/// clef::Error (invalid_request naming "out") for the first that is not, so that --resume neither
/// skips lines of another input nor decides lines again whose records sit under other numbers.
/// Lines that are no records are drop_retryable_records' to refuse.
void check_resumed_records(const std::filesystem::path& out, std::span<const BatchItem> items);

/// Cuts a torn last line (no newline) from `out`, so appended records start on a line of their
/// own. Returns the bytes cut.
std::size_t cut_torn_line(const std::filesystem::path& out);

}  // namespace clef::batch
