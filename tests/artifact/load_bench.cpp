// Load time and peak RSS of the backbone through artifact::load_backbone, one layout per process:
//   artifact_load_bench MODEL_DIR [tokens]
// prints the layout, whether libllama loaded the file directly (mmap) or through
// llama_model_init_from_user, the load time, VmHWM / VmRSS after the load and after one prefill
// of `tokens` tokens (default 64; the mmap'd weights are paged in by the first prefill).
// Not a ctest test: a measuring tool (see the report in tests/artifact/README.md).

#include <llama.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "artifact/backbone_loader.hpp"

namespace {

std::string status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) return line.substr(std::string(key).size());
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: artifact_load_bench MODEL_DIR [tokens]\n";
    return 2;
  }
  const int tokens = argc > 2 ? std::stoi(argv[2]) : 64;
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  const auto opened = clef::artifact::open_model_dir(argv[1]);
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  // The mmap path alone: with repacking (the engine's default) llama.cpp copies the quantized
  // matrices into repacked CPU buffers, which then count in RSS too.
  mp.use_extra_bufts = false;
  const auto t0 = std::chrono::steady_clock::now();
  auto model = clef::artifact::load_backbone(opened.backbone, mp);
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("layout %s (%s)\nload %.2f s\nafter load: VmHWM%s VmRSS%s\n",
              std::string(clef::artifact::layout_letter(opened.layout)).c_str(),
              opened.backbone.loads_directly ? "llama_model_load_from_file, mmap"
                                             : "llama_model_init_from_user, pread",
              load_s, status_kib("VmHWM:").c_str(), status_kib("VmRSS:").c_str());
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = cp.n_ubatch = 512;
  cp.n_seq_max = 1;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model.get(), cp);
  llama_batch b = llama_batch_init(tokens, 0, 1);
  b.n_tokens = tokens;
  for (int i = 0; i < tokens; ++i) {
    b.token[i] = 100 + i;
    b.pos[i] = i;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = i == tokens - 1;
  }
  const auto t1 = std::chrono::steady_clock::now();
  const int rc = llama_decode(ctx, b);
  const double decode_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::printf("first prefill (%d tokens) %.2f s rc %d\nafter prefill: VmHWM%s VmRSS%s\n", tokens,
              decode_s, rc, status_kib("VmHWM:").c_str(), status_kib("VmRSS:").c_str());
  llama_batch_free(b);
  llama_free(ctx);
  model.reset();
  llama_backend_free();
  return rc == 0 ? 0 : 1;
}
