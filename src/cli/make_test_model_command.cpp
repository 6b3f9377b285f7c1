// `clef make-test-model DIR [--seed N] [--preset tiny|small|shape-0.8b] [--vocab GGUF]
// [--layout A|B|C] [--head-type BF16|Q8_0]`: writes a random-weight clef model directory
// (src/testmodel/make_test_model.hpp) in one of the published artifact layouts.
#include <charconv>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "testmodel/make_test_model.hpp"
#include "util/error.hpp"

namespace clef::cli {

namespace {

struct MakeTestModelArgs {
  std::string dir;
  std::string seed = "0";
  std::string preset = "tiny";
  std::string vocab = testmodel::default_vocab_gguf().string();
  std::string layout = "A";
  std::string head_type = "BF16";
  std::string quant;
};

}  // namespace

void add_make_test_model_command(CLI::App& cmd, ExitCode& exit_code) {
  auto args = std::make_shared<MakeTestModelArgs>();
  cmd.add_option("DIR", args->dir, "output directory (created if missing)")->required();
  cmd.add_option("--seed", args->seed,
                 "random seed 0..18446744073709551615 (same seed, same bytes)")
      ->capture_default_str();
  cmd.add_option("--preset", args->preset, "model size")
      ->check(CLI::IsMember(testmodel::preset_names()))
      ->capture_default_str();
  cmd.add_option("--vocab", args->vocab, "GGUF whose tokenizer.* keys are copied")
      ->capture_default_str();
  cmd.add_option("--layout", args->layout,
                 "A: backbone.gguf + joint_head.safetensors; B: llama.cpp clef GGUF; C: Ollama "
                 "qwen35 GGUF with the head inside (B and C write model.gguf)")
      ->check(CLI::IsMember({"A", "B", "C"}))
      ->capture_default_str();
  cmd.add_option("--quant", args->quant,
                 "quantize the backbone with llama.cpp (as published files are): F16, Q8_0, "
                 "Q4_K_M")
      ->check(CLI::IsMember({"F16", "Q8_0", "Q4_K_M"}));
  cmd.add_option("--head-type", args->head_type, "layout B: type of the head's matrices")
      ->check(CLI::IsMember({"BF16", "Q8_0"}))
      ->capture_default_str();
  cmd.callback([args, &exit_code] {
    std::uint64_t seed = 0;
    const auto [end, ec] =
        std::from_chars(args->seed.data(), args->seed.data() + args->seed.size(), seed);
    if (args->seed.empty() || ec != std::errc() || end != args->seed.data() + args->seed.size()) {
      throw invalid_request(
          "--seed must be an integer in 0..18446744073709551615, got '" + args->seed + "'", "seed");
    }
    if (args->head_type != "BF16" && args->layout != "B") {
      throw invalid_request("--head-type applies to layout B only (layout " + args->layout +
                                " stores the head as " +
                                (args->layout == "A" ? "BF16 safetensors" : "F32 tensors") + ")",
                            "head-type");
    }
    testmodel::MakeOptions options;
    options.layout = args->layout == "B"   ? artifact::Layout::llama_cpp
                     : args->layout == "C" ? artifact::Layout::ollama
                                           : artifact::Layout::hf_head;
    options.head_matrix_type = args->head_type == "Q8_0" ? GGML_TYPE_Q8_0 : GGML_TYPE_BF16;
    options.quant = args->quant;
    options.dir = args->dir;
    options.seed = seed;
    options.preset = args->preset;
    options.vocab_gguf = args->vocab;
    testmodel::MadeModel made;
    try {
      made = testmodel::make_test_model(options);
    } catch (const std::filesystem::filesystem_error& e) {
      throw Error(ErrorKind::invalid_request, "invalid_request",
                  "cannot write the test model to '" + args->dir + "': " + e.code().message(),
                  "dir");
    }
    std::cout << "wrote " << made.preset.name << " test model (seed " << seed << ", n_embd "
              << made.preset.backbone.n_embd << ", n_vocab " << made.n_vocab << ") to " << args->dir
              << "\n"
              << "  " << made.backbone.string() << "\n  " << made.mmproj.string() << "\n";
    if (!made.head.empty()) {
      std::cout << "  " << made.head.string() << "\n  " << made.head_config.string() << "\n";
    }
    exit_code.value = 0;
  });
}

}  // namespace clef::cli
