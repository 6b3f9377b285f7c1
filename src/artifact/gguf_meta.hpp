#pragma once
// The GGUF reader lives in src/gguf (gguf/gguf_file.hpp, gguf/copy_keys.hpp); these names keep
// the callers outside src/artifact that still spell it artifact::GgufMeta (src/pull) unchanged.

#include "gguf/copy_keys.hpp"
#include "gguf/gguf_file.hpp"

namespace clef::artifact {

using GgufMeta = gguf::GgufFile;
using GgufTensorRef = gguf::TensorRef;
using gguf::copy_kv;
using gguf::ne_string;

}  // namespace clef::artifact
