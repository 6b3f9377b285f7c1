#include "testmodel/make_test_model.hpp"

#include <cstdlib>

#include "artifact/layout_writer.hpp"
#include "testmodel/backbone_writer.hpp"
#include "testmodel/head_writer.hpp"
#include "testmodel/mmproj_writer.hpp"
#include "testmodel/quantize.hpp"
#include "util/error.hpp"
#include "util/install_layout.hpp"

namespace clef::testmodel {

std::filesystem::path default_vocab_gguf() {
  namespace fs = std::filesystem;
  // 1. $CLEF_VOCAB_GGUF; 2. shipped with the running executable (beside it in the build tree,
  // share/clef/ in an install: util/install_layout.hpp), so a moved or installed `clef` keeps
  // working without the source tree; 3. the pinned llama.cpp tree it was built from.
  if (const char* env = std::getenv("CLEF_VOCAB_GGUF"); env != nullptr && *env != '\0') {
    return env;
  }
  if (const auto shipped = util::shipped_data("ggml-vocab-qwen35.gguf")) return *shipped;
  return CLEF_TESTMODEL_DEFAULT_VOCAB;
}

MadeModel make_test_model(const MakeOptions& o) {
  MadeModel made;
  made.preset = preset_by_name(o.preset);
  if (!o.quant.empty() && made.preset.backbone.pooled_quant_blocks) {
    throw invalid_request("preset " + made.preset.name + " is written quantized already (" +
                              ggml_type_name(made.preset.backbone.matrix_type) +
                              "); --quant applies to the F16 presets",
                          "quant");
  }
  std::filesystem::create_directories(o.dir);
  const std::string description = "clef test model with random weights: preset " +
                                  made.preset.name + ", seed " + std::to_string(o.seed);
  made.backbone = o.dir / "backbone.gguf";
  made.mmproj = o.dir / "mmproj.gguf";
  made.head = o.dir / "joint_head.safetensors";
  made.head_config = o.dir / "joint_head_config.json";
  made.n_vocab =
      write_backbone(made.backbone, made.preset.backbone, description, o.seed, o.vocab_gguf);
  if (!o.quant.empty()) quantize_backbone(made.backbone, o.quant);
  write_mmproj(made.mmproj, made.preset.vision, made.preset.backbone.n_embd, description, o.seed);
  write_head(o.dir, made.preset.head, o.seed);
  if (o.layout != artifact::Layout::hf_head) {
    // The same weights in one GGUF, as the publishers' converters write them.
    const std::filesystem::path model = o.dir / "model.gguf";
    artifact::write_layout({made.backbone, made.mmproj, made.head, made.head_config}, o.layout,
                           model, o.head_matrix_type);
    for (const auto& p : {made.backbone, made.head, made.head_config}) std::filesystem::remove(p);
    made.backbone = model;
    made.head.clear();
    made.head_config.clear();
  }
  return made;
}

}  // namespace clef::testmodel
