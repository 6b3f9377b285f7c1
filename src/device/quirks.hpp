#pragma once
// Driver bugs clef works around, told in one place (device/) from what a device is, and spelled
// once wherever they change what a component does (the joint schema head, the vision tower).

#include <string_view>

namespace clef::device {

/// What a device's driver needs done differently.
struct Quirks {
  /// Mesa's lavapipe (Vulkan devices named "llvmpipe ..."; Mesa 22.3) reads every binding of a
  /// bound descriptor set, stale ones too: a compute buffer freed while the backend that
  /// dispatched over it lives is read after free (heap corruption, a crash at a later call:
  /// docs/performance.md, "The device path on Vulkan"). So a buffer a larger graph outgrows is
  /// kept until its backend goes (the joint schema head), or the component is loaded afresh with
  /// a new backend (the vision tower), instead of being freed.
  bool stale_descriptor_reads = false;
};

/// The quirks of a GPU whose driver describes it as `description` (ggml's device description,
/// the Vulkan device name). A CPU, or any other device: none.
constexpr Quirks quirks_of(std::string_view description) {
  Quirks q;
  q.stale_descriptor_reads = description.starts_with("llvmpipe");
  return q;
}

}  // namespace clef::device
