#include "registry/model_store.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>

#include "json/parse.hpp"
#include "json/render.hpp"
#include "pull/hub_client.hpp"
#include "pull/hub_files.hpp"
#include "util/digest.hpp"
#include "util/error.hpp"

namespace clef::registry {
namespace {

namespace fs = std::filesystem;

/// What .verified.json says of one file.
struct Record {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::string sha256;
};

std::map<std::string, Record> read_records(const fs::path& dir) {
  std::map<std::string, Record> out;
  std::ifstream in(dir / ".verified.json", std::ios::binary);
  if (!in) return out;
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  try {
    const json::Value v = json::parse(text);
    for (const auto& [name, r] : v.members()) {
      Record rec;
      rec.size = std::stoull(r.find("size")->integer_digits());
      rec.mtime_ns = std::stoll(r.find("mtime_ns")->integer_digits());
      rec.sha256 = r.find("sha256")->as_string();
      out[name] = rec;
    }
  } catch (const std::exception&) {
    out.clear();  // a damaged record only costs a re-hash
  }
  return out;
}

void write_records(const fs::path& dir, const std::map<std::string, Record>& records) {
  std::vector<json::Value::Member> members;
  for (const auto& [name, r] : records) {
    members.emplace_back(
        name, json::Value::object({{"size", json::Value::integer(std::to_string(r.size))},
                                   {"mtime_ns", json::Value::integer(std::to_string(r.mtime_ns))},
                                   {"sha256", json::Value::string(r.sha256)}}));
  }
  const fs::path tmp = dir / ".verified.json.tmp";
  std::ofstream out(tmp, std::ios::binary);
  out << json::dumps_unsorted(json::Value::object(members)) << "\n";
  out.flush();
  if (!out) throw model_error("cannot write " + tmp.string() + " (disk full?)");
  out.close();
  fs::rename(tmp, dir / ".verified.json");
}

std::int64_t mtime_ns(const fs::path& p) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             fs::last_write_time(p).time_since_epoch())
      .count();
}

std::string file_name(const RegistryFile& f) {
  const std::size_t slash = f.path.rfind('/');
  return slash == std::string::npos ? f.path : f.path.substr(slash + 1);
}

/// Free bytes on the file system that holds `dir`, or would hold it (its nearest existing
/// ancestor: nothing is created to ask).
std::uint64_t free_space(fs::path dir, const StoreOptions& o) {
  if (o.free_bytes) return *o.free_bytes;
  std::error_code ec;
  while (!dir.empty() && !fs::exists(dir, ec) && dir.has_parent_path() &&
         dir.parent_path() != dir) {
    dir = dir.parent_path();
  }
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) return UINT64_MAX;
  return static_cast<std::uint64_t>(s.f_bavail) * s.f_frsize;
}

}  // namespace

fs::path store_dir(const Resolved& resolved, const StoreOptions& options) {
  fs::path root = options.models_dir;
  if (root.empty()) {
    const char* cache = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    if (cache != nullptr && *cache != '\0') {
      root = fs::path(cache) / "clef" / "models";
    } else if (home != nullptr && *home != '\0') {
      root = fs::path(home) / ".cache" / "clef" / "models";
    } else {
      throw invalid_request("no model store: set --models-dir, XDG_CACHE_HOME or HOME",
                            "models-dir");
    }
  }
  return root / resolved.model->name / resolved.variant->name;
}

namespace {

/// A user's own file named by the registry ("local"): there, and of its pinned sha256 when the
/// registry pins one. Throws clef::Error (model_error) naming the entry, the role and the file.
void check_local(const Resolved& resolved, const RegistryFile& f) {
  const std::string what = "registry entry " + resolved.reference + ": its " + f.role + " " +
                           f.local.string() + " (\"local\")";
  std::error_code ec;
  const fs::file_status st = fs::status(f.local, ec);
  if (ec || !fs::exists(st)) {
    throw model_error(what + ": " +
                      (ec && ec != std::errc::no_such_file_or_directory
                           ? ec.message()
                           : std::string("no such file")));
  }
  if (!fs::is_regular_file(st)) throw model_error(what + " is not a regular file");
  if (f.size) {
    const std::uintmax_t size = fs::file_size(f.local, ec);
    if (size != *f.size) {
      throw model_error(what + " has " + std::to_string(size) + " bytes, the registry says " +
                        std::to_string(*f.size));
    }
  }
  if (f.sha256) {
    const std::string digest = util::sha256_file(f.local);
    if (digest != *f.sha256) {
      throw model_error(what + " has sha256 " + digest + ", the registry pins " + *f.sha256);
    }
  }
}

bool has_hub_files(const Resolved& resolved) {
  return std::any_of(resolved.variant->files.begin(), resolved.variant->files.end(),
                     [](const RegistryFile& f) { return f.local.empty(); });
}

}  // namespace

