#pragma once
// What a joint schema head is (joint_head.safetensors + joint_head_config.json, decision contract
// section 5), and whether clef can use it: every reference parameter name present with the shape
// its config implies (head::head_parameter_specs), nothing extra, dtype BF16 or F32.

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>

#include "head/head_config.hpp"

namespace clef::info {

struct HeadInfo {
  std::filesystem::path weights;  ///< joint_head.safetensors
  std::filesystem::path config_path;
  std::uintmax_t file_size = 0;
  head::HeadConfig config{};
  std::set<std::string> dtypes;
  std::size_t n_tensors = 0;
  std::uint64_t n_params = 0;
  /// Which head the file is (its SHA-256, published or one's own); only for a safetensors file.
  std::string identity;
};

/// Reads the config (head::read_head_config; `clef info` also refuses routing_layers or layers
/// of 0) and the safetensors file (head::SafetensorsFile, which validates the header and the
/// data layout) and checks them against each other. Throws model_error for an unusable config
/// or safetensors file, and naming the first problems: missing / unexpected / misshapen names,
/// a dtype other than BF16 or F32.
HeadInfo read_head_info(const std::filesystem::path& weights,
                        const std::filesystem::path& config_path);

}  // namespace clef::info
