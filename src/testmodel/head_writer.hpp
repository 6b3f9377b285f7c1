#pragma once
// Writes a random joint schema head: `joint_head.safetensors` (BF16, reference parameter names)
// and `joint_head_config.json`.

#include <cstdint>
#include <filesystem>
#include <string>

#include "head/head_config.hpp"
#include "head/safetensors_writer.hpp"

namespace clef::testmodel {

/// The head's random parameters (initialisation of tests/data/oracle/head/README.md, drawn from
/// our own generator: Rng(derive_seed(seed, "head/" + name)) per parameter).
head::SafetensorsWriter random_head(const head::HeadConfig& config, std::uint64_t seed);

/// Writes `dir`/joint_head.safetensors (dtype) and `dir`/joint_head_config.json.
/// Throws std::runtime_error on I/O failure.
void write_head(const std::filesystem::path& dir, const head::HeadConfig& config,
                std::uint64_t seed, head::SafetensorsDtype dtype = head::SafetensorsDtype::bf16);

}  // namespace clef::testmodel
