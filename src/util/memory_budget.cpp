#include "util/memory_budget.hpp"

#include <algorithm>

#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace clef::util {

MemoryBudget::MemoryBudget(std::size_t total_bytes, std::size_t per_request_bytes)
    : total_(total_bytes), per_request_(per_request_bytes) {}

std::unique_ptr<MemoryBudget::Lease> MemoryBudget::lease() {
  return std::unique_ptr<Lease>(new Lease(*this));
}

MemoryBudget::Lease::~Lease() {
  budget_.in_use_.fetch_sub(held_);
}

void MemoryBudget::Lease::charge(std::size_t bytes) {
  if (budget_.per_request_ > 0 && held_ + bytes > budget_.per_request_) {
    throw Error(ErrorKind::payload_too_large, "request_too_large",
                "preparing this request needs more than the " + human_bytes(budget_.per_request_) +
                    " of memory one request may use (--prepare-memory-per-request): send a "
                    "smaller request (the state costs most: its parsed JSON, and its "
                    "tokenization, which is dearest for long runs without spaces)");
  }
  if (budget_.total_ > 0) {
    std::size_t now = budget_.in_use_.load();
    do {
      if (now + bytes > budget_.total_) {
        throw Error(ErrorKind::overloaded, "preparation_memory_full",
                    "the requests in preparation hold " + human_bytes(now) + " of the " +
                        human_bytes(budget_.total_) +
                        " this server prepares requests in (--prepare-memory); this one needs " +
                        human_bytes(held_ + bytes) + ": retry");
      }
    } while (!budget_.in_use_.compare_exchange_weak(now, now + bytes));
  } else {
    budget_.in_use_.fetch_add(bytes);
  }
  held_ += bytes;
  peak_ = std::max(peak_, held_);
}

void MemoryBudget::Lease::release(std::size_t bytes) {
  bytes = std::min(bytes, held_);
  held_ -= bytes;
  budget_.in_use_.fetch_sub(bytes);
}

MemoryCharge MemoryBudget::Lease::as_charge() {
  return [this](std::ptrdiff_t bytes) {
    if (bytes >= 0) {
      charge(static_cast<std::size_t>(bytes));
    } else {
      release(static_cast<std::size_t>(-bytes));
    }
  };
}

}  // namespace clef::util
