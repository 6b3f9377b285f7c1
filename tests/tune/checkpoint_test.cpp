// Checkpoints of `clef tune`: what is written is read back whole (tensor by tensor, into a
// trainer), the best head stays the best epoch's, an interrupted swap leaves the previous
// checkpoint readable, and the written head loads strictly (from memory or from a file).
#include "tune/checkpoint.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "head/bf16.hpp"
#include "head/head_parameters.hpp"
#include "head/safetensors.hpp"
#include "head/safetensors_writer.hpp"
#include "json/parse.hpp"
#include "support/tiny_model.hpp"
#include "util/error.hpp"

namespace clef::tune {
namespace {

namespace fs = std::filesystem;

head::HeadWeights oracle_head() {
  const fs::path dir = fs::path(CLEF_TEST_DATA) / "oracle" / "head" / "tiny";
  return head::HeadWeights::load(dir / "joint_head_f32.safetensors",
                                 dir / "joint_head_config.json");
}

/// A trainer holding the tiny oracle head, moments derived from it and 24 steps, and the state of
/// a checkpoint after epoch 3 whose best is epoch 2.
struct Sample {
  HeadTrainer trainer{oracle_head(), 1};
  CheckpointState state;

  Sample() {
    const auto specs = head::head_parameter_specs(trainer.config());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      std::vector<float> v = trainer.read(HeadTrainer::Slot::weights, i);
      for (float& x : v) x *= 0.5f;
      trainer.write(HeadTrainer::Slot::exp_avg, i, v);
      for (float& x : v) x = x * x;
      trainer.write(HeadTrainer::Slot::exp_avg_sq, i, v);
    }
    trainer.set_steps(24);
    state.epoch = 3;
    state.fingerprint_parts = {{"--lr", "0.003000000000"}, {"--data (sha256)", "ab12"}};
    state.fingerprint = "abc";
    state.step = 24;
    state.best_epoch = 2;
    state.history = json::parse(R"([{"epoch": 0}, {"epoch": 1}, {"epoch": 2}, {"epoch": 3}])");
  }
};

/// Every tensor of `slot` in `a` and `b` is the same.
void expect_same(const HeadTrainer& a, const HeadTrainer& b, HeadTrainer::Slot slot) {
  const auto specs = head::head_parameter_specs(a.config());
  for (std::size_t i = 0; i < specs.size(); ++i)
    EXPECT_EQ(a.read(slot, i), b.read(slot, i)) << specs[i].name;
}

TEST(Checkpoint, WhatIsWrittenIsReadBack) {
  test::TempDir dir("clef-tune-checkpoint");
  EXPECT_FALSE(read_checkpoint(dir.path()).has_value());
  const Sample c;
  write_checkpoint(dir.path(), c.state, c.trainer, true);
  write_checkpoint(dir.path(), c.state, c.trainer, false);  // replacing one, its best kept
  const auto back = read_checkpoint(dir.path());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->epoch, 3);
  EXPECT_EQ(back->best_epoch, 2);
  EXPECT_EQ(back->fingerprint, "abc");
  EXPECT_EQ(back->fingerprint_parts, c.state.fingerprint_parts);
  EXPECT_EQ(back->step, 24);
  HeadTrainer restored(oracle_head(), 1);
  restore_checkpoint(dir.path(), restored);
  EXPECT_EQ(restored.steps(), 24);
  for (auto slot :
       {HeadTrainer::Slot::weights, HeadTrainer::Slot::exp_avg, HeadTrainer::Slot::exp_avg_sq}) {
    expect_same(c.trainer, restored, slot);
  }
  EXPECT_FALSE(fs::exists(dir.path() / "checkpoint.new"));
  EXPECT_FALSE(fs::exists(dir.path() / "checkpoint.old"));
}

