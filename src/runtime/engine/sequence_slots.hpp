#pragma once
// The backbone context's sequences (llama_seq_id 0 .. parallel-1) and which one each decision in
// progress holds: llama.cpp's server keeps a state per slot the same way.

#include <string>
#include <vector>

#include "util/error.hpp"

namespace clef::runtime {

class SequenceSlots {
 public:
  enum class State { free, held };

  /// `count` sequences, all free (at least one).
  explicit SequenceSlots(int count)
      : states_(static_cast<std::size_t>(count < 1 ? 1 : count), State::free) {}

  /// Holds the lowest free sequence and returns it (records decoded together then tend to sit on
  /// consecutive sequences, which llama.cpp puts in one ubatch). Throws clef::Error (internal)
  /// when every sequence is held.
  int take() {
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (states_[i] == State::free) {
        states_[i] = State::held;
        return static_cast<int>(i);
      }
    }
    throw Error(ErrorKind::internal, "internal",
                "all " + std::to_string(states_.size()) + " sequences are in use");
  }

  /// Every sequence but `seq` is free.
  bool all_free_but(int seq) const noexcept {
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (static_cast<int>(i) != seq && states_[i] == State::held) return false;
    }
    return true;
  }

  /// Frees `seq` (one out of range, or free already, changes nothing).
  void give_back(int seq) noexcept {
    if (seq >= 0 && static_cast<std::size_t>(seq) < states_.size()) {
      states_[static_cast<std::size_t>(seq)] = State::free;
    }
  }

 private:
  std::vector<State> states_;
};

}  // namespace clef::runtime
