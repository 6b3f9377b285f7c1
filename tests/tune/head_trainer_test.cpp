// HeadTrainer beyond the oracle's cases: clipping that binds (what AdamW sees is the clipped
// gradient), questions without a label, a batch in one graph against its records one by one, a
// resumed optimizer continuing bit for bit, and a head with folded scales refused.
#include "tune/head_trainer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "head/head_parameters.hpp"
#include "head/oracle_reader.hpp"
#include "tune/checkpoint.hpp"
#include "tune/oracle_batch.hpp"
#include "util/error.hpp"

namespace clef::tune {
namespace {

namespace fs = std::filesystem;

struct Records : testing::OracleBatch {
  head::HeadWeights weights;
};

/// The tiny oracle head and its records rec00..rec03, each question's target one-hot on its
/// last option.
Records tiny() {
  const fs::path dir = fs::path(CLEF_TEST_DATA) / "oracle" / "head" / "tiny";
  Records out;
  static_cast<testing::OracleBatch&>(out) =
      testing::OracleBatch::read(dir, {"rec00", "rec01", "rec02", "rec03"});
  out.weights =
      head::HeadWeights::load(dir / "joint_head_f32.safetensors", dir / "joint_head_config.json");
  for (std::size_t r = 0; r < out.records.size(); ++r) {
    for (const auto& q : out.records[r].questions) {
      std::vector<float> one(q.options.size(), 0.0f);
      one.back() = 1.0f;
      out.targets[r].push_back(one);
    }
  }
  return out;
}

double accumulate_all(HeadTrainer& trainer, const Records& r) {
  return r.accumulate(trainer);
}

TEST(HeadTrainer, ABindingClipScalesTheGradientAdamSees) {
  const Records r = tiny();
  HeadTrainer trainer(r.weights, 2);
  accumulate_all(trainer, r);
  const auto specs = head::head_parameter_specs(r.weights.config());
  std::vector<std::vector<float>> grads;
  double sum_sq = 0;
  for (const auto& s : specs) {
    grads.push_back(trainer.gradient(s.name));
    for (float g : grads.back()) sum_sq += static_cast<double>(g) * g;
  }
  const double norm = std::sqrt(sum_sq);
  const StepReport report = trainer.step({1e-3, 0.9, 0.999, 1e-8, 0.0}, norm / 4);
  EXPECT_NEAR(report.grad_norm, norm, 1e-5 * norm);
  EXPECT_NEAR(report.clip_coefficient, 0.25, 1e-5);
  // After one step exp_avg = (1 - beta1) x the clipped gradient.
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::vector<float> m = trainer.read(HeadTrainer::Slot::exp_avg, i);
    for (std::size_t k = 0; k < grads[i].size(); ++k) {
      ASSERT_NEAR(m[k], 0.1 * report.clip_coefficient * grads[i][k],
                  1e-6 * std::abs(grads[i][k]) + 1e-12)
          << specs[i].name << " " << k;
    }
  }
  // The accumulators start again from 0.
  for (const auto& s : specs) {
    for (float g : trainer.gradient(s.name)) ASSERT_EQ(g, 0.0f) << s.name;
  }
}

TEST(HeadTrainer, AnUnlabeledQuestionAddsNothingToTheLoss) {
  Records r = tiny();
  HeadTrainer trainer(r.weights, 1);
  // rec03 has five questions; label only the second.
  auto& t = r.targets[3];
  for (std::size_t q = 0; q < t.size(); ++q) {
    if (q != 1) t[q].clear();
  }
  const double loss = trainer.accumulate(r.example(3), 1.0);
  const auto logits = trainer.logits(r.example(3));
  const auto& l = logits[1];
  const float top = *std::max_element(l.begin(), l.end());
  double z = 0;
  for (float x : l) z += std::exp(static_cast<double>(x - top));
  double brier = 0;
  for (std::size_t j = 0; j < l.size(); ++j) {
    const double p = std::exp(static_cast<double>(l[j] - top)) / z;
    brier += (p - t[1][j]) * (p - t[1][j]);
  }
  EXPECT_NEAR(loss, brier, 1e-6);
  // No labeled question at all is refused.
  for (auto& q : t) q.clear();
  EXPECT_THROW(trainer.accumulate(r.example(3), 1.0), Error);
}

TEST(HeadTrainer, ARestoredRunContinuesBitForBit) {
  const Records r = tiny();
  const AdamWSettings adamw{5e-3, 0.9, 0.999, 1e-8, 0.01};
  HeadTrainer first(r.weights, 2);
  for (int s = 0; s < 2; ++s) {
    accumulate_all(first, r);
    first.step(adamw, 1.0);
  }
  // What a checkpoint keeps: the weights, both moments and the step count.
  using Slot = HeadTrainer::Slot;
  const auto specs = head::head_parameter_specs(r.weights.config());
  std::vector<std::vector<std::vector<float>>> kept(3);
  for (Slot slot : {Slot::weights, Slot::exp_avg, Slot::exp_avg_sq}) {
    for (std::size_t i = 0; i < specs.size(); ++i)
      kept[static_cast<std::size_t>(slot)].push_back(first.read(slot, i));
  }
  const std::int64_t steps = first.steps();
  for (int s = 0; s < 2; ++s) {
    accumulate_all(first, r);
    first.step(adamw, 1.0);
  }
  HeadTrainer resumed(r.weights, 2);
  for (Slot slot : {Slot::weights, Slot::exp_avg, Slot::exp_avg_sq}) {
    for (std::size_t i = 0; i < specs.size(); ++i)
      resumed.write(slot, i, kept[static_cast<std::size_t>(slot)][i]);
  }
  resumed.set_steps(steps);
  for (int s = 0; s < 2; ++s) {
    accumulate_all(resumed, r);
    const StepReport report = resumed.step(adamw, 1.0);
    EXPECT_EQ(report.step, 3 + s);
  }
  const head::HeadWeights a = first.weights();
  const head::HeadWeights b = resumed.weights();
  for (const auto& [name, t] : a.tensors()) {
    const auto& u = b.at(name).values;
    ASSERT_EQ(t.values.size(), u.size());
    EXPECT_EQ(std::memcmp(t.values.data(), u.data(), u.size() * sizeof(float)), 0) << name;
  }
  // A tensor of another size is refused.
  EXPECT_THROW(resumed.write(Slot::exp_avg, 0, std::vector<float>(3, 0.0f)), Error);
}

TEST(HeadTrainer, ABatchInOneGraphAddsWhatItsRecordsAddOneByOne) {
  Records r = tiny();
  r.targets[3][0].clear();  // an unlabeled question inside the batch
  r.targets[1][1] =
      std::vector<float>(r.targets[1][1].size(), 1.0f / static_cast<float>(r.targets[1][1].size()));
  const std::vector<double> weights = {0.1, 0.2, 0.3, 0.4};
  HeadTrainer alone(r.weights, 2);
  std::vector<double> losses;
  for (std::size_t k = 0; k < r.records.size(); ++k)
    losses.push_back(alone.accumulate(r.example(k), weights[k]));
  HeadTrainer together(r.weights, 2);
  std::vector<HeadExample> examples;
  for (std::size_t k = 0; k < r.records.size(); ++k) examples.push_back(r.example(k));
  const std::vector<double> batch_losses = together.accumulate(examples, weights);
  ASSERT_EQ(batch_losses.size(), losses.size());
  for (std::size_t k = 0; k < losses.size(); ++k)
    EXPECT_NEAR(batch_losses[k], losses[k], 1e-6 * losses[k]) << "record " << k;
  // The records differ in length, questions and options: each gradient within 1e-5 of its
  // tensor's largest (the batch's products round differently, nothing more). A gradient that is
  // truly 0 (residual_scorer.3.bias adds one number to every option) is rounding alone: within
  // 1e-7 of the largest gradient of all, a few f32 roundings of it.
  const auto specs = head::head_parameter_specs(r.weights.config());
  double overall = 0;
  for (const auto& s : specs) {
    for (float g : alone.gradient(s.name))
      overall = std::max(overall, static_cast<double>(std::abs(g)));
  }
  ASSERT_GT(overall, 1e-4);
  for (const auto& s : specs) {
    const std::vector<float> a = alone.gradient(s.name);
    const std::vector<float> b = together.gradient(s.name);
    ASSERT_EQ(a.size(), b.size());
    double largest = 0;
    for (float g : a) largest = std::max(largest, static_cast<double>(std::abs(g)));
    for (std::size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(b[i], a[i], 1e-5 * largest + 1e-7 * overall) << s.name << " " << i;
  }
  // Sizes that do not pair up are refused.
  EXPECT_THROW(together.accumulate(examples, std::vector<double>{1.0}), Error);
  EXPECT_THROW(together.accumulate(std::span<const HeadExample>(), std::span<const double>()),
               Error);
}

TEST(HeadTrainer, AHeadLoadedFromItsFileScoresAsTheHeadLoadedWhole) {
  // clef tune starts a trainer from the head's config and reads the weights in from the file
  // (tune::load_weights): the same parameters and the same logits as a trainer given the head.
  const fs::path dir = fs::path(CLEF_TEST_DATA) / "oracle" / "head" / "tiny";
  const Records r = tiny();
  HeadTrainer a(r.weights, 1);
  HeadTrainer b(r.weights.config(), 1);
  load_weights(b, dir / "joint_head_f32.safetensors");
  const auto specs = head::head_parameter_specs(r.weights.config());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(a.read(HeadTrainer::Slot::weights, i), b.read(HeadTrainer::Slot::weights, i))
        << specs[i].name;
  }
  for (std::size_t k = 0; k < r.records.size(); ++k)
    EXPECT_EQ(a.logits(r.example(k)), b.logits(r.example(k))) << k;
}

TEST(HeadTrainer, AHeadWithFoldedScalesIsRefused) {
  const Records r = tiny();
  EXPECT_THROW(HeadTrainer(r.weights.folded(), 1), Error);
}

}  // namespace
}  // namespace clef::tune
