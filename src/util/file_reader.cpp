#include "util/file_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "util/error.hpp"

namespace clef::util {

FileReader::FileReader(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw model_error("cannot open " + path.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    close();
    throw model_error("cannot stat " + path.string() + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close();
    throw model_error(path.string() + " is not a regular file");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

FileReader::~FileReader() {
  close();
}

FileReader::FileReader(FileReader&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(std::exchange(other.size_, 0)) {}

FileReader& FileReader::operator=(FileReader&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void FileReader::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool FileReader::try_read_at(std::uint64_t offset, std::span<std::byte> out) const noexcept {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

void FileReader::read_at(std::uint64_t offset, std::span<std::byte> out) const {
  if (!try_read_at(offset, out)) {
    throw model_error("short read of " + path_.string() + ": " + std::to_string(out.size()) +
                      " bytes at offset " + std::to_string(offset));
  }
}

void FileReader::advise_sequential() const noexcept {
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

}  // namespace clef::util
