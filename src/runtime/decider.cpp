#include "runtime/decider.hpp"

#include <exception>
#include <optional>

namespace clef::runtime {

namespace {

/// The default DecisionInProgress of a decider that does not batch: decide() makes it whole in
/// its first step.
class WholeDecision final : public DecisionInProgress {
 public:
  explicit WholeDecision(const PreparedRequest& prepared) : prepared_(prepared) {}
  bool prefilled() const override { return decision_.has_value() || error_ != nullptr; }
  int tokens_left() const override { return prefilled() ? 0 : prepared_.input_tokens(); }

  void decide_with(Decider& decider) {
    try {
      decision_ = decider.decide(prepared_);
    } catch (...) {
      error_ = std::current_exception();
    }
  }
  Decision take() {
    if (error_) std::rethrow_exception(error_);
    if (!decision_) throw Error(ErrorKind::internal, "internal", "finish() before the decision");
    return std::move(*decision_);
  }

 private:
  const PreparedRequest& prepared_;
  std::optional<Decision> decision_;
  std::exception_ptr error_;
};

}  // namespace

std::unique_ptr<DecisionInProgress> Decider::begin(const PreparedRequest& prepared) {
  return std::make_unique<WholeDecision>(prepared);
}

void Decider::step(std::span<DecisionInProgress* const> decisions, int most_tokens) {
  (void)most_tokens;
  for (DecisionInProgress* d : decisions) {
    auto* whole = dynamic_cast<WholeDecision*>(d);
    if (whole == nullptr) throw Error(ErrorKind::internal, "internal", "not this decider's");
    if (!whole->prefilled()) whole->decide_with(*this);
  }
}

Decision Decider::finish(DecisionInProgress& decision) {
  auto* whole = dynamic_cast<WholeDecision*>(&decision);
  if (whole == nullptr) throw Error(ErrorKind::internal, "internal", "not this decider's");
  return whole->take();
}

void Decider::suspend(DecisionInProgress& decision) {
  (void)decision;
  throw Error(ErrorKind::internal, "internal", "this decider does not suspend decisions");
}

void Decider::resume(DecisionInProgress& decision) {
  (void)decision;
  throw Error(ErrorKind::internal, "internal", "this decider does not suspend decisions");
}

}  // namespace clef::runtime
