//===- CommandLineValuesTest.cpp - sizes and durations --------------------===//
//
// include/trn/Support/CommandLineValues.h: what trn-cc, trn-cache and
// trn-parallel-compile accept for a size or a duration.
//
//===----------------------------------------------------------------------===//

#include "trn/Support/CommandLineValues.h"

#include <gtest/gtest.h>

using namespace mlir::trn;

namespace {

TEST(CommandLineValuesTest, Sizes) {
  EXPECT_EQ(parseSize("4096"), 4096);
  EXPECT_EQ(parseSize("0"), 0);
  EXPECT_EQ(parseSize("1k"), 1024);
  EXPECT_EQ(parseSize("512M"), 512LL << 20);
  EXPECT_EQ(parseSize("10G"), 10LL << 30);
  EXPECT_EQ(parseSize("10GiB"), 10LL << 30);
  EXPECT_EQ(parseSize("10gb"), 10LL << 30);
  EXPECT_EQ(parseSize("1.5T"), 3LL << 39);
  EXPECT_EQ(parseSize(" 2 G "), 2LL << 30);
  for (const char *bad :
       {"", "lots", "-5", "10X", "1.2.3", "G", "1e3", "99999999999T"})
    EXPECT_FALSE(parseSize(bad)) << bad;
}

TEST(CommandLineValuesTest, Durations) {
  EXPECT_EQ(parseDuration("30s"), 30);
  EXPECT_EQ(parseDuration("90"), 90);
  EXPECT_EQ(parseDuration("15m"), 900);
  EXPECT_EQ(parseDuration("2h"), 7200);
  EXPECT_EQ(parseDuration("1.5h"), 5400);
  EXPECT_EQ(parseDuration("7d"), 7 * 86400);
  for (const char *bad : {"", "soon", "-1m", "5y", "m", "1.5.h"})
    EXPECT_FALSE(parseDuration(bad)) << bad;
}

TEST(CommandLineValuesTest, FormattedSeconds) {
  EXPECT_EQ(formatSeconds(0), "0.0 ms");
  EXPECT_EQ(formatSeconds(0.0008), "0.8 ms");
  EXPECT_EQ(formatSeconds(0.85), "850.0 ms");
  EXPECT_EQ(formatSeconds(2.345), "2.35 s");
  EXPECT_EQ(formatSeconds(59.5), "59.50 s");
  EXPECT_EQ(formatSeconds(245), "4m05s");
  EXPECT_EQ(formatSeconds(3600), "1h00m");
  EXPECT_EQ(formatSeconds(7385), "2h03m");
}

} // namespace
