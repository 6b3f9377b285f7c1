#pragma once
// The training recipe's augmentations, as `clef tune` options: what a training record looks like
// at one visit (an epoch's pass over it). Each is drawn from the run's seed, the epoch and the
// record's index alone, so a resumed run draws the same. An augmented record's tokens differ from
// the kept ones, so its rows are computed at the visit (the state cache resumes its state, only
// the schema after it is prefilled); validation records are never augmented.

#include <cstddef>
#include <cstdint>

#include "tune/labeled_records.hpp"

namespace clef::tune {

struct AugmentSettings {
  /// Every choice question's descriptions permuted among its option ids, its targets moved with
  /// them (the head must read what an option says, not learn which id wins).
  bool shuffle_options = false;
  /// The share of visits given one more question: a yes/no "is this option the answer?" about a
  /// labeled choice or score question and one of its options, its target that option's
  /// probability.
  double yes_no_share = 0;

  bool any() const { return shuffle_options || yes_no_share > 0; }
};

/// Record `index` as visit `epoch` of a run seeded `seed` shows it (the record itself when no
/// augmentation applies).
LabeledRecord augment(const LabeledRecord& record, const AugmentSettings& settings,
                      std::uint64_t seed, int epoch, std::size_t index);

}  // namespace clef::tune
