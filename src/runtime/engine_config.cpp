#include "runtime/engine_config.hpp"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "util/error.hpp"

namespace clef::runtime {
namespace fs = std::filesystem;

EngineConfig EngineConfig::from_model_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw model_error("model directory '" + dir + "' does not exist");
  EngineConfig config;
  std::vector<fs::path> backbones;
  std::vector<fs::path> projectors;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".gguf") continue;
    const std::string name = entry.path().filename().string();
    (name.rfind("mmproj", 0) == 0 ? projectors : backbones).push_back(entry.path());
  }
  std::sort(backbones.begin(), backbones.end());
  std::sort(projectors.begin(), projectors.end());
  const fs::path preferred = fs::path(dir) / "backbone.gguf";
  if (fs::exists(preferred)) {
    config.backbone_path = preferred.string();
  } else if (backbones.size() == 1) {
    config.backbone_path = backbones.front().string();
  } else if (backbones.empty()) {
    throw model_error("no backbone GGUF in '" + dir + "' (expected backbone.gguf)");
  } else {
    throw model_error("several GGUF files in '" + dir +
                      "' and none is named backbone.gguf; pass --model explicitly");
  }
  if (!projectors.empty()) config.mmproj_path = projectors.front().string();
  config.head_path = (fs::path(dir) / "joint_head.safetensors").string();
  config.head_config_path = (fs::path(dir) / "joint_head_config.json").string();
  if (!fs::exists(config.head_path)) {
    throw model_error("no joint_head.safetensors in '" + dir +
                      "': clef needs the joint schema head beside the backbone");
  }
  if (!fs::exists(config.head_config_path)) {
    throw model_error("no joint_head_config.json in '" + dir + "'");
  }
  return config;
}

}  // namespace clef::runtime
