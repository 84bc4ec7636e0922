#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "cuda_streams/check.hpp"
#include "cuda_streams/device.hpp"
#include "cuda_streams/options.hpp"
#include "cuda_streams/timeline.hpp"

namespace cs {

Timeline::~Timeline() {
  for (Pending& span : pending_) {
    free_events_.push_back(span.start);
    if (span.end) free_events_.push_back(span.end);
  }
  for (cudaEvent_t event : free_events_) cudaEventDestroy(event);
  if (origin_) cudaEventDestroy(origin_);
}

cudaEvent_t Timeline::take_event() {
  if (!free_events_.empty()) {
    cudaEvent_t event = free_events_.back();
    free_events_.pop_back();
    return event;
  }
  cudaEvent_t event = nullptr;
  CS_CHECK(cudaEventCreate(&event));
  return event;
}

void Timeline::start(cudaStream_t stream) {
  for (Pending& span : pending_) {
    free_events_.push_back(span.start);
    if (span.end) free_events_.push_back(span.end);
  }
  pending_.clear();
  rows_.clear();
  if (!origin_) CS_CHECK(cudaEventCreate(&origin_));
  CS_CHECK(cudaEventRecord(origin_, stream));
}

int Timeline::begin(const std::string& row, const std::string& kind, cudaStream_t stream,
                    const std::string& detail) {
  auto found = std::find(rows_.begin(), rows_.end(), row);
  int row_index = static_cast<int>(found - rows_.begin());
  if (found == rows_.end()) rows_.push_back(row);
  Pending span{row_index, kind, detail};
  span.start = take_event();
  CS_CHECK(cudaEventRecord(span.start, stream));
  const std::string name = detail.empty() ? row + ": " + kind : row + ": " + kind + " " + detail;
  span.nvtx_range = nvtxRangeStartA(name.c_str());
  pending_.push_back(span);
  return static_cast<int>(pending_.size()) - 1;
}

void Timeline::end(int span, cudaStream_t stream) {
  Pending& pending = pending_.at(static_cast<std::size_t>(span));
  pending.end = take_event();
  CS_CHECK(cudaEventRecord(pending.end, stream));
  nvtxRangeEnd(pending.nvtx_range);
}

TimelineSpan& TimelineSpan::operator=(TimelineSpan&& other) noexcept {
  if (this != &other) {
    end();
    timeline_ = other.timeline_;
    span_ = other.span_;
    stream_ = other.stream_;
    other.timeline_ = nullptr;
  }
  return *this;
}

void TimelineSpan::end() {
  if (timeline_ != nullptr) timeline_->end(span_, stream_);
  timeline_ = nullptr;
}

TimelineData Timeline::collect() {
  TimelineData data;
  data.rows = rows_;
  if (!origin_) return data;
  CS_CHECK(cudaEventSynchronize(origin_));
  for (const Pending& pending : pending_) {
    if (!pending.end) continue;  // begun but never ended: nothing to draw
    CS_CHECK(cudaEventSynchronize(pending.end));
    float start_ms = 0;
    float end_ms = 0;
    CS_CHECK(cudaEventElapsedTime(&start_ms, origin_, pending.start));
    CS_CHECK(cudaEventElapsedTime(&end_ms, origin_, pending.end));
    data.spans.push_back({pending.row, pending.kind, pending.detail, start_ms, end_ms});
  }
  return data;
}

namespace {

struct Published {
  TimelineData data;
  std::string title;
};

std::vector<Published>& published() {
  static std::vector<Published> all;
  return all;
}

}  // namespace

void publish_timeline(const TimelineData& data, const CommonOptions& common,
                      const std::string& title, bool print_ascii) {
  if (print_ascii) std::printf("\n%s\n%s", title.c_str(), render_ascii(data).c_str());
  published().push_back({data, title});
  // Every published timeline goes into the files, each as its own section.
  if (!common.trace_path.empty()) {
    std::string events;
    for (std::size_t i = 0; i < published().size(); ++i) {
      const std::string body =
          chrome_trace_events(published()[i].data, published()[i].title, static_cast<int>(i) + 1);
      if (!events.empty() && !body.empty()) events += ",\n";
      events += body;
    }
    write_file(common.trace_path,
               "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n" + events + "\n]}\n", "trace");
    std::printf("Trace written to %s (open it in https://ui.perfetto.dev or chrome://tracing)\n",
                common.trace_path.c_str());
  }
  if (!common.svg_path.empty()) {
    std::string svg;
    if (published().size() == 1) {
      svg = render_svg(published()[0].data, published()[0].title).text;
    } else {
      // Stack the charts, one below the other, on one time scale and with time zero at one x
      // for all of them, so that their lengths compare at a glance.
      double axis_ms = 0;
      std::size_t label_chars = 0;
      for (const Published& p : published()) {
        axis_ms = std::max(axis_ms, p.data.end_ms());
        for (const std::string& row : p.data.rows) label_chars = std::max(label_chars, row.size());
      }
      std::vector<SvgPicture> pictures;
      for (const Published& p : published())
        pictures.push_back(render_svg(p.data, p.title, axis_ms, label_chars));
      svg = stack_svg(pictures).text;
    }
    write_file(common.svg_path, svg, "SVG picture");
    std::printf("SVG written to %s\n", common.svg_path.c_str());
  }
}

void write_file(const std::string& path, const std::string& content, const char* what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) usage_error("cannot write the " + std::string(what) + " to '" + path + "'");
}

}  // namespace cs
