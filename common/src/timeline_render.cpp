// Pure rendering of a TimelineData: ASCII, Chrome trace-event JSON and SVG.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cuda_streams/timeline.hpp"

namespace cs {
namespace {

char glyph_of(const std::string& kind) {
  for (char c : kind) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  return '#';
}

// Chooses the unit for a run of @p total_ms: microseconds below 1 ms, else milliseconds.
struct Unit {
  double per_ms;
  const char* name;
};
Unit unit_for(double total_ms) {
  return total_ms < 1.0 ? Unit{1000.0, "us"} : Unit{1.0, "ms"};
}

// The smallest round step (1, 2, 2.5 or 5 times a power of ten) that is at least @p raw.
double round_step_at_least(double raw) {
  if (!(raw > 0)) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double mantissa : {1.0, 2.0, 2.5, 5.0}) {
    if (mantissa * power >= raw * (1 - 1e-9)) return mantissa * power;
  }
  return 10 * power;
}

// A time axis from 0 to a multiple of a round step: the end is the run's end rounded up, so
// that every tick, the last one included, falls on a round value in the axis's unit.
struct Axis {
  Unit unit;
  double step;    // in the unit
  int intervals;  // ticks at 0, step, ..., intervals * step
  int decimals;   // enough to write every tick exactly
  double end_ms() const { return step * intervals / unit.per_ms; }
  std::string label(int tick) const {
    if (tick == 0) return "0";
    char text[48];
    std::snprintf(text, sizeof text, "%.*f", decimals, step * tick);
    return text;
  }
};

// The axis for a run of @p total_ms with a step no smaller than @p min_step (in the unit) and
// at most @p max_intervals intervals.
Axis axis_for(double total_ms, int max_intervals, double min_step = 0) {
  const Unit unit = unit_for(total_ms > 0 ? total_ms : 1);
  const double total = total_ms > 0 ? total_ms * unit.per_ms : 1;
  const double step = round_step_at_least(std::max(total / max_intervals, min_step));
  Axis axis{unit, step, std::max(1, static_cast<int>(std::ceil(total / step - 1e-9))), 0};
  const double exponent = std::floor(std::log10(step) + 1e-9);
  const double mantissa = step / std::pow(10.0, exponent);
  const int extra = std::fabs(mantissa - 2.5) < 1e-6 ? 1 : 0;
  axis.decimals = std::max(0, static_cast<int>(-exponent) + extra);
  return axis;
}

// Distinct glyphs in order of first appearance, each with the kinds that use it.
std::vector<std::pair<char, std::string>> legend_of(const TimelineData& data) {
  std::vector<std::pair<char, std::string>> legend;
  std::vector<std::string> seen_kinds;
  for (const Span& span : data.spans) {
    if (std::find(seen_kinds.begin(), seen_kinds.end(), span.kind) != seen_kinds.end()) continue;
    seen_kinds.push_back(span.kind);
    const char glyph = glyph_of(span.kind);
    auto entry =
        std::find_if(legend.begin(), legend.end(), [&](const auto& e) { return e.first == glyph; });
    if (entry == legend.end()) {
      legend.push_back({glyph, span.kind});
    } else {
      entry->second += "/" + span.kind;
    }
  }
  return legend;
}

std::string format_fixed(double value, int decimals) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A standalone SVG document of @p width x @p height around @p content. It scales to the column
// it is shown in (width 100%, height from the viewBox's aspect ratio), never beyond its own size.
std::string svg_document(int width, int height, const std::string& attributes,
                         const std::string& content) {
  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%\" viewBox=\"0 0 " << width << " "
      << height << "\" preserveAspectRatio=\"xMinYMin meet\" style=\"max-width:" << width
      << "px;height:auto\"" << attributes << ">\n"
      << content << "</svg>\n";
  return out.str();
}

}  // namespace

double TimelineData::end_ms() const {
  double end = 0;
  for (const Span& span : spans) end = std::max(end, span.end_ms);
  return end;
}

