/*!
 * \file json_reader.h
 * \brief A strict JSON reader that parses one line into a flat, reusable tape.
 *
 * Records are small JSON documents, one per line; the reader keeps its buffers between lines so
 * that a parse allocates nothing in steady state. It accepts exactly what Python's json.loads
 * accepts with NaN/Infinity rejected, so the C++ reader and the pure-Python twin agree on every
 * line. Numbers are converted to double the way Python's float() does (correctly rounded,
 * overflow to +-inf).
 */
#ifndef TCL_JSON_READER_H_
#define TCL_JSON_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tcl {

enum class JsonType : uint8_t { kNull, kFalse, kTrue, kNumber, kString, kArray, kObject };

/*! \brief The JSON name of a type ("number", "string", ...), for error messages. */
const char* TypeName(JsonType type);

/*! \brief One value on the tape; containers are followed by their children in order. */
struct JsonValue {
  JsonType type = JsonType::kNull;
  /*! \brief Number of elements (array), members (object) or 0. */
  uint32_t count = 0;
  /*! \brief Tape index one past this value's subtree: the index of its next sibling. */
  uint32_t end = 0;
  /*! \brief The value of a number. */
  double number = 0.0;
  /*! \brief Unescaped contents of a string; the source text of a number, array or object. */
  std::string_view text;
};

/*! \brief Maximum nesting depth; deeper documents are rejected instead of exhausting the stack. */
constexpr int kMaxJsonDepth = 128;

/*!
 * \brief Maximum values (object keys counted) in one document. A value costs 40 bytes of tape
 * and can take 2 bytes of text, so without a bound a line of garbage such as `[1,1,1,...]` takes
 * 20x its size; real records hold under a thousand. Larger documents are rejected (TooLarge()).
 */
constexpr uint32_t kMaxJsonValues = 1u << 20;

class JsonTape {
 public:
  /*!
   * \brief Parses one document; returns false and sets Error() when it is not valid JSON.
   * Views into the tape stay valid until the next Parse call.
   */
  bool Parse(std::string_view doc);

  const JsonValue& operator[](uint32_t index) const { return nodes_[index]; }
  uint32_t Size() const { return static_cast<uint32_t>(nodes_.size()); }
  const std::string& Error() const { return error_; }
  /*! \brief True when the last Parse failed because the document holds over kMaxJsonValues. */
  bool TooLarge() const { return too_large_; }

  /*! \brief Index of the i-th child of the container at `index` (walks siblings; i < count). */
  uint32_t Child(uint32_t index, uint32_t i) const;
  /*! \brief Index of the value of member `key` of an object, or 0 when absent (last one wins). */
  uint32_t Member(uint32_t index, std::string_view key) const;

 private:
  bool ParseValue(int depth);
  bool ParseObject(uint32_t index, int depth);
  bool ParseArray(uint32_t index, int depth);
  bool ParseLiteral(uint32_t index);
  /*! \brief After an item of the container at `index`: 1 when ',' announces another, 0 when
   * `close` ends it (its `count` items stored), -1 (an error) otherwise. */
  int AfterItem(char close, uint32_t index, uint32_t count);
  bool ParseString(std::string_view* out);
  /*! \brief One escape after its backslash (at pos_), appended to scratch_; pos_ on its last byte.
   */
  bool ParseEscape();
  bool ParseNumber();
  bool Fail(const char* what);
  /*! \brief False (and an error) when the tape already holds kMaxJsonValues values. */
  bool Room();
  void SkipSpace();

  std::vector<JsonValue> nodes_;
  std::string scratch_;
  std::string error_;
  bool too_large_ = false;
  const char* begin_ = nullptr;
  const char* pos_ = nullptr;
  const char* end_ = nullptr;
};

/*! \brief True when `text` matches the JSON number grammar exactly. */
bool IsJsonNumber(std::string_view text);

/*! \brief Converts JSON number text to double like Python's float(): overflow gives +-inf. */
double JsonNumberToDouble(std::string_view text);

}  // namespace tcl

#endif  // TCL_JSON_READER_H_
