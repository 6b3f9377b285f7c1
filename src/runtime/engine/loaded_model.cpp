#include "runtime/engine/loaded_model.hpp"

#include <algorithm>

#include "artifact/backbone_loader.hpp"
#include "artifact/head_identity.hpp"
#include "artifact/open_model.hpp"
#include "artifact/reference.hpp"
#include "backbone/llama_handles.hpp"
#include "decision/confidence.hpp"
#include "head/head_weights.hpp"
#include "head/joint_schema_head.hpp"
#include "record/llama_vocab.hpp"
#include "runtime/engine/engine_memory.hpp"
#include "util/error.hpp"

namespace clef::runtime {

namespace {

artifact::OpenedModel open(const EngineConfig& config) {
  artifact::ModelPaths paths;
  paths.gguf = config.backbone_path;
  if (!config.mmproj_path.empty()) paths.mmproj = config.mmproj_path;
  if (!config.head_path.empty()) paths.head_weights = config.head_path;
  if (!config.head_config_path.empty()) paths.head_config = config.head_config_path;
  return artifact::open_model(paths);
}

/// The backbone's weights with `params` but the planned `gpu_layers`.
std::shared_ptr<const backbone::BackboneWeights> load_backbone(
    const artifact::OpenedModel& opened, backbone::BackboneParams params, int gpu_layers,
    std::span<const llama_model_kv_override> overrides) {
  params.gpu_layers = gpu_layers;
  backbone::validate(params);
  const llama_model_params mp = backbone::BackboneWeights::model_params(params, overrides);
  artifact::OwnedLlamaModel model = artifact::load_backbone(opened.backbone, mp);
  return std::make_shared<const backbone::BackboneWeights>(backbone::LlamaModelPtr(model.release()),
                                                           params, opened.backbone.gguf.string());
}

/// The joint schema head's weights on the placement's GPU when that backend runs every op of its
/// graph, else on the CPU; `gpu` says which (null: the CPU), `where` which and why.
std::shared_ptr<const head::HeadModel> load_head(const head::HeadWeights& weights,
                                                 const device::Placement& placement,
                                                 ggml_backend_dev_t& gpu, std::string& where) {
  std::optional<head::JointSchemaHead> on_gpu = device::on_gpu<head::JointSchemaHead>(
      placement,
      [&](ggml_backend_ptr backend) {
        return head::JointSchemaHead(weights, std::move(backend), placement.info.quirks);
      },
      where);
  gpu = on_gpu ? placement.gpu : nullptr;
  // On the CPU: the weights of a CPU head (its one thread is not kept: each runner computes with
  // its own backend).
  return on_gpu ? on_gpu->model() : head::JointSchemaHead(weights, 1).model();
}

}  // namespace

std::shared_ptr<const LoadedModel> LoadedModel::load(const EngineConfig& config) {
  backbone::ensure_llama_backend(config.debug_log);
  return std::make_shared<const LoadedModel>(config, open(config));
}

LoadedModel::LoadedModel(const EngineConfig& c, artifact::OpenedModel opened)
    : config(c),
      memory(plan_engine_memory(c, opened)),
      placement(device::resolve(c.backbone.device, memory.gpu_layers)),
      lexical(opened.lexical_gguf.string()),
      overrides(record::pretokenizer_overrides(record::PreTokenizer::qwen2)),
      backbone(load_backbone(opened, c.backbone, memory.gpu_layers, overrides)),
      head(load_head(opened.head, placement, head_gpu, head_device)) {
  if (lexical.n_embd() != backbone->n_embd()) {
    throw model_error("output.weight rows have " + std::to_string(lexical.n_embd()) +
                      " values but the backbone's n_embd is " + std::to_string(backbone->n_embd()));
  }
  config.backbone.gpu_layers = memory.gpu_layers;
  if (config.model_name.empty())
    config.model_name = artifact::served_model_id(opened.head.config());
  answer_options.confidence = decision::parse_confidence_kind(c.confidence);
  if (!c.head_path.empty()) {
    const artifact::HeadIdentity id = artifact::identify_head(c.head_path);
    head_identity = {id.sha256, id.published != nullptr ? id.published->id : "", id.tuned_from,
                     id.describe()};
  } else {
    head_identity.description = "inside the model GGUF";
  }
  if (!c.calibration_path.empty()) {
    calibration = decision::load_calibration(c.calibration_path);
    answer_options.calibration = &*calibration;
  }
}

}  // namespace clef::runtime
