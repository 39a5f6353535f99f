// The nesting pre-pass (src/config/nesting.cpp): what counts as a level,
// what does not (strings, comments), the limit's edge, the line it names.

#include "config/nesting.hpp"
#include "memsweep/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace memsweep::config::detail {
namespace {

using ::testing::HasSubstr;

std::string repeated(const std::string& piece, int times) {
  std::string text;
  for (int i = 0; i < times; ++i) text += piece;
  return text;
}

std::string nested_array(int depth) { return "a = " + repeated("[", depth) + repeated("]", depth) + "\n"; }

// The deepest value's depth, found as the smallest limit the text keeps.
int depth_of(const std::string& text) {
  int limit = 0;
  while (find_nesting_deeper_than(text, limit)) ++limit;
  return limit;
}

TEST(TomlNesting, CountsArraysInlineTablesHeadersAndDottedKeys) {
  EXPECT_EQ(depth_of("a = 1\n"), 0);
  EXPECT_EQ(depth_of("a = [[1], [2]]\n"), 2);
  EXPECT_EQ(depth_of("a = {b = {c = 1}}\n"), 2);
  EXPECT_EQ(depth_of("a = {b.c.d = [1]}\n"), 4);
  EXPECT_EQ(depth_of("a.b.c = 1\n"), 2);
  EXPECT_EQ(depth_of("[a.b]\nc = 1\n"), 2);
  EXPECT_EQ(depth_of("[a.b]\nc.d = [[1]]\n"), 5);
  EXPECT_EQ(depth_of("[[a.b]]\nc = 1\n"), 3);
  EXPECT_EQ(depth_of("[ a . \"b\" . c ]\n"), 3);
}

TEST(TomlNesting, ASweepFileIsShallow) {
  const std::string sweep =
      "[sweep]\nname = \"x\"\n[grid]\nhidden = [[64], [128, 64]]\nlearning_rate = [0.1, 1.5e-3]\n"
      "[[trial]]\nparams = {dropout = 0.1, layers = [1, 2]}\n";
  EXPECT_EQ(depth_of(sweep), 4);  // [[trial]] 2, params 3, layers 4
}

TEST(TomlNesting, ALevelEndsWhereItCloses) {
  // Siblings, one after another, are not nested; a header starts again from its own depth.
  EXPECT_EQ(depth_of("a = [[1], [[2]], [3]]\nb = [[4]]\n"), 3);
  EXPECT_EQ(depth_of("a = {b = [1], c = 2, d.e = 3}\n"), 2);
  EXPECT_EQ(depth_of("[a.b.c]\n[d]\ne = [1]\n"), 3);
  EXPECT_EQ(depth_of("a = [\n  [1],\n  [2],\n]\nb.c = 1\n"), 2);
}

TEST(TomlNesting, BracketsInStringsAndCommentsDoNotCount) {
  EXPECT_EQ(depth_of("a = \"[[[[{{{{\"\n"), 0);
  EXPECT_EQ(depth_of("a = '[[[[{{{{'\n"), 0);
  EXPECT_EQ(depth_of("a = \"\\\"[[[[\"\n"), 0);                // an escaped quote does not end it
  EXPECT_EQ(depth_of("a = 'C:\\'\nb = [1]\n"), 1);             // a literal string has no escapes
  EXPECT_EQ(depth_of("a = \"\"\"\n[[[[\n\"[[\n\"\"\"\n"), 0);  // multi-line basic
  EXPECT_EQ(depth_of("a = '''\n[[[[\n'[[\n'''\n"), 0);         // multi-line literal
  EXPECT_EQ(depth_of("a = \"\"\"x\"\"\"\"\"\nb = [1]\n"), 1);  // two quotes of content before the close
  EXPECT_EQ(depth_of("a = \"\"\"\\\"\"\"[[[[\"\"\"\n"), 0);    // an escaped quote in a multi-line string
  EXPECT_EQ(depth_of("a = 1 # [[[[{{{{\n# [[[[\nb = [1] # ]]]]\n"), 1);
  EXPECT_EQ(depth_of("\"a.b.c\" = 1\n'd.e' = 2\n"), 0);   // dots in quoted keys
  EXPECT_EQ(depth_of("a = 1.5\nb = 07:32:00.999\n"), 0);  // dots in values
}

TEST(TomlNesting, ExactlyTheLimitIsAcceptedOneMoreIsRefused) {
  EXPECT_FALSE(find_nesting_deeper_than(nested_array(kMaxTomlNesting)));
  EXPECT_TRUE(find_nesting_deeper_than(nested_array(kMaxTomlNesting + 1)));
  const auto tables = [](int depth) { return "a = " + repeated("{b = ", depth) + "1" + repeated("}", depth) + "\n"; };
  EXPECT_FALSE(find_nesting_deeper_than(tables(kMaxTomlNesting)));
  EXPECT_TRUE(find_nesting_deeper_than(tables(kMaxTomlNesting + 1)));
  const auto header = [](int depth) { return "[x" + repeated(".x", depth - 1) + "]\n"; };
  EXPECT_FALSE(find_nesting_deeper_than(header(kMaxTomlNesting)));
  EXPECT_TRUE(find_nesting_deeper_than(header(kMaxTomlNesting + 1)));
  const auto dotted = [](int depth) { return "x" + repeated(".x", depth) + " = 1\n"; };
  EXPECT_FALSE(find_nesting_deeper_than(dotted(kMaxTomlNesting)));
  EXPECT_TRUE(find_nesting_deeper_than(dotted(kMaxTomlNesting + 1)));
}

TEST(TomlNesting, NamesTheLineWhereTheLimitIsPassed) {
  // A multi-line string on lines 2-3; the array opens on line 4 and goes past the limit on line 5.
  const std::string text = "[sweep]\nname = \"\"\"two\nlines [[[[\"\"\"\nx = [\n" + repeated("[", kMaxTomlNesting) +
                           "\n" + repeated("]", kMaxTomlNesting + 1) + "\n";
  const auto deep = find_nesting_deeper_than(text);
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->line, 5);
  EXPECT_EQ(deep->depth, kMaxTomlNesting + 1);
}

TEST(TomlNesting, DeepTextIsRefusedBeforeToml11ReadsIt) {
  // 20,000 deep ran toml11 out of stack; now a ConfigError on line 2.
  const std::string text = "[sweep]\na = " + repeated("[", 20000) + repeated("]", 20000) + "\n";
  try {
    parse_sweep(text, "deep.toml");
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.line(), 2);
    EXPECT_THAT(error.what(), HasSubstr("deep.toml:2: nested deeper than 64"));
  }
}

TEST(TomlNesting, TakesTimeInProportionToTheText) {
  // A megabyte of header dots: one pass, stopped at the limit.
  const auto deep = find_nesting_deeper_than("[x" + repeated(".x", 500000) + "]\n");
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->line, 1);
  // A megabyte of shallow arrays and strings: read through.
  EXPECT_FALSE(find_nesting_deeper_than(repeated("a = [[\"[[\", '{{'], {b = 1}] # [[\n", 30000)));
}

}  // namespace
}  // namespace memsweep::config::detail
