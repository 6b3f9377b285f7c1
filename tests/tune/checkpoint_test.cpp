// Checkpoints of `clef tune`: what is written is read back whole, an interrupted swap leaves the
// previous checkpoint readable, and the written head loads strictly.
#include "tune/checkpoint.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "head/head_parameters.hpp"
#include "head/safetensors.hpp"
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

Checkpoint sample() {
  Checkpoint c;
  c.epoch = 3;
  c.fingerprint = "abc";
  c.weights = oracle_head();
  c.best = oracle_head();
  c.best_epoch = 2;
  c.optimizer.step = 24;
  for (const auto& s : head::head_parameter_specs(c.weights.config())) {
    std::vector<float> v = c.weights.at(s.name).values;
    for (float& x : v) x *= 0.5f;
    c.optimizer.m.push_back(v);
    for (float& x : v) x = x * x;
    c.optimizer.v.push_back(v);
  }
  c.history = json::parse(R"([{"epoch": 0}, {"epoch": 1}, {"epoch": 2}, {"epoch": 3}])");
  return c;
}

TEST(Checkpoint, WhatIsWrittenIsReadBack) {
  test::TempDir dir("clef-tune-checkpoint");
  EXPECT_FALSE(read_checkpoint(dir.path()).has_value());
  const Checkpoint c = sample();
  write_checkpoint(dir.path(), c);
  write_checkpoint(dir.path(), c);  // replacing one
  const auto back = read_checkpoint(dir.path());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->epoch, 3);
  EXPECT_EQ(back->best_epoch, 2);
  EXPECT_EQ(back->fingerprint, "abc");
  EXPECT_EQ(back->optimizer.step, 24);
  EXPECT_EQ(back->optimizer.m, c.optimizer.m);
  EXPECT_EQ(back->optimizer.v, c.optimizer.v);
  for (const auto& [name, t] : c.weights.tensors()) {
    EXPECT_EQ(back->weights.at(name).values, t.values) << name;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "checkpoint.new"));
  EXPECT_FALSE(fs::exists(dir.path() / "checkpoint.old"));
}

TEST(Checkpoint, AnInterruptedSwapLeavesThePreviousOne) {
  test::TempDir dir("clef-tune-checkpoint");
  write_checkpoint(dir.path(), sample());
  // Killed between the two renames: only checkpoint.old (and a partial checkpoint.new).
  fs::rename(checkpoint_dir(dir.path()), dir.path() / "checkpoint.old");
  fs::create_directories(dir.path() / "checkpoint.new");
  const auto back = read_checkpoint(dir.path());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->epoch, 3);
}

TEST(Checkpoint, ADamagedOneIsRefusedSayingWhatToDo) {
  test::TempDir dir("clef-tune-checkpoint");
  write_checkpoint(dir.path(), sample());
  fs::resize_file(checkpoint_dir(dir.path()) / "optimizer.safetensors", 100);
  try {
    read_checkpoint(dir.path());
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without --resume"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, AStateThatDoesNotFitTogetherIsRefused) {
  // Reported inputs: an empty history crashed the resume, a best_epoch past it read beyond the
  // history, a huge step threw stoll's bare message.
  test::TempDir dir("clef-tune-checkpoint");
  Checkpoint c = sample();
  c.history = json::parse(R"([{"epoch": 0}, {"epoch": 1}, {"epoch": 2}, {"epoch": 3}])");
  write_checkpoint(dir.path(), c);
  const fs::path state = checkpoint_dir(dir.path()) / "state.json";
  const std::string good = test::read_bytes(state);
  ASSERT_TRUE(read_checkpoint(dir.path()).has_value());
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"\"epochs\":[{", "\"epochs\":[],\"x\":[{"},
      {"\"best_epoch\":2", "\"best_epoch\":99"},
      {"\"epoch\":3,", "\"epoch\":-3,"},
      {"\"epoch\":3,", "\"epoch\":99,"},
      {"\"step\":24", "\"step\":-1"},
      {"\"step\":24", "\"step\":1000000000000000000000000000000"},
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

}  // namespace
}  // namespace clef::tune
