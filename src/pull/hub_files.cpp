#include "pull/hub_files.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "util/error.hpp"

namespace clef::pull {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_separator(char c) {
  return c == '-' || c == '_' || c == '.';
}

bool is_gguf(const HubFile& f) {
  return lower(f.name()).ends_with(".gguf");
}

bool is_mmproj(const HubFile& f) {
  return lower(f.name()).starts_with("mmproj");
}

std::string names(const std::vector<HubFile>& files) {
  std::string s;
  for (const auto& f : files) s += (s.empty() ? "" : ", ") + f.path;
  return s;
}

/// The shallowest file called `name`.
std::optional<HubFile> find_named(const std::vector<HubFile>& files, std::string_view name) {
  std::optional<HubFile> best;
  for (const auto& f : files) {
    if (f.name() != name) continue;
    const auto depth = std::count(f.path.begin(), f.path.end(), '/');
    if (!best || depth < std::count(best->path.begin(), best->path.end(), '/')) best = f;
  }
  return best;
}

}  // namespace

std::string HubFile::name() const {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::vector<HubFile> parse_tree_listing(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(json.data(), json.size());  // no recursion: untrusted
  if (doc.HasParseError() || !doc.IsArray()) {
    throw model_error("the hub's file listing is not a JSON array");
  }
  std::vector<HubFile> out;
  for (const auto& e : doc.GetArray()) {
    if (!e.IsObject() || !e.HasMember("type") || !e["type"].IsString() || !e.HasMember("path") ||
        !e["path"].IsString()) {
      throw model_error("the hub's file listing has an entry without type or path");
    }
    if (std::string_view(e["type"].GetString()) != "file") continue;
    HubFile f;
    f.path = e["path"].GetString();
    if (e.HasMember("size") && e["size"].IsUint64()) f.size = e["size"].GetUint64();
    if (e.HasMember("oid") && e["oid"].IsString()) f.git_oid = lower(e["oid"].GetString());
    if (e.HasMember("lfs") && e["lfs"].IsObject()) {
      const auto& lfs = e["lfs"];
      if (lfs.HasMember("oid") && lfs["oid"].IsString()) {
        std::string oid = lower(lfs["oid"].GetString());
        if (oid.starts_with("sha256:")) oid = oid.substr(7);
        f.sha256 = oid;
      }
      if (lfs.HasMember("size") && lfs["size"].IsUint64()) f.size = lfs["size"].GetUint64();
    }
    out.push_back(std::move(f));
  }
  return out;
}

ModelReference parse_model_reference(std::string_view text) {
  static const std::regex re(R"(([A-Za-z0-9._-]+/[A-Za-z0-9._-]+)(:([A-Za-z0-9_.-]+))?)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(text.begin(), text.end(), m, re)) {
    throw invalid_request("\"" + std::string(text) +
                              "\" is not a model reference: expected OWNER/NAME or "
                              "OWNER/NAME:QUANT (e.g. ggml-org/Clef-Flash-GGUF:Q4_K_M)",
                          "model");
  }
  return {m[1].str(), m[3].matched ? m[3].str() : std::string()};
}

bool name_has_quant(std::string_view name, std::string_view quant) {
  const std::string n = lower(name);
  const std::string q = lower(quant);
  if (q.empty()) return false;
  for (std::size_t pos = n.find(q); pos != std::string::npos; pos = n.find(q, pos + 1)) {
    const bool start_ok = pos == 0 || is_separator(n[pos - 1]);
    const std::size_t end = pos + q.size();
    // Quant names contain '_' ("Q4_K_M"), so only '-' or '.' may end one ("Q4_K_M_L" is another).
    const bool end_ok = end == n.size() || n[end] == '-' || n[end] == '.';
    if (start_ok && end_ok) return true;
  }
  return false;
}

Selection select_files(const std::vector<HubFile>& files, std::string_view quant) {
  std::vector<HubFile> models, mmprojs;
  static const std::regex split(R"(-\d{5}-of-\d{5}\.gguf$)", std::regex::icase);
  for (const auto& f : files) {
    if (!is_gguf(f)) continue;
    if (is_mmproj(f)) {
      mmprojs.push_back(f);
    } else if (lower(f.name()).find("imatrix") == std::string::npos) {
      models.push_back(f);
    }
  }
  if (models.empty()) {
    throw model_error("the repository holds no model GGUF" +
                      (files.empty() ? std::string() : " (files: " + names(files) + ")"));
  }
  std::vector<HubFile> chosen;
  if (!quant.empty()) {
    for (const auto& f : models) {
      if (name_has_quant(f.name(), quant)) chosen.push_back(f);
    }
    if (chosen.empty()) {
      throw model_error("no model GGUF of quantization " + std::string(quant) +
                        " in the repository; it has: " + names(models));
    }
  } else if (models.size() == 1) {
    chosen = models;
  } else {
    for (const auto& f : models) {
      if (name_has_quant(f.name(), "Q4_K_M")) chosen.push_back(f);
    }
    if (chosen.empty()) {
      throw model_error("several model GGUFs in the repository (" + names(models) +
                        "): name one with REPO:QUANT");
    }
  }
  if (chosen.size() > 1) {
    throw model_error("several model GGUFs match: " + names(chosen) + "; name one with REPO:QUANT");
  }
  if (std::regex_search(chosen.front().name(), split)) {
    throw model_error(chosen.front().path +
                      " is one part of a split GGUF, which clef pull does not support yet");
  }
  Selection s;
  s.model = chosen.front();
  for (const std::string_view pref :
       {quant, std::string_view("bf16"), std::string_view("f16"), std::string_view("f32")}) {
    if (s.mmproj || pref.empty()) continue;
    for (const auto& f : mmprojs) {
      if (name_has_quant(f.name(), pref)) {
        s.mmproj = f;
        break;
      }
    }
  }
  if (!s.mmproj && !mmprojs.empty()) s.mmproj = mmprojs.front();
  s.head = find_named(files, "joint_head.safetensors");
  s.head_config = find_named(files, "joint_head_config.json");
  return s;
}

}  // namespace clef::pull
