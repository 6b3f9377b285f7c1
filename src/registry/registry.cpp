#include "registry/registry.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <span>

#include "json/parse.hpp"
#include "util/edit_distance.hpp"
#include "util/error.hpp"
#include "util/file_reader.hpp"
#include "util/install_layout.hpp"

namespace clef::registry {
namespace {

[[noreturn]] void bad(const std::string& source, const std::string& field,
                      const std::string& what) {
  throw invalid_request("registry " + source + ": " + field + " " + what, field);
}

std::string text_of(const json::Value& v, std::string_view key, const std::string& source,
                    const std::string& field, bool required = true) {
  const json::Value* m = v.find(key);
  if (m == nullptr) {
    if (required) bad(source, field + "." + std::string(key), "is missing");
    return "";
  }
  if (!m->is_string()) bad(source, field + "." + std::string(key), "is not a string");
  return m->as_string();
}

/// A model, tag or variant name: it becomes a directory of the store, so only [A-Za-z0-9._-],
/// starting with a letter or digit (no "", ".", ".." or "/": a break test deleted a directory
/// outside the store through a variant named "../../x").
bool usable_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  const char first = name.front();
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') ||
        (first >= '0' && first <= '9'))) {
    return false;
  }
  return name.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
         std::string::npos;
}

/// A repository path whose last component is a plain file name (it is stored under that name).
bool usable_path(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.back() == '/' || path.size() > 1024) return false;
  std::size_t at = 0;
  while (at <= path.size()) {
    const std::size_t end = std::min(path.find('/', at), path.size());
    const std::string part = path.substr(at, end - at);
    if (part.empty() || part == "." || part == ".." || part.front() == '.') return false;
    for (unsigned char c : part) {
      if (c < 0x20 || c == 0x7f || c == '\\') return false;
    }
    at = end + 1;
  }
  return true;
}

/// An integer member of at most 15 digits (negative only with `signed_ok`: gpu_layers -1).
std::optional<std::int64_t> integer_of(const json::Value& v, std::string_view key,
                                       const std::string& source, const std::string& field,
                                       bool signed_ok = false) {
  const json::Value* m = v.find(key);
  if (m == nullptr) return std::nullopt;
  const std::string& digits = m->is_integer() ? m->integer_digits() : std::string();
  if (!m->is_integer() || digits.size() > 15 || (digits[0] == '-' && !signed_ok)) {
    bad(source, field + "." + std::string(key),
        signed_ok ? "is not an integer of at most 15 digits" : "is not an integer in 0..10^15");
  }
  return std::stoll(digits);
}

std::string suggestions(const std::string& wanted, const std::vector<std::string>& known) {
  std::vector<std::string> close;
  for (const std::string& k : known) {
    if (util::edit_distance(wanted, k) <= std::max<std::size_t>(2, wanted.size() / 3))
      close.push_back(k);
  }
  const std::vector<std::string>& list = close.empty() ? known : close;
  std::string out = close.empty() ? " (known: " : " (did you mean ";
  for (std::size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + list[i];
  return out + ")";
}

}  // namespace

