#pragma once
// The random initialisation role of each joint schema head parameter (tests/data/oracle/head/
// README.md, "Parameter initialisation"), derived from its name. The names and shapes themselves
// come from head::head_parameter_specs.

#include <string_view>

namespace clef::testmodel {

/// Role of a parameter, which decides its random initialisation: scalar 0.5·N, norm weight
/// 1+0.1·N, norm/other bias 0.1·N, type embedding 0.5·N, matrix N/sqrt(in).
enum class HeadParamRole { scalar, norm_weight, bias, type_embedding, matrix };

/// The role of the head parameter `name` (a head::head_parameter_specs name): a name without a
/// dot is one of the 0-dim scalars (prior_logit_scale, joint_logit_scale, residual_gate);
/// type_embedding.weight is the type embedding; any *bias (LayerNorm, Linear, in_proj) a bias; a
/// weight of a *norm* module (hidden_norm, norm1, query_norm, ...) a LayerNorm weight; every
/// other weight (Linear, in_proj) a matrix.
HeadParamRole head_param_role(std::string_view name);

}  // namespace clef::testmodel
