// SIGTERM/SIGINT are taken synchronously by wait_for(); nothing dies of them. This executable
// holds only this test: a signal sent to the process must not reach a thread started earlier.

#include "server/serve_until_signal.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <thread>

namespace clef::server {
namespace {

using namespace std::chrono_literals;

TEST(ShutdownSignals, TimesOutThenTakesSigtermAndSigint) {
  ShutdownSignals signals;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(signals.wait_for(50ms), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 40ms);

  // A thread started after the constructor inherits the blocked mask; the signal is sent to the
  // whole process and waits for wait_for().
  std::thread sender([] { ::kill(::getpid(), SIGTERM); });
  sender.join();
  EXPECT_EQ(signals.wait_for(2000ms), SIGTERM);
  ::kill(::getpid(), SIGINT);
  EXPECT_EQ(signals.wait_for(2000ms), SIGINT);
}

TEST(ShutdownSignals, PendingSignalsAreDiscardedOnDestruction) {
  {
    ShutdownSignals signals;
    ::kill(::getpid(), SIGTERM);  // never waited for
  }
  SUCCEED() << "the process survived the restored mask";
}

}  // namespace
}  // namespace clef::server
