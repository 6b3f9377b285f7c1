#include "tune/checkpoint.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include "head/bf16.hpp"
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

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw invalid_request("cannot write " + path.string(), "out");
}

std::string read_text(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw invalid_request("cannot read " + path.string(), "resume");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_safetensors(const head::SafetensorsWriter& w, const fs::path& path, bool bf16) {
  try {
    w.write(path, bf16 ? head::SafetensorsDtype::bf16 : head::SafetensorsDtype::f32);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw invalid_request("cannot write " + path.string() + ": " + e.what(), "out");
  }
}

/// A head file read tensor by tensor: every parameter of `config` checked present with its shape
/// (names prefixed by `prefix`), each tensor's pages dropped once read.
class HeadFile {
 public:
  HeadFile(const fs::path& path, const head::HeadConfig& config, const std::string& field,
           const std::string& prefix = "")
      : file_(path), specs_(head::head_parameter_specs(config)), prefix_(prefix), field_(field) {
    for (const head::ParamSpec& s : specs_) {
      const head::TensorInfo* t = file_.find(prefix_ + s.name);
      if (t == nullptr) {
        throw invalid_request(path.string() + " holds no tensor " + prefix_ + s.name, field);
      }
      if (t->shape != s.shape && !(s.shape.empty() && t->shape == std::vector<std::int64_t>{1})) {
        throw invalid_request(path.string() + ": " + prefix_ + s.name + " has another shape",
                              field);
      }
    }
  }

  const std::vector<head::ParamSpec>& specs() const { return specs_; }

  /// Parameter `i`'s values (f32), its pages released. Throws clef::Error (invalid_request)
  /// naming the file and tensor for a value that is not finite (a damaged file: no head or
  /// moment of a run holds one).
  std::vector<float> values(std::size_t i) const {
    const head::TensorInfo& t = *file_.find(prefix_ + specs_[i].name);
    std::vector<float> v = file_.to_f32(t);
    file_.release(t);
    for (float x : v) {
      if (!std::isfinite(x)) {
        throw invalid_request(file_.path().string() + ": " + prefix_ + specs_[i].name +
                                  " holds a value that is not finite (a damaged file?)",
                              field_);
      }
    }
    return v;
  }

 private:
  head::SafetensorsFile file_;
  std::vector<head::ParamSpec> specs_;
  std::string prefix_;
  std::string field_;
};

/// Adds every parameter of `specs` to `w`, named `prefix` + its name, each given by
/// `value_of(i)` when written.
void add_streamed(head::SafetensorsWriter& w, const std::vector<head::ParamSpec>& specs,
                  const std::function<std::vector<float>(std::size_t)>& value_of,
                  const std::string& prefix = "") {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    w.add(prefix + specs[i].name, specs[i].shape, [value_of, i] { return value_of(i); });
  }
}

/// A writer of every parameter of `specs`, each given by `value_of(i)` when written.
head::SafetensorsWriter streamed(const std::vector<head::ParamSpec>& specs,
                                 const std::function<std::vector<float>(std::size_t)>& value_of) {
  head::SafetensorsWriter w;
  add_streamed(w, specs, value_of);
  return w;
}

/// `link` as a hard link to `target`, or a copy where the file system has none.
void link_or_copy(const fs::path& target, const fs::path& link) {
  std::error_code ec;
  fs::create_hard_link(target, link, ec);
  if (!ec) return;
  fs::copy_file(target, link, fs::copy_options::overwrite_existing, ec);
  if (ec) {
    throw invalid_request("cannot write " + link.string() + ": " + ec.message(), "out");
  }
}

/// The directory of the last complete checkpoint (checkpoint.old when interrupted between the
/// two renames), or nullopt.
std::optional<fs::path> last_complete(const fs::path& out) {
  fs::path dir = checkpoint_dir(out);
  if (!fs::exists(dir / kState) && fs::exists(out / "checkpoint.old" / kState)) {
    dir = out / "checkpoint.old";
  }
  if (!fs::exists(dir / kState)) return std::nullopt;
  return dir;
}

Error unreadable(const fs::path& dir, const std::string& why) {
  return invalid_request("the checkpoint in " + dir.string() + " cannot be read (" + why +
                             "); start anew over it with --force (without --resume), or give "
                             "another --out",
                         "resume");
}

