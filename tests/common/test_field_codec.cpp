// The field codec alone: a listed struct through bytes and back, and every
// way the bytes can be wrong, each named by message and field.

#include "common/field_codec.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memsweep {
namespace {

enum class Colour : std::int32_t { red, green };

struct Inner {
  double weight = 0.0;
  Colour colour = Colour::red;
};

// The wire order is the list's order: count (u64), then each item; the
// tests below cut and patch bytes at offsets that follow from it.
struct Outer {
  std::int32_t number = 0;
  std::string name;
  std::vector<Inner> inners;
  std::optional<std::uint64_t> limit;
  std::vector<std::pair<std::string, std::string>> env;
  bool flag = false;
};

struct TestFields {
  void operator()(FieldsOf<Inner> auto& inner, auto&& each) const {
    each("weight", inner.weight);
    each("colour", inner.colour);
  }
  void operator()(FieldsOf<Outer> auto& outer, auto&& each) const {
    each("number", outer.number);
    each("name", outer.name);
    each("inners", outer.inners);
    each("limit", outer.limit);
    each("env", outer.env);
    each("flag", outer.flag);
  }
  bool known(Colour colour) const { return colour == Colour::red || colour == Colour::green; }
};

Outer every_field_set() {
  return Outer{.number = -7,
               .name = "resnet",
               .inners = {{0.5, Colour::green}, {-1.25, Colour::red}},
               .limit = 1ULL << 40,
               .env = {{"A", "1"}, {"OMP_NUM_THREADS", "4"}},
               .flag = true};
}

std::vector<std::byte> encoded(const Outer& outer) { return encode_fields(outer, TestFields{}); }

std::string decoding_error(const std::vector<std::byte>& bytes) {
  try {
    decode_fields<Outer>(bytes, "test message", TestFields{});
  } catch (const FieldCodecError& error) {
    return error.what();
  }
  return "no error";
}

template <typename T>
void overwrite(std::vector<std::byte>& bytes, std::size_t at, T value) {
  ASSERT_LE(at + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

TEST(FieldCodec, EveryKindOfFieldRoundTrips) {
  const Outer sent = every_field_set();
  const Outer got = decode_fields<Outer>(encoded(sent), "test message", TestFields{});
  EXPECT_EQ(got.number, -7);
  EXPECT_EQ(got.name, "resnet");
  ASSERT_EQ(got.inners.size(), 2U);
  EXPECT_EQ(got.inners[0].weight, 0.5);
  EXPECT_EQ(got.inners[0].colour, Colour::green);
  EXPECT_EQ(got.inners[1].weight, -1.25);
  EXPECT_EQ(got.inners[1].colour, Colour::red);
  EXPECT_EQ(got.limit, sent.limit);
  EXPECT_EQ(got.env, sent.env);
  EXPECT_TRUE(got.flag);

  const Outer empty = decode_fields<Outer>(encoded(Outer{}), "test message", TestFields{});
  EXPECT_TRUE(empty.name.empty());
  EXPECT_TRUE(empty.inners.empty());
  EXPECT_FALSE(empty.limit.has_value());
}

TEST(FieldCodec, LengthsAre64BitAndValuesTheirOwnBytes) {
  // number (4) + name's length (8) + "ab" (2) + inners' count (8) + limit's flag (1) + env's count (8) + flag (1)
  Outer outer;
  outer.name = "ab";
  const std::vector<std::byte> bytes = encoded(outer);
  EXPECT_EQ(bytes.size(), 4U + 8U + 2U + 8U + 1U + 8U + 1U);
  std::uint64_t name_length = 0;
  std::memcpy(&name_length, bytes.data() + 4, sizeof(name_length));
  EXPECT_EQ(name_length, 2U);
}

// A wrong message, and the error that must name it and its field.
struct BadBytes {
  const char* what;
  std::function<void(std::vector<std::byte>&)> spoil;
  const char* error;
};

class FieldCodecRefuses : public ::testing::TestWithParam<BadBytes> {};

TEST_P(FieldCodecRefuses, NamingTheMessageAndTheField) {
  std::vector<std::byte> bytes = encoded(every_field_set());
  GetParam().spoil(bytes);
  EXPECT_EQ(decoding_error(bytes), fmt::format("the test message ({} bytes): {}", bytes.size(), GetParam().error));
}

// Offsets in every_field_set()'s bytes: number at 0, name's length at 4,
// "resnet" at 12, inners' count at 18, inners[0] (weight, colour) at 26,
// inners[1] at 38, limit's flag at 50, its value at 51, env's count at 59.
constexpr std::size_t kNameLength = 4;
constexpr std::size_t kInnersCount = 18;
constexpr std::size_t kFirstColour = 34;
constexpr std::size_t kLimitFlag = 50;

INSTANTIATE_TEST_SUITE_P(
    BadBytes, FieldCodecRefuses,
    ::testing::Values(
        BadBytes{"empty", [](auto& bytes) { bytes.clear(); }, "ends inside its field number"},
        BadBytes{"cut inside the name's length", [](auto& bytes) { bytes.resize(kNameLength + 3); },
                 "ends inside its field name"},
        BadBytes{"cut inside a nested field", [](auto& bytes) { bytes.resize(kFirstColour + 1); },
                 "ends inside its field inners.colour"},
        BadBytes{"cut in the last field", [](auto& bytes) { bytes.pop_back(); }, "ends inside its field flag"},
        BadBytes{"bytes left over", [](auto& bytes) { bytes.resize(bytes.size() + 3); },
                 "3 bytes left over after its last field flag"},
        BadBytes{"a length past the end", [](auto& bytes) { overwrite<std::uint64_t>(bytes, kNameLength, 1000); },
                 "its field name counts 1000 items, more than the 106 bytes left hold"},
        BadBytes{"a count past the end, never allocated",
                 [](auto& bytes) { overwrite<std::uint64_t>(bytes, kInnersCount, std::uint64_t{1} << 60); },
                 "its field inners counts 1152921504606846976 items, more than the 92 bytes left hold"},
        BadBytes{"an unknown enum value", [](auto& bytes) { overwrite<std::int32_t>(bytes, kFirstColour, 9); },
                 "unknown value 9 in its field inners.colour"},
        BadBytes{"a bool neither false nor true", [](auto& bytes) { overwrite<std::uint8_t>(bytes, kLimitFlag, 2); },
                 "its field limit holds 2, neither false nor true"}),
    [](const ::testing::TestParamInfo<BadBytes>& case_info) {
      std::string name;
      for (const char c : std::string(case_info.param.what))
        name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

}  // namespace
}  // namespace memsweep
