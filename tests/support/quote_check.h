// tests/support/quote_check.h: the walk-throughs' quoting rules for the pages that quote one
// folder of committed runs (tutorials 04 and 05, ops READMEs): read the sources, and check a page.
// (tests/test_walkthroughs.cpp checks the pages of tutorials 00-03, which name a file per quote.)
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#ifndef TS_SOURCE_DIR
#error "TS_SOURCE_DIR must name the checkout (set in CMakeLists.txt)"
#endif

namespace ts::testing {

inline std::string read_source(const std::string& relative) {
  std::ifstream in(std::string(TS_SOURCE_DIR) + "/" + relative);
  REQUIRE_MESSAGE(in.good(), "cannot read ", relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every file of a committed folder (recursively), concatenated.
inline std::string read_folder(const std::string& relative) {
  std::string all;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(TS_SOURCE_DIR) + "/" + relative))
    if (entry.is_regular_file())
      all += read_source(std::filesystem::relative(entry.path(), TS_SOURCE_DIR).string()) + "\n";
  return all;
}

struct QuoteCheck {
  int numbers = 0, excerpt_lines = 0;
};

// An excerpt line is in `corpus` verbatim; or, where it holds "…" (columns of a wide table left out,
// so that the page stays narrow), the pieces between the "…"s, each trimmed of the spaces beside
// its "…", are all in one line of `corpus`, in order.
inline bool excerpt_in(const std::string& corpus, const std::string& excerpt) {
  static const std::string ellipsis = "\u2026";
  if (excerpt.find(ellipsis) == std::string::npos) return corpus.find(excerpt) != std::string::npos;
  std::vector<std::string> pieces;
  for (size_t from = 0;;) {
    const size_t at = excerpt.find(ellipsis, from);
    std::string piece = excerpt.substr(from, at == std::string::npos ? std::string::npos : at - from);
    if (from > 0) piece.erase(0, piece.find_first_not_of(' '));
    if (at != std::string::npos) piece.erase(piece.find_last_not_of(' ') + 1);
    if (!piece.empty()) pieces.push_back(piece);
    if (at == std::string::npos) break;
    from = at + ellipsis.size();
  }
  std::istringstream lines(corpus);
  for (std::string line; std::getline(lines, line);) {
    size_t pos = 0;
    bool all = true;
    for (const std::string& piece : pieces) {
      const size_t at = line.find(piece, pos);
      if (at == std::string::npos) {
        all = false;
        break;
      }
      pos = at + piece.size();
    }
    if (all) return true;
  }
  return false;
}

// The quoting rules of the walk-throughs: every decimal number of the prose (12.345) is in `corpus`,
// except the results of a derivation written "(arithmetic: a / b = c)", whose inputs left of the
// '=' are checked and whose result is not; every line of a fenced excerpt is in `corpus` verbatim
// (trailing spaces aside; "…" for columns left out: excerpt_in), except in blocks fenced as ```sh
// (commands to type).
inline QuoteCheck check_quotes(const std::string& doc_name, const std::string& doc, const std::string& corpus) {
  static const std::regex decimal(R"(\d+\.\d+)");
  static const std::regex arithmetic(R"(\(arithmetic:([^)]*)\))");
  QuoteCheck n;
  std::istringstream lines(doc);
  bool in_block = false, command_block = false;
  int line_no = 0;
  for (std::string line; std::getline(lines, line);) {
    ++line_no;
    if (line.rfind("```", 0) == 0) {
      command_block = !in_block && line == "```sh";
      in_block = !in_block;
      continue;
    }
    INFO(doc_name, ":", line_no, ": ", line);
    if (in_block) {
      if (command_block) continue;
      std::string trimmed = line;
      while (!trimmed.empty() && trimmed.back() == ' ') trimmed.pop_back();
      if (trimmed.empty()) continue;
      CHECK_MESSAGE(excerpt_in(corpus, trimmed), "excerpt line not in the committed files");
      ++n.excerpt_lines;
      continue;
    }
    // Keep the inputs of each derivation (left of its last '='), drop its result.
    std::string prose;
    auto begin = line.cbegin();
    for (std::sregex_iterator it(line.begin(), line.end(), arithmetic), end; it != end; ++it) {
      prose.append(begin, line.cbegin() + it->position());
      const std::string inside = (*it)[1].str();
      prose += " " + inside.substr(0, inside.rfind('=')) + " ";
      begin = line.cbegin() + it->position() + it->length();
    }
    prose.append(begin, line.cend());
    for (std::sregex_iterator it(prose.begin(), prose.end(), decimal), end; it != end; ++it) {
      CHECK_MESSAGE(corpus.find(it->str()) != std::string::npos, it->str(), " is not in the committed files");
      ++n.numbers;
    }
  }
  return n;
}

}  // namespace ts::testing
