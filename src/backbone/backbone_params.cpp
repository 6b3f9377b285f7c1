#include "backbone/backbone_params.hpp"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "device/device.hpp"
#include "util/error.hpp"

namespace clef::backbone {

void validate(const BackboneParams& p) {
  device::resolve(p.device, p.gpu_layers);  // an unknown device name: 400 naming "device"
  if (p.context_size < 512 || p.context_size > 262144) {
    throw invalid_request(
        "context_size must be in 512..262144, got " + std::to_string(p.context_size),
        "context_size");
  }
  if (p.threads < 0 || p.threads > kMaxThreads) {
    throw invalid_request("threads must be in 0.." + std::to_string(kMaxThreads) +
                              " (0 = the physical cores), got " + std::to_string(p.threads),
                          "threads");
  }
  if (p.gpu_layers < kAutoGpuLayers) {
    throw invalid_request("gpu_layers must be auto (-2), -1 (all), 0 (CPU) or a layer count, got " +
                              std::to_string(p.gpu_layers),
                          "gpu_layers");
  }
  if (p.chunk_tokens < 1 || p.chunk_tokens > 65536) {
    throw invalid_request("chunk_tokens must be in 1..65536, got " + std::to_string(p.chunk_tokens),
                          "chunk_tokens");
  }
  if (p.parallel < 1 || p.parallel > kMaxParallel) {
    throw invalid_request("parallel must be in 1.." + std::to_string(kMaxParallel) + ", got " +
                              std::to_string(p.parallel),
                          "parallel");
  }
}

int physical_cores() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  std::set<std::pair<std::string, std::string>> cores;  // (package, core) of each allowed CPU
  int allowed_cpus = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    ++allowed_cpus;
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream package(dir + "physical_package_id");
    std::ifstream core(dir + "core_id");
    std::string p;
    std::string c;
    if (!(package >> p) || !(core >> c)) return std::max(1, allowed_cpus);  // no topology: all
    cores.emplace(p, c);
  }
  return std::max<int>(1, static_cast<int>(cores.size()));
}

int resolved_threads(const BackboneParams& params) {
  if (params.threads > 0) return params.threads;
  return physical_cores();
}

}  // namespace clef::backbone