std::string render_ascii(const TimelineData& data, int width) {
  width = std::max(width, 8);
  const double total = data.end_ms();
  if (data.spans.empty() || total <= 0) return "  (no spans recorded)\n";
  std::size_t label_width = 0;
  for (const std::string& row : data.rows) label_width = std::max(label_width, row.size());
  const std::string pad(label_width + 1, ' ');

  // Ticks on round values (1, 2, 2.5 or 5 times a power of ten), every one labelled: the first
  // label starts at its tick, the last ends at its tick (with the unit after it), the others
  // are centred on theirs. Where labels would touch, the step grows to the next round value.
  Axis axis = axis_for(total, 5);
  std::string labels;
  std::string axis_line;
  while (true) {
    labels.assign(static_cast<std::size_t>(width) + 8, ' ');
    axis_line.assign(static_cast<std::size_t>(width), '-');
    bool fits = true;
    int free_from = 0;
    for (int tick = 0; tick <= axis.intervals; ++tick) {
      const int column =
          tick == axis.intervals ? width - 1 : tick * width / std::max(axis.intervals, 1);
      axis_line[static_cast<std::size_t>(column)] = '+';
      const std::string text = axis.label(tick);
      const int size = static_cast<int>(text.size());
      int at = column - size / 2;
      if (tick == 0) at = 0;
      if (tick == axis.intervals) at = column - size + 1;
      if (at < free_from) fits = false;
      at = std::max(at, 0);
      labels.replace(static_cast<std::size_t>(at), text.size(), text);
      free_from = at + size + 1;
    }
    if (fits || axis.intervals <= 1) break;
    axis = axis_for(total, 5, axis.step * 1.001);
  }
  labels.replace(static_cast<std::size_t>(width), std::string::npos,
                 std::string(" ") + axis.unit.name);
  while (!labels.empty() && labels.back() == ' ') labels.pop_back();
  const double scale_ms = axis.end_ms();

  std::ostringstream out;
  out << pad << labels << "\n" << pad << axis_line << "\n";
  for (std::size_t row = 0; row < data.rows.size(); ++row) {
    std::string cells(static_cast<std::size_t>(width), '.');
    for (const Span& span : data.spans) {
      if (span.row != static_cast<int>(row)) continue;
      int first = static_cast<int>(std::floor(span.start_ms / scale_ms * width));
      int last = static_cast<int>(std::ceil(span.end_ms / scale_ms * width - 1e-9));
      first = std::clamp(first, 0, width - 1);
      last = std::clamp(std::max(last, first + 1), 1, width);
      for (int c = first; c < last; ++c) cells[static_cast<std::size_t>(c)] = glyph_of(span.kind);
    }
    out << data.rows[row] << std::string(label_width - data.rows[row].size() + 1, ' ') << cells
        << "\n";
  }
  out << pad;
  const auto legend = legend_of(data);
  for (std::size_t i = 0; i < legend.size(); ++i) {
    out << (i ? ", " : "") << legend[i].first << " = " << legend[i].second;
  }
  out << ", . = idle\n";
  return out.str();
}

std::string json_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char code[8];
          std::snprintf(code, sizeof code, "\\u%04x", c);
          out += code;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string chrome_trace_events(const TimelineData& data, const std::string& process_name,
                                int pid) {
  std::ostringstream out;
  const std::string p = std::to_string(pid);
  out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << p
      << ",\"tid\":0,\"args\":{\"name\":\"" << json_escape(process_name) << "\"}}";
  for (std::size_t row = 0; row < data.rows.size(); ++row) {
    const std::string tid = std::to_string(row + 1);
    out << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << p << ",\"tid\":" << tid
        << ",\"args\":{\"name\":\"" << json_escape(data.rows[row]) << "\"}}";
    out << ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":" << p << ",\"tid\":" << tid
        << ",\"args\":{\"sort_index\":" << tid << "}}";
  }
  for (const Span& span : data.spans) {
    const std::string name = span.detail.empty() ? span.kind : span.kind + " " + span.detail;
    out << ",\n{\"name\":\"" << json_escape(name) << "\",\"cat\":\"" << json_escape(span.kind)
        << "\",\"ph\":\"X\",\"pid\":" << p << ",\"tid\":" << span.row + 1
        << ",\"ts\":" << format_fixed(span.start_ms * 1000.0, 3)
        << ",\"dur\":" << format_fixed((span.end_ms - span.start_ms) * 1000.0, 3) << "}";
  }
  return out.str();
}

std::string render_chrome_trace(const TimelineData& data, const std::string& process_name) {
  return "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n" +
         chrome_trace_events(data, process_name, 1) + "\n]}\n";
}

