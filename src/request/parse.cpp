#include "request/parse.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>

#include "json/render.hpp"
#include "request/parse_media.hpp"
#include "util/edit_distance.hpp"
#include "util/error.hpp"

namespace clef::request {
namespace {

// Default noul descriptions (contract 1; reference encode_record).
constexpr std::string_view kNoulTrue = "The proposition is true or the answer is yes.";
constexpr std::string_view kNoulFalse = "The proposition is false or the answer is no.";

/// A request over one of this server's limits: 413 with a stable code a client can fail over on
/// ("too_many_questions", "too_many_options", "too_many_images"; another server may take it).
Error too_large(const std::string& what, std::size_t count, std::size_t limit,
                const std::string& param) {
  const std::string code = what == "levels" ? "too_many_options" : "too_many_" + what;
  return Error(ErrorKind::payload_too_large, code,
               param + " has " + std::to_string(count) + " " + what + "; the limit is " +
                   std::to_string(limit),
               param);
}

/// Whether `key` is close enough to `field` to be a misspelling of it (the edit distance the
/// unknown-field refusal suggests a name at).
bool close_to(std::string_view key, std::string_view field) {
  return util::edit_distance(key, field) <= std::max<std::size_t>(2, field.size() / 3);
}

QuestionType parse_type(const json::Value& question, const std::string& path) {
  constexpr std::string_view kTypes[] = {"noul", "choice", "score"};
  const json::Value* type = question.find("type");
  const std::string expected = "must be \"noul\", \"choice\" or \"score\"";
  if (type == nullptr)
    throw invalid_request(path + ".type is missing: it " + expected, path + ".type");
  if (!type->is_string()) throw invalid_request(path + ".type " + expected, path + ".type");
  const std::string& t = type->as_string();
  if (t == kTypes[0]) return QuestionType::noul;
  if (t == kTypes[1]) return QuestionType::choice;
  if (t == kTypes[2]) return QuestionType::score;
  // The value as sent (quoted, at most 64 bytes of it), and the known type it misspells.
  std::string quoted;
  json::append_quoted(quoted, std::string_view(t).substr(0, 64));
  std::string suggestion;
  std::string lower = t;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view known : kTypes) {
    if (lower == known || close_to(lower, known)) {
      suggestion = ": did you mean \"" + std::string(known) + "\"?";
      break;
    }
  }
  throw invalid_request(
      path + ".type " + quoted + " is not a question type" + suggestion + " (it " + expected + ")",
      path + ".type");
}

/// For a missing required `field` of `object`: "; the request has \"KEY\": did you mean FIELD?"
/// when one of its keys is a misspelling of it (by default an unknown key is only listed, so
/// "questoins" would otherwise be refused as if nothing had been sent), else "".
std::string misspelled(const json::Value& object, std::string_view field) {
  for (const auto& [key, value] : object.members()) {
    if (key != field && close_to(key, field)) {
      std::string quoted;
      json::append_quoted(quoted, key);
      return "; the request has " + quoted + ": did you mean " + std::string(field) + "?";
    }
  }
  return {};
}

/// The path of member `key` below `prefix` (a dotted path ending in '.', or "" at the top):
/// `prefix` + key, or, for an empty key, `""` in brackets (`questions[""]`), so that no path has
/// an empty segment (`questions..type`).
std::string member_path(const std::string& prefix, std::string_view key) {
  if (!key.empty()) return prefix + std::string(key);
  std::string base = prefix;
  if (!base.empty() && base.back() == '.') base.pop_back();
  return base + "[\"\"]";
}

/// Each member of `object` that is not one of `known` is recorded as member_path(prefix, key) in
/// `ignored`, or refused (400 naming it and the nearest known key, when one is close).
void check_fields(const json::Value& object, std::initializer_list<std::string_view> known,
                  const std::string& prefix, UnknownFields policy,
                  std::vector<std::string>& ignored) {
  for (const auto& [key, value] : object.members()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string path = member_path(prefix, key);
    if (policy == UnknownFields::accept) {
      ignored.push_back(path);
      continue;
    }
    std::string_view nearest;
    std::size_t best = 0;
    for (std::string_view k : known) {
      const std::size_t d = util::edit_distance(key, k);
      if (nearest.empty() || d < best) {
        nearest = k;
        best = d;
      }
    }
    std::string message = path + ": unknown field";
    if (!nearest.empty() && close_to(key, nearest)) {
      message += "; did you mean " + std::string(nearest) + "?";
    } else {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      message += " (known here: " + list + ")";
    }
    throw invalid_request(message, path);
  }
}

std::vector<std::size_t> identity(std::size_t n) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  return order;
}

