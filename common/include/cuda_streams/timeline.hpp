/**
 * @file timeline.hpp
 * @brief What ran where and when: spans per stream, drawn as ASCII, Chrome trace JSON and SVG.
 *
 * A Timeline records a pair of CUDA events around each piece of work
 * (a "span") in the stream that runs it, and an NVTX range with the same
 * name, so that `nsys` shows the same picture. After the work is done,
 * collect() turns the events into milliseconds since the timeline's start.
 *
 * The rendering functions are pure (they take a TimelineData), so they can be
 * unit-tested on a machine without a GPU. Typical use: see cs::Timeline.
 */
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <utility>
#include <vector>

namespace cs {

struct CommonOptions;

/// One piece of work on one row (stream), in milliseconds since the timeline's origin.
struct Span {
  int row = 0;          ///< index into TimelineData::rows
  std::string kind;     ///< what sort of work ("kernel", "H2D", "D2H"); gives the ASCII glyph
  std::string detail;   ///< optional extra words ("chunk 3"); shown in the trace and SVG
  double start_ms = 0;  ///< when it started
  double end_ms = 0;    ///< when it ended
};

/// Rows (one per stream) and the spans on them.
struct TimelineData {
  std::vector<std::string> rows;  ///< row names, top to bottom
  std::vector<Span> spans;        ///< in any order
  /// The end of the last span (0 when there are none).
  double end_ms() const;
};

/**
 * @brief An ASCII chart: one row per stream, @p width columns across the run, and a time axis.
 *
 * Each span is drawn with the first letter (upper-cased) of its kind, idle
 * time with '.', and a legend names the letters. A span shorter than one
 * column still takes one column, so no span disappears. The axis ends on a
 * round value at or after the run's end, with a labelled tick on every round
 * step (1, 2, 2.5 or 5 times a power of ten) that leaves room for its label.
 */
std::string render_ascii(const TimelineData& data, int width = 64);

/// Chrome trace-event JSON (open in https://ui.perfetto.dev or chrome://tracing); one thread per
/// row.
std::string render_chrome_trace(const TimelineData& data, const std::string& process_name);

/// The events of render_chrome_trace() alone, one per line, comma-separated, for process @p pid,
/// so that several timelines can share one trace file.
std::string chrome_trace_events(const TimelineData& data, const std::string& process_name, int pid);

/// An SVG picture and its size in pixels (the size of its viewBox).
struct SvgPicture {
  std::string text;  ///< the standalone document: `<svg ... viewBox="0 0 width height">...</svg>`
  int width = 0;     ///< the picture's natural width, in px
  int height = 0;    ///< the picture's natural height, in px
  std::string content;  ///< the elements inside the root `<svg>`, for stack_svg()
};

/**
 * @brief An SVG picture of the same chart, with @p title above it.
 *
 * The time axis runs from 0 to @p axis_ms (0: the timeline's own end) rounded up to a round
 * step (1, 2, 2.5 or 5 times a power of ten), with a tick on every step, so that several
 * pictures given the same @p axis_ms share one scale. The document has a `viewBox` and
 * `width="100%"`, so it scales down to the column it is shown in. A span shorter than two
 * pixels is drawn two pixels wide. The row labels take the width of the longest, or of
 * @p label_chars characters if that is more: pictures given the same @p label_chars (the
 * longest label among them) put time zero at the same x, so that stacked, their axes line up.
 */
SvgPicture render_svg(const TimelineData& data, const std::string& title, double axis_ms = 0,
                      std::size_t label_chars = 0);

/// @p pictures one below the other in one SVG document (with a viewBox, scaling like one
/// picture); its size is the widest picture's width and the sum of their heights.
SvgPicture stack_svg(const std::vector<SvgPicture>& pictures);

/// Escapes @p text for a JSON string literal (without the quotes).
std::string json_escape(const std::string& text);

class Timeline;

/// A span that is open while this object lives: its end is recorded when it goes out of scope.
class TimelineSpan {
 public:
  /// Opens nothing (a span of no timeline).
  TimelineSpan() = default;
  /// Used by Timeline::span().
  TimelineSpan(Timeline* timeline, int span, cudaStream_t stream)
      : timeline_(timeline), span_(span), stream_(stream) {}
  /// Takes over @p other's span; @p other then holds none.
  TimelineSpan(TimelineSpan&& other) noexcept { *this = std::move(other); }
  /// Ends the span this object holds, then takes over @p other's.
  TimelineSpan& operator=(TimelineSpan&& other) noexcept;
  TimelineSpan(const TimelineSpan&) = delete;
  TimelineSpan& operator=(const TimelineSpan&) = delete;
  ~TimelineSpan() { end(); }
  /// Records the end now (in the stream given at the start), before the scope ends.
  void end();

