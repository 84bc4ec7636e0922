/**
 * @file options.hpp
 * @brief Command-line options with validation, checked before the GPU is touched.
 *
 * Each chapter declares its flags with a default, an accepted range and a
 * help text. parse() validates every value; parse_or_exit() turns a bad
 * command line into one clear line on stderr and exit status 2, and `--help`
 * into a listing of every flag with its default (exit status 0).
 *
 * Flags are written `--name value` or `--name=value`. Sizes accept the
 * binary suffixes K, M and G (`--bytes 64M`).
 */
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace cs {

/// What parse() found.
struct ParseResult {
  /// The three outcomes of parsing.
  enum class Status {
    ok,     ///< every flag was known and valid
    help,   ///< `--help` was given: print usage() and exit 0
    error,  ///< a bad command line: print message and exit 2
  };
  Status status = Status::ok;  ///< which outcome
  std::string message;         ///< for errors: one line naming the flag and the accepted values
};

/// A set of declared flags, each bound to a variable that holds its default.
class Options {
 public:
  /// @param program the executable's name, used in messages.
  /// @param summary one line saying what the program does, shown by `--help`.
  Options(std::string program, std::string summary);

  /// An integer flag in [@p min, @p max]; the current value of @p *value is the default.
  void add_int(const std::string& name, int* value, int min, int max, const std::string& help);
  /// A size in bytes or elements in [@p min, @p max]; accepts K, M and G suffixes (powers of 1024).
  void add_size(const std::string& name, std::size_t* value, std::size_t min, std::size_t max,
                const std::string& help);
  /// A floating-point flag in [@p min, @p max].
  void add_double(const std::string& name, double* value, double min, double max,
                  const std::string& help);
  /// A switch without a value; sets @p *value to true when given.
  void add_flag(const std::string& name, bool* value, const std::string& help);
  /// A free-form string; must not be empty (a file the program writes: add_output_file).
  void add_string(const std::string& name, std::string* value, const std::string& metavar,
                  const std::string& help);
  /// A file the program will write; must not be empty, and must be writable when parsed, so
  /// that a bad path stops the program before it runs rather than after. Leaves no file behind
  /// that was not there before.
  void add_output_file(const std::string& name, std::string* value, const std::string& help);
  /// One of a fixed set of words.
  void add_choice(const std::string& name, std::string* value,
                  const std::vector<std::string>& choices, const std::string& help);
  /// A comma-separated list of distinct integers, each in [@p min, @p max] (`--devices 0,1`).
  void add_int_list(const std::string& name, std::vector<int>* value, int min, int max,
                    const std::string& help);

  /// Validates the whole command line; on error nothing is guaranteed about the bound values.
  ParseResult parse(int argc, const char* const* argv);

  /// The `--help` text: the summary, then every flag with its accepted values and default.
  std::string usage() const;

  /// The program name given to the constructor.
  const std::string& program() const { return program_; }

 private:
  struct Flag {
    std::string name;          // with the leading "--"
    std::string metavar;       // shown after the name; empty for switches
    std::string help;          // what it does
    std::string accepted;      // the accepted values, e.g. "1..64"
    std::string default_text;  // the default, as shown by --help
    std::function<std::string(const std::string&)> assign;  // returns "" or an error message
  };
  void add(Flag flag);
  std::string program_;
  std::string summary_;
  std::vector<Flag> flags_;
};

/// Parses, or prints the problem and exits: `--help` exits 0, a bad command line exits 2.
/// Also makes stdout line-buffered, so that a crash or a timeout loses no printed line.
void parse_or_exit(Options& options, int argc, char** argv);

/// Flags every chapter understands.
struct CommonOptions {
  int device = 0;          ///< `--device N`: which CUDA device to use
  std::string trace_path;  ///< `--trace FILE`: write the timeline as Chrome trace-event JSON
  std::string svg_path;    ///< `--svg FILE`: write the timeline as an SVG picture
  bool no_timing = false;  ///< `--no-timing`: verify results but skip the timing checks

  /// "--no-timing was given" when it was, else "": the skip reason of every timed check.
  std::string timing_skip_reason() const { return no_timing ? "--no-timing was given" : ""; }
};

/// Declares `--device`, `--trace`, `--svg` and `--no-timing` on @p options.
void add_common_options(Options& options, CommonOptions* common);

}  // namespace cs
