#pragma once
// clef::util::MappedFile: a read-only memory map of a whole file (RAII, move-only).

#include <cstddef>
#include <filesystem>
#include <span>

namespace clef::util {

/// A whole file mapped read-only. The mapping lives as long as the object.
class MappedFile {
 public:
  /// Maps `path`. Throws clef::Error (model_error) when the file is missing, is not a regular
  /// file or cannot be mapped. An empty file gives an empty byte span (nothing is mapped).
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The file's bytes.
  std::span<const std::byte> bytes() const noexcept {
    return {static_cast<const std::byte*>(addr_), size_};
  }

  /// Drops the mapped pages that overlap `range` (a part of bytes()) from this process's
  /// resident memory (madvise MADV_DONTNEED; they are read from the file again if touched): to
  /// read a large file piece by piece without its pages adding up in RSS. Best effort.
  void drop_pages(std::span<const std::byte> range) const noexcept;

 private:
  void release() noexcept;
  void* addr_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace clef::util
