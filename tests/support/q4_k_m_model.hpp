#pragma once
// Test support: the small preset quantized to Q4_K_M (n_embd 256: Q4_K's 256-value blocks fit its
// rows, so llama.cpp repacks them), made once per test process into a temporary directory.

#include <string>

#include "support/tiny_model.hpp"
#include "testmodel/make_test_model.hpp"

namespace clef::test {

/// The Q4_K_M backbone's path (seed 3).
inline const std::string& q4_k_m_backbone() {
  static TempDir dir("clef-q4km");
  static const std::string path = [] {
    testmodel::MakeOptions o;
    o.dir = dir.path() / "model";
    o.seed = 3;
    o.preset = "small";
    o.quant = "Q4_K_M";
    return testmodel::make_test_model(o).backbone.string();
  }();
  return path;
}

}  // namespace clef::test
