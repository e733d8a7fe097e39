/*!
 * \file records.h
 * \brief Measured schedule records (Ansor/TenSet logs and MetaSchedule databases) to columns.
 *
 * Input buffers are cut into chunks at line boundaries and parsed by a pool of threads; the
 * chunks are merged in input order so that the result (task, target and vocabulary order
 * included) is the same for any thread count, and the same as the pure-Python reader's.
 */
#ifndef TCL_RECORDS_H_
#define TCL_RECORDS_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer.h"

namespace tcl {

/*! \brief Stable reason codes for a record that cannot be read. */
namespace reason {
constexpr const char* kInvalidJson = "invalid_json";
constexpr const char* kWrongType = "wrong_type";
constexpr const char* kMissingField = "missing_field";
constexpr const char* kOutOfRange = "out_of_range";
constexpr const char* kUnknownWorkload = "unknown_workload";
constexpr const char* kTooLarge = "too_large";
}  // namespace reason

enum class RecordFormat : int32_t { kAnsor = 0, kMetaSchedule = 1 };

/*! \brief MetaSchedule marks a failed build or run with this run time (seconds). */
constexpr double kMetaScheduleFailedSeconds = 1e9;
/*! \brief Error code given to MetaSchedule failures (Ansor's UNKNOWN_ERROR): MS keeps no reason. */
constexpr int32_t kMetaScheduleErrorCode = 8;
/*! \brief Error code of a record not measured yet (MetaSchedule run_secs null: a candidate pool).
 */
constexpr int32_t kUnmeasuredErrorCode = -1;

/*! \brief One input: an Ansor log, or a MetaSchedule tuning-record file and its workload file. */
struct RecordInput {
  RecordFormat format;
  std::string name;
  std::string_view data;
  std::string workload_name;
  std::string_view workload_data;
};

struct ReadOptions {
  bool strict = true;
  int num_threads = 0;
  /*! \brief Target chunk size; large inputs are split further so that every thread has work. */
  size_t chunk_bytes = 1 << 20;
  TokenizerConfig tokenizer;
};

struct Task {
  RecordFormat format;
  std::string workload_key;
  int32_t target;
  std::array<int64_t, 8> hardware_params;
};

/*! \brief The first skipped line for a reason, shown to the user in lenient mode. */
struct SkipExample {
  std::string file;
  long long line;
  std::string field;
  std::string detail;
};

/*! \brief Records as columns: row i of every per-record vector belongs to record i. */
struct RecordColumns {
  std::vector<int32_t> task;
  std::vector<int32_t> target;
  std::vector<int32_t> error;
  std::vector<double> mean_cost;
  std::vector<double> timestamp;
  std::vector<int32_t> file;
  std::vector<int64_t> line;
  std::vector<int32_t> num_steps;
  /*! \brief Repeat costs of record i are costs[cost_offsets[i]:cost_offsets[i+1]]. */
  std::vector<int64_t> cost_offsets;
  std::vector<double> costs;
  /*! \brief Tokens of record i are kinds[token_offsets[i]:token_offsets[i+1]] (at most max_len). */
  std::vector<int64_t> token_offsets;
  std::vector<int32_t> kinds;
  /*! \brief Row-major (tokens, num_fields). */
  std::vector<float> fields;
};

struct ReadResult {
  RecordColumns columns;
  std::vector<Task> tasks;
  std::vector<std::string> targets;
  std::vector<std::string> files;
  std::vector<std::string> vocab;
  std::map<std::string, int64_t> skipped;
  std::map<std::string, SkipExample> skip_examples;
  std::map<std::string, int64_t> unknown_kinds;
  int64_t lines = 0;
};

/*!
 * \brief Reads records given a few inputs at a time (pieces of files, so that no file need be in
 * memory whole): each Add parses its inputs, after which their data may be freed; Finish merges
 * everything once, as one ReadRecords over all the data would.
 */
class RecordReader {
 public:
  RecordReader(const std::vector<std::string>& vocab, bool frozen, const ReadOptions& options);
  ~RecordReader();
  /*!
   * \brief Parses and tokenizes `inputs`, input i being the next piece (whole lines) of the file
   * numbered files[i]: its lines are numbered after those of the file's earlier pieces.
   * \throws RecordError in strict mode for the first bad line in input order.
   */
  void Add(const std::vector<RecordInput>& inputs, const std::vector<int32_t>& files);
  /*! \brief The records of every Add; `files` names the file numbers. */
  ReadResult Finish(const std::vector<std::string>& files);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

/*!
 * \brief Parses and tokenizes every input (one RecordReader, one Add).
 * \throws RecordError in strict mode for the first bad line in input order.
 */
ReadResult ReadRecords(const std::vector<RecordInput>& inputs, const Vocab& vocab,
                       const ReadOptions& options);

}  // namespace tcl

#endif  // TCL_RECORDS_H_