// noul: `true`, `false`; a criteria object overrides either description (null included).
void noul_options(const json::Value* criteria, const std::string& path, const RequestLimits& limits,
                  Question& q, std::vector<std::string>& ignored) {
  json::Value desc_true = json::Value::string(std::string(kNoulTrue));
  json::Value desc_false = json::Value::string(std::string(kNoulFalse));
  if (criteria != nullptr && criteria->is_object()) {
    check_fields(*criteria, {"true", "false"}, path + ".criteria.", limits.unknown_fields, ignored);
    if (const json::Value* v = criteria->find("true")) desc_true = *v;
    if (const json::Value* v = criteria->find("false")) desc_false = *v;
  } else if (criteria != nullptr && !criteria->is_null() &&
             !(criteria->is_array() && criteria->items().empty()) &&
             !(criteria->is_string() && criteria->as_string().empty())) {
    // The reference updates a dict with it: an empty list or string changes nothing, anything
    // else either fails there or would override by accident.
    throw invalid_request(path +
                              ".criteria must be an object with optional keys \"true\" and "
                              "\"false\" (descriptions)",
                          path + ".criteria");
  }
  q.options.push_back({"true", std::move(desc_true)});
  q.options.push_back({"false", std::move(desc_false)});
  q.criteria_order = identity(2);
}

// choice: a non-empty object; model order sorts the ids by code point (UTF-8 byte order).
void choice_options(const json::Value* criteria, const std::string& path,
                    const RequestLimits& limits, Question& q) {
  if (criteria == nullptr || !criteria->is_object() || criteria->members().empty()) {
    throw invalid_request(path + ".criteria must be a non-empty object of option id -> description",
                          path + ".criteria");
  }
  const auto& members = criteria->members();
  if (members.size() > limits.max_options) {
    throw too_large("options", members.size(), limits.max_options, path + ".criteria");
  }
  std::vector<std::size_t> sorted = identity(members.size());
  std::stable_sort(sorted.begin(), sorted.end(), [&](std::size_t a, std::size_t b) {
    return members[a].first < members[b].first;  // char_traits<char>: unsigned byte order
  });
  q.criteria_order.assign(members.size(), 0);
  for (std::size_t pos = 0; pos < sorted.size(); ++pos) {
    const auto& [id, desc] = members[sorted[pos]];
    q.options.push_back({id, desc});
    q.criteria_order[sorted[pos]] = pos;
  }
}

// score: a non-empty array of level descriptions; ids "0", "1", ...
void score_options(const json::Value* criteria, const std::string& path,
                   const RequestLimits& limits, Question& q) {
  if (criteria == nullptr || !criteria->is_array() || criteria->items().empty()) {
    throw invalid_request(path + ".criteria must be a non-empty array of level descriptions",
                          path + ".criteria");
  }
  const auto& items = criteria->items();
  if (items.size() > limits.max_options) {
    throw too_large("levels", items.size(), limits.max_options, path + ".criteria");
  }
  for (std::size_t i = 0; i < items.size(); ++i) q.options.push_back({std::to_string(i), items[i]});
  q.criteria_order = identity(items.size());
}

