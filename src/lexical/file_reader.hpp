#pragma once
// A read-only file with positional reads (pread), RAII-closed.

#include <cstdint>
#include <span>
#include <string>

namespace clef::lexical {

class FileReader {
 public:
  /// Opens `path` read-only; throws clef::Error (model_error) if it cannot.
  explicit FileReader(const std::string& path);
  ~FileReader();
  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&&) = delete;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  /// Reads exactly out.size() bytes at `offset`; throws clef::Error (model_error) on a short read.
  void read_at(std::uint64_t offset, std::span<std::byte> out) const;
  std::uint64_t size() const noexcept { return size_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace clef::lexical