SvgPicture render_svg(const TimelineData& data, const std::string& title, double axis_ms,
                      std::size_t label_chars) {
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                  "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
  const Axis axis = axis_for(std::max(axis_ms, data.end_ms()), 5);
  const double total = axis.end_ms();
  for (const std::string& row : data.rows) label_chars = std::max(label_chars, row.size());
  const double left = 12 + 7.5 * static_cast<double>(label_chars);
  const double chart_width = 760;
  const double row_height = 22;
  const double top = 44;
  const double rows_height = row_height * static_cast<double>(data.rows.size());
  const auto legend = legend_of(data);
  double legend_width = 0;
  for (const auto& entry : legend)
    legend_width += 32 + 7.5 * static_cast<double>(entry.second.size());
  // Wide enough for the chart, the legend and the title (bold 14 px: about 8.5 px a character).
  const double width = std::max({left + chart_width + 48, left + legend_width + 12,
                                 24 + 8.5 * static_cast<double>(title.size())});
  const double height = top + rows_height + 56;
  auto colour = [&](const std::string& kind) {
    const char glyph = glyph_of(kind);
    for (std::size_t i = 0; i < legend.size(); ++i) {
      if (legend[i].first == glyph) return palette[i % 8];
    }
    return palette[0];
  };
  auto x_of = [&](double ms) { return left + ms / total * chart_width; };
  // A span too short to see still gets this many pixels.
  const double min_span_width = 2;

  SvgPicture picture;
  picture.width = static_cast<int>(std::ceil(width));
  picture.height = static_cast<int>(std::ceil(height));
  std::ostringstream out;
  out << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  out << "<text x=\"12\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(title)
      << "</text>\n";
  for (std::size_t row = 0; row < data.rows.size(); ++row) {
    const double y = top + row_height * static_cast<double>(row);
    out << "<rect x=\"" << format_fixed(left, 1) << "\" y=\"" << format_fixed(y, 1) << "\" width=\""
        << format_fixed(chart_width, 1) << "\" height=\"" << format_fixed(row_height - 4, 1)
        << "\" fill=\"#f2f2f2\"/>\n";
    out << "<text x=\"12\" y=\"" << format_fixed(y + 13, 1) << "\">" << xml_escape(data.rows[row])
        << "</text>\n";
  }
  for (const Span& span : data.spans) {
    const double y = top + row_height * span.row;
    const double w = std::max(min_span_width, x_of(span.end_ms) - x_of(span.start_ms));
    const double x = std::min(x_of(span.start_ms), left + chart_width - w);
    const std::string name = span.detail.empty() ? span.kind : span.kind + " " + span.detail;
    out << "<rect x=\"" << format_fixed(x, 2) << "\" y=\"" << format_fixed(y, 1) << "\" width=\""
        << format_fixed(w, 2) << "\" height=\"" << format_fixed(row_height - 4, 1) << "\" fill=\""
        << colour(span.kind) << "\" stroke=\"#ffffff\" stroke-width=\"0.5\"><title>"
        << xml_escape(data.rows[static_cast<std::size_t>(span.row)] + ": " + name) << " ("
        << format_fixed(span.start_ms, 3) << " to " << format_fixed(span.end_ms, 3)
        << " ms)</title></rect>\n";
  }
  const double axis_y = top + rows_height + 4;
  out << "<line x1=\"" << format_fixed(left, 1) << "\" y1=\"" << format_fixed(axis_y, 1)
      << "\" x2=\"" << format_fixed(left + chart_width, 1) << "\" y2=\"" << format_fixed(axis_y, 1)
      << "\" stroke=\"#333333\"/>\n";
  // Ticks on round values; the axis ends on the last one, which carries the unit.
  for (int tick = 0; tick <= axis.intervals; ++tick) {
    const double x = left + chart_width * tick / axis.intervals;
    const std::string text = axis.label(tick);
    out << "<line x1=\"" << format_fixed(x, 1) << "\" y1=\"" << format_fixed(axis_y, 1)
        << "\" x2=\"" << format_fixed(x, 1) << "\" y2=\"" << format_fixed(axis_y + 5, 1)
        << "\" stroke=\"#333333\"/>\n";
    out << "<text x=\"" << format_fixed(x, 1) << "\" y=\"" << format_fixed(axis_y + 18, 1)
        << "\" text-anchor=\"" << (tick == 0 ? "start" : "middle") << "\">" << text << "</text>\n";
    if (tick == axis.intervals) {  // the unit, after the last number
      out << "<text x=\"" << format_fixed(x + 3.75 * static_cast<double>(text.size()) + 5, 1)
          << "\" y=\"" << format_fixed(axis_y + 18, 1) << "\">" << axis.unit.name << "</text>\n";
    }
  }
  double legend_x = left;
  const double legend_y = axis_y + 38;
  for (std::size_t i = 0; i < legend.size(); ++i) {
    out << "<rect x=\"" << format_fixed(legend_x, 1) << "\" y=\"" << format_fixed(legend_y - 10, 1)
        << "\" width=\"12\" height=\"12\" fill=\"" << palette[i % 8] << "\"/>\n";
    out << "<text x=\"" << format_fixed(legend_x + 16, 1) << "\" y=\"" << format_fixed(legend_y, 1)
        << "\">" << xml_escape(legend[i].second) << "</text>\n";
    legend_x += 32 + 7.5 * static_cast<double>(legend[i].second.size());
  }
  picture.content = out.str();
  picture.text = svg_document(picture.width, picture.height,
                              " font-family=\"monospace\" font-size=\"12\"", picture.content);
  return picture;
}

SvgPicture stack_svg(const std::vector<SvgPicture>& pictures) {
  SvgPicture stack;
  std::ostringstream inner;
  for (const SvgPicture& picture : pictures) {
    inner << "<svg x=\"0\" y=\"" << stack.height << "\" width=\"" << picture.width << "\" height=\""
          << picture.height << "\" viewBox=\"0 0 " << picture.width << " " << picture.height
          << "\" font-family=\"monospace\" font-size=\"12\">\n"
          << picture.content << "</svg>\n";
    stack.height += picture.height;
    stack.width = std::max(stack.width, picture.width);
  }
  stack.content = inner.str();
  stack.text = svg_document(stack.width, stack.height, "", stack.content);
  return stack;
}

}  // namespace cs
