//===- FileTest.cpp - Bounded reads of input files (trnrt/File.h) ---------===//
//
// Regular files are read whole up to the limit and not a byte past it;
// directories, devices and FIFOs are refused without being read (a FIFO
// without a writer would block the open, /dev/zero would never end);
// streams stop at the limit.
//
//===----------------------------------------------------------------------===//

#include "trnrt/File.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace trnrt;

namespace {

class FileTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/trnrt-file-test-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    ASSERT_NE(nullptr, ::mkdtemp(buffer.data())) << std::strerror(errno);
    directory = buffer.data();
  }

  void TearDown() override {
    for (const std::string &name : created)
      ::unlink(path(name).c_str());
    ::rmdir(path("dir").c_str());
    ::rmdir(directory.c_str());
  }

  std::string path(const std::string &name) const {
    return directory + "/" + name;
  }

  void write(const std::string &name, const std::string &bytes) {
    FILE *file = std::fopen(path(name).c_str(), "wb");
    ASSERT_NE(file, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), file);
    std::fclose(file);
    created.push_back(name);
  }

  std::string directory;
  std::vector<std::string> created;
};

TEST_F(FileTest, ReadsRegularFilesUpToTheLimit) {
  write("a.mlir", "0123456789");
  std::string out, error;
  ReadFailure failure;
  ASSERT_TRUE(readRegularFile(path("a.mlir"), 10, out, error)) << error;
  EXPECT_EQ(out, "0123456789");
  EXPECT_FALSE(readRegularFile(path("a.mlir"), 9, out, error, &failure));
  EXPECT_EQ(failure.kind, ReadFailure::TooLarge);
  EXPECT_EQ(error, path("a.mlir") + " is 10 bytes, over the limit of 9 bytes");

  write("empty", "");
  ASSERT_TRUE(readRegularFile(path("empty"), 0, out, error)) << error;
  EXPECT_EQ(out, "");

  // Relative to a directory descriptor, as the compile cache reads entries.
  int dirFd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dirFd, 0);
  EXPECT_TRUE(readRegularFile("a.mlir", 100, out, error, nullptr, dirFd));
  EXPECT_EQ(out, "0123456789");
  ::close(dirFd);
}

TEST_F(FileTest, RefusesWhatIsNotARegularFile) {
  std::string out, error;
  ReadFailure failure;
  EXPECT_FALSE(readRegularFile(path("missing"), 100, out, error, &failure));
  EXPECT_EQ(failure.kind, ReadFailure::Open);
  EXPECT_EQ(failure.err, ENOENT);
  EXPECT_EQ(error,
            "cannot read '" + path("missing") + "': No such file or directory");

  ASSERT_EQ(::mkdir(path("dir").c_str(), 0700), 0);
  EXPECT_FALSE(readRegularFile(path("dir"), 100, out, error, &failure));
  EXPECT_EQ(failure.kind, ReadFailure::NotRegular);
  EXPECT_EQ(error, path("dir") + " is not a regular file (a directory)");

  // Would never end.
  EXPECT_FALSE(readRegularFile("/dev/zero", 100, out, error, &failure));
  EXPECT_EQ(failure.kind, ReadFailure::NotRegular);
  EXPECT_EQ(error, "/dev/zero is not a regular file (a character device)");

  // Without a writer, opening it for reading would wait forever.
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  created.push_back("fifo");
  EXPECT_FALSE(readRegularFile(path("fifo"), 100, out, error, &failure));
  EXPECT_EQ(failure.kind, ReadFailure::NotRegular);
  EXPECT_EQ(error, path("fifo") + " is not a regular file (a FIFO)");
  EXPECT_EQ(openRegularFile(path("fifo"), 100, error), -1);
}

TEST_F(FileTest, StreamsStopAtTheLimit) {
  std::string out, error;
  ReadFailure failure;
  // What `tool - < /dev/zero` reads: the limit, then an error.
  int zero = ::open("/dev/zero", O_RDONLY);
  ASSERT_GE(zero, 0);
  EXPECT_FALSE(
      readToEnd(zero, "standard input", 1 << 20, out, error, &failure));
  EXPECT_EQ(failure.kind, ReadFailure::TooLarge);
  EXPECT_EQ(error, "standard input is larger than the limit of 1 MiB");
  EXPECT_TRUE(out.empty());
  ::close(zero);

  // A pipe within the limit, and exactly at it.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "abcdef", 6), 6);
  ::close(fds[1]);
  EXPECT_TRUE(readToEnd(fds[0], "pipe", 6, out, error)) << error;
  EXPECT_EQ(out, "abcdef");
  ::close(fds[0]);

  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "abcdefg", 7), 7);
  ::close(fds[1]);
  EXPECT_FALSE(readToEnd(fds[0], "pipe", 6, out, error, &failure));
  EXPECT_EQ(failure.kind, ReadFailure::TooLarge);
  EXPECT_EQ(error, "pipe is larger than the limit of 6 bytes");
  ::close(fds[0]);
}

TEST_F(FileTest, LongerInputsContinueInChunks) {
  // Read without a size hint, as a stream: the first buffer, then chunks,
  // reassembled in order.
  std::string bytes;
  for (int i = 0; i < 300000; ++i)
    bytes.push_back(char('a' + i % 23));
  write("long", bytes);
  std::string out, error;
  ReadFailure failure;
  int fd = ::open(path("long").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(readToEnd(fd, "long", 300000, out, error)) << error;
  EXPECT_EQ(out, bytes);
  ASSERT_EQ(::lseek(fd, 0, SEEK_SET), 0);
  EXPECT_FALSE(readToEnd(fd, "long", 299999, out, error, &failure));
  EXPECT_EQ(failure.kind, ReadFailure::TooLarge);
  EXPECT_TRUE(out.empty());
  ::close(fd);
}

TEST(FileSizeTest, FormatsWholeUnits) {
  EXPECT_EQ(formatByteSize(uint64_t(4) << 30), "4 GiB");
  EXPECT_EQ(formatByteSize(uint64_t(64) << 20), "64 MiB");
  EXPECT_EQ(formatByteSize(2048), "2 KiB");
  EXPECT_EQ(formatByteSize((uint64_t(4) << 30) + 2600), "4294969896 bytes");
  EXPECT_EQ(formatByteSize(0), "0 bytes");
}

} // namespace
