#pragma once
// What the server says of a model as one runner runs it (/v1/models, the startup log): the
// loaded model's name, head and answer settings beside what belongs to the runner's contexts
// (the context size, the sequences and their memory, whether a vision tower runs).

#include "backbone/backbone.hpp"
#include "runtime/engine/loaded_model.hpp"
#include "runtime/loop/preparer.hpp"

namespace clef::runtime {

/// The model served by a runner over `m` with backbone context `context` and, when `tower`, a
/// vision tower: the name, the limits a request meets (/v1/models `limits`), the answer
/// settings, where the model runs ("CPU, N threads, " and the CPU's matrix path
/// (device::describe_cpu_path), or "DEVICE (...): backbone L/L layers, vision tower, joint
/// schema head on DEVICE") and what each decision in progress may hold with the memory plan
/// ("parallel N x context C: ...; plan: host: ...; left: ...").
ServedModel served_model(const LoadedModel& m, const backbone::Backbone& context, bool tower);

}  // namespace clef::runtime
