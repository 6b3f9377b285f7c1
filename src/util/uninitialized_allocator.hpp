#pragma once
// An allocator for buffers a producer overwrites whole (a backbone memory snapshot: tens of MB that
// llama_state_seq_get_data writes): std::vector's resize with it leaves new elements
// default-initialised, for bytes uninitialised, where std::allocator value-initialises them (a
// memset of the whole buffer first: 1.4% of a 9B-shaped decision, docs/performance.md).

#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace clef::util {

/// std::allocator<T> whose argument-less construct default-initialises.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() noexcept = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>& /*other*/) noexcept {}

  /// Default-initialises *p (no value for trivial types).
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  /// Constructs *p from args as std::allocator does.
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    std::construct_at(p, std::forward<Args>(args)...);
  }
};

}  // namespace clef::util
