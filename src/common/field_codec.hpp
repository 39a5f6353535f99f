#pragma once
// A message as its fields one after the other, between two ends that run
// the same build (a rank and its trial process, the ranks of a sweep):
// values as their bytes in the host's order, strings and lists with a
// 64-bit count first, an optional with a byte that says whether it is there.
// No schema travels, so both ends must walk the same fields: each struct's
// fields are listed once, in a `Fields` object that both encode_fields() and
// decode_fields() walk, and a field added there is sent and received alike.
//
// A `Fields` object is a set of overloads, one per struct, each calling
// `each(name, member)` for the struct's fields in order, const when encoding:
//
//   struct MyFields {
//     constexpr void operator()(FieldsOf<Shape> auto& shape, auto&& each) const {
//       each("width", shape.width);
//       each("kind", shape.kind);
//     }
//     bool known(ShapeKind kind) const { return kind <= ShapeKind::last; }
//   };
//
// An enum field needs a `known` overload: decoding refuses a value this
// build has no name for rather than carry it on. Decoding checks what the
// bytes can check (a message that ends inside a field or goes on past its
// last, a count past its end, a bool that is neither, an unknown enum) and
// throws FieldCodecError naming the message and the field.

#include "common/member_count.hpp"

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace memsweep {

// Each protocol turns it into its own error (the trial pipe's ProtocolError,
// the sweep's "are all ranks running the same build?").
class FieldCodecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The first parameter of a Fields overload: `Struct`, const (encoding) or not.
template <typename T, typename Struct>
concept FieldsOf = std::same_as<std::remove_const_t<T>, Struct>;

// The bytes, appended.
class FieldWriter {
 public:
  template <typename T>
  requires std::is_trivially_copyable_v<T>
  void value(const T& value) {
    const auto* bytes = reinterpret_cast<const std::byte*>(&value);
    bytes_.insert(bytes_.end(), bytes, bytes + sizeof(T));
  }
  void count(std::size_t items) { value(static_cast<std::uint64_t>(items)); }
  void text(std::string_view text);

  std::vector<std::byte> take() && { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

// The bytes, read in order. It knows the field it is in (enter/leave) so
// that an error can name it.
class FieldReader {
 public:
  // `message` names it in errors: "the setup message", "the job frame".
  FieldReader(std::span<const std::byte> bytes, std::string_view message) : bytes_(bytes), message_(message) {}

  template <typename T>
  requires std::is_trivially_copyable_v<T> T value() {
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  // A list's count, refused when its items, at least `item_bytes` each,
  // cannot fit in what is left: a count is never trusted with an allocation.
  std::size_t count(std::size_t item_bytes);
  std::string text();
  bool flag();  // a bool's byte: 0 or 1, anything else refused

  void enter(std::string_view field) { path_.push_back(field); }
  void leave() { path_.pop_back(); }

  // Every byte must have been read: a longer message is another message.
  void finish() const;
  // Throws FieldCodecError: "the <message> (<size> bytes): <what>".
  [[noreturn]] void fail(std::string_view what) const;
  // The field being read, as a path: "trial.dataset.synthetic.noise".
  std::string field() const { return path_text(path_); }

 private:
  static std::string path_text(const std::vector<std::string_view>& path);
  const std::byte* take(std::size_t bytes);

  std::span<const std::byte> bytes_;
  std::string_view message_;
  std::size_t offset_ = 0;
  std::vector<std::string_view> path_;       // names from the Fields lists: string literals
  std::vector<std::string_view> last_read_;  // the path of the last field read, for bytes left over
};

namespace common::detail {

template <typename T>
inline constexpr bool kIsVector = false;
template <typename T>
inline constexpr bool kIsVector<std::vector<T>> = true;
template <typename T>
inline constexpr bool kIsOptional = false;
template <typename T>
inline constexpr bool kIsOptional<std::optional<T>> = true;
template <typename T>
inline constexpr bool kIsPair = false;
template <typename A, typename B>
inline constexpr bool kIsPair<std::pair<A, B>> = true;

template <typename Fields, typename T>
concept Listed = requires(const Fields& fields, T& value) {
  fields(value, [](std::string_view, auto&) {});
};

template <typename Fields, typename T>
void write_field(FieldWriter& out, const T& value, const Fields& fields) {
  if constexpr (Listed<Fields, const T>) {
    fields(value, [&](std::string_view, const auto& member) { write_field(out, member, fields); });
  } else if constexpr (std::same_as<T, std::string>) {
    out.text(value);
  } else if constexpr (kIsVector<T>) {
    out.count(value.size());
    for (const auto& item : value) write_field(out, item, fields);
  } else if constexpr (kIsOptional<T>) {
    out.value(value.has_value());
    if (value) write_field(out, *value, fields);
  } else if constexpr (kIsPair<T>) {
    write_field(out, value.first, fields);
    write_field(out, value.second, fields);
  } else {
    static_assert(std::is_trivially_copyable_v<T>, "a field the codec cannot write: list its struct's fields");
    out.value(value);
  }
}

// The fewest bytes an item of a list can take: a count past what is left
// is refused before anything is allocated for it.
template <typename Fields, typename T>
constexpr std::size_t least_bytes() {
  if constexpr (std::is_trivially_copyable_v<T> && !Listed<Fields, T>) return sizeof(T);
  return 1;
}

template <typename Fields, typename T>
void read_field(FieldReader& in, T& value, const Fields& fields) {
  if constexpr (Listed<Fields, T>) {
    fields(value, [&](std::string_view name, auto& member) {
      in.enter(name);
      read_field(in, member, fields);
      in.leave();
    });
  } else if constexpr (std::same_as<T, std::string>) {
    value = in.text();
  } else if constexpr (kIsVector<T>) {
    value.resize(in.count(least_bytes<Fields, typename T::value_type>()));
    for (auto& item : value) read_field(in, item, fields);
  } else if constexpr (kIsOptional<T>) {
    value.reset();
    if (in.flag()) read_field(in, value.emplace(), fields);
  } else if constexpr (kIsPair<T>) {
    read_field(in, value.first, fields);
    read_field(in, value.second, fields);
  } else if constexpr (std::same_as<T, bool>) {
    value = in.flag();
  } else if constexpr (std::is_enum_v<T>) {
    static_assert(
        requires { fields.known(value); }, "an enum field needs a known() overload in its Fields");
    const auto raw = in.value<std::underlying_type_t<T>>();
    value = static_cast<T>(raw);
    if (!fields.known(value)) in.fail("unknown value " + std::to_string(raw) + " in its field " + in.field());
  } else {
    static_assert(std::is_trivially_copyable_v<T>, "a field the codec cannot read: list its struct's fields");
    value = in.value<T>();
  }
}

}  // namespace common::detail

// `message`'s fields as bytes.
template <typename T, typename Fields>
std::vector<std::byte> encode_fields(const T& message, const Fields& fields) {
  FieldWriter out;
  common::detail::write_field(out, message, fields);
  return std::move(out).take();
}

// Whether `fields` lists every member of the aggregate `T`
// (member_count.hpp), for a static_assert beside each protocol's lists: a
// member added to a struct without its line there fails to compile. Its
// overloads are constexpr for this (T{} too: strings, vectors and
// optionals are, in C++20).
template <typename T, typename Fields>
constexpr bool lists_every_member(const Fields& fields) {
#if defined(__clang__)
  // Clang (14, Debian 12's) cannot make libstdc++'s std::string in a
  // constant expression: there the check is left to the GCC build (CI's).
  (void)fields;
  return true;
#else
  T value{};
  std::size_t listed = 0;
  fields(value, [&listed](std::string_view, auto&) { ++listed; });
  return listed == member_count<T>();
#endif
}

// A `T` from exactly `bytes`; `message` names it in errors ("the setup message").
template <typename T, typename Fields>
T decode_fields(std::span<const std::byte> bytes, std::string_view message, const Fields& fields) {
  FieldReader in(bytes, message);
  T value{};
  common::detail::read_field(in, value, fields);
  in.finish();
  return value;
}

}  // namespace memsweep
