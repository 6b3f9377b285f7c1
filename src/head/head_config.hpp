#pragma once
// clef::head::HeadConfig: the joint schema head's hyper-parameters, from joint_head_config.json
// (decision contract, section 5; the kwargs of the reference JointSchemaHead).

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace clef::head {

/// {hidden_size, width, routing_layers, layers, heads, feedforward} of the reference module.
struct HeadConfig {
  std::int64_t hidden_size = 0;     ///< H: the backbone's hidden size (n_embd)
  std::int64_t width = 0;           ///< E: the head's model width
  std::int64_t routing_layers = 0;  ///< number of evidence routing layers
  std::int64_t layers = 0;          ///< number of field decoder layers
  std::int64_t heads = 0;           ///< attention heads (width % heads == 0)
  std::int64_t feedforward = 0;     ///< F: feed-forward inner size

  /// "{hidden_size=64, width=32, ...}" for error messages.
  std::string describe() const;
};

/// Parses a joint_head_config.json document. The six keys are required positive integers
/// (routing_layers and layers may be 0) with width divisible by heads; "dropout" (a number,
/// unused at inference) and any other keys are ignored. Throws clef::Error (model_error)
/// naming `source` and the key at fault.
HeadConfig parse_head_config(std::string_view json, const std::string& source);

/// Checks a config built in code (e.g. from GGUF keys) with the bounds parse_head_config applies:
/// every size positive (routing_layers and layers may be 0), width divisible by heads. Throws
/// clef::Error (model_error) naming `source` and the field at fault.
void validate_head_config(const HeadConfig& config, const std::string& source);

/// `joint_head_config.json` text: the six keys in reference order, 2-space indented, like
/// Python's json.dump(config, indent=2) (what the reference loader reads back).
std::string head_config_json(const HeadConfig& config);

/// Reads and parses `path`. Throws model_error when the file is missing or invalid.
HeadConfig read_head_config(const std::filesystem::path& path);

}  // namespace clef::head
