#include "util/mapped_file.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "util/error.hpp"
#include "util/file_reader.hpp"

namespace clef::util {

MappedFile::MappedFile(const std::filesystem::path& path) {
  const FileReader file(path);  // open, fstat, regular-file check; closed after mapping
  size_ = static_cast<std::size_t>(file.size());
  if (size_ == 0) return;
  void* addr = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.native_handle(), 0);
  if (addr == MAP_FAILED) {
    size_ = 0;
    throw model_error("cannot map " + path.string() + ": " + std::strerror(errno));
  }
  addr_ = addr;
}

MappedFile::~MappedFile() {
  release();
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (addr_ != nullptr) ::munmap(addr_, size_);
  addr_ = nullptr;
  size_ = 0;
}

void MappedFile::drop_pages(std::span<const std::byte> range) const noexcept {
  if (range.empty() || addr_ == nullptr) return;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<std::uintptr_t>(addr_);
  const auto first = reinterpret_cast<std::uintptr_t>(range.data()) / page * page;
  const auto last =
      std::min(reinterpret_cast<std::uintptr_t>(range.data()) + range.size(), base + size_);
  if (first < base || last <= first) return;
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace clef::util
