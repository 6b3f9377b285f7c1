#include "util/physical_memory.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

namespace clef::util {
namespace {

/// The number in the first line of `path` ("max" and anything unreadable: none).
std::optional<std::uint64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  std::uint64_t value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

/// MemAvailable of /proc/meminfo, bytes.
std::optional<std::uint64_t> mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream fields(line.substr(13));
    std::uint64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return std::nullopt;
}

/// The memory limit of this process's cgroup: v2 (the "0::PATH" line of /proc/self/cgroup,
/// PATH/memory.max) or v1 (the "memory" controller's PATH/memory.limit_in_bytes); none when
/// unlimited or unreadable.
std::optional<std::uint64_t> cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::optional<std::uint64_t> limit;
  while (std::getline(in, line)) {
    const std::size_t first = line.find(':');
    const std::size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::optional<std::uint64_t> found;
    if (controllers.empty()) {
      found = read_number("/sys/fs/cgroup" + path + "/memory.max");
    } else if (controllers == "memory" || controllers.find("memory,") != std::string::npos ||
               controllers.ends_with(",memory")) {
      found = read_number("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
    }
    // v1 writes "no limit" as the largest page-aligned int64.
    if (found && *found < (std::uint64_t{1} << 62) && (!limit || *found < *limit)) limit = found;
  }
  return limit;
}

}  // namespace

std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t{8} << 30;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

HostMemory available_host_memory() {
  HostMemory out{physical_memory_bytes(), "physical memory"};
  if (const auto available = mem_available()) out = {*available, "available (MemAvailable)"};
  if (const auto limit = cgroup_limit(); limit && *limit < out.bytes) {
    out = {*limit, "the cgroup's memory limit"};
  }
  return out;
}

namespace {

/// A "Key:   123 kB" line of /proc/self/status, bytes; 0 when absent.
std::uint64_t status_bytes(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0) {
      return std::strtoull(line.c_str() + prefix.size(), nullptr, 10) * 1024;
    }
  }
  return 0;
}

}  // namespace

std::uint64_t resident_bytes() {
  return status_bytes("VmRSS");
}

std::uint64_t peak_resident_bytes() {
  return status_bytes("VmHWM");
}

bool reset_peak_resident() {
  std::ofstream refs("/proc/self/clear_refs");
  refs << "5";
  refs.flush();
  return static_cast<bool>(refs);
}

}  // namespace clef::util
