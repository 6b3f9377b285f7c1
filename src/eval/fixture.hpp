#pragma once
// The oracle fixture `clef verify` compares against (schema "coreai-clef-flash-fixtures/1",
// tests/data/oracle/coreai/README.md): the model authors' fp32 readout of clef-flash, per run (a
// record in one arm: text, g256, g448, native) its token ids, spans, and every option's logit and
// probability.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "json/value.hpp"
#include "record/record.hpp"

namespace clef::eval {

/// One question of a run, options in model order.
struct FixtureQuestion {
  std::string id;
  std::string type;  ///< "noul", "choice" or "score"
  record::Span question_span;
  std::vector<record::Span> option_spans;
  std::vector<std::string> option_ids;
  std::vector<double> logits;
  std::vector<double> probs;
  double top2_margin = 0;  ///< reference p1 - p2
  bool near_tie = false;   ///< the reference marks the top two as a near tie
};

/// One record decided in one arm.
struct FixtureRun {
  std::string id;   ///< the record's id
  std::string arm;  ///< "text" (no image), "g256", "g448" (square Pillow BICUBIC first), "native"
  std::string source;  ///< where the record comes from (own_text, semif_authored144, ...)
  std::optional<std::vector<std::int32_t>> ids;  ///< null when withheld
  std::vector<FixtureQuestion> questions;
  std::vector<std::string> image_files;  ///< names in the fixture's images folder
  int tokens = 0;                        ///< usage.input_tokens
  json::Value response;                  ///< the reference's systemone response
};

/// One record: its request (null when withheld) and image files.
struct FixtureRecord {
  std::string id;
  std::optional<json::Value> request;
  std::vector<std::string> image_files;
};

/// A whole fixture file.
struct Fixture {
  std::string schema;
  std::filesystem::path images_dir;  ///< `images/` beside the file
  std::vector<FixtureRecord> records;
  std::vector<FixtureRun> runs;
  /// The prefix ids every record starts with (the contract's), empty if the file has none.
  std::vector<std::int32_t> prefix_ids;

  /// The record with `id`, or null.
  const FixtureRecord* record(const std::string& id) const;
};

/// Reads a fixture file. Throws clef::Error (invalid_request, naming the file and field) when it
/// cannot be read or is not in the fixture format.
Fixture load_fixture(const std::filesystem::path& file);

/// Reads fixture text (`images_dir` for its images). Throws as load_fixture.
Fixture parse_fixture(std::string_view text, const std::filesystem::path& images_dir);

}  // namespace clef::eval
