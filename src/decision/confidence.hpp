#pragma once
// What the `confidence` of a choice or score answer means. The reference's (the default) is the
// chosen option's probability; servers users migrate from define it otherwise, so `clef serve
// --confidence` offers theirs, explicitly (thresholds tuned on one do not carry to another).

#include <span>
#include <string>

namespace clef::decision {

enum class ConfidenceKind {
  reference,         ///< p of the chosen option (choice) / the largest p (score)
  entropy,           ///< 1 - H(p) / ln n, H the Shannon entropy in nats
  gini,              ///< 1 - (1 - sum p_i^2) / (1 - 1/n): normalized Gini impurity, inverted
  max_over_uniform,  ///< (p_max - 1/n) / (1 - 1/n)
};

/// The confidence of probabilities `p` (n >= 1 options; n == 1 gives 1) by `kind`.
double confidence_of(std::span<const double> p, ConfidenceKind kind);

/// "reference", "entropy", "gini" or "max_over_uniform" -> the kind; throws clef::Error
/// (invalid_request) naming the accepted values for anything else.
ConfidenceKind parse_confidence_kind(const std::string& name);

}  // namespace clef::decision
