#include "head/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "util/error.hpp"

namespace clef::head {

namespace {

/// Closes a file descriptor when it goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw model_error("cannot open " + path.string() + ": " + std::strerror(errno));
  }
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw model_error("cannot stat " + path.string() + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw model_error(path.string() + " is not a regular file");
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0) return;
  void* addr = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
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

}  // namespace clef::head
