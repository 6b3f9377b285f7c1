#include "runtime/engine/engine_config.hpp"

#include "artifact/open_model.hpp"

namespace clef::runtime {

EngineConfig EngineConfig::from_model_dir(const std::string& dir) {
  const artifact::ModelPaths paths = artifact::find_model_paths(dir);
  EngineConfig config;
  config.backbone_path = paths.gguf.string();
  if (paths.mmproj) config.mmproj_path = paths.mmproj->string();
  if (paths.head_weights) config.head_path = paths.head_weights->string();
  if (paths.head_config) config.head_config_path = paths.head_config->string();
  return config;
}

}  // namespace clef::runtime
