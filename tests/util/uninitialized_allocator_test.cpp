// util::UninitializedAllocator (the backbone's snapshot bytes): a vector with it sizes without
// clearing, and otherwise behaves as std::vector (values given are stored, copies compare equal).

#include "util/uninitialized_allocator.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<std::uint8_t, clef::util::UninitializedAllocator<std::uint8_t>>;

TEST(UninitializedAllocator, DefaultConstructionLeavesTheBytesAsTheyWere) {
  alignas(8) unsigned char storage[8];
  std::memset(storage, 0xAB, sizeof storage);
  clef::util::UninitializedAllocator<std::uint8_t> a;
  a.construct(reinterpret_cast<std::uint8_t*>(storage + 3));
  EXPECT_EQ(storage[3], 0xAB);  // std::allocator's construct would have written 0
}

TEST(UninitializedAllocator, GivenValuesAreStoredAsStdVectorStoresThem) {
  Bytes b(5, 7);
  b.insert(b.end(), {9, 3, 3});
  EXPECT_EQ(std::vector<std::uint8_t>(b.begin(), b.end()),
            (std::vector<std::uint8_t>{7, 7, 7, 7, 7, 9, 3, 3}));
  const Bytes copy = b;
  EXPECT_EQ(copy, b);
  std::vector<std::string, clef::util::UninitializedAllocator<std::string>> s(2, "x");
  s.resize(3);  // class types are default-constructed: an empty string
  EXPECT_EQ(s[0], "x");
  EXPECT_TRUE(s[2].empty());
}

}  // namespace
