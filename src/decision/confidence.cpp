#include "decision/confidence.hpp"

#include <algorithm>
#include <cmath>

#include "util/error.hpp"

namespace clef::decision {

double confidence_of(std::span<const double> p, ConfidenceKind kind) {
  const auto n = static_cast<double>(p.size());
  const double p_max = p.empty() ? 1.0 : *std::max_element(p.begin(), p.end());
  if (p.size() <= 1) return p_max;
  switch (kind) {
    case ConfidenceKind::reference:
      return p_max;
    case ConfidenceKind::entropy: {
      double h = 0;
      for (double x : p) {
        if (x > 0) h -= x * std::log(x);
      }
      return 1.0 - h / std::log(n);
    }
    case ConfidenceKind::gini: {
      double sq = 0;
      for (double x : p) sq += x * x;
      return 1.0 - (1.0 - sq) / (1.0 - 1.0 / n);
    }
    case ConfidenceKind::max_over_uniform:
      return (p_max - 1.0 / n) / (1.0 - 1.0 / n);
  }
  return p_max;
}

ConfidenceKind parse_confidence_kind(const std::string& name) {
  if (name == "reference") return ConfidenceKind::reference;
  if (name == "entropy") return ConfidenceKind::entropy;
  if (name == "gini") return ConfidenceKind::gini;
  if (name == "max_over_uniform") return ConfidenceKind::max_over_uniform;
  throw invalid_request(
      "confidence \"" + name + "\": expected reference, entropy, gini or max_over_uniform",
      "confidence");
}

}  // namespace clef::decision
