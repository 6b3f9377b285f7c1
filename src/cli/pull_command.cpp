// `clef pull REPO[:QUANT] [--dir D] [--hub-endpoint URL] [--revision R]`: downloads a clef-flash
// model from a Hugging Face-style hub (src/pull/pull.hpp). Progress goes to stderr; the summary and
// the directory to use with `clef ask` / `clef serve` go to stdout.
#include <iostream>
#include <memory>
#include <string>

#include "artifact/layout.hpp"
#include "cli/commands.hpp"
#include "pull/pull.hpp"
#include "registry/model_store.hpp"
#include "registry/registry.hpp"

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

void add_pull_command(CLI::App& cmd, ExitCode& exit_code) {
  auto options = std::make_shared<pull::PullOptions>();
  auto dir = std::make_shared<std::string>();
  cmd.add_option("REPO", options->reference,
                 "OWNER/NAME or OWNER/NAME:QUANT (e.g. Q4_K_M), or a registry name NAME:TAG "
                 "(e.g. clef-flash:9b) into the model store")
      ->required();
  cmd.add_option("--dir", *dir, "download directory (default: ./NAME[-QUANT])");
  // --hub-endpoint as serve, ask and the store's hints spell it; --endpoint stays.
  cmd.add_option("--hub-endpoint,--endpoint", options->endpoint, "hub URL (mirrors, tests)")
      ->capture_default_str();
  cmd.add_option("--revision", options->revision, "branch, tag or commit")->capture_default_str();
  cmd.add_option("--head-from", options->head_from,
                 "OWNER/NAME: the repository of joint_head.safetensors + joint_head_config.json "
                 "when the model repository has no head");
  auto registry_file = std::make_shared<std::string>();
  auto models_dir = std::make_shared<std::string>();
  cmd.add_option("--registry", *registry_file, "a registry file that adds to the shipped one");
  cmd.add_option("--models-dir", *models_dir, "the model store, for NAME:TAG");
  cmd.callback([options, dir, registry_file, models_dir, &exit_code] {
    if (registry::Registry::looks_like_reference(options->reference)) {
      // A registry name: every file of the variant into the model store, verified.
      const registry::Registry reg = registry::load_registry(*registry_file);
      const registry::Resolved resolved = reg.resolve(options->reference);
      registry::StoreOptions store;
      store.models_dir = *models_dir;
      store.endpoint = options->endpoint;
      const registry::StoredModel m = registry::ensure_model(resolved, store, std::cerr);
      std::cout << "pulled " << resolved.reference << " into " << m.dir.string()
                << "; serve it with: clef serve " << options->reference << "\n";
      exit_code.value = 0;
      return;
    }
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