TEST(Checkpoint, TheBestHeadStaysTheEpochThatWasBest) {
  test::TempDir dir("clef-tune-checkpoint");
  Sample c;
  write_checkpoint(dir.path(), c.state, c.trainer, true);  // epoch 3 is the best
  const head::HeadWeights best = oracle_head();
  // Epoch 4 moves the weights and is not better: the best head is still epoch 3's.
  const auto specs = head::head_parameter_specs(c.trainer.config());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::vector<float> v = c.trainer.read(HeadTrainer::Slot::weights, i);
    for (float& x : v) x += 1.0f;
    c.trainer.write(HeadTrainer::Slot::weights, i, v);
  }
  c.state.epoch = 4;
  c.state.best_epoch = 3;
  c.state.history = json::parse(R"([{"epoch": 0}, {"epoch": 1}, {"epoch": 2}, {"epoch": 3},
                                    {"epoch": 4}])");
  write_checkpoint(dir.path(), c.state, c.trainer, false);
  HeadTrainer from_best(oracle_head(), 1);
  load_weights(from_best, checkpoint_best_head(dir.path()));
  HeadTrainer from_head(oracle_head(), 1);
  load_weights(from_head, checkpoint_dir(dir.path()) / "head.safetensors");
  for (std::size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(from_best.read(HeadTrainer::Slot::weights, i), best.at(specs[i].name).values);
    EXPECT_EQ(from_head.read(HeadTrainer::Slot::weights, i),
              c.trainer.read(HeadTrainer::Slot::weights, i));
  }
  // A best head in no checkpoint is a caller's error, said as such.
  test::TempDir empty("clef-tune-checkpoint");
  EXPECT_THROW(write_checkpoint(empty.path(), c.state, c.trainer, false), Error);
}

TEST(Checkpoint, AnInterruptedSwapLeavesThePreviousOne) {
  test::TempDir dir("clef-tune-checkpoint");
  const Sample c;
  write_checkpoint(dir.path(), c.state, c.trainer, true);
  // Killed between the two renames: only checkpoint.old (and a partial checkpoint.new).
  fs::rename(checkpoint_dir(dir.path()), dir.path() / "checkpoint.old");
  fs::create_directories(dir.path() / "checkpoint.new");
  const auto back = read_checkpoint(dir.path());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->epoch, 3);
}

TEST(Checkpoint, ADamagedOneIsRefusedSayingWhatToDo) {
  test::TempDir dir("clef-tune-checkpoint");
  const Sample c;
  write_checkpoint(dir.path(), c.state, c.trainer, true);
  fs::resize_file(checkpoint_dir(dir.path()) / "optimizer.safetensors", 100);
  try {
    read_checkpoint(dir.path());
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without --resume"), std::string::npos) << e.what();
  }
}

// Reported input: a best head whose data was overwritten with 0xFF (NaN) was written as the
// result, its report holding NaN. A head or moment read from a file holds only finite values.
TEST(Checkpoint, AHeadFileHoldingNaNIsRefusedNamingItsTensor) {
  test::TempDir dir("clef-tune-checkpoint");
  const Sample c;
  write_checkpoint(dir.path(), c.state, c.trainer, true);
  const fs::path best = checkpoint_best_head(dir.path());
  fs::remove(checkpoint_dir(dir.path()) / "head.safetensors");  // the best is a link to it
  {
    std::fstream f(best, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(best) - 64));
    const std::string ff(64, '\xff');
    f.write(ff.data(), static_cast<std::streamsize>(ff.size()));
  }
  HeadTrainer trainer(oracle_head(), 1);
  for (const auto& load : std::vector<std::function<void()>>{
           [&] { load_weights(trainer, best); },
           [&] { write_head(dir.path(), best, trainer.config(), false); }}) {
    try {
      load();
      ADD_FAILURE() << "a NaN head was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not finite"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("best_head.safetensors"), std::string::npos) << e.what();
    }
  }
}

TEST(Checkpoint, AStateThatDoesNotFitTogetherIsRefused) {
  // Reported inputs: an empty history crashed the resume, a best_epoch past it read beyond the
  // history, a huge step threw stoll's bare message.
  test::TempDir dir("clef-tune-checkpoint");
  const Sample c;
  write_checkpoint(dir.path(), c.state, c.trainer, true);
  const fs::path state = checkpoint_dir(dir.path()) / "state.json";
  const std::string good = test::read_bytes(state);
  ASSERT_TRUE(read_checkpoint(dir.path()).has_value());
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"\"epochs\":[{", "\"epochs\":[],\"x\":[{"},
      {"\"best_epoch\":2", "\"best_epoch\":99"},
      {"\"epoch\":3,", "\"epoch\":-3,"},
      {"\"epoch\":3,", "\"epoch\":99,"},
      // Reported input: 2^32 + 3 was taken as epoch 3.
      {"\"epoch\":3,", "\"epoch\":4294967299,"},
      {"\"step\":24", "\"step\":-1"},
      {"\"step\":24", "\"step\":1000000000000000000000000000000"},
      // A breaker's inputs: damaged parts were dropped, and a refused resume then named
      // the wrong values ("--lr (none there, ...)").
      {"\"fingerprint_parts\":{", "\"fingerprint_parts\":[1,2],\"y\":{"},
      {"\"--lr\":\"0.003000000000\"", "\"--lr\":0.003"},
  };
  for (const auto& [from, to] : edits) {
    SCOPED_TRACE(to);
    std::string bad = good;
    const std::size_t at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << good;
    bad.replace(at, from.size(), to);
    std::ofstream(state, std::ios::trunc) << bad;
    try {
      read_checkpoint(dir.path());
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_request);
      EXPECT_NE(std::string(e.what()).find("cannot be read"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
    }
  }
}

