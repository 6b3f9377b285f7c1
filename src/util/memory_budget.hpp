#pragma once
// A memory budget for request preparation (issue 52): what one request may hold while the server
// reads, parses, renders and tokenizes it, and what all requests in preparation may hold together.
// Preparation code charges bytes before it allocates them (a charge over either limit throws, so
// the request is refused before the memory is spent) and releases transient ones after use; a
// Lease returns whatever it still holds when it ends.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

namespace clef::util {

/// What preparation code calls to account for memory: +bytes before allocating them (throws
/// clef::Error when the budget cannot take them), -bytes after freeing them. An empty function
/// accounts nothing (the CLI, tests).
using MemoryCharge = std::function<void(std::ptrdiff_t bytes)>;

/// Shared by every request in preparation. Thread-safe.
class MemoryBudget {
 public:
  /// `total_bytes`: all leases together; `per_request_bytes`: one lease. 0: no limit.
  MemoryBudget(std::size_t total_bytes, std::size_t per_request_bytes);

  /// One request's share. Not thread-safe itself (one request, one thread); its destructor
  /// returns what it holds to the budget.
  class Lease {
   public:
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    /// Takes `bytes` more. Throws clef::Error: payload_too_large (413, code
    /// "request_too_large") when this request would hold more than the per-request limit;
    /// overloaded (429, code "preparation_memory_full") when all requests together would pass
    /// the total. Either message names the limit and its flag. Nothing is taken when it throws.
    void charge(std::size_t bytes);
    /// Gives back `bytes` (at most what it holds).
    void release(std::size_t bytes);
    /// charge() for bytes > 0, release() for bytes < 0: a MemoryCharge.
    MemoryCharge as_charge();
    /// Bytes held now, and the most held at once.
    std::size_t held() const { return held_; }
    std::size_t peak() const { return peak_; }

   private:
    friend class MemoryBudget;
    explicit Lease(MemoryBudget& budget) : budget_(budget) {}
    MemoryBudget& budget_;
    std::size_t held_ = 0;
    std::size_t peak_ = 0;
  };

  /// A new lease holding nothing.
  std::unique_ptr<Lease> lease();
  /// Bytes all leases hold now.
  std::size_t in_use() const { return in_use_.load(); }
  std::size_t total_bytes() const { return total_; }
  std::size_t per_request_bytes() const { return per_request_; }

 private:
  const std::size_t total_;
  const std::size_t per_request_;
  std::atomic<std::size_t> in_use_{0};
};

}  // namespace clef::util
