#pragma once
// The number of members of an aggregate, counted by the compiler: the most
// initialisers T{...} takes. For the checks that a list (the protocols'
// fields, a table's columns) names every member of its struct, so that a
// member added without its entry fails to compile.

#include <cstddef>
#include <utility>

namespace memsweep {

// Converts to any member's type, so that T{AnyMember{}, ...} compiles for
// as many initialisers as the aggregate T has members, and no more.
struct AnyMember {
  template <typename T>
  operator T() const;  // never defined: only asked about, never called
};

template <typename T, std::size_t... I>
constexpr bool initialisable(std::index_sequence<I...>) {
  return requires { T{(void(I), AnyMember{})...}; };
}

template <typename T, std::size_t N = 0>
constexpr std::size_t member_count() {
  if constexpr (!initialisable<T>(std::make_index_sequence<N + 1>()))
    return N;
  else
    return member_count<T, N + 1>();
}

}  // namespace memsweep
