#include "info/model_files.hpp"

#include <string>

#include "artifact/layout.hpp"
#include "artifact/open_model.hpp"
#include "gguf/gguf_file.hpp"
#include "util/error.hpp"

namespace clef::info {

namespace {

void set_once(std::optional<std::filesystem::path>& slot, const std::filesystem::path& p,
              const char* what) {
  if (slot && std::filesystem::absolute(*slot) != std::filesystem::absolute(p)) {
    throw model_error("two " + std::string(what) + " files given: " + slot->string() + " and " +
                      p.string());
  }
  slot = p;
}

}  // namespace

ModelFiles find_model_files(const std::filesystem::path& dir) {
  // The files the runtime would load from `dir` (artifact::find_model_paths).
  const artifact::ModelPaths found = artifact::find_model_paths(dir);
  ModelFiles files;
  files.backbone = found.gguf;
  files.mmproj = found.mmproj;
  // A GGUF with the head inside (layouts B, C, D) needs no head files; a qwen35 GGUF without it
  // (layout A) does. detect_layout also refuses an unknown architecture or decision.type.
  const bool head_inside =
      artifact::detect_layout(gguf::GgufFile(*files.backbone)) != artifact::Layout::hf_head;
  for (const char* name : {"joint_head.safetensors", "joint_head_config.json"}) {
    if (!head_inside && !std::filesystem::is_regular_file(dir / name)) {
      throw model_error(dir.string() + ": missing " + name + " (the joint schema head)");
    }
  }
  if (std::filesystem::is_regular_file(dir / "joint_head.safetensors")) {
    files.head = dir / "joint_head.safetensors";
    files.head_config = dir / "joint_head_config.json";
  }
  return files;
}

ModelFiles classify_model_files(const std::vector<std::filesystem::path>& paths) {
  if (paths.empty()) throw model_error("no model files given");
  ModelFiles files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      const ModelFiles dir = find_model_files(p);
      if (dir.backbone) set_once(files.backbone, *dir.backbone, "backbone");
      if (dir.mmproj) set_once(files.mmproj, *dir.mmproj, "mmproj");
      if (dir.head) set_once(files.head, *dir.head, "head");
      if (dir.head_config) set_once(files.head_config, *dir.head_config, "head config");
      continue;
    }
    if (!std::filesystem::exists(p, ec)) throw model_error(p.string() + ": no such file");
    const auto ext = p.extension();
    if (ext == ".safetensors") {
      set_once(files.head, p, "head");
    } else if (ext == ".json") {
      set_once(files.head_config, p, "head config");
    } else {
      const gguf::GgufFile g(p, /*header_only=*/true);  // throws "not a GGUF file"
      const bool is_clip = g.find_string("general.architecture").value_or("") == "clip";
      if (is_clip || artifact::is_mmproj_name(p)) {
        set_once(files.mmproj, p, "mmproj");
      } else {
        set_once(files.backbone, p, "backbone");
      }
    }
  }
  if (files.head && !files.head_config) {
    files.head_config = files.head->parent_path() / "joint_head_config.json";
  }
  if (files.head_config && !files.head) {
    files.head = files.head_config->parent_path() / "joint_head.safetensors";
  }
  return files;
}

}  // namespace clef::info