CheckpointState read_state(const fs::path& dir) {
  CheckpointState c;
  const json::Value state = json::parse(read_text(dir / kState));
  const auto integer = [&](const char* key) {
    const json::Value* v = state.find(key);
    if (v == nullptr || !v->is_integer()) throw std::runtime_error(std::string("no ") + key);
    return std::stoll(v->integer_digits());
  };
  // Epochs are counts a run can reach (an int): a larger value is damage, not wrapped around.
  const auto epoch_count = [&](const char* key) {
    const long long v = integer(key);
    if (v < 0 || v > 1'000'000) {
      throw std::runtime_error(std::string("state.json: ") + key + " " + std::to_string(v) +
                               " is not an epoch count");
    }
    return static_cast<int>(v);
  };
  c.epoch = epoch_count("epoch");
  c.step = integer("step");
  c.best_epoch = epoch_count("best_epoch");
  const json::Value* fp = state.find("fingerprint");
  const json::Value* epochs = state.find("epochs");
  if (fp == nullptr || !fp->is_string() || epochs == nullptr || !epochs->is_array()) {
    throw std::runtime_error("state.json lacks its fingerprint or epochs");
  }
  c.fingerprint = fp->as_string();
  if (const json::Value* parts = state.find("fingerprint_parts"); parts != nullptr) {
    // Absent in checkpoints written before the parts were kept; present, it is whole.
    if (!parts->is_object()) throw std::runtime_error("state.json: fingerprint_parts is malformed");
    for (const auto& [name, value] : parts->members()) {
      if (!value.is_string()) {
        throw std::runtime_error("state.json: fingerprint_parts." + name + " is not a string");
      }
      c.fingerprint_parts.emplace_back(name, value.as_string());
    }
  }
  c.history = *epochs;
  // The history holds epoch 0 (the initial head) to the last complete one.
  const auto n = static_cast<std::int64_t>(epochs->items().size());
  if (c.epoch < 1 || c.epoch + 1 != n || c.best_epoch < 0 || c.best_epoch > c.epoch || c.step < 1) {
    throw std::runtime_error("state.json: epoch " + std::to_string(c.epoch) + ", best_epoch " +
                             std::to_string(c.best_epoch) + ", step " + std::to_string(c.step) +
                             " and " + std::to_string(n) +
                             " epochs of history do not fit together");
  }
  return c;
}

}  // namespace

fs::path checkpoint_dir(const fs::path& out) {
  return out / "checkpoint";
}

fs::path checkpoint_best_head(const fs::path& out) {
  return checkpoint_dir(out) / kBest;
}

void write_head(const fs::path& dir, const head::HeadWeights& weights, bool bf16,
                const std::vector<std::pair<std::string, std::string>>& metadata) {
  head::SafetensorsWriter w;
  for (const head::ParamSpec& s : head::head_parameter_specs(weights.config())) {
    w.add(s.name, s.shape, weights.at(s.name).values);
  }
  w.set_metadata("format", "pt");
  for (const auto& [k, v] : metadata) w.set_metadata(k, v);
  write_safetensors(w, dir / head::HeadWeights::kWeightsFile, bf16);
  write_text(dir / head::HeadWeights::kConfigFile, head::head_config_json(weights.config()));
}

void write_head(const fs::path& dir, const fs::path& source, const head::HeadConfig& config,
                bool bf16, const std::vector<std::pair<std::string, std::string>>& metadata) {
  const HeadFile in(source, config, "out");
  head::SafetensorsWriter w = streamed(in.specs(), [&in](std::size_t i) { return in.values(i); });
  w.set_metadata("format", "pt");
  for (const auto& [k, v] : metadata) w.set_metadata(k, v);
  write_safetensors(w, dir / head::HeadWeights::kWeightsFile, bf16);
  write_text(dir / head::HeadWeights::kConfigFile, head::head_config_json(config));
}

