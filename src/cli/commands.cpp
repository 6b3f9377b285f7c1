#include "cli/commands.hpp"

namespace clef::cli {

std::span<const Command> commands() {
  static const Command table[] = {
      {"make-test-model",
       "write a random-weight clef model (backbone.gguf, mmproj.gguf, joint_head.safetensors, "
       "joint_head_config.json) for tests and benchmarks",
       add_make_test_model_command},
      {"info",
       "print what a model is (backbone, mmproj, joint schema head) and refuse what clef cannot "
       "use",
       add_info_command},
      {"ask", "decide one SystemOne request and print the response", add_ask_command},
      {"verify",
       "decide the model authors' oracle fixture with this engine and report parity (ids, spans, "
       "argmax above the margin, max and mean |dp|); exit 0 PASS, 1 FAIL",
       add_verify_command},
      {"calibrate",
       "fit a temperature per question type (Platt scaling for noul) on labeled requests and "
       "report accuracy, log loss, Brier and ECE before/after on held-out folds",
       add_calibrate_command},
      {"tune",
       "fit the joint schema head to labeled decisions on the frozen backbone (the recipe's "
       "head-only training): validate every epoch, write the best head",
       add_tune_command},
      {"batch",
       "decide every request of a JSONL file (a request, or {\"id\", \"request\"} per line) with a "
       "local model or HTTP endpoints; one JSONL record per line; resumable",
       add_batch_command},
      {"models", "the registry's models (NAME:TAG) and what the local store holds",
       add_models_command},
      {"serve",
       "serve SystemOne decisions over HTTP: POST /v1/systemone and /v1/decisions, GET /health, "
       "/v1/models, /metrics; SIGTERM/SIGINT drain and exit 0",
       add_serve_command},
      {"pull",
       "download a clef-flash model (GGUF in any published layout, mmproj, and the HF head when "
       "the GGUF has none) from a Hugging Face-style hub, resumable and sha256-verified",
       add_pull_command},
  };
  return table;
}

}  // namespace clef::cli
