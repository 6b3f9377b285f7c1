#include "eval/record_fixture.hpp"

#include <algorithm>
#include <fstream>
#include <set>

#include "decision/softmax.hpp"
#include "json/render.hpp"
#include "request/request.hpp"
#include "util/error.hpp"

namespace clef::eval {
namespace {

json::Value integer(std::int64_t v) {
  return json::Value::integer(v);
}

json::Value span(const record::Span& s) {
  return json::Value::array(
      {integer(static_cast<std::int64_t>(s.begin)), integer(static_cast<std::int64_t>(s.end))});
}

json::Value strings(const std::vector<std::string>& v) {
  std::vector<json::Value> out;
  for (const std::string& s : v) out.push_back(json::Value::string(s));
  return json::Value::array(std::move(out));
}

json::Value question(const record::QuestionRecord& q, const std::vector<float>& logits) {
  const std::vector<float> probs = decision::softmax_f32(logits);
  std::vector<json::Value> spans;
  for (const record::Span& s : q.option_spans) spans.push_back(span(s));
  std::vector<json::Value> l;
  std::vector<json::Value> p;
  for (float v : logits) l.push_back(json::Value::floating(v));
  for (float v : probs) p.push_back(json::Value::floating(v));
  std::vector<float> sorted = probs;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const double margin = sorted.size() > 1 ? static_cast<double>(sorted[0]) - sorted[1] : 1.0;
  return json::Value::object({{"question_id", json::Value::string(q.question_id)},
                              {"type", json::Value::string(request::type_name(q.type))},
                              {"question_span", span(q.question_span)},
                              {"option_spans", json::Value::array(std::move(spans))},
                              {"option_ids", strings(q.option_ids)},
                              {"logits", json::Value::array(std::move(l))},
                              {"probs", json::Value::array(std::move(p))},
                              {"top2_margin", json::Value::floating(margin)},
                              {"near_tie", json::Value::boolean(margin < 0.01)}});
}

}  // namespace

std::size_t record_fixture(runtime::Engine& engine, const Fixture& fixture,
                           const VerifyOptions& options, const std::filesystem::path& out) {
  std::vector<json::Value> runs;
  std::set<std::string> record_ids;
  std::set<std::string> images;
  std::vector<json::Value> prefix;
  for (const FixtureRun* selected : select_runs(fixture, options)) {
    const FixtureRun& run = *selected;
    try {
      const runtime::PreparedRequest prepared = engine.prepare(run_request(fixture, run));
      const runtime::Decision d = engine.decide(prepared);
      const record::Record& rec = prepared.record;
      std::vector<json::Value> ids;
      for (auto id : rec.ids) ids.push_back(integer(id));
      if (prefix.empty()) {
        for (std::size_t i = 0; i < rec.prefix_tokens; ++i) prefix.push_back(integer(rec.ids[i]));
      }
      std::vector<json::Value> questions;
      for (std::size_t k = 0; k < rec.questions.size(); ++k) {
        questions.push_back(question(rec.questions[k], d.logits.at(k)));
      }
      runs.push_back(json::Value::object(
          {{"id", json::Value::string(run.id)},
           {"arm", json::Value::string(run.arm)},
           {"source", json::Value::string(run.source)},
           {"tokens", integer(d.input_tokens)},
           {"ids", json::Value::array(std::move(ids))},
           {"image_files",
            strings(run.arm == "text" ? std::vector<std::string>{} : run.image_files)},
           {"questions", json::Value::array(std::move(questions))},
           {"systemone_response", d.response}}));
      record_ids.insert(run.id);
      if (run.arm != "text") images.insert(run.image_files.begin(), run.image_files.end());
    } catch (const Error&) {
      // Left out: withheld, a missing image, or a request this engine refuses.
    }
  }
  std::vector<json::Value> records;
  for (const FixtureRecord& r : fixture.records) {
    if (record_ids.count(r.id) == 0 || !r.request) continue;
    records.push_back(json::Value::object({{"id", json::Value::string(r.id)},
                                           {"request", *r.request},
                                           {"image_files", strings(r.image_files)}}));
  }
  const json::Value doc = json::Value::object(
      {{"schema", json::Value::string("coreai-clef-flash-fixtures/1")},
       {"what", json::Value::string("clef's own readout (clef verify --write-fixture)")},
       {"contract", json::Value::object(
                        {{"prefix", json::Value::object({{"ids", json::Value::array(prefix)}})}})},
       {"records", json::Value::array(std::move(records))},
       {"runs", json::Value::array(runs)}});
  std::error_code ec;
  const std::filesystem::path dir = out.parent_path().empty() ? "." : out.parent_path();
  // Its folder made as the images' is (a text-only fixture into a new folder failed).
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw invalid_request("cannot make the fixture's folder " + dir.string() + ": " + ec.message(),
                          "fixture");
  }
  if (!images.empty()) {
    std::filesystem::create_directories(dir / "images", ec);
    for (const std::string& f : images) {
      if (std::filesystem::equivalent(fixture.images_dir / f, dir / "images" / f, ec)) continue;
      ec.clear();
      std::filesystem::copy_file(fixture.images_dir / f, dir / "images" / f,
                                 std::filesystem::copy_options::overwrite_existing, ec);
      if (ec) throw invalid_request("cannot copy image " + f + " to " + dir.string(), "fixture");
    }
  }
  std::ofstream file(out, std::ios::binary);
  file << json::dumps_unsorted(doc) << "\n";
  if (!file) throw invalid_request("cannot write the fixture " + out.string(), "fixture");
  return runs.size();
}

}  // namespace clef::eval
