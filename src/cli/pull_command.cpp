// `clef pull REPO[:QUANT] [--dir D] [--endpoint URL] [--revision R]`: downloads a clef-flash model
// from a Hugging Face-style hub (src/pull/pull.hpp). Progress goes to stderr; the summary and the
// directory to use with `clef ask` / `clef serve` go to stdout.
#include <iostream>
#include <memory>
#include <string>

#include "artifact/layout.hpp"
#include "cli/commands.hpp"
#include "pull/pull.hpp"

namespace clef::cli {

namespace {

/// "ggml-org/Clef-Flash-GGUF:Q4_K_M" -> "Clef-Flash-GGUF-Q4_K_M" (the default directory).
std::string default_dir(const std::string& reference) {
  std::string name = reference.substr(reference.find('/') + 1);
  for (char& c : name) {
    if (c == ':') c = '-';
  }
  return name;
}

}  // namespace

void add_pull_command(CLI::App& app, ExitCode& exit_code) {
  auto options = std::make_shared<pull::PullOptions>();
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "pull",
      "download a clef-flash model (GGUF in any published layout, mmproj, and the HF head when "
      "the GGUF has none) from a Hugging Face-style hub, resumable and sha256-verified");
  cmd->add_option("REPO", options->reference, "OWNER/NAME or OWNER/NAME:QUANT (e.g. Q4_K_M)")
      ->required();
  cmd->add_option("--dir", *dir, "download directory (default: ./NAME[-QUANT])");
  cmd->add_option("--endpoint", options->endpoint, "hub URL (mirrors, tests)")
      ->capture_default_str();
  cmd->add_option("--revision", options->revision, "branch, tag or commit")->capture_default_str();
  cmd->callback([options, dir, &exit_code] {
    options->dir = dir->empty() ? default_dir(options->reference) : *dir;
    const pull::PullResult r = pull::pull_model(*options, std::cerr);
    std::cout << "pulled " << options->reference << " (layout "
              << artifact::layout_description(r.layout) << ") into " << options->dir.string()
              << "\n";
    for (const auto& f : r.files) std::cout << "  " << f << "\n";
    exit_code.value = 0;
  });
}

}  // namespace clef::cli
