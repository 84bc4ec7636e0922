#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
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
  // 10 ms over 20 columns: one column is 0.5 ms.
  const std::string expected =
      "         0    2.5  5.0   10.0 ms\n"
      "         +----+----+----+---+\n"
      "stream 1 HHHHKKKKKKKKDDDD....\n"
      "stream 2 ....HHHH....KKKKKKKK\n"
      "         H = H2D, K = kernel, D = D2H, . = idle\n";
  EXPECT_EQ(cs::render_ascii(two_streams(), 20), expected);
}

TEST(RenderAscii, EmptyTimelineSaysSo) {
  EXPECT_EQ(cs::render_ascii(cs::TimelineData{}), "  (no spans recorded)\n");
}

TEST(RenderAscii, ShortSpansStillShowAndMicrosecondsAreUsedForShortRuns) {
  cs::TimelineData data;
  data.rows = {"s"};
  data.spans = {{0, "kernel", "", 0.0, 0.001}, {0, "copy", "", 0.399, 0.4}};
  const std::string chart = cs::render_ascii(data, 8);
  EXPECT_NE(chart.find("s K......C\n"), std::string::npos) << chart;
  EXPECT_EQ(chart.substr(0, chart.find('\n')), "  0    400 us") << chart;
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

TEST(RenderSvg, DrawsARectanglePerSpanAndNamesTheRows) {
  const std::string svg = cs::render_svg(two_streams(), "two <streams>");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("two &lt;streams&gt;"), std::string::npos);
  std::size_t spans = 0;
  for (std::size_t at = svg.find("<title>"); at != std::string::npos;
       at = svg.find("<title>", at + 1)) {
    ++spans;
  }
  EXPECT_EQ(spans, 5u);
  EXPECT_NE(svg.find(">stream 2</text>"), std::string::npos);
  EXPECT_NE(svg.find("10.0 ms"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(RenderSvg, ASharedAxisMakesShorterRunsShorter) {
  // Drawn against a 20 ms axis, the 10 ms run ends half way and the axis ends at 20 ms.
  const std::string svg = cs::render_svg(two_streams(), "half", 20.0);
  EXPECT_NE(svg.find("20.0 ms"), std::string::npos);
  EXPECT_EQ(svg.find("10.0 ms"), std::string::npos);
}

}  // namespace
