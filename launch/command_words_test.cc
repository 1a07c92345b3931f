#include "launch/command_words.h"

#include <gtest/gtest.h>

#include "pypto/error.h"

namespace pypto::launch {
namespace {

using Words = std::vector<std::string>;

TEST(SplitCommandWordsTest, SplitsOnRunsOfBlanks) {
  EXPECT_EQ(split_command_words("--mca  btl\ttcp,self\n--bind-to core"),
            (Words{"--mca", "btl", "tcp,self", "--bind-to", "core"}));
  EXPECT_EQ(split_command_words(""), Words{});
  EXPECT_EQ(split_command_words("   \t "), Words{});
}

TEST(SplitCommandWordsTest, SingleQuotesKeepEverythingLiterally) {
  EXPECT_EQ(split_command_words("-x 'A=a b' '\\$HOME \"q\"'"),
            (Words{"-x", "A=a b", "\\$HOME \"q\""}));
}

TEST(SplitCommandWordsTest, DoubleQuotesDropOnlyTheBackslashesShDrops) {
  EXPECT_EQ(split_command_words(R"("a \"b\" \\ \$x \n")"), (Words{R"(a "b" \ $x \n)"}));
}

TEST(SplitCommandWordsTest, BackslashOutsideQuotesEscapesOneCharacter) {
  EXPECT_EQ(split_command_words(R"(a\ b c\'d)"), (Words{"a b", "c'd"}));
  EXPECT_EQ(split_command_words("a \\\n b"), (Words{"a", "b"}));
}

TEST(SplitCommandWordsTest, AdjacentPartsJoinAndEmptyQuotesAreAWord) {
  EXPECT_EQ(split_command_words(R"(a"b c"'d' "" '')"), (Words{"ab cd", "", ""}));
}

TEST(SplitCommandWordsTest, NothingIsExpanded) {
  EXPECT_EQ(split_command_words("$HOME ~ *.cc"), (Words{"$HOME", "~", "*.cc"}));
}

TEST(SplitCommandWordsTest, UnterminatedQuotesAndTrailingBackslashAreUsageErrors) {
  for (const char* text : {"--mca 'btl tcp", "-x \"A=b", "a \"b\\\"", "trailing\\"}) {
    try {
      split_command_words(text);
      ADD_FAILURE() << "expected a UsageError for " << text;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }
  try {
    split_command_words("--mca 'btl tcp");
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("single quote at offset 6 is not closed"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace pypto::launch
