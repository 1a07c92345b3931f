#include "launch/command_words.h"

#include "pypto/error.h"

namespace pypto::launch {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

UsageError bad_words(std::string_view text, const std::string& problem) {
  return UsageError("cannot split the arguments \"" + std::string(text) + "\": " + problem +
                    "; quote them the way a POSIX shell would");
}

}  // namespace

std::vector<std::string> split_command_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  // A word exists once any part of it is seen, so that '' yields an empty word.
  bool in_word = false;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (is_blank(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
      continue;
    }
    const bool had_word = in_word;
    in_word = true;
    if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos)
        throw bad_words(text, "the single quote at offset " + std::to_string(i) + " is not closed");
      word.append(text.substr(i + 1, end - i - 1));
      i = end + 1;
    } else if (c == '"') {
      const size_t open = i++;
      for (;;) {
        if (i >= text.size())
          throw bad_words(text,
                          "the double quote at offset " + std::to_string(open) + " is not closed");
        const char d = text[i];
        if (d == '"') {
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < text.size()) {
          const char next = text[i + 1];
          if (next == '\n') {
            i += 2;
            continue;
          }
          if (next == '"' || next == '\\' || next == '$' || next == '`') {
            word += next;
            i += 2;
            continue;
          }
        }
        word += d;
        ++i;
      }
    } else if (c == '\\') {
      if (i + 1 >= text.size()) throw bad_words(text, "it ends with a lone backslash");
      if (text[i + 1] == '\n')
        in_word = had_word;  // a line continuation, not part of any word
      else
        word += text[i + 1];
      i += 2;
    } else {
      word += c;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace pypto::launch
