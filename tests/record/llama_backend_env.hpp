#pragma once
// One llama_backend_init() per test process, with llama.cpp's log limited to errors.

#include <gtest/gtest.h>
#include <llama.h>

namespace clef::test {

class LlamaBackendEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    llama_log_set(
        [](ggml_log_level level, const char* text, void*) {
          if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
        },
        nullptr);
    llama_backend_init();
  }
  void TearDown() override { llama_backend_free(); }
};

}  // namespace clef::test
