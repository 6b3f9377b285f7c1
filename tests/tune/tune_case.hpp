#pragma once
// Test support for tests/tune: one case of the training step's oracle (tests/data/oracle/tune,
// README there) checked against a HeadTrainer: the Brier loss, every parameter's gradient at the
// initial weights, the global gradient norm, and the loss and parameters after a few clipped
// AdamW steps, within the README's tolerances.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>

#include "head/head_parameters.hpp"
#include "head/head_weights.hpp"
#include "head/oracle_reader.hpp"
#include "head/safetensors.hpp"
#include "tune/head_trainer.hpp"
#include "tune/oracle_batch.hpp"

namespace clef::tune::testing {

namespace fs = std::filesystem;

/// One case of tests/data/oracle/tune, with its records read.
struct TuneCase : OracleBatch {
  fs::path head_dir;
  AdamWSettings adamw;
  double max_norm = 1.0;
  int steps = 0;
  std::vector<double> loss_before_each_step;
  std::vector<double> grad_norm_before_clip;
  double loss_after = 0;
};

inline TuneCase read_case(const fs::path& dir) {
  std::ifstream in(dir / "tune.json");
  if (!in) throw std::runtime_error("cannot read " + (dir / "tune.json").string());
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  if (d.HasParseError()) throw std::runtime_error("bad JSON in " + (dir / "tune.json").string());
  TuneCase c;
  c.head_dir = dir / d["head_folder"].GetString();
  std::vector<std::string> names;
  for (const auto& name : d["records"].GetArray()) names.emplace_back(name.GetString());
  static_cast<OracleBatch&>(c) = OracleBatch::read(c.head_dir, names);
  for (std::size_t r = 0; r < names.size(); ++r) {
    for (const auto& q : d["targets"][names[r].c_str()].GetArray()) {
      std::vector<float> t;
      for (const auto& x : q.GetArray()) t.push_back(static_cast<float>(x.GetDouble()));
      c.targets[r].push_back(std::move(t));
    }
  }
  const auto& opt = d["optimizer"];
  c.adamw.lr = opt["lr"].GetDouble();
  c.adamw.beta1 = opt["betas"][0].GetDouble();
  c.adamw.beta2 = opt["betas"][1].GetDouble();
  c.adamw.eps = opt["eps"].GetDouble();
  c.adamw.weight_decay = opt["weight_decay"].GetDouble();
  c.max_norm = d["clip"]["max_norm"].GetDouble();
  c.steps = d["steps"].GetInt();
  for (const auto& x : d["loss_before_each_step"].GetArray())
    c.loss_before_each_step.push_back(x.GetDouble());
  for (const auto& x : d["grad_global_norm_before_clip"].GetArray())
    c.grad_norm_before_clip.push_back(x.GetDouble());
  c.loss_after = d["loss_after"].GetDouble();
  return c;
}

/// Tensors whose true gradient is exactly 0 by the math (README): compared absolutely.
inline bool truly_zero_gradient(const std::string& name) {
  return name == "residual_scorer.3.bias";
}

/// How a case's batch goes through the trainer: one accumulate per record, or the whole batch in
/// one graph (HeadTrainer::accumulate over a span).
enum class Graphs { per_record, one_graph };

/// The README's tolerances (the CPU meets them), or a device's: its f32 kernels round otherwise
/// (ggml-vulkan's products, its exp and erf), so a device is held to the serving path's device
/// bar scaled to training (docs/tuning.md, "Where").
struct Tolerances {
  double loss = 1e-5;           ///< relative: losses and the global norm
  double gradient = 1e-4;       ///< of the tensor's largest gradient
  double zero_gradient = 1e-6;  ///< absolute, where the true gradient is 0
  double parameter = 0.1;       ///< x lr x steps
  /// The steps moved some parameter by more than `parameter` allows (else the check says
  /// nothing): the CPU's bar is tight enough for that; a device's is not.
  bool movement_above_tolerance = true;
};

/// A trainer holding `initial` (on the CPU, or on a device).
using MakeTrainer = std::function<HeadTrainer(const head::HeadWeights& initial)>;

inline HeadTrainer cpu_trainer(const head::HeadWeights& initial) {
  return HeadTrainer(initial, 2);
}

inline void check_case(const fs::path& dir, Graphs graphs,
                       const MakeTrainer& make_trainer = cpu_trainer,
                       const Tolerances& tolerance = {}) {
  SCOPED_TRACE(dir.string() + (graphs == Graphs::one_graph ? " (one graph)" : " (per record)"));
  ASSERT_TRUE(fs::exists(dir / "tune.json")) << dir << " holds no tune.json";
  const TuneCase c = read_case(dir);
  ASSERT_EQ(static_cast<int>(c.loss_before_each_step.size()), c.steps);
  const head::HeadWeights initial = head::HeadWeights::load(
      c.head_dir / "joint_head_f32.safetensors", c.head_dir / "joint_head_config.json");
  HeadTrainer trainer = make_trainer(initial);

  // Step 0: the loss and every gradient at the initial weights.
  const bool one_graph = graphs == Graphs::one_graph;
  const double loss0 = c.accumulate(trainer, one_graph);
  EXPECT_NEAR(loss0, c.loss_before_each_step[0], tolerance.loss * c.loss_before_each_step[0]);
  const head::SafetensorsFile grads(dir / "grad_step0.safetensors");
  double worst = 0;  // largest |error| / tolerance over all tensors
  for (const head::TensorInfo& t : grads.tensors()) {
    SCOPED_TRACE(t.name);
    const std::vector<float> want = grads.to_f32(t);
    const std::vector<float> got = trainer.gradient(t.name);
    ASSERT_EQ(got.size(), want.size());
    double largest = 0;
    for (float w : want) largest = std::max(largest, static_cast<double>(std::abs(w)));
    // Each gradient within 1e-4 of its tensor's largest gradient; absolute (1e-6) where the
    // true gradient is 0 and the reference holds only its rounding.
    const double tol =
        truly_zero_gradient(t.name) ? tolerance.zero_gradient : tolerance.gradient * largest;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double err = std::abs(static_cast<double>(got[i]) - want[i]);
      worst = std::max(worst, err / tol);
      ASSERT_LE(err, tol) << "element " << i << ": got " << got[i] << ", expected " << want[i];
    }
  }
  ::testing::Test::RecordProperty(dir.filename().string() + (one_graph ? "_one_graph" : "") +
                                      "_worst_gradient_error_over_tolerance",
                                  std::to_string(worst));

