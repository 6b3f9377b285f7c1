#pragma once
// The labeled decisions `clef tune` fits the head to: JSON Lines, each a SystemOne request with
// its labels beside it (the format of `clef calibrate`, plus soft targets):
//   "gold":    {question id: option id | true/false | level index}   (a one-hot target)
//   "targets": {question id: {option id: probability, ...}}          (summing to 1)
//   "id":      optional, a string or integer naming the record (unique across the files)
// A question may be labeled in one of the two, not both; questions without a label still pass
// through the head (fields attend to each other) but add nothing to the loss.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "json/value.hpp"

namespace clef::tune {

/// One question's label: probability per option id (a gold label: its option 1, the others 0,
/// listed as the one entry).
struct QuestionLabel {
  std::string question;                               ///< the question id
  std::vector<std::pair<std::string, double>> probs;  ///< option id -> probability
  bool gold = false;                                  ///< from "gold" (one-hot)
};

/// One labeled record of a data file.
struct LabeledRecord {
  std::string where;    ///< "FILE line N": how errors name it
  std::string id;       ///< its "id", else "FILE line N"
  json::Value request;  ///< the SystemOne request, without "gold", "targets" and "id"
  std::vector<QuestionLabel> labels;
};

/// Reads a data file (blank lines skipped). Throws clef::Error (invalid_request) naming the file
/// and line for: an unreadable or empty file, a line that is not a JSON object, a line with no
/// label, a gold value of the wrong kind, a target that is negative, not a finite number, or
/// whose question's targets do not sum to 1 (within 1e-6), a question labeled in both "gold" and
/// "targets", or an id used twice.
std::vector<LabeledRecord> load_labeled_records(const std::filesystem::path& file);

/// The same from text, `file` naming it in messages.
std::vector<LabeledRecord> parse_labeled_records(std::string_view text, const std::string& file);

/// Refuses (clef::Error invalid_request, naming both lines) a request (its labels aside) given
/// twice in one file: with other labels the two would pull the head two ways, and with a holdout
/// split one could be validated on the other. Several people's labels of one request go into one
/// record's "targets" (the share of each option).
void check_distinct(const std::vector<LabeledRecord>& records);

/// Refuses (clef::Error invalid_request, naming both places) an id used in both sets, and a
/// request (its labels aside) that is in both: a validation measured on training records says
/// nothing.
void check_disjoint(const std::vector<LabeledRecord>& training,
                    const std::vector<LabeledRecord>& validation);

}  // namespace clef::tune
