#include "runtime/engine/memory_plan.hpp"

#include <algorithm>

#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace clef::runtime {
namespace {

using util::human_bytes;

std::uint64_t host_need(const MemoryNeeds& needs) {
  const std::uint64_t follows = needs.head_and_tower_on_device ? 0 : needs.head + needs.tower;
  return needs.backbone.host.total() + follows + needs.hidden_rows + kHostReserve;
}

std::string parts(const backbone::PlaceMemory& place) {
  return "backbone weights " + human_bytes(place.weights) + " + sequences " +
         human_bytes(place.sequences) + " + compute " + human_bytes(place.compute);
}

}  // namespace

std::string MemoryPlan::text() const {
  std::string out;
  for (const std::string& line : lines) out += (out.empty() ? "" : "\n") + line;
  return out;
}

std::uint64_t device_need(const MemoryNeeds& needs) {
  const std::uint64_t follows = needs.head_and_tower_on_device ? needs.head + needs.tower : 0;
  return needs.backbone.device.total() + follows + kDeviceReserve;
}

MemoryPlan plan_memory(const MemoryNeeds& needs, const MemoryBudget& budget,
                       const MemoryRequest& request) {
  MemoryPlan plan;
  const bool on_device = !budget.device.empty();
  const std::string sequences = "parallel " + std::to_string(request.parallel) + " x context " +
                                std::to_string(request.context_size);
  std::string host_line = "host: " + parts(needs.backbone.host) + " (" + sequences + ")";
  if (!needs.head_and_tower_on_device) {
    host_line += " + joint schema head " + human_bytes(needs.head);
    if (needs.tower > 0) host_line += " + vision tower " + human_bytes(needs.tower);
  }
  const std::uint64_t host = host_need(needs);
  host_line += " + hidden states " + human_bytes(needs.hidden_rows) + " + runtime " +
               human_bytes(kHostReserve) + " = " + human_bytes(host) + " of " +
               human_bytes(budget.host.bytes) + " " + budget.host.source;
  plan.lines.push_back(host_line);

  std::uint64_t device_left = 0;
  if (on_device) {
    const std::uint64_t device = device_need(needs);
    std::string line = budget.device + ": " + parts(needs.backbone.device);
    if (needs.head_and_tower_on_device) {
      line += " + joint schema head " + human_bytes(needs.head);
      if (needs.tower > 0) line += " + vision tower " + human_bytes(needs.tower);
    }
    line += " + kept free " + human_bytes(kDeviceReserve) + " = " + human_bytes(device) + " of " +
            human_bytes(budget.device_free) + " free";
    plan.lines.push_back(line);
    if (device > budget.device_free) {
      throw invalid_request("the model does not fit " + budget.device + ": " + plan.text() +
                                ". Lower --gpu-layers (or leave it auto), --context-size or "
                                "--parallel, or run on the CPU (--device cpu).",
                            "gpu_layers");
    }
    device_left = budget.device_free - device;
  }
  if (host > budget.host.bytes) {
    throw invalid_request(
        std::string("the model does not fit ") +
            (budget.host.source == "(--memory-limit)" ? "--memory-limit"
                                                      : "this machine's memory") +
            ": " + plan.text() +
            ". Lower --context-size or --parallel, take a smaller quantization, or give it more "
            "memory.",
        "context_size");
  }
  std::uint64_t left = budget.host.bytes - host;

  const std::uint64_t vision_cap = budget.physical / 4;
  std::uint64_t host_vision = 0;
  if (needs.tower > 0) {
    const std::uint64_t room = needs.head_and_tower_on_device ? device_left : left;
    const std::string where = needs.head_and_tower_on_device ? budget.device : "the host";
    if (request.max_vision_memory > 0) {
      if (request.max_vision_memory > room) {
        throw invalid_request("--max-vision-memory " + human_bytes(request.max_vision_memory) +
                                  " is more than " + where + " has left (" + human_bytes(room) +
                                  "): " + plan.text(),
                              "max_vision_memory");
      }
      plan.vision_memory = request.max_vision_memory;
    } else {
      plan.vision_memory = std::min(vision_cap, needs.head_and_tower_on_device ? room : room / 2);
    }
    if (!needs.head_and_tower_on_device) host_vision = plan.vision_memory;
  }
  left -= host_vision;
  const std::string vision_share = host_vision > 0
                                       ? " after " + human_bytes(host_vision) +
                                             " for one image's vision compute (--max-vision-memory)"
                                       : "";

  if (request.state_cache_mb > 0) {
    const std::uint64_t asked = static_cast<std::uint64_t>(request.state_cache_mb) << 20;
    if (asked > left) {
      throw invalid_request("--state-cache-mb " + std::to_string(request.state_cache_mb) + " (" +
                                human_bytes(asked) + ") is more than the host has left (" +
                                human_bytes(left) + vision_share + "): " + plan.text(),
                            "state_cache_mb");
    }
    plan.state_cache = asked;
  } else if (request.state_cache_mb < 0) {
    plan.state_cache = std::min(kMostAutoStateCache, left);
  }
  std::string rest = "left: ";
  if (needs.tower > 0) {
    rest += "vision compute up to " + human_bytes(plan.vision_memory) + " an image" +
            (needs.head_and_tower_on_device ? " (on " + budget.device + ")" : "") + ", ";
  }
  rest += "state cache " + (plan.state_cache > 0 ? human_bytes(plan.state_cache) : "off");
  plan.lines.push_back(rest);
  return plan;
}

int fit_gpu_layers(int n_layer, std::uint64_t device_free,
                   const std::function<MemoryNeeds(int layers)>& needs_at) {
  if (device_need(needs_at(-1)) <= device_free) return -1;
  int fits = 0, over = n_layer + 1;  // needs_at(fits) fits or is the floor; needs_at(over) not
  while (over - fits > 1) {
    const int mid = fits + (over - fits) / 2;
    if (device_need(needs_at(mid)) <= device_free) {
      fits = mid;
    } else {
      over = mid;
    }
  }
  return fits;
}

}  // namespace clef::runtime
