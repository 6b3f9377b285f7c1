#pragma once
// A child process for tests: stdout on a pipe (read line by line with a timeout), stderr to a
// file, killed with SIGKILL if the test leaves it running.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace clef::server::testing {

class ChildProcess {
 public:
  /// Starts argv[0] with `argv` and the current environment plus `extra_env` ("NAME=value").
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
               const std::string& stderr_path) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);

    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> argv_c;
    for (const auto& a : argv) argv_c.push_back(const_cast<char*>(a.c_str()));
    argv_c.push_back(nullptr);
    std::vector<char*> env_c;
    for (const auto& e : env) env_c.push_back(const_cast<char*>(e.c_str()));
    env_c.push_back(nullptr);

    pid_t pid = -1;
    if (posix_spawn(&pid, argv_c[0], &actions, &attr, argv_c.data(), env_c.data()) == 0) {
      pid_ = pid;
    }
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(fds[1]);
    out_fd_ = fds[0];
  }

  ~ChildProcess() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (out_fd_ >= 0) ::close(out_fd_);
  }

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !exit_code_; }

  /// One line of stdout (without '\n'); empty on timeout or end of output.
  std::string read_line(std::chrono::milliseconds timeout) {
    auto until = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return {};
      pollfd p{out_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return {};
      char chunk[512];
      ssize_t n = ::read(out_fd_, chunk, sizeof chunk);
      if (n <= 0) return {};
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  void send_signal(int signo) {
    if (running()) ::kill(pid_, signo);
  }

  /// Waits for the exit; the exit status (128 + signal for a signal death), or nullopt on timeout.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    auto until = std::chrono::steady_clock::now() + timeout;
    while (!exit_code_) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > until) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return exit_code_;
  }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffer_;
  std::optional<int> exit_code_;
};

/// The port in a "clef serve: listening on http://127.0.0.1:PORT" line, or -1.
inline int port_from_banner(const std::string& line) {
  auto colon = line.rfind(':');
  if (line.find("listening on http") == std::string::npos || colon == std::string::npos) {
    return -1;
  }
  try {
    return std::stoi(line.substr(colon + 1));
  } catch (...) {
    return -1;
  }
}

}  // namespace clef::server::testing
