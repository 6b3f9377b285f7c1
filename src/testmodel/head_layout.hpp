#pragma once
// Parameter names and shapes of the joint schema head (the reference JointSchemaHead's
// state_dict keys; tests/data/oracle/head/README.md "Parameter names and shapes"), derived from
// its config. Used by the test-model writer and by `clef info` to check a head file.

#include <cstdint>
#include <string>
#include <vector>

#include "testmodel/presets.hpp"

namespace clef::testmodel {

/// Role of a parameter, which decides its random initialisation (README "Parameter
/// initialisation"): scalar 0.5·N, norm weight 1+0.1·N, norm/other bias 0.1·N, type embedding
/// 0.5·N, matrix N/sqrt(in).
enum class HeadParamRole { scalar, norm_weight, bias, type_embedding, matrix };

struct HeadParam {
  std::string name;
  std::vector<std::int64_t> shape;  ///< torch shape ([] for the 0-dim scalars)
  HeadParamRole role;
};

/// All parameters in the reference module's named_parameters() order:
/// 3 + 2 + 6 + 1 + 14·routing_layers + 2 + 18·layers + 4 + 4 tensors.
std::vector<HeadParam> head_parameters(const HeadConfig& config);

}  // namespace clef::testmodel