void write_checkpoint(const fs::path& out, const CheckpointState& state, const HeadTrainer& trainer,
                      bool best_is_current) {
  const fs::path dir = checkpoint_dir(out);
  const fs::path fresh = out / "checkpoint.new";
  const fs::path old = out / "checkpoint.old";
  // The best head when it is not the trainer's: the last complete checkpoint's.
  const std::optional<fs::path> last = last_complete(out);
  if (!best_is_current && (!last || !fs::exists(*last / kBest))) {
    throw Error(ErrorKind::internal, "internal",
                "the best head is in no checkpoint of " + out.string());
  }
  std::error_code ec;
  fs::remove_all(fresh, ec);
  fs::create_directories(fresh, ec);
  if (ec) throw invalid_request("cannot create " + fresh.string() + ": " + ec.message(), "out");

  const head::HeadConfig& config = trainer.config();
  const auto specs = head::head_parameter_specs(config);
  using Slot = HeadTrainer::Slot;
  const auto from = [&trainer](Slot slot) {
    return [&trainer, slot](std::size_t i) { return trainer.read(slot, i); };
  };
  write_safetensors(streamed(specs, from(Slot::weights)), fresh / kHead, false);
  link_or_copy(best_is_current ? fresh / kHead : *last / kBest, fresh / kBest);
  write_text(fresh / head::HeadWeights::kConfigFile, head::head_config_json(config));
  head::SafetensorsWriter moments;
  add_streamed(moments, specs, from(Slot::exp_avg), "exp_avg.");
  add_streamed(moments, specs, from(Slot::exp_avg_sq), "exp_avg_sq.");
  write_safetensors(moments, fresh / kOptimizer, false);
  using json::Value;
  std::vector<Value::Member> named;
  for (const auto& [name, value] : state.fingerprint_parts)
    named.emplace_back(name, Value::string(value));
  const Value parts = Value::object(std::move(named));
  const Value s = Value::object({
      {"epoch", Value::integer(state.epoch)},
      {"step", Value::integer(state.step)},
      {"best_epoch", Value::integer(state.best_epoch)},
      {"fingerprint", Value::string(state.fingerprint)},
      {"fingerprint_parts", parts},
      {"epochs", state.history},
  });
  write_text(fresh / kState, json::dumps_unsorted(s) + "\n");

  // Swap: the previous checkpoint stays whole until the new one is in place.
  fs::remove_all(old, ec);
  if (fs::exists(dir)) {
    fs::rename(dir, old, ec);
    if (ec) throw invalid_request("cannot replace " + dir.string() + ": " + ec.message(), "out");
  }
  fs::rename(fresh, dir, ec);
  if (ec) throw invalid_request("cannot replace " + dir.string() + ": " + ec.message(), "out");
  fs::remove_all(old, ec);
}

std::optional<CheckpointState> read_checkpoint(const fs::path& out) {
  const std::optional<fs::path> dir = last_complete(out);
  if (!dir) return std::nullopt;
  try {
    CheckpointState c = read_state(*dir);
    const head::HeadConfig config = head::read_head_config(*dir / head::HeadWeights::kConfigFile);
    HeadFile(*dir / kHead, config, "resume");
    HeadFile(*dir / kBest, config, "resume");
    HeadFile(*dir / kOptimizer, config, "resume", "exp_avg.");
    HeadFile(*dir / kOptimizer, config, "resume", "exp_avg_sq.");
    return c;
  } catch (const std::exception& e) {
    throw unreadable(*dir, e.what());
  }
}

void restore_checkpoint(const fs::path& out, HeadTrainer& trainer) {
  const std::optional<fs::path> dir = last_complete(out);
  if (!dir) throw invalid_request("--resume: " + out.string() + " holds no checkpoint", "resume");
  try {
    const CheckpointState c = read_state(*dir);
    const head::HeadConfig& config = trainer.config();
    using Slot = HeadTrainer::Slot;
    const std::pair<const char*, std::pair<std::string, Slot>> parts[] = {
        {kHead, {"", Slot::weights}},
        {kOptimizer, {"exp_avg.", Slot::exp_avg}},
        {kOptimizer, {"exp_avg_sq.", Slot::exp_avg_sq}}};
    for (const auto& [file, what] : parts) {
      const HeadFile in(*dir / file, config, "resume", what.first);
      for (std::size_t i = 0; i < in.specs().size(); ++i)
        trainer.write(what.second, i, in.values(i));
    }
    trainer.set_steps(c.step);
  } catch (const std::exception& e) {
    throw unreadable(*dir, e.what());
  }
}

void load_weights(HeadTrainer& trainer, const fs::path& file) {
  const HeadFile in(file, trainer.config(), "head");
  for (std::size_t i = 0; i < in.specs().size(); ++i) {
    trainer.write(HeadTrainer::Slot::weights, i, in.values(i));
  }
}

std::pair<std::size_t, std::size_t> rounded_away(const fs::path& initial, const fs::path& tuned,
                                                 const head::HeadConfig& config) {
  const HeadFile a(initial, config, "head");
  const HeadFile b(tuned, config, "head");
  std::size_t changed = 0;
  std::size_t lost = 0;
  for (std::size_t i = 0; i < a.specs().size(); ++i) {
    const std::vector<float> before = a.values(i);
    const std::vector<float> after = b.values(i);
    for (std::size_t k = 0; k < after.size(); ++k) {
      if (after[k] == before[k]) continue;
      ++changed;
      if (head::float_to_bf16(after[k]) == head::float_to_bf16(before[k])) ++lost;
    }
  }
  return {changed, lost};
}

}  // namespace clef::tune
