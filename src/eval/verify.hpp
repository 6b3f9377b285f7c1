#pragma once
// `clef verify`: decides every run of an oracle fixture with an engine and compares the token
// ids, spans and option probabilities with the reference's (eval/parity.hpp).

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "eval/fixture.hpp"
#include "eval/parity.hpp"
#include "json/value.hpp"
#include "runtime/make_engine.hpp"

namespace clef::eval {

/// Which runs to decide, and a progress hook.
struct VerifyOptions {
  std::size_t limit = 0;             ///< at most this many runs (0: all)
  std::vector<std::string> arms;     ///< only these arms (empty: all)
  std::vector<std::string> sources;  ///< only these sources (empty: all)
  /// Called after each run with (runs done, runs selected, its parity).
  std::function<void(std::size_t, std::size_t, const RunParity&)> on_run;
};

/// What a verification found.
struct VerifyResult {
  /// The engine tokenizes with the fixture's vocabulary (its record prefix ids are the fixture's
  /// contract prefix ids), so ids and spans were compared; otherwise only the probabilities.
  bool same_vocabulary = false;
  std::vector<RunParity> runs;
  /// Responses clef builds from the reference's own logits (its softmax, answers, rounding)
  /// against the reference's systemone_response: a check of clef's decision layer that needs no
  /// model weights.
  int responses_checked = 0;
  int responses_equal = 0;
  std::vector<std::string> responses_differing;  ///< "id/arm" of the first few that differ
  /// Runs the arm and source filters select, and of those how many `limit` left out (not run).
  int runs_selected = 0;
  int runs_over_limit = 0;
};

/// The runs `options` selects (arms, sources, then the first `limit`), in the fixture's order.
std::vector<const FixtureRun*> select_runs(const Fixture& fixture, const VerifyOptions& options);

/// The request of `run`: its record's request with the arm's images as PNG data URIs (text: none;
/// g256 / g448: resized to a 256 / 448 square with Pillow BICUBIC first, as the fixture was made;
/// native: the image file's own pixels). Throws clef::Error (invalid_request) naming the file when
/// an image is not in the fixture's images folder, or when the record's request is withheld.
json::Value run_request(const Fixture& fixture, const FixtureRun& run);

/// Decides the selected runs of `fixture` with `engine` and compares each with the reference.
/// A run whose request is withheld or whose image is missing is skipped (noted); one the engine
/// refuses or fails on is failed (noted). Never throws for a single run.
VerifyResult verify(runtime::Engine& engine, const Fixture& fixture, const VerifyOptions& options);

}  // namespace clef::eval
