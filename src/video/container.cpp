#include "video/container.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

#include "video/container_backend.hpp"
#include "video/errors.hpp"

namespace clef::video {
namespace {

/// The FFmpeg module's entry point, loaded once per process (never unloaded: backends made by it
/// may live until exit), or the reason it could not be loaded.
struct Module {
  OpenContainerFn* open = nullptr;
  std::string error;
};

Module load_module() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("CLEF_VIDEO_MODULE"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path() / "libclef_video_ffmpeg.so").string());
#ifdef CLEF_VIDEO_MODULE
  candidates.emplace_back(CLEF_VIDEO_MODULE);
#endif
  Module m;
  if (candidates.empty()) m.error = "this clef was built without video decoding (CLEF_VIDEO=OFF)";
  for (const std::string& path : candidates) {
    if (!std::filesystem::exists(path, ec)) {
      m.error = path + " does not exist";
      continue;
    }
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      m.error = why != nullptr ? why : path + " could not be loaded";
      continue;
    }
    m.open = reinterpret_cast<OpenContainerFn*>(::dlsym(handle, kOpenContainerSymbol));
    if (m.open != nullptr) return m;
    m.error = path + " has no " + kOpenContainerSymbol;
  }
  return m;
}

const Module& module() {
  static const Module m = load_module();
  return m;
}

}  // namespace

struct VideoContainer::State {
  std::unique_ptr<ContainerBackend> backend;
};

VideoContainer::VideoContainer(std::vector<std::uint8_t> bytes, const VideoLimits& limits,
                               std::string param, std::function<bool()> cancelled)
    : state_(std::make_unique<State>()) {
  if (bytes.size() > limits.max_encoded_bytes) {
    throw video_too_large("the video is " + std::to_string(bytes.size()) + " bytes; the limit is " +
                              std::to_string(limits.max_encoded_bytes),
                          param);
  }
  if (bytes.empty()) throw bad_video("the video is empty", param);
  const Module& m = module();
  if (m.open == nullptr) {
    throw unsupported_video("video decoding is not available on this server: " + m.error +
                                "; send the frames as a frame list {\"frames\": [...], \"fps\": F}",
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

std::vector<vision::RgbImage> VideoContainer::decode(
    std::span<const std::int64_t> indices,
    const std::function<vision::RgbImage(vision::RgbImage)>& transform) {
  return state_->backend->decode(indices, transform);
}

}  // namespace clef::video
