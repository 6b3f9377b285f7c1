#include "artifact/reference.hpp"

namespace clef::artifact {

head::HeadConfig reference_head_config() {
  head::HeadConfig c;
  c.hidden_size = 4096;
  c.width = 1024;
  c.routing_layers = 2;
  c.layers = 4;
  c.heads = 16;
  c.feedforward = 4096;
  return c;
}

std::vector<std::string> config_differences(const head::HeadConfig& c) {
  const head::HeadConfig r = reference_head_config();
  std::vector<std::string> out;
  const auto cmp = [&](const char* name, std::int64_t v, std::int64_t ref) {
    if (v != ref) {
      out.push_back(std::string("head ") + name + " " + std::to_string(v) + " (reference " +
                    std::to_string(ref) + ")");
    }
  };
  cmp("hidden_size", c.hidden_size, r.hidden_size);
  cmp("width", c.width, r.width);
  cmp("routing_layers", c.routing_layers, r.routing_layers);
  cmp("layers", c.layers, r.layers);
  cmp("heads", c.heads, r.heads);
  cmp("feedforward", c.feedforward, r.feedforward);
  return out;
}

}  // namespace clef::artifact
