#include "oracle_reader.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include "support/oracle_dirs.hpp"

namespace clef::head::testing {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::vector<double>> read_matrix(const rapidjson::Value& v) {
  std::vector<std::vector<double>> out;
  for (const auto& row : v.GetArray()) {
    auto& r = out.emplace_back();
    for (const auto& x : row.GetArray()) r.push_back(x.GetDouble());
  }
  return out;
}

Span read_span(const rapidjson::Value& v) {
  return {v[0].GetInt64(), v[1].GetInt64()};
}

}  // namespace

std::vector<fs::path> bundled_config_dirs() {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(fs::path(CLEF_TEST_DATA) / "oracle" / "head")) {
    if (e.is_directory() && fs::exists(e.path() / "joint_head_config.json"))
      dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::vector<fs::path> extra_config_dirs() {
  return test::extra_head_config_dirs();
}

std::vector<fs::path> record_dirs(const fs::path& config_dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(config_dir)) {
    if (e.is_directory() && e.path().filename().string().starts_with("rec"))
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<float> read_f32_file(const fs::path& path) {
  const std::string bytes = read_text(path);
  if (bytes.size() % sizeof(float) != 0) throw std::runtime_error(path.string() + ": bad size");
  std::vector<float> out(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(out.data()));
  return out;
}

OracleRecord read_record(const fs::path& dir) {
  const std::string text = read_text(dir / "record.json");
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject())
    throw std::runtime_error("bad record.json in " + dir.string());
  OracleRecord r;
  r.name = dir.filename().string();
  r.n_tokens = doc["T"].GetInt64();
  r.hidden_size = doc["hidden_size"].GetInt64();
  for (const auto& id : doc["input_ids"].GetArray()) r.input_ids.push_back(id.GetInt64());
  for (const auto& q : doc["questions"].GetArray()) {
    HeadQuestion hq;
    hq.type = q["question_type"].GetInt();
    hq.question = read_span(q["question_span"]);
    for (const auto& s : q["option_spans"].GetArray()) hq.options.push_back(read_span(s));
    r.questions.push_back(std::move(hq));
  }
  r.logits_f32 = read_matrix(doc["logits_f32"]);
  r.logits_f64 = read_matrix(doc["logits_f64"]);
  r.logits_bf16 = read_matrix(doc["logits_bf16weights_f32math"]);
  r.hidden = read_f32_file(dir / doc["hidden_file"].GetString());
  if (r.hidden.size() != static_cast<std::size_t>(r.n_tokens * r.hidden_size)) {
    throw std::runtime_error(dir.string() + ": hidden.f32 has the wrong size");
  }
  return r;
}

std::vector<float> read_lexical_table(const fs::path& config_dir) {
  return read_f32_file(config_dir / "lexical_W.f32");
}

std::vector<float> lexical_vectors(const OracleRecord& rec, const std::vector<float>& table,
                                   std::int64_t h) {
  std::vector<float> out;
  for (const auto& q : rec.questions) {
    for (const Span& s : q.options) {
      std::vector<float> sum(static_cast<std::size_t>(h), 0.0f);
      for (std::int64_t t = s.start; t < s.end; ++t) {
        const auto row =
            static_cast<std::size_t>(rec.input_ids.at(static_cast<std::size_t>(t)) * h);
        for (std::int64_t k = 0; k < h; ++k)
          sum[static_cast<std::size_t>(k)] += table.at(row + static_cast<std::size_t>(k));
      }
      const auto n = static_cast<float>(s.end - s.start);
      for (float v : sum) out.push_back(v / n);
    }
  }
  return out;
}

}  // namespace clef::head::testing
