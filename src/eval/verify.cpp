#include "eval/verify.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "decision/response.hpp"
#include "decision/softmax.hpp"
#include "media/base64.hpp"
#include "media/decode.hpp"
#include "media/encode_png.hpp"
#include "util/error.hpp"
#include "vision/resample.hpp"

namespace clef::eval {
namespace {

/// An image of the fixture: a regular file of at most the request limit (20 MiB). Missing: the
/// run is skipped (param "fixture.images"); anything else is the run's failure.
std::vector<std::uint8_t> read_image_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw invalid_request(
        "image " + path.filename().string() + " is not in " + path.parent_path().string(),
        "fixture.images");
  }
  const media::DecodeLimits limits;
  if (!std::filesystem::is_regular_file(path, ec) ||
      std::filesystem::file_size(path, ec) > limits.max_encoded_bytes) {
    throw invalid_request("image " + path.string() + " is not a regular file of at most " +
                              std::to_string(limits.max_encoded_bytes) + " bytes",
                          "images");
  }
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string png_data_uri(std::span<const std::uint8_t> png) {
  return "data:image/png;base64," + media::encode_base64(png);
}

bool selected(const std::vector<std::string>& wanted, const std::string& value) {
  return wanted.empty() || std::find(wanted.begin(), wanted.end(), value) != wanted.end();
}

/// What the engine decided for a prepared request, as parity compares it.
ObservedRun observe(const runtime::PreparedRequest& prepared, const runtime::Decision& d) {
  ObservedRun out;
  out.ids.assign(prepared.record.ids.begin(), prepared.record.ids.end());
  const auto& questions = prepared.record.questions;
  for (std::size_t k = 0; k < questions.size() && k < d.logits.size(); ++k) {
    ObservedQuestion q;
    q.id = questions[k].question_id;
    q.question_span = questions[k].question_span;
    q.option_spans = questions[k].option_spans;
    q.option_ids = questions[k].option_ids;
    for (float p : decision::softmax_f32(d.logits[k])) q.probs.push_back(p);
    out.questions.push_back(std::move(q));
  }
  return out;
}

/// The reference's response rebuilt by clef's decision layer from the reference's logits.
bool response_from_reference_logits(const runtime::PreparedRequest& prepared,
                                    const FixtureRun& run) {
  std::vector<std::vector<float>> logits;
  for (const FixtureQuestion& q : run.questions) {
    std::vector<float> l;
    for (double v : q.logits) l.push_back(static_cast<float>(v));
    logits.push_back(std::move(l));
  }
  const json::Value rebuilt =
      decision::build_response(prepared.request, logits, static_cast<std::size_t>(run.tokens));
  return rebuilt == run.response;
}

}  // namespace

json::Value run_request(const Fixture& fixture, const FixtureRun& run) {
  const FixtureRecord* rec = fixture.record(run.id);
  if (rec == nullptr || !rec->request) {
    throw invalid_request("the request of record " + run.id + " is withheld in this fixture",
                          "fixture");
  }
  json::Value body = *rec->request;
  if (run.arm == "text" || run.image_files.empty()) return body;
  std::vector<json::Value> images;
  for (const std::string& file : run.image_files) {
    std::vector<std::uint8_t> bytes = read_image_file(fixture.images_dir / file);
    if (run.arm == "g256" || run.arm == "g448") {
      const int side = run.arm == "g256" ? 256 : 448;
      const media::RgbImage rgb = media::decode_image(bytes, media::DecodeLimits{}, "images");
      bytes = media::encode_png(
          vision::resize_bicubic(rgb, side, side, vision::ResampleKind::pillow_bicubic));
    }
    images.push_back(json::Value::string(png_data_uri(bytes)));
  }
  body.set("images", json::Value::array(std::move(images)));
  return body;
}

std::vector<const FixtureRun*> select_runs(const Fixture& fixture, const VerifyOptions& options) {
  std::vector<const FixtureRun*> chosen;
  for (const FixtureRun& run : fixture.runs) {
    if (options.limit > 0 && chosen.size() == options.limit) break;
    if (selected(options.arms, run.arm) && selected(options.sources, run.source)) {
      chosen.push_back(&run);
    }
  }
  return chosen;
}

VerifyResult verify(runtime::Engine& engine, const Fixture& fixture, const VerifyOptions& options) {
  const std::vector<const FixtureRun*> chosen = select_runs(fixture, options);
  VerifyResult out;
  VerifyOptions unlimited = options;
  unlimited.limit = 0;
  out.runs_selected = static_cast<int>(select_runs(fixture, unlimited).size());
  out.runs_over_limit = out.runs_selected - static_cast<int>(chosen.size());
  bool vocabulary_known = false;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const FixtureRun& run = *chosen[i];
    RunParity parity;
    parity.id = run.id;
    parity.arm = run.arm;
    parity.source = run.source;
    try {
      const json::Value body = run_request(fixture, run);
      const runtime::PreparedRequest prepared = engine.prepare(body);
      if (!vocabulary_known) {
        // The reference's prefix ids are the contract's; a test model's vocabulary has others.
        const auto& ids = prepared.record.ids;
        out.same_vocabulary =
            !fixture.prefix_ids.empty() && ids.size() >= fixture.prefix_ids.size() &&
            std::equal(fixture.prefix_ids.begin(), fixture.prefix_ids.end(), ids.begin());
        vocabulary_known = true;
      }
      ++out.responses_checked;
      if (response_from_reference_logits(prepared, run)) {
        ++out.responses_equal;
      } else if (out.responses_differing.size() < 10) {
        out.responses_differing.push_back(run.id + "/" + run.arm);
      }
      const runtime::Decision d = engine.decide(prepared);
      parity = compare_run(run, observe(prepared, d), out.same_vocabulary);
    } catch (const Error& e) {
      // Skipped: what this copy of the fixture does not have (a withheld request, an image not
      // shipped). A bad image or a refusal is the run's failure.
      const bool missing = e.param() == "fixture.images" || e.param() == "fixture";
      parity.status = missing ? RunParity::Status::skipped : RunParity::Status::failed;
      parity.note = e.what();
    } catch (const std::exception& e) {
      parity.status = RunParity::Status::failed;
      parity.note = e.what();
    }
    out.runs.push_back(std::move(parity));
    if (options.on_run) options.on_run(i + 1, chosen.size(), out.runs.back());
  }
  return out;
}

}  // namespace clef::eval
