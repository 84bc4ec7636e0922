/**
 * @file report.hpp
 * @brief The `CHECK <name>: <measured> <op> <bar> ... PASS|FAIL` lines and the exit status.
 *
 * Every property a chapter proves ends in one CHECK line, so that a reader
 * sees the measured number beside the bar it had to clear, and a test can
 * match the verdict. The checks are counted; finish() prints the tally and
 * returns the exit status (0 when all passed, 1 otherwise).
 */
#pragma once

#include <initializer_list>
#include <string>

namespace cs {

/// The direction of a comparison against a bar.
enum class Compare {
  at_least,  ///< measured >= bar passes
  at_most,   ///< measured <= bar passes
};

/**
 * @brief Formats one CHECK line (pure; used by check()).
 *
 * Example: `CHECK concurrency_speedup: 7.91x >= 6.00x (0.75 x 8 streams) ... PASS`.
 * @param name the property, one word (`concurrency_speedup`).
 * @param measured what this run measured.
 * @param compare whether @p measured must be at least or at most @p bar.
 * @param bar the threshold.
 * @param unit appended to both numbers ("x", " ms", " GB/s"); may be empty.
 * @param why what the bar stands for; omitted from the line when empty.
 * @param passed the verdict to print.
 */
std::string format_check(const std::string& name, double measured, Compare compare, double bar,
                         const std::string& unit, const std::string& why, bool passed);

/// Compares @p measured against @p bar, prints the CHECK line, counts it, returns whether it
/// passed.
bool check(const std::string& name, double measured, Compare compare, double bar,
           const std::string& unit, const std::string& why = "");

/// A check that is a yes/no fact: prints `CHECK <name>: <detail> ... PASS|FAIL` and counts it.
bool check_that(const std::string& name, bool passed, const std::string& detail);

/// Prints `CHECK <name>: skipped (<reason>)`; counted as neither passed nor failed.
void check_skipped(const std::string& name, const std::string& reason);

/**
 * @brief check(), or check_skipped() when @p skip_reason is not empty.
 *
 * For a timed property that cannot hold in this run (`--no-timing`, CUDA_LAUNCH_BLOCKING=1, a
 * device without a second copy engine): the line says why instead of failing.
 * @return false only for a check that ran and failed.
 */
bool check_or_skip(const std::string& skip_reason, const std::string& name, double measured,
                   Compare compare, double bar, const std::string& unit,
                   const std::string& why = "");

/// check_that(), or check_skipped() when @p skip_reason is not empty (a yes/no fact that this run
/// cannot show, for a reason it states). @return false only for a check that ran and failed.
bool check_that_or_skip(const std::string& skip_reason, const std::string& name, bool passed,
                        const std::string& detail);

/// The first non-empty reason of @p reasons, or "" (to combine the reasons a check may skip).
std::string first_reason(std::initializer_list<std::string> reasons);

/// How many checks ran, and how many failed, since the program started (or reset_checks()).
int checks_run();
/// How many checks failed.
int checks_failed();
/// How many checks said `skipped (<reason>)`.
int checks_skipped();
/// Forgets the counts (for unit tests).
void reset_checks();

/// Prints `All N checks passed.` (0), or `N of M checks passed; K FAILED.` (1), or, when no check
/// ran, `No check ran; K skipped.` (0 if K > 0: every check said why it could not run here; 1 if
/// K is 0: the run proved nothing).
int finish();

}  // namespace cs
