#pragma once
// Levenshtein distance for "did you mean" suggestions (a mistyped field, a model name).

#include <cstddef>
#include <string_view>

namespace clef::util {

/// The Levenshtein distance of `a` and `b` in bytes: the fewest single-byte insertions, deletions
/// and substitutions that turn one into the other (Wagner-Fischer, one row of O(|b|) memory).
/// Meant for short keys and names: time O(|a| x |b|).
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace clef::util