StoredModel ensure_model(const Resolved& resolved, const StoreOptions& options,
                         std::ostream& progress) {
  StoredModel out;
  out.dir = store_dir(resolved, options);
  for (const RegistryFile& f : resolved.variant->files) {
    if (!f.local.empty()) check_local(resolved, f);
  }
  std::error_code exists_ec;
  const bool stored = fs::exists(out.dir, exists_ec);
  if (has_hub_files(resolved) && !stored && options.offline) {
    throw invalid_request(resolved.reference + " is not in the model store (" + out.dir.string() +
                              ") and --offline forbids downloading: `clef pull " +
                              resolved.reference +
                              "` downloads it where there is a network (copy the store "
                              "directory over, or serve files you have with --model-dir DIR)",
                          "offline");
  }
  std::map<std::string, Record> records = read_records(out.dir);

  // Which files are there and verified (by their record, or by hashing once).
  std::vector<const RegistryFile*> missing;
  for (const RegistryFile& f : resolved.variant->files) {
    if (!f.local.empty()) continue;  // checked above, used where it is
    const std::string name = file_name(f);
    const fs::path p = out.dir / name;
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      missing.push_back(&f);
      continue;
    }
    const auto size = fs::file_size(p);
    const auto r = records.find(name);
    const bool recorded = r != records.end() && r->second.size == size &&
                          r->second.mtime_ns == mtime_ns(p) &&
                          (!f.sha256 || r->second.sha256 == *f.sha256);
    if (recorded) continue;
    if (f.size && *f.size != size) {
      missing.push_back(&f);  // a partial or other file: fetched again (resumed from .part)
      continue;
    }
    const std::string digest = util::sha256_file(p);
    ++out.hashed;
    if (f.sha256 && digest != *f.sha256) {
      progress << "stored " << name << " changed after it was verified (sha256 " << digest
               << ", pinned " << *f.sha256 << "): fetching it again\n";
      fs::remove(p);
      missing.push_back(&f);
      continue;
    }
    if (!f.sha256 && !options.offline && r != records.end() && r->second.sha256 != digest) {
      fs::remove(p);
      missing.push_back(&f);
      continue;
    }
    records[name] = {size, mtime_ns(p), digest};
  }
  if (stored) write_records(out.dir, records);

  if (!missing.empty()) {
    if (options.offline) {
      std::string names;
      for (const RegistryFile* f : missing) names += (names.empty() ? "" : ", ") + file_name(*f);
      throw invalid_request(resolved.reference + " is not complete in " + out.dir.string() +
                                " (missing: " + names +
                                ") and --offline forbids downloading: `clef pull " +
                                resolved.reference + "` fetches the rest where there is a network",
                            "offline");
    }
    // The plan first, from the registry alone (pinned files carry their size): what will be
    // stored where, and the space for it, before anything needs the hub.
    std::uint64_t pinned = 0;
    std::size_t unpinned = 0;
    for (const RegistryFile* f : missing) {
      if (f->size) {
        pinned += *f->size;
      } else {
        ++unpinned;
      }
    }
    const std::uint64_t free = free_space(out.dir, options);
    progress << resolved.reference << ": " << missing.size() << " file(s) to download into "
             << out.dir.string() << ": " << human_bytes(pinned)
             << (unpinned > 0 ? " and " + std::to_string(unpinned) +
                                    " unpinned file(s) whose size "
                                    "the hub says"
                              : std::string())
             << " (free there: " << human_bytes(free) << ")\n";
    for (const RegistryFile* f : missing) {
      progress << "  " << f->repository << "/" << f->path << "  "
               << (f->size ? human_bytes(*f->size) : std::string("size from the hub"))
               << (f->sha256 ? "  sha256 pinned" : "  unpinned (the hub's hash)") << "\n";
    }
    const auto check_space = [&](std::uint64_t total) {
      if (free < total + (std::uint64_t{64} << 20)) {
        throw Error(ErrorKind::model_error, "disk_full",
                    "not enough free space in " + out.dir.string() + ": " + human_bytes(total) +
                        " to download, " + human_bytes(free) + " free");
      }
    };
    check_space(pinned);
    pull::HubClient hub(options.endpoint);
    std::vector<pull::HubFile> plan;
    std::uint64_t total = 0;
    try {
      // Sizes and hashes of unpinned files come from the hub's listing.
      std::map<std::string, std::vector<pull::HubFile>> listings;
      for (const RegistryFile* f : missing) {
        pull::HubFile h;
        h.path = f->path;
        if (f->sha256 && f->size) {
          h.size = *f->size;
          h.sha256 = f->sha256;
        } else {
          auto& listing = listings[f->repository];
          if (listing.empty()) listing = hub.list_files(f->repository);
          const auto it = std::find_if(listing.begin(), listing.end(),
                                       [&](const pull::HubFile& x) { return x.path == f->path; });
          if (it == listing.end()) {
            throw model_error("repository " + f->repository + " has no file " + f->path +
                              " (registry entry " + resolved.reference + ")");
          }
          h = *it;
          if (f->sha256) h.sha256 = f->sha256;  // the pin wins over the hub
        }
        total += h.size;
        plan.push_back(h);
      }
      if (unpinned > 0) {
        progress << "  in all " << human_bytes(total) << " with the unpinned file(s)\n";
        check_space(total);
      }
      fs::create_directories(out.dir);  // only now that something will be stored there
      for (std::size_t i = 0; i < missing.size(); ++i) {
        const std::string name = file_name(*missing[i]);
        const fs::path dest = out.dir / name;
        hub.download(missing[i]->repository, plan[i], dest, progress);
        ++out.downloaded;
        const std::string digest = plan[i].sha256 ? *plan[i].sha256 : util::sha256_file(dest);
        records[name] = {fs::file_size(dest), mtime_ns(dest), digest};
        write_records(out.dir, records);
      }
    } catch (const Error& e) {
      // A store directory made for this download and still empty goes again (and the model's
      // directory above it, when that is empty too).
      std::error_code ec;
      if (!stored && fs::is_empty(out.dir, ec) && fs::remove(out.dir, ec) &&
          fs::is_empty(out.dir.parent_path(), ec)) {
        fs::remove(out.dir.parent_path(), ec);
      }
      if (e.code() != "hub_unreachable") throw;
      throw Error(e.kind(), e.code(),
                  std::string(e.what()) + ". " + resolved.reference +
                      " needs the files listed above: check the network (or --hub-endpoint for a "
                      "mirror), or download them elsewhere with `clef pull " +
                      resolved.reference + "` and copy " + out.dir.string() +
                      ", or serve files you already have with --model-dir DIR");
    }
  }
  for (const RegistryFile& f : resolved.variant->files) {
    const fs::path p = f.local.empty() ? out.dir / file_name(f) : f.local;
    if (f.role == "model") out.model = p;
    if (f.role == "mmproj") out.mmproj = p;
    if (f.role == "head") out.head = p;
    if (f.role == "head_config") out.head_config = p;
  }
  return out;
}

