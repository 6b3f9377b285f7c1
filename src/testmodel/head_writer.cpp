#include "testmodel/head_writer.hpp"

#include <cmath>
#include <fstream>
#include <stdexcept>

#include "head/head_parameters.hpp"
#include "testmodel/head_roles.hpp"
#include "testmodel/init.hpp"

namespace clef::testmodel {

namespace {

/// The initialisation of head parameter `p` (tests/data/oracle/head/README.md).
Init init_for(const head::ParamSpec& p) {
  switch (head_param_role(p.name)) {
    case HeadParamRole::scalar:
    case HeadParamRole::type_embedding:
      return Init::normal(0.0, 0.5);
    case HeadParamRole::norm_weight:
      return Init::normal(1.0, 0.1);
    case HeadParamRole::bias:
      return Init::normal(0.0, 0.1);
    case HeadParamRole::matrix:
      return Init::normal(0.0, 1.0 / std::sqrt(static_cast<double>(p.shape.at(1))));
  }
  return Init::normal(0.0, 1.0);
}

}  // namespace

head::SafetensorsWriter random_head(const head::HeadConfig& config, std::uint64_t seed) {
  head::SafetensorsWriter w;
  w.set_metadata("format", "pt");
  w.set_metadata("generator", "clef make-test-model");
  w.set_metadata("weight_seed", std::to_string(seed));
  for (const head::ParamSpec& p : head::head_parameter_specs(config)) {
    std::size_t n = 1;
    for (std::int64_t d : p.shape) n *= static_cast<std::size_t>(d);
    std::vector<float> values(n);
    Rng rng(derive_seed(seed, "head/" + p.name));
    draw(init_for(p), rng, values.data(), n);
    w.add(p.name, p.shape, std::move(values));
  }
  return w;
}

void write_head(const std::filesystem::path& dir, const head::HeadConfig& config,
                std::uint64_t seed, head::SafetensorsDtype dtype) {
  random_head(config, seed).write(dir / "joint_head.safetensors", dtype);
  std::ofstream f(dir / "joint_head_config.json", std::ios::binary | std::ios::trunc);
  f << head::head_config_json(config);
  if (!f) throw std::runtime_error("cannot write " + (dir / "joint_head_config.json").string());
}

}  // namespace clef::testmodel
