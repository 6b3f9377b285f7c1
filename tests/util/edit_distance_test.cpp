#include "util/edit_distance.hpp"

#include <gtest/gtest.h>

namespace {

using clef::util::edit_distance;

TEST(EditDistance, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("instruction", "instructions"), 1u);  // the issue-45 typo
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("clef-flsh", "clef-flash"), 1u);
  EXPECT_EQ(edit_distance("options", "options"), 0u);
}

TEST(EditDistance, IsSymmetric) {
  EXPECT_EQ(edit_distance("type", "tpye"), edit_distance("tpye", "type"));
  EXPECT_EQ(edit_distance("type", "tpye"), 2u);
}

}  // namespace
