#pragma once
// The published GGUF layouts of clef-flash and how to tell them apart from the file alone
// (/work/shared/notes/artifact-layouts.md section 0; decision contract section 7, "Artifact
// layouts"). Never assume a layout from a repository name: read the file.

#include <string>
#include <string_view>

#include "gguf/gguf_file.hpp"

namespace clef::artifact {

enum class Layout {
  /// A: `qwen35` backbone GGUF with no head; the HF joint_head.safetensors +
  /// joint_head_config.json sit beside it (bartowski's first upload, prithivMLmods, ...).
  hf_head,
  /// B: llama.cpp's `clef` architecture: backbone keys renamed `clef.*`, 160 head tensors
  /// `dec.blk.N.*` / `decision.*` / `token_types.weight`, q/k/v split, folded `decision.scales`
  /// (llama.cpp conversion/clef.py; ggml-org/Clef-Flash-GGUF).
  llama_cpp,
  /// C: Ollama's `qwen35` GGUF with `qwen35.decision.*` keys and the 122 torch tensors as
  /// `clef.<torch name>` in F32, scalars raw (ollama llama/clef/convert.py).
  ollama,
  /// D: bobcat's `qwen35` GGUF with `clef.{hidden_size,...}` keys and `clef.<torch name>`
  /// tensors (2-D BF16, 1-D F32) (jadidbourbaki/bobcat tools/clef_gguf.py).
  bobcat,
};

/// "A", "B", "C" or "D".
std::string_view layout_letter(Layout layout);
/// One line naming the layout and who makes it, e.g. "B: llama.cpp `clef` GGUF (head inside,
/// q/k/v split, folded scales)".
std::string layout_description(Layout layout);

/// The decision tree of the notes (section 0):
///  1. general.architecture == "clef" -> B; `clef.decision.type` must be "clef";
///  2. "qwen35" with `qwen35.decision.type` -> C; it must be "clef";
///  3. "qwen35" with `clef.hidden_size` -> D;
///  4. "qwen35" otherwise -> A (the head must come from joint_head.safetensors beside it).
/// Throws clef::Error (model_error) for another architecture (naming it; "clip" is called an
/// mmproj), a missing architecture, or an unknown or missing decision.type (naming the value).
Layout detect_layout(const gguf::GgufFile& gguf);

}  // namespace clef::artifact
