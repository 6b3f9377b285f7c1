#include "runtime/engine/served_model.hpp"

#include <string>

#include "device/cpu_path.hpp"
#include "video/container.hpp"

namespace clef::runtime {

namespace {

/// The limits a request meets.
ServedLimits served_limits(const LoadedModel& m, const backbone::Backbone& context, bool tower) {
  const EngineConfig& config = m.config;
  ServedLimits l;
  l.context_size = context.context_size();
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
  l.parallel = context.params().parallel;
  l.sequence_bytes = context.sequence_memory().per_sequence;
  return l;
}

/// "parallel N x context C: ... (--parallel, --context-size); plan: ...".
std::string sequence_memory_text(const LoadedModel& m, const backbone::Backbone& context) {
  const int n = context.params().parallel;
  std::string plan;
  for (const std::string& line : m.memory.lines) plan += "; " + line;
  return "parallel " + std::to_string(n) + " x context " + std::to_string(context.context_size()) +
         ": " + backbone::describe_sequence_memory(context.sequence_memory(), n) +
         " (--parallel, --context-size)" + (plan.empty() ? "" : "; plan: " + plan.substr(2));
}

/// Where the backbone, the tower and the head run.
std::string placement_text(const LoadedModel& m, const backbone::Backbone& context, bool tower) {
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
  const int layers = context.n_layer();
  const int offloaded =
      placement.gpu_layers < 0 || placement.gpu_layers > layers ? layers : placement.gpu_layers;
  std::string rest;
  if (offloaded < layers) {
    rest = " (the other " + std::to_string(layers - offloaded) + " on the CPU" +
           (memory.fitted ? ": --gpu-layers auto, what fits the GPU's free memory)" : ")");
  }
  return device::describe(placement) + ": backbone " + std::to_string(offloaded) + "/" +
         std::to_string(layers) + " layers" + rest + (tower ? ", vision tower" : "") +
         ", joint schema head on " + m.head_device;
}

}  // namespace

ServedModel served_model(const LoadedModel& m, const backbone::Backbone& context, bool tower) {
  ServedModel s;
  s.name = m.config.model_name;
  s.context_size = context.context_size();
  s.limits = served_limits(m, context, tower);
  s.answers = {m.config.calibration_path, m.config.confidence};
  s.head = m.head_identity;
  s.placement = placement_text(m, context, tower);
  s.sequence_memory = sequence_memory_text(m, context);
  return s;
}

}  // namespace clef::runtime
