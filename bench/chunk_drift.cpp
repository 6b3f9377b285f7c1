// Measures how the prefill chunk layout moves the backbone's hidden states, and what each chunk
// size costs, to choose BackboneParams defaults with numbers in hand (issue 4).
//
//   clef_chunk_drift [MODEL.gguf ...]
// Default models: the small test model plus its Q8_0 and Q4_K_M quantizations (made with
// llama_model_quantize), each with weight repacking on (the default) and off.
// For each model x flash attention x weight repacking: max |h_chunked - h_one_pass| at lengths
// 63/64/65/127/128/129/530/1000 with 64-token chunks, then prefill time of a 2000-token record for
// chunk sizes 64..2048.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "backbone/backbone.hpp"
#include "support/prefill_alone.hpp"
#include "testmodel/make_test_model.hpp"
#include "testmodel/token_ids.hpp"

namespace {

namespace fs = std::filesystem;
using clef::backbone::Backbone;
using clef::backbone::BackboneParams;
using clef::testmodel::random_token_ids;

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

fs::path quantized(const fs::path& src, llama_ftype ftype, const char* suffix) {
  const fs::path out = src.parent_path() / ("backbone-" + std::string(suffix) + ".gguf");
  if (fs::exists(out)) return out;
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.ftype = ftype;
  qp.nthread = 2;
  if (llama_model_quantize(src.c_str(), out.c_str(), &qp) != 0) {
    std::fprintf(stderr, "quantization to %s failed\n", suffix);
    std::exit(1);
  }
  return out;
}

void measure(const std::string& path) {
  const int lengths[] = {63, 64, 65, 127, 128, 129, 530, 1000};
  for (bool fa : {false, true}) {
    for (bool repack : {false, true}) {
      BackboneParams p;
      p.context_size = 4096;
      p.flash_attention = fa;
      p.weight_repacking = repack;
      p.chunk_tokens = 64;
      Backbone chunked(path, p);
      p.chunk_tokens = 2048;
      Backbone one_pass(path, p);
      std::printf("| %s | FA %s | repack %s |", fs::path(path).filename().c_str(),
                  fa ? "on" : "off", repack ? "on" : "off");
      for (int n : lengths) {
        const auto ids = random_token_ids(n, chunked.n_vocab(), static_cast<std::uint32_t>(n));
        std::printf(" %.2g |", max_abs_diff(clef::test::hidden_states(chunked, ids).data,
                                            clef::test::hidden_states(one_pass, ids).data));
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
}

void timing(const std::string& path) {
  for (int chunk : {64, 128, 256, 512, 1024, 2048}) {
    BackboneParams p;
    p.context_size = 4096;
    p.chunk_tokens = chunk;
    Backbone b(path, p);
    const auto ids = random_token_ids(2000, b.n_vocab(), 9);
    clef::test::hidden_states(b, ids);  // warm-up
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      clef::test::hidden_states(b, ids);
      best = std::min(
          best,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("| %s | %d | %.1f ms | %.0f tok/s |\n", fs::path(path).filename().c_str(), chunk,
                best, 2000.0 / best * 1000.0);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  clef::backbone::ensure_llama_backend();
  std::vector<std::string> models(argv + 1, argv + argc);
  if (models.empty()) {
    const fs::path dir = fs::path(CLEF_BINARY_DIR) / "bench-models" / "small-seed0";
    if (!fs::exists(dir / "backbone.gguf")) {
      clef::testmodel::MakeOptions o;
      o.dir = dir;
      o.preset = "small";
      clef::testmodel::make_test_model(o);
    }
    models = {(dir / "backbone.gguf").string(),
              quantized(dir / "backbone.gguf", LLAMA_FTYPE_MOSTLY_Q8_0, "q8_0").string(),
              quantized(dir / "backbone.gguf", LLAMA_FTYPE_MOSTLY_Q4_K_M, "q4_k_m").string()};
  }
  std::printf("max |chunked(64) - one pass| of the hidden states\n\n");
  std::printf(
      "| model | flash attention | repacking | 63 | 64 | 65 | 127 | 128 | 129 | 530 | 1000 |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& m : models) measure(m);
  std::printf(
      "\nprefill of a 2000-token record by chunk size (best of 3, FA off, repacking on)\n\n");
  std::printf("| model | chunk | time | throughput |\n|---|---|---|---|\n");
  for (const auto& m : models) timing(m);
  return 0;
}
