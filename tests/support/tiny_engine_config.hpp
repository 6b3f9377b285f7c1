#pragma once
// An engine configuration over the shared tiny test model (tiny_model.hpp): its four files, a
// 4,096-token context and one thread (ctest runs two tests at once on two cores), or the same over
// another preset (preset_engine_config). Tests change
// what they need from there.

#include "runtime/engine/engine_config.hpp"
#include "support/tiny_model.hpp"

namespace clef::test {

/// The same over the test model of `preset` (preset_model: "tiny", "small-27b").
inline runtime::EngineConfig preset_engine_config(const std::string& preset,
                                                  bool with_mmproj = true) {
  const auto& m = preset_model(preset);
  runtime::EngineConfig c;
  c.backbone_path = m.backbone.string();
  c.head_path = m.head.string();
  c.head_config_path = m.head_config.string();
  if (with_mmproj) c.mmproj_path = m.mmproj.string();
  c.backbone.context_size = 4096;
  c.backbone.threads = 1;
  return c;
}

inline runtime::EngineConfig tiny_engine_config(bool with_mmproj = true) {
  return preset_engine_config("tiny", with_mmproj);
}

}  // namespace clef::test
