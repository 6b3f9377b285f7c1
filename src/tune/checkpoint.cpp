#include "tune/checkpoint.hpp"

#include <fstream>
#include <sstream>

#include "head/head_parameters.hpp"
#include "head/safetensors.hpp"
#include "head/safetensors_writer.hpp"
#include "json/parse.hpp"
#include "json/render.hpp"
#include "util/error.hpp"

namespace clef::tune {
namespace fs = std::filesystem;
namespace {

constexpr const char* kHead = "head.safetensors";
constexpr const char* kBest = "best_head.safetensors";
constexpr const char* kOptimizer = "optimizer.safetensors";
constexpr const char* kState = "state.json";

Error io_error(const std::string& what, const std::string& field) {
  return invalid_request(what, field);
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw io_error("cannot write " + path.string(), "out");
}

std::string read_text(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw io_error("cannot read " + path.string(), "resume");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

head::SafetensorsWriter head_writer(const head::HeadWeights& w) {
  head::SafetensorsWriter out;
  for (const head::ParamSpec& s : head::head_parameter_specs(w.config())) {
    out.add(s.name, s.shape, w.at(s.name).values);
  }
  return out;
}

void write_safetensors(const head::SafetensorsWriter& w, const fs::path& path, bool bf16) {
  try {
    w.write(path, bf16 ? head::SafetensorsDtype::bf16 : head::SafetensorsDtype::f32);
  } catch (const std::exception& e) {
    throw io_error("cannot write " + path.string() + ": " + e.what(), "out");
  }
}

}  // namespace

fs::path checkpoint_dir(const fs::path& out) {
  return out / "checkpoint";
}

void write_head(const fs::path& dir, const head::HeadWeights& weights, bool bf16,
                const std::vector<std::pair<std::string, std::string>>& metadata) {
  head::SafetensorsWriter w = head_writer(weights);
  w.set_metadata("format", "pt");
  for (const auto& [k, v] : metadata) w.set_metadata(k, v);
  write_safetensors(w, dir / head::HeadWeights::kWeightsFile, bf16);
  write_text(dir / head::HeadWeights::kConfigFile, head::head_config_json(weights.config()));
}

void write_checkpoint(const fs::path& out, const Checkpoint& c) {
  const fs::path dir = checkpoint_dir(out);
  const fs::path fresh = out / "checkpoint.new";
  const fs::path old = out / "checkpoint.old";
  std::error_code ec;
  fs::remove_all(fresh, ec);
  fs::create_directories(fresh, ec);
  if (ec) throw io_error("cannot create " + fresh.string() + ": " + ec.message(), "out");

  write_safetensors(head_writer(c.weights), fresh / kHead, false);
  write_safetensors(head_writer(c.best), fresh / kBest, false);
  write_text(fresh / head::HeadWeights::kConfigFile, head::head_config_json(c.weights.config()));
  head::SafetensorsWriter moments;
  const auto specs = head::head_parameter_specs(c.weights.config());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    moments.add("exp_avg." + specs[i].name, specs[i].shape, c.optimizer.m[i]);
    moments.add("exp_avg_sq." + specs[i].name, specs[i].shape, c.optimizer.v[i]);
  }
  write_safetensors(moments, fresh / kOptimizer, false);
  using json::Value;
  const Value state = Value::object({
      {"epoch", Value::integer(c.epoch)},
      {"step", Value::integer(c.optimizer.step)},
      {"best_epoch", Value::integer(c.best_epoch)},
      {"fingerprint", Value::string(c.fingerprint)},
      {"epochs", c.history},
  });
  write_text(fresh / kState, json::dumps_unsorted(state) + "\n");

  // Swap: the previous checkpoint stays whole until the new one is in place.
  fs::remove_all(old, ec);
  if (fs::exists(dir)) {
    fs::rename(dir, old, ec);
    if (ec) throw io_error("cannot replace " + dir.string() + ": " + ec.message(), "out");
  }
  fs::rename(fresh, dir, ec);
  if (ec) throw io_error("cannot replace " + dir.string() + ": " + ec.message(), "out");
  fs::remove_all(old, ec);
}

std::optional<Checkpoint> read_checkpoint(const fs::path& out) {
  fs::path dir = checkpoint_dir(out);
  // Interrupted between the two renames: the previous checkpoint is the whole one.
  if (!fs::exists(dir / kState) && fs::exists(out / "checkpoint.old" / kState)) {
    dir = out / "checkpoint.old";
  }
  if (!fs::exists(dir / kState)) return std::nullopt;
  try {
    Checkpoint c;
    const json::Value state = json::parse(read_text(dir / kState));
    const auto integer = [&](const char* key) {
      const json::Value* v = state.find(key);
      if (v == nullptr || !v->is_integer()) throw io_error(std::string("no ") + key, "resume");
      return std::stoll(v->integer_digits());
    };
    c.epoch = static_cast<int>(integer("epoch"));
    c.optimizer.step = integer("step");
    c.best_epoch = static_cast<int>(integer("best_epoch"));
    const json::Value* fp = state.find("fingerprint");
    const json::Value* epochs = state.find("epochs");
    if (fp == nullptr || !fp->is_string() || epochs == nullptr || !epochs->is_array()) {
      throw io_error("state.json lacks its fingerprint or epochs", "resume");
    }
    c.fingerprint = fp->as_string();
    c.history = *epochs;
    // The history holds epoch 0 (the initial head) to the last complete one.
    const auto n = static_cast<std::int64_t>(epochs->items().size());
    if (c.epoch < 1 || c.epoch + 1 != n || c.best_epoch < 0 || c.best_epoch > c.epoch ||
        c.optimizer.step < 1) {
      throw io_error("state.json: epoch " + std::to_string(c.epoch) + ", best_epoch " +
                         std::to_string(c.best_epoch) + ", step " +
                         std::to_string(c.optimizer.step) + " and " + std::to_string(n) +
                         " epochs of history do not fit together",
                     "resume");
    }
    const fs::path config = dir / head::HeadWeights::kConfigFile;
    c.weights = head::HeadWeights::load(dir / kHead, config);
    c.best = head::HeadWeights::load(dir / kBest, config);
    const head::SafetensorsFile moments(dir / kOptimizer);
    for (const head::ParamSpec& s : head::head_parameter_specs(c.weights.config())) {
      const head::TensorInfo* m = moments.find("exp_avg." + s.name);
      const head::TensorInfo* v = moments.find("exp_avg_sq." + s.name);
      if (m == nullptr || v == nullptr) throw io_error("no moments of " + s.name, "resume");
      c.optimizer.m.push_back(moments.to_f32(*m));
      c.optimizer.v.push_back(moments.to_f32(*v));
    }
    return c;
  } catch (const std::exception& e) {
    throw invalid_request("the checkpoint in " + dir.string() + " cannot be read (" + e.what() +
                              "); start anew over it with --force (without --resume), or give "
                              "another --out",
                          "resume");
  }
}

}  // namespace clef::tune
