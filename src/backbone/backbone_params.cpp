#include "backbone/backbone_params.hpp"

#include <algorithm>
#include <string>
#include <thread>

#include "util/error.hpp"

namespace clef::backbone {

void validate(const BackboneParams& p) {
  if (p.context_size < 512 || p.context_size > 262144) {
    throw invalid_request(
        "context_size must be in 512..262144, got " + std::to_string(p.context_size),
        "context_size");
  }
  if (p.threads < 0) {
    throw invalid_request("threads must be >= 0 (0 = all cores), got " + std::to_string(p.threads),
                          "threads");
  }
  if (p.gpu_layers < -1) {
    throw invalid_request("gpu_layers must be -1 (all), 0 (CPU) or a layer count, got " +
                              std::to_string(p.gpu_layers),
                          "gpu_layers");
  }
  if (p.chunk_tokens < 1 || p.chunk_tokens > 65536) {
    throw invalid_request("chunk_tokens must be in 1..65536, got " + std::to_string(p.chunk_tokens),
                          "chunk_tokens");
  }
}

int resolved_threads(const BackboneParams& params) {
  if (params.threads > 0) return params.threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace clef::backbone
