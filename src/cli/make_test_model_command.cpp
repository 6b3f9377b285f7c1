// `clef make-test-model DIR [--seed N] [--preset tiny|small|shape-0.8b] [--vocab GGUF]`: writes a
// random-weight clef model directory (src/testmodel/make_test_model.hpp).
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "testmodel/make_test_model.hpp"

namespace clef::cli {

namespace {

struct MakeTestModelArgs {
  std::string dir;
  std::uint64_t seed = 0;
  std::string preset = "tiny";
  std::string vocab = testmodel::default_vocab_gguf().string();
};

}  // namespace

void add_make_test_model_command(CLI::App& app, ExitCode& exit_code) {
  auto args = std::make_shared<MakeTestModelArgs>();
  CLI::App* cmd = app.add_subcommand(
      "make-test-model",
      "write a random-weight clef model (backbone.gguf, mmproj.gguf, joint_head.safetensors, "
      "joint_head_config.json) for tests and benchmarks");
  cmd->add_option("DIR", args->dir, "output directory (created if missing)")->required();
  cmd->add_option("--seed", args->seed, "random seed (same seed, same bytes)")
      ->capture_default_str();
  cmd->add_option("--preset", args->preset, "model size")
      ->check(CLI::IsMember({"tiny", "small", "shape-0.8b"}))
      ->capture_default_str();
  cmd->add_option("--vocab", args->vocab, "GGUF whose tokenizer.* keys are copied")
      ->capture_default_str();
  cmd->callback([args, &exit_code] {
    testmodel::MakeOptions options;
    options.dir = args->dir;
    options.seed = args->seed;
    options.preset = args->preset;
    options.vocab_gguf = args->vocab;
    const testmodel::MadeModel made = testmodel::make_test_model(options);
    std::cout << "wrote " << made.preset.name << " test model (seed " << args->seed << ", n_embd "
              << made.preset.backbone.n_embd << ", n_vocab " << made.n_vocab << ") to " << args->dir
              << "\n"
              << "  " << made.backbone.string() << "\n  " << made.mmproj.string() << "\n  "
              << made.head.string() << "\n  " << made.head_config.string() << "\n";
    exit_code.value = 0;
  });
}

}  // namespace clef::cli
