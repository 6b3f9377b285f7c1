// Issue 51's Gated DeltaNet figure: ggml-cpu's recurrence op (ggml_gated_delta_net, the qwen35
// backbones' linear-attention layers) alone, one thread, on random inputs, in nanoseconds a state
// row (one row of one head's S x S state through one token). `LD_LIBRARY_PATH` picks the
// libggml-cpu.so to measure, so two builds can be compared side by side:
//
//   build/bench/clef_delta_net_bench [S [HEADS [TOKENS [REPS]]]]
//     (default: S 128, 16 heads, 512 tokens: the shape-0.8b layers' chunk; best of REPS = 5)
// Prints one line: S, heads, tokens, best ms, ns a state row.
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

int main(int argc, char** argv) {
  const int s = argc > 1 ? std::atoi(argv[1]) : 128;
  const int heads = argc > 2 ? std::atoi(argv[2]) : 16;
  const int tokens = argc > 3 ? std::atoi(argv[3]) : 512;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 5;
  if (s <= 0 || s > 1024 || heads <= 0 || heads > 256 || tokens <= 0 || tokens > 8192 ||
      reps <= 0) {
    std::fprintf(stderr,
                 "usage: %s [S [HEADS [TOKENS [REPS]]]]\n"
                 "  S in 1..1024, HEADS in 1..256, TOKENS in 1..8192\n",
                 argv[0]);
    return 2;
  }
  const std::size_t values = static_cast<std::size_t>(s) * heads * tokens;
  // the inputs, the state, the output (scores + state) and ggml's own overhead
  const std::size_t bytes =
      (values * 6 + static_cast<std::size_t>(s) * s * heads * 2) * 4 + (std::size_t{64} << 20);
  ggml_context* ctx = ggml_init({bytes, nullptr, false});
  if (ctx == nullptr) {
    std::fprintf(stderr, "error: no memory for %zu bytes\n", bytes);
    return 1;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // q, k as the backbone feeds them (L2-normalised rows: ~1/sqrt(S)), g < 0, beta in [0, 1)
  const auto tensor = [&](int ne0, float scale, bool negative, bool positive) {
    ggml_tensor* t = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, ne0, heads, tokens, 1);
    auto* d = static_cast<float*>(t->data);
    for (std::int64_t i = 0; i < ggml_nelements(t); ++i) {
      float x = normal(rng) * scale;
      if (negative) x = -std::fabs(x);
      if (positive) x = std::fabs(x);
      d[i] = x;
    }
    return t;
  };
  const float unit = 1.0f / std::sqrt(static_cast<float>(s));
  ggml_tensor* q = tensor(s, unit, false, false);
  ggml_tensor* k = tensor(s, unit, false, false);
  ggml_tensor* v = tensor(s, 1.0f, false, false);
  ggml_tensor* g = tensor(1, 0.1f, true, false);
  ggml_tensor* beta = tensor(1, 0.3f, false, true);
  ggml_tensor* state = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, s, s, heads, 1);
  std::memset(state->data, 0, ggml_nbytes(state));
  ggml_tensor* out = ggml_gated_delta_net(ctx, q, k, v, g, beta, state, 1);
  ggml_cgraph* graph = ggml_new_graph(ctx);
  ggml_build_forward_expand(graph, out);
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (ggml_graph_compute_with_ctx(ctx, graph, 1) != GGML_STATUS_SUCCESS) {
      std::fprintf(stderr, "error: the op failed\n");
      return 1;
    }
    best = std::min(
        best,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("delta_net  S %d  heads %d  tokens %d  %9.3f ms  %6.2f ns a state row\n", s, heads,
              tokens, best, best * 1e6 / (static_cast<double>(s) * heads * tokens));
  ggml_free(ctx);
  return 0;
}
