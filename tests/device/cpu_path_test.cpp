// The CPU's matrix path (device/cpu_path.hpp): the engine parameter cpu_amx's values, what each
// does to ggml's AMX buffer type in a process, and the phrase logs and `clef info` print. The AMX
// path itself is tested in tests/backbone/amx_path_test.cpp.
#include "device/cpu_path.hpp"

#include <gtest/gtest.h>

#include <string>

#include "util/error.hpp"

namespace {

using clef::device::CpuAmx;

TEST(CpuAmx, ParsesAutoOnOffAndRefusesOthersByName) {
  EXPECT_EQ(clef::device::parse_cpu_amx("auto"), CpuAmx::automatic);
  EXPECT_EQ(clef::device::parse_cpu_amx("on"), CpuAmx::on);
  EXPECT_EQ(clef::device::parse_cpu_amx("1"), CpuAmx::on);
  EXPECT_EQ(clef::device::parse_cpu_amx("off"), CpuAmx::off);
  EXPECT_EQ(clef::device::parse_cpu_amx("false"), CpuAmx::off);
  for (CpuAmx m : {CpuAmx::automatic, CpuAmx::on, CpuAmx::off}) {
    EXPECT_EQ(clef::device::parse_cpu_amx(clef::device::to_string(m)), m);
  }
  try {
    clef::device::parse_cpu_amx("yes please");
    FAIL() << "accepted";
  } catch (const clef::Error& e) {
    EXPECT_EQ(e.param(), "cpu_amx");
  }
}

TEST(CpuAmx, OffOffersNoAmxBufferType) {
  clef::device::use_cpu_amx(CpuAmx::off);
  EXPECT_FALSE(clef::device::amx_offered());
  EXPECT_NO_THROW(clef::device::use_cpu_amx(CpuAmx::automatic));  // accepts the process's choice
  EXPECT_EQ(clef::device::describe_cpu_path(true).find("AMX"), std::string::npos);
}

TEST(CpuAmx, AutoOffersAmxOnlyWhereTheCpuReportsIt) {
  clef::device::use_cpu_amx(CpuAmx::automatic);
  if (!clef::device::cpu_reports_amx()) {
    EXPECT_FALSE(clef::device::amx_offered());
  }
}

TEST(CpuAmx, OnIsRefusedByNameWhereThereIsNoAmx) {
  if (clef::device::cpu_reports_amx()) GTEST_SKIP() << "this CPU reports AMX";
  try {
    clef::device::use_cpu_amx(CpuAmx::on);
    FAIL() << "cpu_amx=on accepted on a CPU without AMX";
  } catch (const clef::Error& e) {
    EXPECT_EQ(e.param(), "cpu_amx");
    EXPECT_NE(std::string(e.what()).find("CPUID"), std::string::npos) << e.what();
  }
}

TEST(CpuPath, NamesTheVectorIsaAndTheWeights) {
  const std::string isa(clef::device::vector_isa());
  EXPECT_FALSE(isa.empty());
  EXPECT_EQ(clef::device::describe_cpu_path(false), isa + ", plain weights");
  EXPECT_NE(clef::device::describe_cpu_path(true).find(isa), std::string::npos);
}

}  // namespace