  // The steps: loss before each, the global norm before clipping, then after the last step the
  // loss and the parameters.
  for (int s = 0; s < c.steps; ++s) {
    if (s > 0) {
      const double loss = c.accumulate(trainer, one_graph);
      EXPECT_NEAR(loss, c.loss_before_each_step[s], tolerance.loss * c.loss_before_each_step[s])
          << "before step " << s;
    }
    const StepReport report = trainer.step(c.adamw, c.max_norm);
    EXPECT_NEAR(report.grad_norm, c.grad_norm_before_clip[s],
                tolerance.loss * c.grad_norm_before_clip[s])
        << "step " << s;
    EXPECT_EQ(report.step, s + 1);
  }
  double loss_after = 0;
  for (std::size_t r = 0; r < c.records.size(); ++r) {
    const auto logits = trainer.logits(c.example(r));
    double record_loss = 0;
    for (std::size_t q = 0; q < logits.size(); ++q) {
      const float top = *std::max_element(logits[q].begin(), logits[q].end());
      double z = 0;
      for (float l : logits[q]) z += std::exp(static_cast<double>(l - top));
      for (std::size_t j = 0; j < logits[q].size(); ++j) {
        const double p = std::exp(static_cast<double>(logits[q][j] - top)) / z;
        record_loss += (p - c.targets[r][q][j]) * (p - c.targets[r][q][j]);
      }
    }
    loss_after +=
        record_loss / static_cast<double>(logits.size()) / static_cast<double>(c.records.size());
  }
  EXPECT_NEAR(loss_after, c.loss_after, tolerance.loss * c.loss_after);

  const head::SafetensorsFile after(dir / "params_after.safetensors");
  const head::HeadWeights tuned = trainer.weights();
  const double tol = tolerance.parameter * c.adamw.lr * c.steps;
  double moved_most = 0;
  double worst_param = 0;  // largest |error| / tolerance over all parameters
  for (const head::TensorInfo& t : after.tensors()) {
    SCOPED_TRACE(t.name);
    const std::vector<float> want = after.to_f32(t);
    const head::HeadTensor& got = tuned.at(t.name);
    EXPECT_EQ(got.shape, t.shape);
    ASSERT_EQ(got.values.size(), want.size());
    const std::vector<float>& before = initial.at(t.name).values;
    for (std::size_t i = 0; i < want.size(); ++i) {
      moved_most = std::max(moved_most, static_cast<double>(std::abs(want[i] - before[i])));
      worst_param =
          std::max(worst_param, std::abs(static_cast<double>(got.values[i]) - want[i]) / tol);
      ASSERT_NEAR(got.values[i], want[i], tol) << "element " << i;
    }
  }
  ::testing::Test::RecordProperty(dir.filename().string() + (one_graph ? "_one_graph" : "") +
                                      "_worst_parameter_error_over_tolerance",
                                  std::to_string(worst_param));
  // The check means something only if the steps moved the parameters by more than it allows.
  if (tolerance.movement_above_tolerance) {
    EXPECT_GT(moved_most, tol);
  }
}

}  // namespace clef::tune::testing
