/**
 * @file parts.hpp
 * @brief A chapter's parts, in the lesson's order, and `--part NAME` to run one of them.
 *
 * Each chapter is a list of parts, one function each. main() declares them
 * once; `--help` lists them, `--part NAME` runs one, and each part that runs
 * starts with a heading line, so that the output reads in the lesson's order:
 * @code
 *   cs::Parts parts(options, {{"coverage", "every element visited once"},
 *                             {"shared", "dynamic shared memory"}});
 *   cs::parse_or_exit(options, argc, argv);
 *   ...
 *   if (parts.begin("coverage")) part_coverage(elements, block);
 *   if (parts.begin("shared")) part_shared(elements);
 * @endcode
 */
#pragma once

#include <string>
#include <vector>

namespace cs {

class Options;

/// The parts of a chapter and the one `--part` chose ("all" by default).
class Parts {
 public:
  /// One part: its name on the command line and what it shows, in a few words.
  struct Part {
    std::string name;  ///< `--part` value, one word
    std::string what;  ///< shown by `--help` and in the part's heading
  };

  /// Declares `--part NAME` on @p options (accepted: "all" and each part's name).
  Parts(Options& options, std::vector<Part> parts);
  Parts(const Parts&) = delete;
  Parts& operator=(const Parts&) = delete;

  /// Whether part @p name runs; if so, prints its heading (`== Part 2 of 5: name: what`).
  /// A name that was not declared is a bug in the chapter: it aborts.
  bool begin(const std::string& name) const;

  /// Whether @p name runs, without a heading (for setup that only some parts need).
  bool selected(const std::string& name) const;

  /// The `--part` value: "all" or one part's name.
  const std::string& chosen() const { return chosen_; }

 private:
  std::size_t index_of(const std::string& name) const;
  std::vector<Part> parts_;
  std::string chosen_ = "all";
};

}  // namespace cs
