#include "pull/pull.hpp"

#include <algorithm>

#include <fstream>

#include "artifact/layout.hpp"
#include "gguf/gguf_file.hpp"
#include "gguf/header_scan.hpp"
#include "pull/hub_client.hpp"
#include "util/error.hpp"

namespace clef::pull {

namespace {

/// Reads the remote GGUF's header (growing ranged reads) and detects its layout.
artifact::Layout probe_layout(HubClient& hub, const std::string& repo, const HubFile& file,
                              const std::filesystem::path& dir) {
  std::uint64_t want = std::min<std::uint64_t>(file.size, std::uint64_t{1} << 20);
  std::string prefix;
  while (true) {
    prefix = hub.read_prefix(repo, file, want);
    const auto size = gguf::header_size(std::as_bytes(std::span(prefix.data(), prefix.size())));
    if (size) {
      if (*size <= prefix.size()) {
        prefix.resize(*size);
        break;
      }
      want = *size;
    } else if (prefix.size() < want || want >= file.size) {
      throw model_error(repo + "/" + file.path + " ends inside its GGUF header");
    } else {
      want = std::min<std::uint64_t>(file.size, want * 8);
    }
  }
  const std::filesystem::path tmp = dir / (".clef-header-" + file.name());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
    if (!out) throw model_error("cannot write " + tmp.string());
  }
  struct Remove {
    std::filesystem::path p;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(p, ec);
    }
  } remove{tmp};
  const gguf::GgufFile meta(tmp, /*header_only=*/true);
  try {
    return artifact::detect_layout(meta);
  } catch (const Error& e) {
    // Name the remote file, not the temporary header copy.
    std::string msg = e.what();
    const std::string local = tmp.string();
    if (const auto at = msg.find(local); at != std::string::npos) {
      msg.replace(at, local.size(), repo + "/" + file.path);
    }
    throw Error(e.kind(), e.code(), msg);
  }
}

}  // namespace

PullResult pull_model(const PullOptions& o, std::ostream& progress) {
  const ModelReference ref = parse_model_reference(o.reference);
  HubClient hub(o.endpoint, o.revision);
  const std::vector<HubFile> files = hub.list_files(ref.repo);
  const Selection sel = select_files(files, ref.quant);
  std::filesystem::create_directories(o.dir);

  PullResult result;
  result.layout = probe_layout(hub, ref.repo, sel.model, o.dir);
  std::vector<HubFile> fetch = {sel.model};
  if (sel.mmproj) fetch.push_back(*sel.mmproj);
  std::vector<HubFile> head_files;  // from o.head_from
  if (result.layout == artifact::Layout::hf_head && (!sel.head || !sel.head_config) &&
      !o.head_from.empty()) {
    const ModelReference head_ref = parse_model_reference(o.head_from);
    const std::vector<HubFile> listing = hub.list_files(head_ref.repo);
    for (const char* wanted : {"joint_head.safetensors", "joint_head_config.json"}) {
      const HubFile* best = nullptr;
      for (const HubFile& f : listing) {
        const bool shallower =
            best == nullptr || std::count(f.path.begin(), f.path.end(), '/') <
                                   std::count(best->path.begin(), best->path.end(), '/');
        if (f.name() == wanted && shallower) best = &f;
      }
      if (best == nullptr) {
        throw model_error("--head-from " + head_ref.repo + " has no " + wanted);
      }
      head_files.push_back(*best);
    }
  }
  if (result.layout == artifact::Layout::hf_head && head_files.empty()) {
    if (!sel.head || !sel.head_config) {
      throw model_error("repository " + ref.repo + " holds no usable head: " + sel.model.path +
                        " is a qwen35 GGUF without the joint schema head, and the repository "
                        "has no joint_head.safetensors + joint_head_config.json; pull a "
                        "repository in llama.cpp's clef layout, or one with the HF head files");
    }
    fetch.push_back(*sel.head);
    fetch.push_back(*sel.head_config);
  }
  progress << "clef pull: " << ref.repo << " -> " << o.dir.string() << " (layout "
           << artifact::layout_description(result.layout) << ")\n";
  for (const HubFile& f : fetch) {
    hub.download(ref.repo, f, o.dir / f.name(), progress);
    result.files.push_back(f.path);
  }
  if (!head_files.empty()) {
    const std::string head_repo = parse_model_reference(o.head_from).repo;
    for (const HubFile& f : head_files) {
      hub.download(head_repo, f, o.dir / f.name(), progress);
      result.files.push_back(head_repo + "/" + f.path);
    }
  }
  result.paths.gguf = o.dir / sel.model.name();
  if (sel.mmproj) result.paths.mmproj = o.dir / sel.mmproj->name();
  if (result.layout == artifact::Layout::hf_head) {
    result.paths.head_weights =
        o.dir / (head_files.empty() ? sel.head->name() : head_files[0].name());
    result.paths.head_config =
        o.dir / (head_files.empty() ? sel.head_config->name() : head_files[1].name());
  }
  // Loads and checks the head (and the LM head) now, so a bad repository fails here.
  const artifact::OpenedModel opened = artifact::open_model(result.paths);
  result.layout = opened.layout;
  return result;
}

}  // namespace clef::pull
