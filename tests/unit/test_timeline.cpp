#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cuda_streams/timeline.hpp"

namespace {

// A small JSON reader, enough to prove that the trace is well-formed and to read it back.
struct Json {
  enum class Type { null, boolean, number, string, array, object } type = Type::null;
  double number = 0;
  bool boolean = false;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;
  const Json& operator[](const std::string& key) const {
    auto found = fields.find(key);
    if (found == fields.end()) throw std::out_of_range("no field " + key);
    return found->second;
  }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : text_(text) {}
  Json read_document() {
    Json value = read_value();
    skip_space();
    if (at_ != text_.size()) fail("trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("JSON error at " + std::to_string(at_) + ": " + what);
  }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  char peek() {
    skip_space();
    if (at_ >= text_.size()) fail("unexpected end");
    return text_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected ") + c);
    ++at_;
  }
  std::string read_string() {
    expect('"');
    std::string out;
    while (true) {
      if (at_ >= text_.size()) fail("unterminated string");
      char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c == '\\') {
        if (at_ >= text_.size()) fail("bad escape");
        char e = text_[at_++];
        switch (e) {
          case '"':
          case '\\':
          case '/':
            out += e;
            break;
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'u':
            if (at_ + 4 > text_.size()) fail("bad \\u escape");
            out += static_cast<char>(std::stoi(text_.substr(at_, 4), nullptr, 16));
            at_ += 4;
            break;
          default:
            fail("bad escape");
        }
      } else {
        out += c;
      }
    }
  }
  Json read_value() {
    Json value;
    const char c = peek();
    if (c == '{') {
      value.type = Json::Type::object;
      ++at_;
      if (peek() == '}') {
        ++at_;
        return value;
      }
      while (true) {
        std::string key = read_string();
        expect(':');
        value.fields[key] = read_value();
        if (peek() == ',') {
          ++at_;
          continue;
        }
        expect('}');
        return value;
      }
    }
    if (c == '[') {
      value.type = Json::Type::array;
      ++at_;
      if (peek() == ']') {
        ++at_;
        return value;
      }
      while (true) {
        value.items.push_back(read_value());
        if (peek() == ',') {
          ++at_;
          continue;
        }
        expect(']');
        return value;
      }
    }
    if (c == '"') {
      value.type = Json::Type::string;
      value.text = read_string();
      return value;
    }
    for (const char* word : {"true", "false", "null"}) {
      if (text_.compare(at_, std::string(word).size(), word) == 0) {
        at_ += std::string(word).size();
        value.type = word[0] == 'n' ? Json::Type::null : Json::Type::boolean;
        value.boolean = word[0] == 't';
        return value;
      }
    }
    std::size_t used = 0;
    try {
      value.number = std::stod(text_.substr(at_), &used);
    } catch (const std::exception&) {
      fail("bad value");
    }
    value.type = Json::Type::number;
    at_ += used;
    return value;
  }
  const std::string& text_;
  std::size_t at_ = 0;
};

cs::TimelineData two_streams() {
  cs::TimelineData data;
  data.rows = {"stream 1", "stream 2"};
  data.spans = {{0, "H2D", "chunk 0", 0.0, 2.0},
                {0, "kernel", "chunk 0", 2.0, 6.0},
                {1, "H2D", "chunk 1", 2.0, 4.0},
                {1, "kernel", "chunk 1", 6.0, 10.0},
                {0, "D2H", "chunk 0", 6.0, 8.0}};
  return data;
}

TEST(RenderAscii, OneRowPerStreamWithAxisAndLegend) {
  // 10 ms over 20 columns: one column is 0.5 ms; a tick every 2 ms, each one labelled.
  const std::string expected =
      "         0   2   4   6   8 10 ms\n"
      "         +---+---+---+---+--+\n"
      "stream 1 HHHHKKKKKKKKDDDD....\n"
      "stream 2 ....HHHH....KKKKKKKK\n"
      "         H = H2D, K = kernel, D = D2H, . = idle\n";
  EXPECT_EQ(cs::render_ascii(two_streams(), 20), expected);
}

// The numbers on an ASCII chart's first line, without the unit.
std::vector<std::string> ascii_labels(const std::string& chart) {
  std::istringstream first_line(chart.substr(0, chart.find('\n')));
  std::vector<std::string> labels;
  for (std::string word; first_line >> word;) labels.push_back(word);
  labels.pop_back();  // the unit
  return labels;
}

TEST(RenderAscii, EveryTickHasALabelOnARoundValue) {
  cs::TimelineData data;
  data.rows = {"s"};
  const std::vector<std::pair<double, std::vector<std::string>>> cases = {
      {15.9, {"0", "5", "10", "15", "20"}},
      {31.1, {"0", "10", "20", "30", "40"}},
      {10.0, {"0", "2", "4", "6", "8", "10"}},
      {7.3, {"0", "2", "4", "6", "8"}},
      {0.9, {"0", "200", "400", "600", "800", "1000"}}};
  for (const auto& [end_ms, labels] : cases) {
    data.spans = {{0, "kernel", "", 0.0, end_ms}};
    const std::string chart = cs::render_ascii(data, 64);
    EXPECT_EQ(ascii_labels(chart), labels) << chart;
    const std::string axis = chart.substr(chart.find('\n') + 1);
    EXPECT_EQ(std::count(axis.begin(), axis.begin() + static_cast<long>(axis.find('\n')), '+'),
              static_cast<long>(labels.size()))
        << chart;
  }
  // Narrow: the step grows until the labels fit, and still every tick is labelled.
  data.spans = {{0, "kernel", "", 0.0, 10.0}};
  const std::string narrow = cs::render_ascii(data, 12);
  const std::string axis = narrow.substr(narrow.find('\n') + 1);
  EXPECT_EQ(std::count(axis.begin(), axis.begin() + static_cast<long>(axis.find('\n')), '+'),
            static_cast<long>(ascii_labels(narrow).size()))
      << narrow;
}

TEST(RenderAscii, EmptyTimelineSaysSo) {
  EXPECT_EQ(cs::render_ascii(cs::TimelineData{}), "  (no spans recorded)\n");
}

TEST(RenderAscii, ShortSpansStillShowAndMicrosecondsAreUsedForShortRuns) {
  cs::TimelineData data;
  data.rows = {"s"};
  data.spans = {{0, "kernel", "", 0.0, 0.001}, {0, "copy", "", 0.399, 0.4}};
  // 8 columns leave room for two labels only: the axis ends on the next round value, 500 us.
  const std::string chart = cs::render_ascii(data, 8);
  EXPECT_NE(chart.find("s K.....C.\n"), std::string::npos) << chart;
  EXPECT_EQ(chart.substr(0, chart.find('\n')), "  0    500 us") << chart;
}

TEST(ChromeTrace, ParsesAndHoldsEverySpan) {
  const cs::TimelineData data = two_streams();
  const std::string trace = cs::render_chrome_trace(data, "pipeline \"demo\"");
  const Json document = JsonReader(trace).read_document();
  const Json& events = document["traceEvents"];
  ASSERT_EQ(events.type, Json::Type::array);
  int complete = 0;
  std::map<double, std::string> thread_names;
  for (const Json& event : events.items) {
    const std::string phase = event["ph"].text;
    if (phase == "M" && event["name"].text == "thread_name") {
      thread_names[event["tid"].number] = event["args"]["name"].text;
    }
    if (phase == "M" && event["name"].text == "process_name") {
      EXPECT_EQ(event["args"]["name"].text, "pipeline \"demo\"");
    }
    if (phase != "X") continue;
    const cs::Span& span = data.spans[static_cast<std::size_t>(complete++)];
    EXPECT_EQ(event["cat"].text, span.kind);
    EXPECT_EQ(event["name"].text, span.kind + " " + span.detail);
    EXPECT_DOUBLE_EQ(event["ts"].number, span.start_ms * 1000.0);
    EXPECT_DOUBLE_EQ(event["dur"].number, (span.end_ms - span.start_ms) * 1000.0);
    EXPECT_EQ(event["tid"].number, span.row + 1);
  }
  EXPECT_EQ(complete, 5);
  EXPECT_EQ(thread_names[1], "stream 1");
  EXPECT_EQ(thread_names[2], "stream 2");
}

TEST(ChromeTrace, EscapesWhatJsonNeeds) {
  EXPECT_EQ(cs::json_escape("a\"b\\c\nd\x01"), "a\\\"b\\\\c\\nd\\u0001");
}

// The value of attribute @p name in the first tag of @p svg that has it.
std::string attribute(const std::string& svg, const std::string& name, std::size_t from = 0) {
  const std::size_t at = svg.find(" " + name + "=\"", from);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + name.size() + 3;
  return svg.substr(begin, svg.find('"', begin) - begin);
}

TEST(RenderSvg, DrawsARectanglePerSpanAndNamesTheRows) {
  const std::string svg = cs::render_svg(two_streams(), "two <streams>").text;
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("two &lt;streams&gt;"), std::string::npos);
  std::size_t spans = 0;
  for (std::size_t at = svg.find("<title>"); at != std::string::npos;
       at = svg.find("<title>", at + 1)) {
    ++spans;
  }
  EXPECT_EQ(spans, 5u);
  EXPECT_NE(svg.find(">stream 2</text>"), std::string::npos);
  EXPECT_NE(svg.find(">10</text>"), std::string::npos);
  EXPECT_NE(svg.find(">ms</text>"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(RenderSvg, HasAViewBoxOfItsSizeAndScalesToTheColumn) {
  const cs::SvgPicture picture = cs::render_svg(two_streams(), "sized");
  EXPECT_GT(picture.width, 760);
  EXPECT_GT(picture.height, 0);
  const std::string root = picture.text.substr(0, picture.text.find('>'));
  EXPECT_EQ(attribute(root, "viewBox"),
            "0 0 " + std::to_string(picture.width) + " " + std::to_string(picture.height));
  EXPECT_EQ(attribute(root, "width"), "100%");
  EXPECT_EQ(attribute(root, "height"), "");
  EXPECT_NE(attribute(root, "style").find("max-width:" + std::to_string(picture.width) + "px"),
            std::string::npos);
  EXPECT_NE(attribute(root, "style").find("height:auto"), std::string::npos);
  EXPECT_NE(picture.text.find(picture.content), std::string::npos);
}

TEST(RenderSvg, ALongTitleWidensThePicture) {
  const std::string title(200, 't');
  EXPECT_GE(cs::render_svg(two_streams(), title).width, 200 * 8);
}

TEST(RenderSvg, ASharedAxisMakesShorterRunsShorter) {
  // Drawn against a 20 ms axis, the 10 ms run ends half way and the axis ends at 20 ms.
  const std::string svg = cs::render_svg(two_streams(), "half", 20.0).text;
  EXPECT_NE(svg.find(">20</text>"), std::string::npos);
  EXPECT_NE(svg.find(">10</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">2</text>"), std::string::npos);
}

TEST(RenderSvg, TicksFallOnRoundValues) {
  cs::TimelineData data;
  data.rows = {"s"};
  data.spans = {{0, "kernel", "", 0.0, 15.9}};
  const std::string svg = cs::render_svg(data, "odd end").text;
  for (const char* label : {">0</text>", ">5</text>", ">10</text>", ">15</text>", ">20</text>"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
  EXPECT_EQ(svg.find("15.9<"), std::string::npos);
  data.spans = {{0, "kernel", "", 0.0, 2.4}};
  const std::string quarter = cs::render_svg(data, "quarter").text;
  EXPECT_NE(quarter.find(">0.5</text>"), std::string::npos) << quarter;
  EXPECT_NE(quarter.find(">2.5</text>"), std::string::npos) << quarter;
}

TEST(RenderSvg, ATinySpanIsStillVisible) {
  cs::TimelineData data;
  data.rows = {"s"};
  data.spans = {{0, "kernel", "tiny", 0.0, 0.0001}, {0, "copy", "", 0.0001, 10.0}};
  const std::string svg = cs::render_svg(data, "tiny").text;
  const std::size_t tiny = svg.rfind("<rect", svg.find("kernel tiny"));
  EXPECT_EQ(attribute(svg, "width", tiny), "2.00") << svg;
}

// Given the longest label of both, two pictures put time zero (the axis line's start) at one x.
TEST(RenderSvg, SharedLabelWidthLinesUpTimeZero) {
  cs::TimelineData one_row;
  one_row.rows = {"a much longer stream name"};
  one_row.spans = {{0, "kernel", "", 0.0, 20.0}};
  const std::size_t longest = one_row.rows[0].size();
  const std::string own = cs::render_svg(two_streams(), "own", 20.0).text;
  const std::string shared = cs::render_svg(two_streams(), "shared", 20.0, longest).text;
  const std::string other = cs::render_svg(one_row, "other", 20.0, longest).text;
  const auto axis_x = [](const std::string& svg) {
    return attribute(svg, "x1", svg.find("<line"));
  };
  EXPECT_EQ(axis_x(shared), axis_x(other));
  EXPECT_NE(axis_x(own), axis_x(other));  // without it, the shorter labels start the chart sooner
}

TEST(StackSvg, OnePictureBelowTheOtherWithAViewBox) {
  const cs::SvgPicture first = cs::render_svg(two_streams(), "first", 20.0);
  cs::TimelineData one_row;
  one_row.rows = {"a much longer stream name"};
  one_row.spans = {{0, "kernel", "", 0.0, 20.0}};
  const cs::SvgPicture second = cs::render_svg(one_row, "second", 20.0);
  const cs::SvgPicture stack = cs::stack_svg({first, second});
  EXPECT_EQ(stack.width, std::max(first.width, second.width));
  EXPECT_EQ(stack.height, first.height + second.height);
  const std::string root = stack.text.substr(0, stack.text.find('>'));
  EXPECT_EQ(attribute(root, "viewBox"),
            "0 0 " + std::to_string(stack.width) + " " + std::to_string(stack.height));
  EXPECT_EQ(attribute(root, "width"), "100%");
  // Each picture is a nested <svg> at its place, with its own viewBox.
  const std::size_t inner = stack.text.find("<svg", 1);
  const std::size_t next = stack.text.find("<svg", inner + 1);
  ASSERT_NE(next, std::string::npos);
  EXPECT_EQ(attribute(stack.text, "y", inner), "0");
  EXPECT_EQ(attribute(stack.text, "viewBox", inner),
            "0 0 " + std::to_string(first.width) + " " + std::to_string(first.height));
  EXPECT_EQ(attribute(stack.text, "y", next), std::to_string(first.height));
  EXPECT_EQ(attribute(stack.text, "height", next), std::to_string(second.height));
  EXPECT_EQ(stack.text.substr(stack.text.size() - 7), "</svg>\n");
}

}  // namespace
