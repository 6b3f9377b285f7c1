#include "backbone/llama_handles.hpp"

#include <cstdio>
#include <mutex>

namespace clef::backbone {
namespace {

void log_to_stderr(ggml_log_level level, const char* text, void* user_data) {
  const bool verbose = *static_cast<const bool*>(user_data);
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
