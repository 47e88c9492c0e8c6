//===- InputFileTest.cpp - The MLIR tools' bounded input reader -----------===//
//
// trn::readInputFile (trn/Support/InputFile.h): files and standard input
// become null-terminated buffers named as the parser reports them; what is
// not a regular file is refused with a hint, and standard input stops at
// the limit.
//
//===----------------------------------------------------------------------===//

#include "trn/Support/InputFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

/// Puts `bytes` on standard input (through a pipe) for the test's duration.
class StandardInputFromPipe {
public:
  explicit StandardInputFromPipe(const std::string &bytes) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    EXPECT_EQ(::write(fds[1], bytes.data(), bytes.size()),
              ssize_t(bytes.size()));
    ::close(fds[1]);
    saved = ::dup(STDIN_FILENO);
    ::dup2(fds[0], STDIN_FILENO);
    ::close(fds[0]);
  }
  ~StandardInputFromPipe() {
    ::dup2(saved, STDIN_FILENO);
    ::close(saved);
  }

private:
  int saved = -1;
};

TEST(InputFileTest, ReadsStandardInputUpToTheLimit) {
  std::string error;
  {
    StandardInputFromPipe input("module {}");
    auto buffer = mlir::trn::readInputFile("-", error, 9);
    ASSERT_TRUE(buffer) << error;
    EXPECT_EQ(buffer->getBuffer(), "module {}");
    EXPECT_EQ(buffer->getBufferIdentifier(), "<stdin>");
    EXPECT_EQ(buffer->getBufferEnd()[0], '\0');
  }
  {
    StandardInputFromPipe input("module {}");
    EXPECT_FALSE(mlir::trn::readInputFile("-", error, 8));
    EXPECT_EQ(error, "standard input is larger than the limit of 8 bytes");
  }
}

TEST(InputFileTest, RefusesWhatIsNotARegularFile) {
  std::string error;
  EXPECT_FALSE(mlir::trn::readInputFile("/dev/zero", error));
  EXPECT_EQ(error, "/dev/zero is not a regular file (a character device); "
                   "pass a .mlir file or '-' for standard input");
  EXPECT_FALSE(mlir::trn::readInputFile("/", error));
  EXPECT_EQ(error, "/ is not a regular file (a directory); pass a .mlir file "
                   "or '-' for standard input");
  EXPECT_FALSE(mlir::trn::readInputFile("/no/such/graph.mlir", error));
  EXPECT_EQ(error,
            "cannot read '/no/such/graph.mlir': No such file or directory");
}

TEST(InputFileTest, ReadsFilesByTheirPath) {
  const char *base = std::getenv("TMPDIR");
  std::string path = std::string(base && *base ? base : "/tmp") +
                     "/trn-input-file-test-" + std::to_string(::getpid()) +
                     ".mlir";
  FILE *file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  std::fputs("func.func @f() { return }", file);
  std::fclose(file);
  std::string error;
  auto buffer = mlir::trn::readInputFile(path, error);
  ASSERT_TRUE(buffer) << error;
  EXPECT_EQ(buffer->getBuffer(), "func.func @f() { return }");
  EXPECT_EQ(buffer->getBufferIdentifier(), path);
  EXPECT_EQ(buffer->getBufferEnd()[0], '\0');
  EXPECT_FALSE(mlir::trn::readInputFile(path, error, 10));
  EXPECT_EQ(error, path + " is 25 bytes, over the limit of 10 bytes");
  std::remove(path.c_str());
}

} // namespace
