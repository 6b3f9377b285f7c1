// util::FileReader and util::MappedFile: the bytes of a file by positional reads and by a map,
// short reads and non-files refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "util/error.hpp"
#include "util/file_reader.hpp"
#include "util/mapped_file.hpp"

namespace clef::util {
namespace {

class FileAccess : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(path_, std::ios::binary) << content_; }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_ = [] {
    const auto d = std::filesystem::temp_directory_path() /
                   ("clef_util_" + std::to_string(::getpid()) + "_" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(d);
    return d;
  }();
  std::filesystem::path path_ = dir_ / "f.bin";
  std::string content_ = "0123456789abcdef";
};

TEST_F(FileAccess, ReaderReadsAtOffsetsAndRefusesShortReads) {
  FileReader f(path_);
  EXPECT_EQ(f.size(), content_.size());
  std::string got(4, '\0');
  f.read_at(10, std::as_writable_bytes(std::span(got)));
  EXPECT_EQ(got, "abcd");
  EXPECT_TRUE(f.try_read_at(12, std::as_writable_bytes(std::span(got))));
  EXPECT_EQ(got, "cdef");
  EXPECT_FALSE(f.try_read_at(14, std::as_writable_bytes(std::span(got))));
  EXPECT_THROW(f.read_at(14, std::as_writable_bytes(std::span(got))), clef::Error);
  const FileReader moved(std::move(f));
  EXPECT_EQ(moved.size(), content_.size());
}

TEST_F(FileAccess, MapHoldsTheWholeFile) {
  const MappedFile m(path_);
  const auto bytes = m.bytes();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), content_);
  std::ofstream(dir_ / "empty.bin", std::ios::binary);
  EXPECT_TRUE(MappedFile(dir_ / "empty.bin").bytes().empty());
}

TEST_F(FileAccess, MissingFilesAndDirectoriesAreModelErrors) {
  for (const auto& p : {dir_ / "missing.bin", dir_}) {
    try {
      MappedFile m(p);
      ADD_FAILURE() << p << " was opened";
    } catch (const clef::Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::model_error);
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
    }
    EXPECT_THROW(FileReader{p}, clef::Error);
  }
}

}  // namespace
}  // namespace clef::util
