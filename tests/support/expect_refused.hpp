#pragma once
// Test support: a request the engine must refuse, with its status, the field it names (a prefix)
// and words of its message.

#include <gtest/gtest.h>

#include <string>

#include "json/value.hpp"
#include "runtime/make_engine.hpp"
#include "util/error.hpp"

namespace clef::test {

inline void expect_refused(runtime::Engine& engine, const json::Value& body, int status,
                           const std::string& param, const std::string& words) {
  try {
    engine.decide(body);
    ADD_FAILURE() << "accepted a request that must be refused (" << words << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_EQ(e.param().rfind(param, 0), 0u) << e.param() << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

}  // namespace clef::test
