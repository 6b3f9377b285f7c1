#include "runtime/make_engine.hpp"

#include <memory>
#include <optional>
#include <utility>

#include "runtime/engine/engine_runner.hpp"
#include "runtime/prepare/engine_preparer.hpp"

namespace clef::runtime {

Engine make_engine(const EngineConfig& config) {
  return make_engine(LoadedModel::load(config));
}

Engine make_engine(std::shared_ptr<const LoadedModel> model) {
  LoadedRunner loaded = load_runner(std::move(model));
  const LoadedModel& m = *loaded.model;
  // The model side over the same files: copies of what preparation reads, and a share of the
  // backbone's llama_model for the tokenizer (image digests when the state cache is on).
  std::optional<TowerFacts> tower;
  if (loaded.tower != nullptr) {
    tower = TowerFacts{loaded.tower->info(), loaded.tower->flash_attention(),
                       m.placement.gpu != nullptr ? m.placement.info.name : ""};
  }
  std::shared_ptr<const Preparer> preparer = std::make_shared<const EnginePreparer>(
      m.config, std::move(loaded.served), m.backbone->shared_vocab(), std::move(tower),
      loaded.state_cache);
  return {std::move(preparer), std::move(loaded.runner)};
}

}  // namespace clef::runtime