std::vector<std::string> verify_stored(const Resolved& resolved, const StoreOptions& options) {
  const fs::path dir = store_dir(resolved, options);
  std::vector<std::string> out;
  for (const RegistryFile& f : resolved.variant->files) {
    if (f.local.empty()) continue;
    std::error_code ec;
    const std::string name = f.local.string() + " (local)";
    if (!fs::is_regular_file(f.local, ec)) {
      out.push_back(name + ": missing");
      continue;
    }
    const std::string digest = util::sha256_file(f.local);
    if (!f.sha256) {
      out.push_back(name + ": ok, not pinned (sha256 " + digest + ")");
    } else if (digest == *f.sha256) {
      out.push_back(name + ": ok (sha256 " + digest + ")");
    } else {
      out.push_back(name + ": CHANGED (sha256 " + digest + ", expected " + *f.sha256 + ")");
    }
  }
  if (!has_hub_files(resolved)) return out;
  std::error_code missing;
  if (!fs::is_directory(dir, missing)) {
    // Never downloaded: nothing to hash, and nothing is written (it used to fail writing the
    // records into a folder that is not there).
    out.push_back(resolved.reference + ": not downloaded (nothing stored at " + dir.string() +
                  "; `clef pull " + resolved.reference + "` downloads it)");
    return out;
  }
  std::map<std::string, Record> records = read_records(dir);
  for (const RegistryFile& f : resolved.variant->files) {
    if (!f.local.empty()) continue;
    const std::string name = file_name(f);
    const fs::path p = dir / name;
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      out.push_back(name + ": missing");
      continue;
    }
    const std::string digest = util::sha256_file(p);
    const auto r = records.find(name);
    const std::string& expected = f.sha256             ? *f.sha256
                                  : r != records.end() ? r->second.sha256
                                                       : digest;
    if (digest == expected) {
      out.push_back(name + ": ok (sha256 " + digest + ")");
      records[name] = {fs::file_size(p), mtime_ns(p), digest};
    } else {
      out.push_back(name + ": CHANGED (sha256 " + digest + ", expected " + expected + ")");
    }
  }
  write_records(dir, records);
  return out;
}

}  // namespace clef::registry
