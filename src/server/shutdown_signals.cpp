#include "server/shutdown_signals.hpp"

#include <pthread.h>

#include <ctime>

namespace clef::server {

ShutdownSignals::ShutdownSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
}

ShutdownSignals::~ShutdownSignals() {
  const timespec zero{0, 0};
  while (sigtimedwait(&set_, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

int ShutdownSignals::wait_for(std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) timeout = std::chrono::milliseconds(0);
  timespec ts{static_cast<time_t>(timeout.count() / 1000),
              static_cast<long>((timeout.count() % 1000) * 1000000)};
  int signo = sigtimedwait(&set_, nullptr, &ts);
  return signo > 0 ? signo : 0;  // -1: timeout (EAGAIN) or EINTR
}

}  // namespace clef::server
