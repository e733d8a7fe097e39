/*!
 * \file common.h
 * \brief Error types shared by the core and the check macro that builds their messages.
 */
#ifndef TCL_COMMON_H_
#define TCL_COMMON_H_

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tcl {

/*! \brief Base class of every error the core raises; surfaces as tcl.errors.TclError. */
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/*!
 * \brief A record that cannot be read, with where it is and why.
 *
 * `reason` is one of the stable short codes of RecordReason (records.h); `field` names the JSON
 * path of the offending value (e.g. "r[0]") or is empty when the whole line is at fault.
 */
class RecordError : public Error {
 public:
  RecordError(std::string file, long long line, std::string reason, std::string field,
              const std::string& detail)
      : Error(Format(file, line, reason, field, detail)),
        file_(std::move(file)),
        line_(line),
        reason_(std::move(reason)),
        field_(std::move(field)),
        detail_(detail) {}

  const std::string& file() const { return file_; }
  long long line() const { return line_; }
  const std::string& reason() const { return reason_; }
  const std::string& field() const { return field_; }
  const std::string& detail() const { return detail_; }

 private:
  static std::string Format(const std::string& file, long long line, const std::string& reason,
                            const std::string& field, const std::string& detail) {
    std::ostringstream os;
    os << file << ":" << line << ": " << reason;
    if (!field.empty()) os << " in " << field;
    os << ": " << detail;
    return os.str();
  }
  std::string file_;
  long long line_;
  std::string reason_;
  std::string field_;
  std::string detail_;
};

namespace detail {
/*! \brief Collects a message with operator<< and throws tcl::Error when destroyed. */
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond) {
    os_ << "Check failed: " << cond << " (" << file << ":" << line << "): ";
  }
  [[noreturn]] ~CheckFailure() noexcept(false) { throw Error(os_.str()); }
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    os_ << value;
    return *this;
  }

 private:
  std::ostringstream os_;
};
}  // namespace detail

}  // namespace tcl

/*! \brief TCL_CHECK(cond) << "context"; throws tcl::Error with the context when cond is false. */
#define TCL_CHECK(cond) \
  if (cond) {           \
  } else                \
    ::tcl::detail::CheckFailure(__FILE__, __LINE__, #cond)

#endif  // TCL_COMMON_H_
