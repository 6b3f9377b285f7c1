#include "runtime/make_engine.hpp"

#include <memory>
#include <optional>
#include <utility>

#include "runtime/engine/engine_runner.hpp"
#include "runtime/prepare/engine_preparer.hpp"

namespace clef::runtime {

Engine make_engine(const EngineConfig& config) {
  LoadedRunner loaded = load_runner(config);
  const LoadedModel& m = *loaded.model;
  // The model side over the same files: copies of what preparation reads, and a share of the
  // backbone's llama_model for the tokenizer (image digests when the state cache is on).
  std::optional<TowerFacts> tower;
  if (m.tower) {
    tower = TowerFacts{m.tower->info(), m.tower->flash_attention(),
                       m.placement.gpu != nullptr ? m.placement.info.name : ""};
  }
  std::shared_ptr<const Preparer> preparer = std::make_shared<const EnginePreparer>(
      m.config, m.served(), m.backbone.shared_vocab(), std::move(tower), loaded.state_cache);
  return {std::move(preparer), std::move(loaded.runner)};
}

}  // namespace clef::runtime
