#pragma once
// The published joint schema heads that `clef info` compares a model's head against: the HF
// releases' joint_head_config.json of clef-flash (notes/artifact-layouts.md section 1) and of
// Clef 27B (the same fields, hidden_size 5,120: Cloudflare/clef), and the head's LayerNorm eps.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "head/head_config.hpp"

namespace clef::artifact {

/// One published head config and the model it belongs to.
struct PublishedHead {
  std::string model;       ///< "clef-flash", "Clef 27B"
  std::string id;          ///< the registry's and the server's model id: "clef-flash", "clef"
  std::string repository;  ///< its HF repository, "Cloudflare/clef-flash"
  head::HeadConfig config;
  /// SHA-256 of its published joint_head.safetensors (the registry's pin of the same file).
  std::string head_sha256;
};

/// clef-flash {"hidden_size":4096,"width":1024,"routing_layers":2,"layers":4,"heads":16,
/// "feedforward":4096}, then Clef 27B (the same with hidden_size 5120).
std::span<const PublishedHead> published_heads();

/// The published head `config` is, or else the nearest one (fewest differing fields; on a tie
/// the one whose hidden_size is closer, then clef-flash).
struct HeadMatch {
  const PublishedHead* head = nullptr;  ///< never null
  bool exact = false;                   ///< every field equal
};
HeadMatch match_published_head(const head::HeadConfig& config);

/// The published head whose joint_head.safetensors has SHA-256 `sha256` (lowercase hex), or
/// null: a head of one's own (a `clef tune` result, a converted or altered file).
const PublishedHead* published_head_with_sha256(std::string_view sha256);

/// The model id a server names a head with `config` by default: the published model's id when
/// `config` is its head's exactly ("clef" for Clef 27B's), else "clef-flash".
std::string served_model_id(const head::HeadConfig& config);

/// "clef-flash's published config (Cloudflare/clef-flash)", or "none of the published configs
/// (nearest: Clef 27B's, Cloudflare/clef)": what `clef info` and `clef verify` say of a head
/// whose config matched `match` (match_published_head).
std::string describe_head_config(const HeadMatch& match);

/// The head's LayerNorm eps (torch default, hard-coded in the forward).
inline constexpr double kHeadLayerNormEps = 1e-5;

/// One line per field of `config` that differs from its match_published_head(), e.g.
/// "head width 32 (clef-flash 1024)". Empty when it is a published config.
std::vector<std::string> config_differences(const head::HeadConfig& config);

}  // namespace clef::artifact
