#pragma once
// This engine's own readout in the oracle fixture's format: decide the runs of a fixture and
// write what the engine gave (ids, spans, logits, probabilities, the response) as a new fixture,
// so another machine, backend or quantization can be verified against this one
// (`clef verify --write-fixture`), and so the verifier itself is tested on a model whose answers
// are known.

#include <filesystem>

#include "eval/fixture.hpp"
#include "eval/verify.hpp"
#include "runtime/make_engine.hpp"

namespace clef::eval {

/// Decides the runs of `fixture` selected by `options` (limit, arms, sources; runs that cannot be
/// built or decided are left out) and writes them as a fixture to `out`, with the records they
/// use and their images copied to `images/` beside it. Returns how many runs were written.
/// Throws clef::Error (invalid_request) when `out` or its images cannot be written.
std::size_t record_fixture(runtime::Engine& engine, const Fixture& fixture,
                           const VerifyOptions& options, const std::filesystem::path& out);

}  // namespace clef::eval
