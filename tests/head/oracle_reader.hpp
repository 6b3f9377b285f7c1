#pragma once
// Reads the head oracle fixtures (tests/data/oracle/head/README.md, "Layout" and
// "record.json fields") and extra oracle directories named by CLEF_EXTRA_HEAD_ORACLES.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "head/joint_schema_head.hpp"

namespace clef::head::testing {

/// One recNN directory.
struct OracleRecord {
  std::string name;  ///< "rec07"
  std::int64_t n_tokens = 0;
  std::int64_t hidden_size = 0;
  std::vector<float> hidden;  ///< [T, H]
  std::vector<std::int64_t> input_ids;
  std::vector<HeadQuestion> questions;
  std::vector<std::vector<double>> logits_f32;
  std::vector<std::vector<double>> logits_f64;
  std::vector<std::vector<double>> logits_bf16;  ///< logits_bf16weights_f32math
};

/// The configuration directories bundled in tests/data/oracle/head (each subdirectory with a
/// joint_head_config.json), sorted.
std::vector<std::filesystem::path> bundled_config_dirs();

/// The directories listed in the environment variable CLEF_EXTRA_HEAD_ORACLES (colon-separated;
/// empty entries skipped), in order; empty when unset.
std::vector<std::filesystem::path> extra_config_dirs();

/// The rec* subdirectories of `config_dir`, sorted by name.
std::vector<std::filesystem::path> record_dirs(const std::filesystem::path& config_dir);

/// Reads record.json and hidden.f32 of one record directory (RapidJSON; throws on bad data).
OracleRecord read_record(const std::filesystem::path& record_dir);

/// Reads a raw little-endian f32 file.
std::vector<float> read_f32_file(const std::filesystem::path& path);

/// lexical_W.f32 of a config dir ([1000, hidden_size]).
std::vector<float> read_lexical_table(const std::filesystem::path& config_dir);

/// Per-option lexical vectors [N, H]: for each option span, the f32 mean of the table rows of
/// input_ids[s..e) (sum in order, then divided by the length, as torch's mean).
std::vector<float> lexical_vectors(const OracleRecord& rec, const std::vector<float>& table,
                                   std::int64_t hidden_size);

}  // namespace clef::head::testing
