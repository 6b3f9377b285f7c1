#include "eval/fixture.hpp"

#include <fstream>
#include <iterator>

#include "json/parse.hpp"
#include "util/error.hpp"

namespace clef::eval {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw invalid_request("fixture: " + what, "fixture");
}

const json::Value& member(const json::Value& v, std::string_view key, const std::string& where) {
  const json::Value* m = v.find(key);
  if (m == nullptr) bad(where + " has no \"" + std::string(key) + "\"");
  return *m;
}

std::string text(const json::Value& v, std::string_view key, const std::string& where) {
  const json::Value& m = member(v, key, where);
  if (!m.is_string()) bad(where + "." + std::string(key) + " is not a string");
  return m.as_string();
}

double number(const json::Value& v, const std::string& where) {
  if (v.is_float()) return v.as_double();
  if (v.is_integer() && v.integer_digits().size() <= 300) return std::stod(v.integer_digits());
  bad(where + " is not a number");
}

std::int64_t integer(const json::Value& v, const std::string& where) {
  if (!v.is_integer() || v.integer_digits().size() > 12)
    bad(where + " is not an integer of at most 12 digits");
  return std::stoll(v.integer_digits());
}

record::Span span(const json::Value& v, const std::string& where) {
  if (!v.is_array() || v.items().size() != 2) bad(where + " is not a [begin, end] pair");
  return {static_cast<std::size_t>(integer(v.items()[0], where)),
          static_cast<std::size_t>(integer(v.items()[1], where))};
}

std::vector<double> numbers(const json::Value& v, const std::string& where) {
  if (!v.is_array()) bad(where + " is not an array");
  std::vector<double> out;
  for (const json::Value& x : v.items()) out.push_back(number(x, where));
  return out;
}

/// An image file name of the fixture: a plain name inside its images folder (a break test read
/// /dev/zero and wrote outside the output folder through "../" names).
void check_image_name(const std::string& name, const std::string& where) {
  bool plain = !name.empty() && name.front() != '.' && name.size() <= 255;
  for (unsigned char c : name) plain = plain && c >= 0x20 && c != 0x7f && c != '/' && c != '\\';
  if (!plain) bad(where + " names \"" + name + "\": image files are plain names in images/");
}

std::vector<std::string> strings(const json::Value* v, const std::string& where) {
  std::vector<std::string> out;
  if (v == nullptr || v->is_null()) return out;
  if (!v->is_array()) bad(where + " is not an array");
  for (const json::Value& x : v->items()) {
    if (!x.is_string()) bad(where + " holds a non-string");
    out.push_back(x.as_string());
  }
  return out;
}

std::vector<std::string> image_names(const json::Value* v, const std::string& where) {
  std::vector<std::string> names = strings(v, where);
  for (const std::string& name : names) check_image_name(name, where);
  return names;
}

std::vector<std::int32_t> id_list(const json::Value& v, const std::string& where) {
  std::vector<std::int32_t> out;
  for (const json::Value& x : v.items())
    out.push_back(static_cast<std::int32_t>(integer(x, where)));
  return out;
}

FixtureQuestion question(const json::Value& q, const std::string& where) {
  FixtureQuestion out;
  out.id = text(q, "question_id", where);
  out.type = text(q, "type", where);
  out.question_span = span(member(q, "question_span", where), where + ".question_span");
  const json::Value& spans = member(q, "option_spans", where);
  if (!spans.is_array()) bad(where + ".option_spans is not an array");
  for (const json::Value& s : spans.items()) out.option_spans.push_back(span(s, where));
  out.option_ids = strings(&member(q, "option_ids", where), where + ".option_ids");
  out.logits = numbers(member(q, "logits", where), where + ".logits");
  out.probs = numbers(member(q, "probs", where), where + ".probs");
  if (out.probs.size() != out.option_ids.size() || out.logits.size() != out.option_ids.size()) {
    bad(where + " has " + std::to_string(out.option_ids.size()) + " options but " +
        std::to_string(out.probs.size()) + " probabilities");
  }
  if (const json::Value* m = q.find("top2_margin"); m != nullptr && !m->is_null()) {
    out.top2_margin = number(*m, where + ".top2_margin");
  }
  if (const json::Value* t = q.find("near_tie"); t != nullptr && t->is_bool()) {
    out.near_tie = t->as_bool();
  }
  return out;
}

}  // namespace

