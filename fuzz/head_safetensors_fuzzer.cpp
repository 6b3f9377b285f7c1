// libFuzzer target: the joint schema head's files as `clef pull` downloads them - a safetensors
// file (header length, JSON header, dtypes, shapes, offsets, tiling) and joint_head_config.json.
// Any input must load or be refused with clef::Error (model_error); a loaded file's tensors lie
// inside its data section and widen to f32 without reading outside it.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "head/head_config.hpp"
#include "head/safetensors.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)clef::head::parse_head_config(text, "joint_head_config.json");
  } catch (const clef::Error&) {
  }
  // SafetensorsFile maps a file: the input goes to one per process.
  static const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                            ("clef_fuzz_" + std::to_string(::getpid()) +
                                             ".safetensors");
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    const clef::head::SafetensorsFile file(path);
    for (const clef::head::TensorInfo& t : file.tensors()) {
      if (t.begin > t.end) std::abort();
      const auto raw = file.raw(t);
      if (raw.size() != t.end - t.begin) std::abort();
      if (raw.size() <= (1u << 16)) {
        try {
          const auto values = file.to_f32(t);
          if (static_cast<std::int64_t>(values.size()) != t.numel()) std::abort();
        } catch (const clef::Error&) {  // a dtype that does not widen
        }
      }
    }
  } catch (const clef::Error&) {
  }
  return 0;
}