 private:
  Timeline* timeline_ = nullptr;
  int span_ = -1;
  cudaStream_t stream_ = nullptr;
};

/**
 * @brief Records spans with CUDA events on the streams that run them.
 *
 * Each span is a pair of CUDA events in the stream that runs the work, and an NVTX range of
 * the same name, so that `nsys` shows the same picture. collect() waits for the events and
 * returns a TimelineData in milliseconds since start(), for render_ascii(), render_svg(),
 * render_chrome_trace() or publish_timeline().
 *
 * Typical use: one line per span, which ends where its scope ends.
 * @code
 *   cs::Timeline timeline;
 *   timeline.start(streams[0]);
 *   for (int i = 0; i < n; ++i) {
 *     auto span = timeline.span("stream " + std::to_string(i), "kernel", streams[i]);
 *     kernel<<<1, 256, 0, streams[i]>>>(...);
 *   }
 *   cs::TimelineData data = timeline.collect();
 *   std::cout << cs::render_ascii(data);
 * @endcode
 */
class Timeline {
 public:
  Timeline() = default;
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  /// Forgets all spans and records the origin (time zero) on @p stream. Call while the GPU is idle.
  /// common/ is built without `--default-stream per-thread`, so a null @p stream here is the
  /// legacy default stream even in a per-thread build: pass `cudaStreamPerThread` explicitly there.
  void start(cudaStream_t stream = nullptr);

  /// Records the start of a span of @p kind on row @p row (created on first use) in @p stream.
  /// @return a handle for end().
  int begin(const std::string& row, const std::string& kind, cudaStream_t stream,
            const std::string& detail = "");

  /// Records the end of span @p span in @p stream (normally the stream given to begin()).
  void end(int span, cudaStream_t stream);

  /// begin() now and end() in the same stream when the returned object goes out of scope.
  [[nodiscard]] TimelineSpan span(const std::string& row, const std::string& kind,
                                  cudaStream_t stream, const std::string& detail = "") {
    return TimelineSpan(this, begin(row, kind, stream, detail), stream);
  }

  /// Waits for every recorded event and returns the spans in ms since start().
  TimelineData collect();

 private:
  struct Pending {
    int row;
    std::string kind;
    std::string detail;
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
    unsigned long long nvtx_range = 0;
  };
  cudaEvent_t take_event();
  std::vector<std::string> rows_;
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> free_events_;
  cudaEvent_t origin_ = nullptr;
};

/**
 * @brief Shows a collected timeline the way the command line asked.
 *
 * Prints the ASCII chart under @p title when @p print_ascii is true, writes
 * the Chrome trace to `--trace FILE` and the SVG to `--svg FILE` when those
 * were given, and says where each file went. Exits 2 if a file cannot be written.
 */
void publish_timeline(const TimelineData& data, const CommonOptions& common,
                      const std::string& title, bool print_ascii = true);

/// Writes @p content to @p path (replacing the file); exits 2 naming @p what and the path when
/// it cannot.
void write_file(const std::string& path, const std::string& content, const char* what);

}  // namespace cs
