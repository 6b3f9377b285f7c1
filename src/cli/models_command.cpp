// `clef models`: the registry's entries and what the local store holds; `clef models rm
// NAME:TAG`; `clef models verify NAME:TAG` (re-hash every stored file).
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "registry/model_store.hpp"
#include "registry/registry.hpp"
#include "util/error.hpp"

namespace clef::cli {
namespace {

struct ModelsOptions {
  std::string registry;
  std::string models_dir;
  std::string reference;
};

registry::StoreOptions store_of(const ModelsOptions& o) {
  registry::StoreOptions s;
  s.models_dir = o.models_dir;
  s.offline = true;
  return s;
}

std::uint64_t stored_bytes(const std::filesystem::path& dir) {
  std::uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec) && e.path().filename().string()[0] != '.') n += e.file_size(ec);
  }
  return n;
}

int list_models(const ModelsOptions& o) {
  const registry::Registry reg = registry::load_registry(o.registry);
  for (const auto& [name, entry] : reg.models()) {
    std::cout << name << "  " << entry.description << "\n";
    for (const auto& [vname, v] : entry.variants) {
      std::string tags;
      for (const auto& [tag, target] : entry.tags) {
        if (target == vname) tags += " " + name + ":" + tag;
      }
      // The size is a total only when every file's size is known; otherwise a lower bound that
      // names what the hub will size (the backbone itself, for some variants).
      std::uint64_t size = 0;
      std::string unsized;
      std::string locals;  // a user's own files, used where they are
      for (const auto& f : v.files) {
        if (!f.local.empty()) {
          std::error_code ec;
          const auto bytes = std::filesystem::file_size(f.local, ec);
          if (!ec) size += bytes;
          locals += "  " + f.role + ": " + f.local.string() + (ec ? " (missing)" : " (local)");
          continue;
        }
        size += f.size.value_or(0);
        if (!f.size) unsized += (unsized.empty() ? "" : ", ") + f.role;
      }
      const registry::Resolved r = reg.resolve(name + ":" + vname);
      const auto dir = registry::store_dir(r, store_of(o));
      std::error_code ec;
      const bool stored = std::filesystem::exists(dir, ec);
      std::cout << "  " << name << ":" << vname << (tags.empty() ? "" : "  (also" + tags + ")")
                << "  "
                << (unsized.empty()
                        ? registry::human_bytes(size) + " in all"
                        : "at least " + registry::human_bytes(size) + " (not counted: " + unsized +
                              ", sized by the hub at download time)")
                << "  "
                << (stored ? "stored: " + registry::human_bytes(stored_bytes(dir)) + " in " +
                                 dir.string()
                           : "not downloaded")
                << locals << "\n";
    }
  }
  return 0;
}

}  // namespace

void add_models_command(CLI::App& cmd, ExitCode& exit_code) {
  auto o = std::make_shared<ModelsOptions>();
  cmd.add_option("--registry", o->registry, "a registry file that adds to the shipped one")
      ->check(CLI::ExistingFile);
  cmd.add_option("--models-dir", o->models_dir, "the model store");
  cmd.callback([o, &cmd, &exit_code] {
    if (cmd.get_subcommands().empty()) exit_code.value = list_models(*o);
  });
  CLI::App* rm = cmd.add_subcommand("rm", "delete a model's files from the store");
  rm->add_option("MODEL", o->reference, "NAME:TAG")->required();
  rm->fallthrough();  // --models-dir and --registry after `rm` too
  rm->callback([o, &exit_code] {
    const registry::Registry reg = registry::load_registry(o->registry);
    const auto dir = registry::store_dir(reg.resolve(o->reference), store_of(*o));
    const auto n = std::filesystem::remove_all(dir);
    std::cout << (n > 0 ? "removed " + dir.string() : "nothing stored at " + dir.string()) << "\n";
    exit_code.value = 0;
  });
  CLI::App* verify = cmd.add_subcommand("verify", "hash a stored model's files again");
  verify->add_option("MODEL", o->reference, "NAME:TAG")->required();
  verify->fallthrough();
  verify->callback([o, &exit_code] {
    const registry::Registry reg = registry::load_registry(o->registry);
    bool ok = true;
    for (const std::string& line :
         registry::verify_stored(reg.resolve(o->reference), store_of(*o))) {
      std::cout << line << "\n";
      ok = ok && line.find(": ok") != std::string::npos;
    }
    exit_code.value = ok ? 0 : 1;
  });
}

}  // namespace clef::cli