TEST(Checkpoint, TheWrittenHeadLoadsStrictlyWithZeroDimScalars) {
  test::TempDir dir("clef-tune-head");
  const head::HeadWeights w = oracle_head();
  write_head(dir.path(), w, false, {{"clef_tune", "epoch 1"}});
  const head::HeadWeights back = head::HeadWeights::load_dir(dir.path());
  for (const auto& [name, t] : w.tensors()) EXPECT_EQ(back.at(name).values, t.values) << name;
  const head::SafetensorsFile f(dir.path() / "joint_head.safetensors");
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(head::dtype_name(t.dtype), "F32");
    if (t.name == "residual_gate" || t.name == "prior_logit_scale" ||
        t.name == "joint_logit_scale") {
      EXPECT_TRUE(t.shape.empty()) << t.name;
    }
  }
  EXPECT_EQ(f.tensors().size(), head::head_parameter_specs(w.config()).size());
  write_head(dir.path(), w, true);
  const head::SafetensorsFile b(dir.path() / "joint_head.safetensors");
  EXPECT_EQ(head::dtype_name(b.tensors().front().dtype), "BF16");
}

TEST(Checkpoint, AHeadWrittenFromAFileHoldsItsValues) {
  // The final head is written from the checkpoint's best, tensor by tensor: F32 as it is, and
  // BF16 rounded; a BF16 file read back widens exactly.
  test::TempDir f32("clef-tune-head");
  test::TempDir bf16("clef-tune-head");
  test::TempDir again("clef-tune-head");
  const head::HeadWeights w = oracle_head();
  write_head(f32.path(), w, false);
  const fs::path source = f32.path() / "joint_head.safetensors";
  write_head(bf16.path(), source, w.config(), true, {{"clef_tune", "epoch 2"}});
  write_head(again.path(), bf16.path() / "joint_head.safetensors", w.config(), false);
  const head::HeadWeights from_bf16 = head::HeadWeights::load_dir(bf16.path());
  const head::HeadWeights back = head::HeadWeights::load_dir(again.path());
  for (const auto& [name, t] : w.tensors()) {
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      const float rounded = head::bf16_to_f32(head::float_to_bf16(t.values[i]));
      ASSERT_EQ(from_bf16.at(name).values[i], rounded) << name << " " << i;
      ASSERT_EQ(back.at(name).values[i], rounded) << name << " " << i;
    }
  }
  const head::SafetensorsFile b(bf16.path() / "joint_head.safetensors");
  ASSERT_EQ(b.metadata().size(), 2u);
  EXPECT_EQ(b.metadata()[1].second, "epoch 2");
  // What BF16 rounds away: every parameter moved by a hair rounds back to its BF16.
  const auto [changed, lost] =
      rounded_away(bf16.path() / "joint_head.safetensors", source, w.config());
  std::size_t moved = 0;
  for (const auto& [name, t] : w.tensors()) {
    for (float x : t.values) moved += head::bf16_to_f32(head::float_to_bf16(x)) != x ? 1 : 0;
  }
  EXPECT_EQ(changed, moved);
  EXPECT_EQ(lost, moved);
  // A file without every parameter is refused naming the tensor.
  head::SafetensorsWriter partial;
  partial.add("hidden_norm.weight", {4}, std::vector<float>(4, 1.0f));
  partial.write(again.path() / "partial.safetensors", head::SafetensorsDtype::f32);
  HeadTrainer trainer(w, 1);
  try {
    load_weights(trainer, again.path() / "partial.safetensors");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no tensor"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace clef::tune
