#include "runtime/engine/loaded_model.hpp"

#include "artifact/head_identity.hpp"

#include <algorithm>

#include "artifact/backbone_loader.hpp"
#include "artifact/head_identity.hpp"
#include "artifact/open_model.hpp"
#include "artifact/reference.hpp"
#include "decision/confidence.hpp"
#include "device/cpu_path.hpp"
#include "head/head_weights.hpp"
#include "record/llama_vocab.hpp"
#include "runtime/engine/engine_memory.hpp"
#include "util/error.hpp"
#include "video/container.hpp"

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

/// The backbone with `params` but the planned `gpu_layers`.
backbone::Backbone load_backbone(const artifact::OpenedModel& opened,
                                 backbone::BackboneParams params, int gpu_layers,
                                 std::span<const llama_model_kv_override> overrides) {
  params.gpu_layers = gpu_layers;
  backbone::validate(params);
  const llama_model_params mp = backbone::BackboneWeights::model_params(params, overrides);
  artifact::OwnedLlamaModel model = artifact::load_backbone(opened.backbone, mp);
  return backbone::Backbone(backbone::LlamaModelPtr(model.release()), params,
                            opened.backbone.gguf.string());
}

/// The joint schema head on the placement's GPU when that backend runs every op of its graph,
/// else on the CPU with `threads`; `where` says which and why.
head::JointSchemaHead make_head(const head::HeadWeights& weights,
                                const device::Placement& placement, int threads,
                                std::string& where) {
  std::optional<head::JointSchemaHead> on_gpu = device::on_gpu<head::JointSchemaHead>(
      placement,
      [&](ggml_backend_ptr backend) {
        return head::JointSchemaHead(weights, std::move(backend), placement.info.quirks);
      },
      where);
  if (on_gpu) return std::move(*on_gpu);
  return head::JointSchemaHead(weights, threads);
}

}  // namespace

LoadedModel::LoadedModel(const EngineConfig& c) : LoadedModel(c, open(c)) {}

LoadedModel::LoadedModel(const EngineConfig& c, artifact::OpenedModel opened)
    : config(c),
      memory(plan_engine_memory(c, opened)),
      placement(device::resolve(c.backbone.device, memory.gpu_layers)),
      lexical(opened.lexical_gguf.string()),
      overrides(record::pretokenizer_overrides(record::PreTokenizer::qwen2)),
      backbone(load_backbone(opened, c.backbone, memory.gpu_layers, overrides)),
      head(make_head(opened.head, placement, backbone::resolved_threads(c.backbone), head_device)) {
  if (lexical.n_embd() != backbone.n_embd()) {
    throw model_error("output.weight rows have " + std::to_string(lexical.n_embd()) +
                      " values but the backbone's n_embd is " + std::to_string(backbone.n_embd()));
  }
  if (!c.mmproj_path.empty()) {
    vision::TowerParams tp;
    tp.threads = backbone::resolved_threads(c.backbone);
    tp.use_gpu = placement.gpu != nullptr;
    tp.device = placement.gpu;
    tp.flash_attention = c.backbone.flash_attention;
    tp.verbose = c.debug_log;
    tp.use_file_normalization = c.mmproj_file_normalization;
    tp.quirks = placement.info.quirks;
    tower = std::make_unique<vision::VisionTower>(
        c.mmproj_path, llama_model_n_embd_inp(backbone.model()), std::move(tp));
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

namespace {

/// The limits a request meets.
ServedLimits served_limits(const LoadedModel& m) {
  const EngineConfig& config = m.config;
  const bool tower = m.tower != nullptr;
  ServedLimits l;
  l.context_size = m.backbone.context_size();
  l.max_questions = config.max_questions;
  l.max_options = config.max_options;
  l.max_images = tower ? config.max_images : 0;
  l.max_image_tokens = config.max_image_tokens;
  l.max_request_image_tokens = config.max_request_image_tokens;
  l.max_vision_memory = tower ? m.memory.vision_memory : 0;
  l.media_urls = tower && config.allow_media_urls;
  l.max_videos = tower ? config.max_videos : 0;
  l.video_files = l.max_videos > 0 && video::decoding_status().available;
  l.max_video_frames = config.max_video_frames;
  l.max_video_seconds = config.max_video_seconds;
  l.max_video_frame_pixels = config.max_video_frame_pixels;
  l.max_video_bytes = config.max_video_bytes;
  l.parallel = m.backbone.params().parallel;
  l.sequence_bytes = m.backbone.sequence_memory().per_sequence;
  return l;
}

/// "parallel N x context C: ... (--parallel, --context-size); plan: ...".
std::string sequence_memory_text(const LoadedModel& m) {
  const int n = m.backbone.params().parallel;
  std::string plan;
  for (const std::string& line : m.memory.lines) plan += "; " + line;
  return "parallel " + std::to_string(n) + " x context " +
         std::to_string(m.backbone.context_size()) + ": " +
         backbone::describe_sequence_memory(m.backbone.sequence_memory(), n) +
         " (--parallel, --context-size)" + (plan.empty() ? "" : "; plan: " + plan.substr(2));
}

/// Where the backbone, the tower and the head run.
std::string placement_text(const LoadedModel& m) {
  const EngineConfig& config = m.config;
  const MemoryPlan& memory = m.memory;
  const device::Placement& placement = m.placement;
  if (placement.gpu == nullptr) {
    const int threads = backbone::resolved_threads(config.backbone);
    return "CPU, " + std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") +
           device::describe_cpu_path(config.backbone.weight_repacking) +
           (memory.fitted ? " (--gpu-layers auto: not one backbone layer fits the GPU's free "
                            "memory beside the vision tower and the head)"
                          : "");
  }
  const int layers = m.backbone.n_layer();
  const int offloaded =
      placement.gpu_layers < 0 || placement.gpu_layers > layers ? layers : placement.gpu_layers;
  std::string rest;
  if (offloaded < layers) {
    rest = " (the other " + std::to_string(layers - offloaded) + " on the CPU" +
           (memory.fitted ? ": --gpu-layers auto, what fits the GPU's free memory)" : ")");
  }
  return device::describe(placement) + ": backbone " + std::to_string(offloaded) + "/" +
         std::to_string(layers) + " layers" + rest + (m.tower ? ", vision tower" : "") +
         ", joint schema head on " + m.head_device;
}

}  // namespace

ServedModel LoadedModel::served() const {
  ServedModel s;
  s.name = config.model_name;
  s.context_size = backbone.context_size();
  s.limits = served_limits(*this);
  s.answers = {config.calibration_path, config.confidence};
  s.head = head_identity;
  s.placement = placement_text(*this);
  s.sequence_memory = sequence_memory_text(*this);
  return s;
}

}  // namespace clef::runtime
