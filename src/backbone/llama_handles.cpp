#include "backbone/llama_handles.hpp"

#include <cstdio>
#include <cstring>
#include <mutex>

namespace clef::backbone {
namespace {

void log_to_stderr(ggml_log_level level, const char* text, void* user_data) {
  const bool verbose = *static_cast<const bool*>(user_data);
  // M-RoPE positions jump after an image (the next text token is at q + max(H, W)), which the
  // recurrent memory reports as a warning for every image record (llama-memory-recurrent.cpp,
  // find_slot). It is expected there (llama-probes.md section 4): shown only when verbose.
  if (!verbose && level == GGML_LOG_LEVEL_WARN &&
      std::strstr(text, "non-consecutive token position") != nullptr) {
    return;
  }
  if (verbose || level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) {
    std::fputs(text, stderr);
  }
}

}  // namespace

void ensure_llama_backend(bool verbose) {
  // llama.cpp's backend registry and log sink are process-wide by its own design; this is the one
  // place clef touches them. The flag lives as long as the process (the sink may be called late).
  static std::once_flag once;
  static bool verbose_flag = false;
  std::call_once(once, [&] {
    verbose_flag = verbose;
    llama_log_set(log_to_stderr, &verbose_flag);
    llama_backend_init();
  });
}

}  // namespace clef::backbone
