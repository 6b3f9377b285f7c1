#pragma once
// The joint schema head's parameter names and shapes: exactly the reference module's
// state_dict() keys (tests/data/oracle/head/README.md, "Parameter names and shapes").

#include <cstdint>
#include <string>
#include <vector>

#include "head/head_config.hpp"

namespace clef::head {

/// One expected parameter: its torch name and row-major shape ([] for a 0-dim scalar).
struct ParamSpec {
  std::string name;
  std::vector<std::int64_t> shape;
};

/// Every parameter of JointSchemaHead(**config), in a fixed order; 3 + 2 + 6 + 1 +
/// 14*routing_layers + 2 + 18*layers + 4 + 4 entries.
std::vector<ParamSpec> head_parameter_specs(const HeadConfig& config);

}  // namespace clef::head
