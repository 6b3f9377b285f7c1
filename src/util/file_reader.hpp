#pragma once
// clef::util::FileReader: a file opened read-only for positional reads (pread), RAII-closed.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace clef::util {

/// A regular file opened read-only. Reads are positional (pread, no shared cursor), so several
/// threads may read one FileReader at once. Move-only.
class FileReader {
 public:
  /// Opens `path`. Throws clef::Error (model_error) when it cannot be opened or stat'ed, or is
  /// not a regular file.
  explicit FileReader(const std::filesystem::path& path);
  ~FileReader();
  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&& other) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  /// Reads exactly out.size() bytes at byte `offset`. Throws model_error on a read error or when
  /// the file ends first.
  void read_at(std::uint64_t offset, std::span<std::byte> out) const;
  /// read_at for callers that cannot throw (C callbacks): false on a read error or a short read.
  bool try_read_at(std::uint64_t offset, std::span<std::byte> out) const noexcept;
  /// Hints the kernel that the file will be read front to back (posix_fadvise SEQUENTIAL).
  void advise_sequential() const noexcept;

  /// The file's size in bytes when it was opened.
  std::uint64_t size() const noexcept { return size_; }
  const std::filesystem::path& path() const noexcept { return path_; }
  /// The open file descriptor (valid while this object lives).
  int native_handle() const noexcept { return fd_; }

 private:
  void close() noexcept;

  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace clef::util
