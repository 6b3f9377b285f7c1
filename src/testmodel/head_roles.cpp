#include "testmodel/head_roles.hpp"

namespace clef::testmodel {

HeadParamRole head_param_role(std::string_view name) {
  const std::size_t last_dot = name.rfind('.');
  if (last_dot == std::string_view::npos) return HeadParamRole::scalar;
  if (name == "type_embedding.weight") return HeadParamRole::type_embedding;
  if (name.ends_with("bias")) return HeadParamRole::bias;
  // The module that owns the weight: "norm1" in "layers.0.norm1.weight".
  const std::string_view path = name.substr(0, last_dot);
  const std::size_t module_dot = path.rfind('.');
  const std::string_view module =
      module_dot == std::string_view::npos ? path : path.substr(module_dot + 1);
  if (module.find("norm") != std::string_view::npos) return HeadParamRole::norm_weight;
  return HeadParamRole::matrix;
}

}  // namespace clef::testmodel