void Registry::add(const json::Value& doc, const std::string& source,
                   const std::filesystem::path& base_dir) {
  if (!doc.is_object()) bad(source, "the document", "is not a JSON object");
  if (text_of(doc, "format", source, "") != "clef-registry/1") {
    bad(source, "format", "must be \"clef-registry/1\"");
  }
  const json::Value* models = doc.find("models");
  if (models == nullptr || !models->is_object()) bad(source, "models", "is not an object");
  for (const auto& [name, m] : models->members()) {
    const std::string field = "models." + name;
    if (!m.is_object()) bad(source, field, "is not an object");
    if (!usable_name(name)) {
      bad(source, field, "is not a usable name ([A-Za-z0-9._-], starting with a letter or digit)");
    }
    ModelEntry entry;
    entry.name = name;
    entry.description = text_of(m, "description", source, field, false);
    if (const json::Value* tags = m.find("tags"); tags != nullptr) {
      if (!tags->is_object()) bad(source, field + ".tags", "is not an object");
      for (const auto& [tag, variant] : tags->members()) {
        if (!usable_name(tag)) bad(source, field + ".tags." + tag, "is not a usable tag name");
        if (!variant.is_string()) bad(source, field + ".tags." + tag, "is not a string");
        entry.tags[tag] = variant.as_string();
      }
    }
    const json::Value* variants = m.find("variants");
    if (variants == nullptr || !variants->is_object() || variants->members().empty()) {
      bad(source, field + ".variants", "is not a non-empty object");
    }
    for (const auto& [vname, v] : variants->members()) {
      const std::string vfield = field + ".variants." + vname;
      if (!usable_name(vname)) {
        bad(source, vfield,
            "is not a usable variant name ([A-Za-z0-9._-], starting with a letter or digit)");
      }
      if (!v.is_object()) bad(source, vfield, "is not an object");
      Variant variant;
      variant.name = vname;
      variant.notes = text_of(v, "notes", source, vfield, false);
      const json::Value* files = v.find("files");
      if (files == nullptr || !files->is_array() || files->items().empty()) {
        bad(source, vfield + ".files", "is not a non-empty array");
      }
      for (std::size_t i = 0; i < files->items().size(); ++i) {
        const json::Value& f = files->items()[i];
        const std::string ffield = vfield + ".files." + std::to_string(i);
        if (!f.is_object()) bad(source, ffield, "is not an object");
        RegistryFile rf;
        rf.role = text_of(f, "role", source, ffield);
        if (rf.role != "model" && rf.role != "mmproj" && rf.role != "head" &&
            rf.role != "head_config") {
          bad(source, ffield + ".role", "must be model, mmproj, head or head_config");
        }
        if (f.find("local") != nullptr) {
          // A user's own file, used where it is.
          if (f.find("repository") != nullptr || f.find("path") != nullptr) {
            bad(source, ffield, "gives both \"local\" and a repository file: one or the other");
          }
          const std::string local = text_of(f, "local", source, ffield);
          if (local.empty() || local.find('\0') != std::string::npos) {
            bad(source, ffield + ".local", "is not a file path");
          }
          const std::filesystem::path where(local);
          rf.local = std::filesystem::absolute(where.is_absolute() ? where : base_dir / where)
                         .lexically_normal();
        } else {
          rf.repository = text_of(f, "repository", source, ffield);
          rf.path = text_of(f, "path", source, ffield);
          if (!usable_path(rf.path)) {
            bad(source, ffield + ".path",
                "must be a relative path of plain names inside the repository (no '.', '..', "
                "hidden or empty parts)");
          }
          const std::string stored_name = rf.path.substr(rf.path.rfind('/') + 1);
          for (const RegistryFile& other : variant.files) {
            if (other.local.empty() &&
                other.path.substr(other.path.rfind('/') + 1) == stored_name) {
              bad(source, ffield + ".path", "has the file name of another file of the variant");
            }
          }
        }

        for (const RegistryFile& other : variant.files) {
          if (other.role == rf.role) bad(source, ffield + ".role", "is given twice in the variant");
        }
        if (auto size = integer_of(f, "size", source, ffield)) {
          rf.size = static_cast<std::uint64_t>(*size);
        }
        if (const json::Value* h = f.find("sha256"); h != nullptr) {
          if (!h->is_string() || h->as_string().size() != 64 ||
              h->as_string().find_first_not_of("0123456789abcdef") != std::string::npos) {
            bad(source, ffield + ".sha256", "is not 64 lower-case hex digits");
          }
          rf.sha256 = h->as_string();
        }
        variant.files.push_back(std::move(rf));
      }
      if (std::none_of(variant.files.begin(), variant.files.end(),
                       [](const RegistryFile& f) { return f.role == "model"; })) {
        bad(source, vfield + ".files", "has no file with role \"model\"");
      }
      if (const json::Value* e = v.find("engine"); e != nullptr) {
        if (auto c = integer_of(*e, "context_size", source, vfield + ".engine")) {
          variant.context_size = static_cast<int>(*c);
        }
        if (auto g = integer_of(*e, "gpu_layers", source, vfield + ".engine", true)) {
          variant.gpu_layers = static_cast<int>(*g);
        }
      }
      entry.variants[vname] = std::move(variant);
    }
    for (const auto& [tag, variant] : entry.tags) {
      if (entry.variants.count(variant) == 0) {
        bad(source, field + ".tags." + tag, "names no variant of " + name);
      }
    }
    models_[name] = std::move(entry);
  }
}

