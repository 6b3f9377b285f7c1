#include "video/container.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

#include "media/errors.hpp"
#include "util/install_layout.hpp"
#include "video/container_backend.hpp"

namespace clef::video {
namespace {

/// The FFmpeg module's entry point, loaded once per process (never unloaded: backends made by it
/// may live until exit), or the reason it could not be loaded.
struct Module {
  OpenContainerFn* open = nullptr;
  std::string error;
};

constexpr const char* kModuleName = "libclef_video_ffmpeg.so";

/// Where the module may be, in order: CLEF_VIDEO_MODULE, beside the executable (a build tree),
/// where an install puts it (../lib/clef/, as util/install_layout.hpp's modules), where this
/// build wrote it (the test binaries). None in a build without CLEF_VIDEO but the variable.
std::vector<std::string> module_candidates() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("CLEF_VIDEO_MODULE"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  }
#ifdef CLEF_VIDEO_MODULE
  if (const std::filesystem::path dir = util::executable_dir(); !dir.empty()) {
    candidates.push_back((dir / kModuleName).string());
    candidates.push_back((dir.parent_path() / "lib" / "clef" / kModuleName).string());
  }
  candidates.emplace_back(CLEF_VIDEO_MODULE);
#endif
  return candidates;
}

/// The first candidate that exists, or why none does.
DecodingStatus find_module(std::string* path) {
  const std::vector<std::string> candidates = module_candidates();
  if (candidates.empty())
    return {false, "this clef was built without video decoding (CLEF_VIDEO=OFF)"};
  std::error_code ec;
  for (const std::string& c : candidates) {
    if (std::filesystem::exists(c, ec)) {
      if (path != nullptr) *path = c;
      return {true, ""};
    }
  }
  std::string looked;
  for (const std::string& c : candidates) looked += (looked.empty() ? "" : ", ") + c;
  return {false, std::string(kModuleName) + " is in none of " + looked};
}

Module load_module() {
  Module m;
  std::string path;
  if (const DecodingStatus found = find_module(&path); !found.available) {
    m.error = found.reason;
    return m;
  }
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    m.error = why != nullptr ? why : path + " could not be loaded";
    return m;
  }
  m.open = reinterpret_cast<OpenContainerFn*>(::dlsym(handle, kOpenContainerSymbol));
  if (m.open == nullptr) m.error = path + " has no " + kOpenContainerSymbol;
  return m;
}

const Module& module() {
  static const Module m = load_module();
  return m;
}

}  // namespace

DecodingStatus decoding_status() {
  return find_module(nullptr);
}

struct VideoContainer::State {
  std::unique_ptr<ContainerBackend> backend;
};

VideoContainer::VideoContainer(std::vector<std::uint8_t> bytes, const VideoLimits& limits,
                               std::string param, std::function<bool()> cancelled)
    : state_(std::make_unique<State>()) {
  if (bytes.size() > limits.max_encoded_bytes) {
    throw media::kVideoMedia.too_large("the video is " + std::to_string(bytes.size()) +
                                           " bytes; the limit is " +
                                           std::to_string(limits.max_encoded_bytes),
                                       param);
  }
  if (bytes.empty()) throw media::kVideoMedia.invalid("the video is empty", param);
  const Module& m = module();
  if (m.open == nullptr) {
    // The client learns what it can do, not the server's paths (decoding_status() says those).
    throw media::kVideoMedia.unsupported(
        "this server cannot decode video files (its FFmpeg module is not installed); send the "
        "frames as a frame list {\"frames\": [...], \"fps\": F}",
        param);
  }
  m.open(bytes, limits, param, cancelled, state_->backend);
}

VideoContainer::~VideoContainer() = default;

const StreamInfo& VideoContainer::info() const noexcept {
  return state_->backend->info();
}

ContentScan VideoContainer::scan() {
  return state_->backend->scan();
}

std::vector<media::RgbImage> VideoContainer::decode(
    std::span<const std::int64_t> indices,
    const std::function<media::RgbImage(media::RgbImage)>& transform) {
  return state_->backend->decode(indices, transform);
}

}  // namespace clef::video