Question parse_question(const std::string& id, const json::Value& value,
                        const RequestLimits& limits, std::vector<std::string>& ignored) {
  const std::string path = member_path("questions.", id);
  if (!value.is_object()) throw invalid_request(path + " must be an object", path);
  check_fields(value, {"type", "instructions", "criteria"}, path + ".", limits.unknown_fields,
               ignored);
  Question q;
  q.id = id;
  q.type = parse_type(value, path);
  const json::Value* instructions = value.find("instructions");
  if (instructions == nullptr || instructions->is_null() ||
      (instructions->is_string() && instructions->as_string().empty())) {
    q.instructions = json::Value::string(id);
  } else {
    q.instructions = *instructions;
  }
  const json::Value* criteria = value.find("criteria");
  switch (q.type) {
    case QuestionType::noul:
      noul_options(criteria, path, limits, q, ignored);
      break;
    case QuestionType::choice:
      choice_options(criteria, path, limits, q);
      break;
    case QuestionType::score:
      score_options(criteria, path, limits, q);
      break;
  }
  return q;
}

std::vector<std::string> parse_images(const json::Value* images, const RequestLimits& limits) {
  std::vector<std::string> out;
  if (images == nullptr || images->is_null()) return out;
  if (!images->is_array()) throw invalid_request("images must be an array of strings", "images");
  const auto& items = images->items();
  if (items.size() > limits.max_images) {
    throw too_large("images", items.size(), limits.max_images, "images");
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string path = "images." + std::to_string(i);
    if (!items[i].is_string()) {
      throw invalid_request(path +
                                " must be a string: a data URI (data:image/png;base64,...) or, "
                                "where the server allows it, an http(s) URL",
                            path);
    }
    out.push_back(items[i].as_string());
  }
  return out;
}

}  // namespace

Request parse_request(json::Value body, const RequestLimits& limits,
                      std::string_view default_model) {
  if (!body.is_object()) {
    throw invalid_request(std::string("the request body must be a JSON object, got ") +
                          body.type_name());
  }
  Request req;
  check_fields(body,
               {"model", "state", "questions", "images", "videos", "media_kwargs", "max_length",
                "max_state_tokens"},
               "", limits.unknown_fields, req.ignored_fields);
  req.model = std::string(default_model);
  if (const json::Value* model = body.find("model")) {
    if (!model->is_string()) {
      throw invalid_request(std::string("model must be a string, got ") + model->type_name(),
                            "model");
    }
    req.model = model->as_string();
  }
  const json::Value* state = body.find("state");
  if (state == nullptr) {
    throw invalid_request("state is required" + misspelled(body, "state"), "state");
  }
  // Moved, not copied: a large state is held once.
  for (auto& [key, value] : body.members()) {
    if (key == "state") {
      req.state = std::move(value);
      break;
    }
  }

  const json::Value* questions = body.find("questions");
  if (questions == nullptr || !questions->is_object() || questions->members().empty()) {
    throw invalid_request("questions must be a non-empty object of question id -> question" +
                              (questions == nullptr ? misspelled(body, "questions") : ""),
                          "questions");
  }
  const auto& members = questions->members();
  if (members.size() > limits.max_questions) {
    throw too_large("questions", members.size(), limits.max_questions, "questions");
  }
  req.questions.reserve(members.size());
  for (const auto& [id, value] : members)
    req.questions.push_back(parse_question(id, value, limits, req.ignored_fields));

  req.images = parse_images(body.find("images"), limits);
  req.videos = parse_videos(body.find("videos"), limits);
  req.media_kwargs = parse_media_kwargs(body.find("media_kwargs"));
  // Null counts as absent, as for media_kwargs (the SDKs forward a field set to null).
  for (auto [key, field] : {std::pair{"max_length", &req.max_length},
                            std::pair{"max_state_tokens", &req.max_state_tokens}}) {
    const json::Value* value = body.find(key);
    // Up to 2^40 (positive_integer); more than any context is "no cut": kept as INT_MAX.
    if (value != nullptr && !value->is_null()) {
      *field = static_cast<int>(
          std::min<std::int64_t>(positive_integer(*value, key), std::numeric_limits<int>::max()));
    }
  }
  return req;
}

}  // namespace clef::request