void Registry::add_file(const std::filesystem::path& file) {
  // A regular file of at most 16 MiB, read by its size: /dev/zero or a FIFO given as the
  // registry was read without end.
  constexpr std::uint64_t kMaxBytes = std::uint64_t{16} << 20;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw invalid_request(
        "the registry " + file.string() +
            (std::filesystem::exists(file, ec) ? " is not a regular file" : ": no such file"),
        "registry");
  }
  std::string text;
  try {
    const util::FileReader reader(file);
    if (reader.size() > kMaxBytes) {
      throw invalid_request("the registry " + file.string() + " is " +
                                std::to_string(reader.size()) +
                                " bytes; a registry is a JSON file of at most 16 MiB",
                            "registry");
    }
    text.resize(static_cast<std::size_t>(reader.size()));
    reader.read_at(0, std::as_writable_bytes(std::span(text)));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::invalid_request) throw;
    throw invalid_request("cannot read the registry " + file.string() + " (" + e.what() + ")",
                          "registry");
  }
  json::Value doc;
  try {
    doc = json::parse(text);
  } catch (const Error& e) {
    throw invalid_request("registry " + file.string() + ": " + e.what(), "registry");
  }
  add(doc, file.string(), std::filesystem::absolute(file).parent_path());
}

Resolved Registry::resolve(const std::string& reference) const {
  const std::size_t colon = reference.find(':');
  const std::string name = reference.substr(0, colon);
  const std::string tag = colon == std::string::npos ? "latest" : reference.substr(colon + 1);
  const auto m = models_.find(name);
  if (m == models_.end()) {
    std::vector<std::string> known;
    for (const auto& [n, e] : models_) known.push_back(n);
    throw invalid_request("no model \"" + name + "\" in the registry" + suggestions(name, known),
                          "model");
  }
  const ModelEntry& entry = m->second;
  std::string variant = tag;
  if (const auto t = entry.tags.find(tag); t != entry.tags.end()) variant = t->second;
  const auto v = entry.variants.find(variant);
  if (v == entry.variants.end()) {
    std::vector<std::string> known;
    for (const auto& [t, target] : entry.tags) known.push_back(name + ":" + t);
    for (const auto& [n, x] : entry.variants) known.push_back(name + ":" + n);
    throw invalid_request("model " + name + " has no tag or variant \"" + tag + "\"" +
                              suggestions(name + ":" + tag, known),
                          "model");
  }
  return {&entry, &v->second, name + ":" + variant};
}

bool Registry::looks_like_reference(const std::string& text) {
  if (text.empty() || text.find('/') != std::string::npos) return false;
  std::error_code ec;
  if (std::filesystem::exists(text, ec)) return false;
  return text.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:") ==
         std::string::npos;
}

Registry load_registry(const std::filesystem::path& extra) {
  Registry r;
  // The registry shipped with the binary (build tree or install, util/install_layout.hpp), else
  // the source tree's.
  if (const auto shipped = util::shipped_data("clef-registry.json")) {
    r.add_file(*shipped);
  } else {
    r.add_file(CLEF_SOURCE_REGISTRY);
  }
  const char* config = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  std::filesystem::path user;
  if (config != nullptr && *config != '\0') {
    user = std::filesystem::path(config) / "clef" / "registry.json";
  } else if (home != nullptr && *home != '\0') {
    user = std::filesystem::path(home) / ".config" / "clef" / "registry.json";
  }
  std::error_code ec;
  if (!user.empty() && std::filesystem::exists(user, ec)) r.add_file(user);
  if (!extra.empty()) r.add_file(extra);
  return r;
}

}  // namespace clef::registry
