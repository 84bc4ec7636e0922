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

std::string format_tick(double value, double total) {
  char text[32];
  const char* format = total < 10 ? "%.2f" : total < 100 ? "%.1f" : "%.0f";
  if (value == 0) format = "%.0f";
  std::snprintf(text, sizeof text, format, value);
  return text;
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
  const Unit unit = unit_for(total);
  const double total_in_unit = total * unit.per_ms;

  // Ticks at 0, 1/4, 1/2, 3/4 and the end of the run. The end's label (with the unit) is
  // always shown, its number ending under the last column; an inner label that would touch
  // its neighbour is left out.
  std::string labels(static_cast<std::size_t>(width) + 8, ' ');
  std::string axis(static_cast<std::size_t>(width), '-');
  const std::string end_number = format_tick(total_in_unit, total_in_unit);
  const int end_at = std::max(0, width - static_cast<int>(end_number.size()));
  int free_from = 0;
  for (int tick = 0; tick <= 4; ++tick) {
    const int column = tick == 4 ? width - 1 : tick * width / 4;
    axis[static_cast<std::size_t>(column)] = '+';
    if (tick == 4) {
      labels.replace(static_cast<std::size_t>(end_at), std::string::npos,
                     end_number + " " + unit.name);
      break;
    }
    const std::string text = format_tick(total_in_unit * tick / 4.0, total_in_unit);
    if (column < free_from || column + static_cast<int>(text.size()) >= end_at) continue;
    labels.replace(static_cast<std::size_t>(column), text.size(), text);
    free_from = column + static_cast<int>(text.size()) + 1;
  }
  while (!labels.empty() && labels.back() == ' ') labels.pop_back();

  std::ostringstream out;
  out << pad << labels << "\n" << pad << axis << "\n";
  for (std::size_t row = 0; row < data.rows.size(); ++row) {
    std::string cells(static_cast<std::size_t>(width), '.');
    for (const Span& span : data.spans) {
      if (span.row != static_cast<int>(row)) continue;
      int first = static_cast<int>(std::floor(span.start_ms / total * width));
      int last = static_cast<int>(std::ceil(span.end_ms / total * width - 1e-9));
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

std::string render_svg(const TimelineData& data, const std::string& title, double axis_ms) {
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                  "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
  const double total = std::max(axis_ms, data.end_ms());
  std::size_t label_chars = 0;
  for (const std::string& row : data.rows) label_chars = std::max(label_chars, row.size());
  const double left = 12 + 7.5 * static_cast<double>(label_chars);
  const double chart_width = 760;
  const double width = left + chart_width + 24;
  const double row_height = 22;
  const double top = 44;
  const double rows_height = row_height * static_cast<double>(data.rows.size());
  const double height = top + rows_height + 56;
  const auto legend = legend_of(data);
  auto colour = [&](const std::string& kind) {
    const char glyph = glyph_of(kind);
    for (std::size_t i = 0; i < legend.size(); ++i) {
      if (legend[i].first == glyph) return palette[i % 8];
    }
    return palette[0];
  };
  const Unit unit = unit_for(total > 0 ? total : 1);
  auto x_of = [&](double ms) { return left + (total > 0 ? ms / total * chart_width : 0); };

  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << static_cast<int>(width)
      << "\" height=\"" << static_cast<int>(height)
      << "\" font-family=\"monospace\" font-size=\"12\">\n";
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
    const double x = x_of(span.start_ms);
    const double w = std::max(1.0, x_of(span.end_ms) - x);
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
  for (int tick = 0; tick <= 4; ++tick) {
    const double x = left + chart_width * tick / 4.0;
    std::string text = format_tick(total * unit.per_ms * tick / 4.0, total * unit.per_ms);
    if (tick == 4) text += std::string(" ") + unit.name;
    out << "<line x1=\"" << format_fixed(x, 1) << "\" y1=\"" << format_fixed(axis_y, 1)
        << "\" x2=\"" << format_fixed(x, 1) << "\" y2=\"" << format_fixed(axis_y + 5, 1)
        << "\" stroke=\"#333333\"/>\n";
    out << "<text x=\"" << format_fixed(x, 1) << "\" y=\"" << format_fixed(axis_y + 18, 1)
        << "\" text-anchor=\""
        << (tick == 0   ? "start"
            : tick == 4 ? "end"
                        : "middle")
        << "\">" << text << "</text>\n";
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
  out << "</svg>\n";
  return out.str();
}

}  // namespace cs
