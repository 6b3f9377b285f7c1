#pragma once
// What a joint schema head is (joint_head.safetensors + joint_head_config.json, decision contract
// section 5), and whether clef can use it: every reference parameter name present with the shape
// its config implies, nothing extra, dtype BF16 or F32.

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>

#include "testmodel/presets.hpp"

namespace clef::info {

struct HeadInfo {
  std::filesystem::path weights;  ///< joint_head.safetensors
  std::filesystem::path config_path;
  std::uintmax_t file_size = 0;
  testmodel::HeadConfig config{};
  std::set<std::string> dtypes;
  std::size_t n_tensors = 0;
  std::uint64_t n_params = 0;
};

/// Parses `joint_head_config.json`. Throws model_error when it is missing, not a JSON object, or
/// one of hidden_size, width, routing_layers, layers, heads, feedforward is not a positive integer,
/// or width is not a multiple of heads.
testmodel::HeadConfig read_head_config(const std::filesystem::path& config_path);

/// Reads the config and the safetensors header and checks them against each other. Throws
/// model_error naming the first problems (missing / unexpected / misshapen names, bad dtype).
HeadInfo read_head_info(const std::filesystem::path& weights,
                        const std::filesystem::path& config_path);

}  // namespace clef::info