const FixtureRecord* Fixture::record(const std::string& id) const {
  for (const FixtureRecord& r : records) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

Fixture parse_fixture(std::string_view text_of_file, const std::filesystem::path& images_dir) {
  json::ParseLimits limits;
  limits.max_bytes = std::size_t{1} << 30;
  const json::Value root = json::parse(text_of_file, limits);
  if (!root.is_object()) bad("the file is not a JSON object");
  Fixture out;
  out.images_dir = images_dir;
  if (const json::Value* s = root.find("schema"); s != nullptr && s->is_string()) {
    out.schema = s->as_string();
  }
  if (const json::Value* c = root.find("contract"); c != nullptr && c->is_object()) {
    if (const json::Value* p = c->find("prefix"); p != nullptr && p->is_object()) {
      if (const json::Value* ids = p->find("ids"); ids != nullptr && ids->is_array()) {
        out.prefix_ids = id_list(*ids, "contract.prefix.ids");
      }
    }
  }
  const json::Value& records = member(root, "records", "the file");
  if (!records.is_array()) bad("records is not an array");
  for (std::size_t i = 0; i < records.items().size(); ++i) {
    const json::Value& r = records.items()[i];
    const std::string where = "records[" + std::to_string(i) + "]";
    FixtureRecord rec;
    rec.id = text(r, "id", where);
    const json::Value& request = member(r, "request", where);
    // A withheld request is {"withheld": ..., "sha256": ...}: no questions to decide.
    if (request.is_object() && request.find("questions") != nullptr) rec.request = request;
    rec.image_files = image_names(r.find("image_files"), where + ".image_files");
    out.records.push_back(std::move(rec));
  }
  const json::Value& runs = member(root, "runs", "the file");
  if (!runs.is_array()) bad("runs is not an array");
  for (std::size_t i = 0; i < runs.items().size(); ++i) {
    const json::Value& r = runs.items()[i];
    const std::string where = "runs[" + std::to_string(i) + "]";
    FixtureRun run;
    run.id = text(r, "id", where);
    run.arm = text(r, "arm", where);
    if (const json::Value* s = r.find("source"); s != nullptr && s->is_string()) {
      run.source = s->as_string();
    }
    if (const json::Value* ids = r.find("ids"); ids != nullptr && ids->is_array()) {
      run.ids = id_list(*ids, where + ".ids");
    }
    if (const json::Value* t = r.find("tokens"); t != nullptr && t->is_integer()) {
      run.tokens = static_cast<int>(integer(*t, where + ".tokens"));
    }
    run.image_files = image_names(r.find("image_files"), where + ".image_files");
    const json::Value& qs = member(r, "questions", where);
    if (!qs.is_array()) bad(where + ".questions is not an array");
    for (std::size_t k = 0; k < qs.items().size(); ++k) {
      run.questions.push_back(
          question(qs.items()[k], where + ".questions[" + std::to_string(k) + "]"));
    }
    if (const json::Value* resp = r.find("systemone_response"); resp != nullptr) {
      run.response = *resp;
    }
    if (out.record(run.id) == nullptr)
      bad(where + " names a record that is not in records: " + run.id);
    out.runs.push_back(std::move(run));
  }
  return out;
}

Fixture load_fixture(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {  // a reported input: read as a broken file
    throw invalid_request(
        "the fixture " + file.string() + " is a directory; give the fixture file (fixture.json)",
        "fixture");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw invalid_request("cannot read the fixture " + file.string(), "fixture");
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::exception& e) {
    throw invalid_request("cannot read the fixture " + file.string() + ": " + e.what(), "fixture");
  }
  try {
    return parse_fixture(text, file.parent_path() / "images");
  } catch (const Error& e) {
    throw invalid_request(file.string() + ": " + e.what(), "fixture");
  }
}

}  // namespace clef::eval
