#pragma once
// The report of `clef verify`: a terminal table and a JSON document with the same numbers.

#include <string>
#include <vector>

#include "eval/parity.hpp"
#include "eval/verify.hpp"
#include "json/value.hpp"

namespace clef::eval {

/// What was verified, for the report's header.
struct VerifySetup {
  std::string clef_version;
  std::string fixture;                   ///< the fixture file
  std::vector<std::string> model_files;  ///< "path sha256 size"
  std::string quantization;              ///< the backbone's tensor types
  /// The joint schema head's config named (artifact::describe_head_config); empty: not read.
  std::string head;
  /// The head is clef-flash's published config (the authors' fixture holds clef-flash answers).
  bool clef_flash_head = true;
  std::string backend;  ///< "CPU" or the GPU layers
  int threads = 0;
};

/// The terminal report: setup, the gate table (all, per arm, per source), the worst runs, the
/// reference-logit response check, and the verdict against `bar`.
std::string format_report(const VerifySetup& setup, const VerifyResult& result,
                          const ParitySummary& summary, const ParityBar& bar);

/// The same as JSON: {"clef_version", "fixture", "model_files", ..., "pass", "reasons", "all",
/// "by_arm", "by_source", "worst", "runs": [every run]}.
json::Value report_json(const VerifySetup& setup, const VerifyResult& result,
                        const ParitySummary& summary, const ParityBar& bar);

}  // namespace clef::eval
