#include "records.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <thread>
#include <unordered_map>

#include "common.h"
#include "json_reader.h"
#include "parallel.h"

namespace tcl {

namespace {

constexpr double kMaxIndex = 2147483647.0;                // int32 columns
constexpr double kMaxHardwareParam = 9007199254740992.0;  // 2^53: exact in a double

struct Problem {
  const char* reason = nullptr;
  std::string field;
  std::string detail;
};

Problem Fail(const char* reason, std::string field, std::string detail) {
  return Problem{reason, std::move(field), std::move(detail)};
}

/*! \brief Why a line did not parse: too many values for the tape, or not JSON. */
const char* ParseReason(const JsonTape& tape) {
  return tape.TooLarge() ? reason::kTooLarge : reason::kInvalidJson;
}

std::string Expected(const char* what, JsonType got) {
  return std::string("expected ") + what + ", got " + TypeName(got);
}

bool IsIntegral(double x, double lo, double hi) {
  return std::isfinite(x) && x == std::floor(x) && x >= lo && x <= hi;
}

bool IsBlankOrComment(std::string_view line) {
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    return c == '#';
  }
  return true;
}

/*! \brief A JSON text with the whitespace outside strings removed: a stable key for targets. */
std::string CompactJson(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  bool in_string = false;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < raw.size()) {
        out.push_back(raw[++i]);
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
      out.push_back(c);
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      out.push_back(c);
    }
  }
  return out;
}

struct Workloads {
  std::vector<std::string> keys;  // by non-blank line order, as JSONDatabase indexes them
  std::vector<bool> valid;
};

struct Chunk {
  size_t input;
  std::string_view data;
};

struct ChunkResult {
  RecordColumns columns;
  std::vector<Task> tasks;
  std::unordered_map<std::string, int32_t> task_index;
  std::vector<std::string> targets;
  std::unordered_map<std::string, int32_t> target_index;
  std::unique_ptr<TokenWriter> tokens;
  int64_t lines = 0;
  bool done = false;
  bool failed = false;
  long long error_line = 0;
  Problem error;
  std::map<std::string, int64_t> skipped;
  std::map<std::string, std::pair<long long, Problem>> examples;  // local line numbers
};

class ChunkParser {
 public:
  ChunkParser(const RecordInput& input, const Workloads* workloads, ChunkResult* out, bool strict)
      : input_(input), workloads_(workloads), out_(out), strict_(strict) {}

  void Run(std::string_view data) {
    RecordColumns& c = out_->columns;
    c.cost_offsets.push_back(0);
    c.token_offsets.push_back(0);
    const char* p = data.data();
    const char* end = p + data.size();
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
      const char* line_end = nl ? nl : end;
      std::string_view line(p, line_end - p);
      p = nl ? nl + 1 : end;
      long long line_no = ++out_->lines;
      if (IsBlankOrComment(line)) continue;
      Problem problem = ParseLine(line, line_no);
      if (problem.reason == nullptr) continue;
      if (strict_) {
        out_->failed = true;
        out_->error_line = line_no;
        out_->error = std::move(problem);
        return;
      }
      std::string reason = problem.reason;
      if (out_->skipped[reason]++ == 0) out_->examples[reason] = {line_no, std::move(problem)};
    }
    out_->done = true;
  }

 private:
  Problem ParseLine(std::string_view line, long long line_no) {
    if (!tape_.Parse(line)) return Fail(ParseReason(tape_), "", tape_.Error());
    return input_.format == RecordFormat::kAnsor ? ParseAnsor(line_no) : ParseMetaSchedule(line_no);
  }

  int32_t InternTarget(const std::string& target) {
    auto it = out_->target_index.find(target);
    if (it != out_->target_index.end()) return it->second;
    int32_t id = static_cast<int32_t>(out_->targets.size());
    out_->targets.push_back(target);
    out_->target_index.emplace(target, id);
    return id;
  }

  int32_t InternTask(RecordFormat format, std::string_view workload_key, const std::string& target,
                     const std::array<int64_t, 8>& hardware) {
    key_.assign(workload_key.data(), workload_key.size());
    key_.push_back('\x1f');
    key_.append(target);
    auto it = out_->task_index.find(key_);
    if (it != out_->task_index.end()) return it->second;
    int32_t id = static_cast<int32_t>(out_->tasks.size());
    out_->tasks.push_back(Task{format, std::string(workload_key), InternTarget(target), hardware});
    out_->task_index.emplace(key_, id);
    return id;
  }

  /*!
   * \brief Checks a non-empty list of finite, positive costs and keeps them in costs_. Zero (and
   * -0, and what underflows to it, such as 1e-400) is no run time: its throughput would be
   * infinite.
   */
  Problem ReadCosts(uint32_t index, const char* field) {
    const JsonValue& v = tape_[index];
    if (v.type != JsonType::kArray)
      return Fail(reason::kWrongType, field, Expected("an array of costs", v.type));
    if (v.count == 0) return Fail(reason::kOutOfRange, field, "empty cost list");
    costs_.clear();
    uint32_t child = index + 1;
    for (uint32_t k = 0; k < v.count; ++k, child = tape_[child].end) {
      const JsonValue& cost = tape_[child];
      if (cost.type != JsonType::kNumber)
        return Fail(reason::kWrongType, field, Expected("a number", cost.type));
      if (!std::isfinite(cost.number) || !(cost.number > 0)) {
        return Fail(reason::kOutOfRange, field,
                    "cost must be finite and > 0, got " + std::string(cost.text));
      }
      costs_.push_back(cost.number);
    }
    return Problem();
  }

  void AppendRecord(int32_t task, int32_t error, double timestamp, long long line_no) {
    RecordColumns& c = out_->columns;
    c.task.push_back(task);
    c.target.push_back(out_->tasks[task].target);
    c.error.push_back(error);
    double sum = 0.0;
    for (double x : costs_) sum += x;
    c.mean_cost.push_back(costs_.empty() ? std::numeric_limits<double>::quiet_NaN()
                                         : sum / static_cast<double>(costs_.size()));
    c.costs.insert(c.costs.end(), costs_.begin(), costs_.end());
    c.cost_offsets.push_back(static_cast<int64_t>(c.costs.size()));
    c.timestamp.push_back(timestamp);
    c.file.push_back(0);  // set at merge
    c.line.push_back(line_no);
    c.num_steps.push_back(out_->tokens->EndRecord());
    c.token_offsets.push_back(static_cast<int64_t>(out_->tokens->kinds().size()));
  }

  /*! \brief An Ansor task's hardware parameters (at most 8 integers, or null). */
  Problem ReadHardwareParams(uint32_t hw, std::array<int64_t, 8>* out) {
    const JsonTape& t = tape_;
    std::array<int64_t, 8>& hardware = *out;
    if (t[hw].type == JsonType::kArray) {
      if (t[hw].count > 8)
        return Fail(reason::kOutOfRange, "i[0][2]", "more than 8 hardware parameters");
      uint32_t child = hw + 1;
      for (uint32_t k = 0; k < t[hw].count; ++k, child = t[child].end) {
        if (t[child].type != JsonType::kNumber)
          return Fail(reason::kWrongType, "i[0][2]", Expected("a number", t[child].type));
        if (!IsIntegral(t[child].number, -kMaxHardwareParam, kMaxHardwareParam)) {
          return Fail(reason::kOutOfRange, "i[0][2]",
                      "hardware parameter must be an integer, got " + std::string(t[child].text));
        }
        hardware[k] = static_cast<int64_t>(t[child].number);
      }
    } else if (t[hw].type != JsonType::kNull) {
      return Fail(reason::kWrongType, "i[0][2]",
                  Expected("an array of hardware parameters", t[hw].type));
    }
    return Problem();
  }

  /*! \brief Tokenizes an Ansor state's steps as one record. */
  Problem TokenizeSteps(uint32_t steps) {
    const JsonTape& t = tape_;
    TokenWriter& tokens = *out_->tokens;
    tokens.BeginRecord();
    uint32_t step = steps + 1;
    for (uint32_t k = 0; k < t[steps].count; ++k, step = t[step].end) {
      TokenWriter::Status status = tokens.AddAnsorStep(t, step);
      if (status != TokenWriter::Status::kOk) {
        tokens.AbandonRecord();
        std::string field = "i[1][1][" + std::to_string(k) + "]";
        if (status == TokenWriter::Status::kWrongArgument) {
          return Fail(reason::kWrongType, field + "[" + std::to_string(tokens.bad_argument()) + "]",
                      tokens.bad_detail());
        }
        if (status == TokenWriter::Status::kBadShape) {
          return Fail(reason::kWrongType, field,
                      "a step must be an array starting with its kind name");
        }
        return Fail(reason::kOutOfRange, field, "step holds a number that is not finite");
      }
    }
    return Problem();
  }

  /*! \brief Where the measure input "i" holds its parts, once they are checked. */
  struct AnsorInput {
    uint32_t key = 0, target = 0, steps = 0;
    std::array<int64_t, 8> hardware{};
  };

  /*! \brief Checks the measure input "i": [[key, target, hardware, ...], [stages, steps]]. */
  Problem ReadAnsorInput(AnsorInput* in) {
    const JsonTape& t = tape_;
    uint32_t i = t.Member(0, "i");
    if (i == 0) return Fail(reason::kMissingField, "i", "record has no \"i\" (measure input)");
    if (t[i].type != JsonType::kArray || t[i].count < 2) {
      return Fail(reason::kWrongType, "i", "expected [task, state]");
    }
    uint32_t task = i + 1;
    if (t[task].type != JsonType::kArray || t[task].count < 2) {
      return Fail(reason::kWrongType, "i[0]",
                  "expected [workload_key, target, hardware_params, ...]");
    }
    in->key = task + 1;
    if (t[in->key].type != JsonType::kString)
      return Fail(reason::kWrongType, "i[0][0]",
                  Expected("a workload key string", t[in->key].type));
    in->target = t[in->key].end;
    if (t[in->target].type != JsonType::kString)
      return Fail(reason::kWrongType, "i[0][1]", Expected("a target string", t[in->target].type));
    if (t[task].count >= 3) {
      Problem p = ReadHardwareParams(t[in->target].end, &in->hardware);
      if (p.reason) return p;
    }
    uint32_t state = t[task].end;
    if (t[state].type != JsonType::kArray || t[state].count < 2) {
      return Fail(reason::kWrongType, "i[1]", "expected [stages, steps]");
    }
    in->steps = t[state + 1].end;
    if (t[in->steps].type != JsonType::kArray)
      return Fail(reason::kWrongType, "i[1][1]", Expected("an array of steps", t[in->steps].type));
    return Problem();
  }

  /*! \brief Checks the measure result "r": [costs, error_no, all_cost, timestamp?]. */
  Problem ReadAnsorResult(int32_t* error_code, double* timestamp) {
    const JsonTape& t = tape_;
    uint32_t r = t.Member(0, "r");
    if (r == 0) return Fail(reason::kMissingField, "r", "record has no \"r\" (measure result)");
    if (t[r].type != JsonType::kArray || t[r].count < 2) {
      return Fail(reason::kWrongType, "r", "expected [costs, error_no, all_cost, timestamp]");
    }
    Problem p = ReadCosts(r + 1, "r[0]");
    if (p.reason) return p;
    uint32_t error_no = t[r + 1].end;
    if (t[error_no].type != JsonType::kNumber)
      return Fail(reason::kWrongType, "r[1]", Expected("an error code", t[error_no].type));
    if (!IsIntegral(t[error_no].number, 0, kMaxIndex)) {
      return Fail(
          reason::kOutOfRange, "r[1]",
          "error code must be a small non-negative integer, got " + std::string(t[error_no].text));
    }
    *error_code = static_cast<int32_t>(t[error_no].number);
    *timestamp = std::numeric_limits<double>::quiet_NaN();
    if (t[r].count >= 4) {
      uint32_t ts = t.Child(r, 3);
      if (t[ts].type != JsonType::kNumber)
        return Fail(reason::kWrongType, "r[3]", Expected("a timestamp", t[ts].type));
      if (!std::isfinite(t[ts].number))
        return Fail(reason::kOutOfRange, "r[3]", "timestamp is not finite");
      *timestamp = t[ts].number;
    }
    return Problem();
  }

  Problem ParseAnsor(long long line_no) {
    const JsonTape& t = tape_;
    if (t[0].type != JsonType::kObject)
      return Fail(reason::kWrongType, "record", Expected("an object", t[0].type));
    AnsorInput in;
    Problem p = ReadAnsorInput(&in);
    if (p.reason) return p;
    int32_t error_code = 0;
    double timestamp = 0.0;
    p = ReadAnsorResult(&error_code, &timestamp);
    if (p.reason) return p;
    p = TokenizeSteps(in.steps);
    if (p.reason) return p;
    int32_t task_id = InternTask(RecordFormat::kAnsor, t[in.key].text,
                                 std::string(t[in.target].text), in.hardware);
    AppendRecord(task_id, error_code, timestamp, line_no);
    return Problem();
  }

  /*! \brief Checks a trace's instructions and decisions and tokenizes it. */
  Problem ReadTrace(uint32_t trace) {
    const JsonTape& t = tape_;
    uint32_t insts = trace + 1;
    uint32_t decisions = t[insts].end;
    if (t[insts].type != JsonType::kArray)
      return Fail(reason::kWrongType, "trace[0]",
                  Expected("an array of instructions", t[insts].type));
    if (t[decisions].type != JsonType::kArray)
      return Fail(reason::kWrongType, "trace[1]",
                  Expected("an array of decisions", t[decisions].type));
    uint32_t n_insts = t[insts].count;
    inst_index_.clear();
    uint32_t inst = insts + 1;
    for (uint32_t k = 0; k < n_insts; ++k, inst = t[inst].end) {
      bool ok = t[inst].type == JsonType::kArray && t[inst].count == 4;
      if (ok) {
        uint32_t kind = inst + 1;
        uint32_t inputs = t[kind].end;
        uint32_t attrs = t[inputs].end;
        uint32_t outputs = t[attrs].end;
        ok = t[kind].type == JsonType::kString && t[inputs].type == JsonType::kArray &&
             t[attrs].type == JsonType::kArray && t[outputs].type == JsonType::kArray;
      }
      if (!ok)
        return Fail(reason::kWrongType, "trace[0][" + std::to_string(k) + "]",
                    "expected [kind, inputs, attrs, outputs]");
      inst_index_.push_back(inst);
    }
    decision_of_.assign(n_insts, 0);
    uint32_t d = decisions + 1;
    for (uint32_t k = 0; k < t[decisions].count; ++k, d = t[d].end) {
      std::string field = "trace[1][" + std::to_string(k) + "]";
      if (t[d].type != JsonType::kArray || t[d].count != 2 || t[d + 1].type != JsonType::kNumber) {
        return Fail(reason::kWrongType, field, "expected [instruction_index, decision]");
      }
      if (!IsIntegral(t[d + 1].number, 0, static_cast<double>(n_insts) - 1)) {
        return Fail(reason::kOutOfRange, field,
                    "instruction index " + std::string(t[d + 1].text) + " is not in the trace");
      }
      decision_of_[static_cast<size_t>(t[d + 1].number)] = t[d + 1].end;
    }
    TokenWriter& tokens = *out_->tokens;
    tokens.BeginRecord();
    for (uint32_t k = 0; k < n_insts; ++k) {
      if (tokens.AddMetaScheduleInstruction(t, inst_index_[k], decision_of_[k]) !=
          TokenWriter::Status::kOk) {
        tokens.AbandonRecord();
        return Fail(reason::kOutOfRange, "trace[0][" + std::to_string(k) + "]",
                    "instruction holds a number that is not finite");
      }
    }
    return Problem();
  }

  /*! \brief The hardware parameters a MetaSchedule target names (cores, shared memory, ...). */
  std::array<int64_t, 8> TargetHardware(uint32_t target) const {
    const JsonTape& t = tape_;
    std::array<int64_t, 8> hardware{};
    const std::pair<const char*, int> target_params[] = {{"num-cores", 0},
                                                         {"max_shared_memory_per_block", 3},
                                                         {"max_threads_per_block", 5},
                                                         {"thread_warp_size", 7}};
    for (const auto& kv : target_params) {
      uint32_t value = t.Member(target, kv.first);
      if (value != 0 && t[value].type == JsonType::kNumber &&
          IsIntegral(t[value].number, 0, kMaxIndex)) {
        hardware[kv.second] = static_cast<int64_t>(t[value].number);
      }
    }
    return hardware;
  }

  Problem ParseMetaSchedule(long long line_no) {
    const JsonTape& t = tape_;
    if (t[0].type != JsonType::kArray || t[0].count != 2) {
      return Fail(reason::kWrongType, "record",
                  "expected [workload_index, [trace, run_secs, target, args_info]]");
    }
    uint32_t index = 1;
    if (t[index].type != JsonType::kNumber)
      return Fail(reason::kWrongType, "workload_index", Expected("a number", t[index].type));
    if (!IsIntegral(t[index].number, 0, kMaxIndex)) {
      return Fail(reason::kOutOfRange, "workload_index",
                  "not a valid index: " + std::string(t[index].text));
    }
    size_t workload = static_cast<size_t>(t[index].number);
    if (workload >= workloads_->keys.size() || !workloads_->valid[workload]) {
      return Fail(reason::kUnknownWorkload, "workload_index",
                  "workload " + std::to_string(workload) + " is not in " + input_.workload_name);
    }
    uint32_t body = t[index].end;
    if (t[body].type != JsonType::kArray || t[body].count < 3) {
      return Fail(reason::kWrongType, "record[1]", "expected [trace, run_secs, target, args_info]");
    }
    uint32_t trace = body + 1;
    uint32_t run_secs = t[trace].end;
    uint32_t target = t[run_secs].end;
    bool unmeasured = t[run_secs].type == JsonType::kNull;
    if (unmeasured) {
      costs_.clear();
    } else {
      Problem p = ReadCosts(run_secs, "run_secs");
      if (p.reason) return p;
    }
    if (t[target].type != JsonType::kObject)
      return Fail(reason::kWrongType, "target", Expected("a target object", t[target].type));
    if (t[trace].type != JsonType::kArray || t[trace].count != 2) {
      return Fail(reason::kWrongType, "trace", "expected [instructions, decisions]");
    }
    Problem p = ReadTrace(trace);
    if (p.reason) return p;
    std::string target_text = CompactJson(t[target].text);
    std::array<int64_t, 8> hardware = TargetHardware(target);
    int32_t error = unmeasured ? kUnmeasuredErrorCode : 0;
    for (double x : costs_) {
      if (x >= kMetaScheduleFailedSeconds) error = kMetaScheduleErrorCode;
    }
    int32_t task_id =
        InternTask(RecordFormat::kMetaSchedule, workloads_->keys[workload], target_text, hardware);
    AppendRecord(task_id, error, std::numeric_limits<double>::quiet_NaN(), line_no);
    return Problem();
  }

  const RecordInput& input_;
  const Workloads* workloads_;
  ChunkResult* out_;
  bool strict_;
  JsonTape tape_;
  std::string key_;
  std::vector<double> costs_;
  std::vector<uint32_t> inst_index_;
  std::vector<uint32_t> decision_of_;
};

/*! \brief Reads a database_workload.json: one [shash, base64 module] per line. */
Workloads ReadWorkloads(const RecordInput& input, bool strict, ReadResult* result) {
  Workloads w;
  JsonTape tape;
  std::string_view data = input.workload_data;
  long long line_no = 0;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    size_t line_end = nl == std::string_view::npos ? data.size() : nl;
    std::string_view line = data.substr(pos, line_end - pos);
    pos = line_end + 1;
    ++line_no;
    if (IsBlankOrComment(line)) continue;
    Problem p;
    if (!tape.Parse(line)) {
      p = Fail(ParseReason(tape), "", tape.Error());
    } else if (tape[0].type != JsonType::kArray || tape[0].count < 1 ||
               tape[1].type != JsonType::kString) {
      p = Fail(reason::kWrongType, "workload", "expected [structural_hash, module]");
    }
    if (p.reason == nullptr) {
      w.keys.emplace_back(tape[1].text);
      w.valid.push_back(true);
      continue;
    }
    if (strict) throw RecordError(input.workload_name, line_no, p.reason, p.field, p.detail);
    w.keys.emplace_back();
    w.valid.push_back(false);
    if (result->skipped[p.reason]++ == 0) {
      result->skip_examples[p.reason] =
          SkipExample{input.workload_name, line_no, p.field, p.detail};
    }
  }
  return w;
}

std::vector<Chunk> SplitIntoChunks(const std::vector<RecordInput>& inputs, size_t chunk_bytes) {
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string_view data = inputs[i].data;
    size_t pos = 0;
    do {
      size_t end = std::min(data.size(), pos + chunk_bytes);
      if (end < data.size()) {
        size_t nl = data.find('\n', end);
        end = nl == std::string_view::npos ? data.size() : nl + 1;
      }
      chunks.push_back(Chunk{i, data.substr(pos, end - pos)});
      pos = end;
    } while (pos < data.size());
  }
  return chunks;
}

template <typename T>
void CopyInto(const std::vector<T>& from, std::vector<T>* to, size_t offset) {
  if (!from.empty()) std::memcpy(to->data() + offset, from.data(), from.size() * sizeof(T));
}

/*! \brief Chunks parsed in parallel, each into its own result, in any order. */
struct ParsedChunks {
  std::vector<Chunk> chunks;
  std::vector<ChunkResult> parts;
  /*! \brief The first chunk whose line failed (strict mode), or chunks.size(). */
  size_t first_failed;
  /*! \brief Line number before each chunk's first line, within its input. */
  std::vector<long long> line_base;
};

ParsedChunks ParseChunks(const std::vector<RecordInput>& inputs, std::vector<Workloads>* workloads,
                         const Vocab& vocab, const ReadOptions& options, int threads) {
  size_t total_bytes = 0;
  for (const RecordInput& input : inputs) total_bytes += input.data.size();
  // Several chunks per thread keep the threads busy when line lengths vary.
  size_t chunk_bytes =
      std::max<size_t>(std::min(options.chunk_bytes, total_bytes / (4 * threads) + 1), 1 << 16);
  ParsedChunks parsed{SplitIntoChunks(inputs, chunk_bytes), {}, 0, {}};
  size_t n = parsed.chunks.size();
  parsed.parts.resize(n);
  for (ChunkResult& part : parsed.parts) {
    part.tokens = std::make_unique<TokenWriter>(&vocab, &options.tokenizer);
  }
  std::atomic<size_t> first_failed{n};
  std::exception_ptr crash;
  std::atomic<bool> crashed{false};
  ParallelForEach(static_cast<int64_t>(n), threads, [&](int64_t k) {
    size_t i = static_cast<size_t>(k);
    if (i > first_failed.load()) return;  // an earlier chunk already holds the error to report
    try {
      const Chunk& chunk = parsed.chunks[i];
      ChunkParser(inputs[chunk.input], &(*workloads)[chunk.input], &parsed.parts[i], options.strict)
          .Run(chunk.data);
    } catch (...) {
      if (!crashed.exchange(true)) crash = std::current_exception();
    }
    if (parsed.parts[i].failed) {
      size_t seen = first_failed.load();
      while (i < seen && !first_failed.compare_exchange_weak(seen, i)) {
      }
    }
  });
  if (crashed) std::rethrow_exception(crash);
  parsed.first_failed = first_failed.load();
  // Each chunk counts its own lines; a chunk's first line follows its predecessors'.
  parsed.line_base.assign(n, 0);
  for (size_t i = 1; i < n; ++i) {
    if (parsed.chunks[i].input == parsed.chunks[i - 1].input) {
      parsed.line_base[i] = parsed.line_base[i - 1] + parsed.parts[i - 1].lines;
    }
  }
  return parsed;
}

/*! \brief Where a parsed chunk's lines belong: its file and the lines of the file before it. */
struct ChunkPlace {
  int32_t file;
  long long line_base;
};

/*! \brief Where each chunk's rows go in the merged result, and its ids in the merged tables. */
struct MergePlan {
  std::vector<std::vector<int32_t>> task_map;
  std::vector<std::vector<int32_t>> kind_map;
  std::vector<size_t> record_at, cost_at, token_at;
};

}  // namespace

/*! \brief Every chunk parsed so far, with its place; merged once, by Finish. */
struct RecordReader::State {
  State(const std::vector<std::string>& kinds, bool frozen, const ReadOptions& read_options)
      : vocab(kinds, frozen), options(read_options) {}
  Vocab vocab;
  ReadOptions options;
  std::vector<ChunkResult> parts;
  std::vector<ChunkPlace> places;
  std::unordered_map<int32_t, long long> lines_read;  // by file, in the pieces added so far
  ReadResult result;  // workload-file skips so far; the rest is filled by Finish
};

namespace {

/*! \brief Merges the tables in chunk order (first appearance wins): targets, tasks, kinds, skips.
 */
MergePlan MergeTables(RecordReader::State* state, const std::vector<std::string>& files) {
  ReadResult* result = &state->result;
  size_t n = state->parts.size();
  MergePlan plan{std::vector<std::vector<int32_t>>(n), std::vector<std::vector<int32_t>>(n),
                 std::vector<size_t>(n + 1, 0), std::vector<size_t>(n + 1, 0),
                 std::vector<size_t>(n + 1, 0)};
  Vocab merged(state->vocab.Kinds(), state->vocab.Frozen());
  std::unordered_map<std::string, int32_t> target_ids;
  std::unordered_map<std::string, int32_t> task_ids;
  for (size_t i = 0; i < n; ++i) {
    ChunkResult& part = state->parts[i];
    std::vector<int32_t> target_map;
    for (const std::string& target : part.targets) {
      auto it = target_ids.emplace(target, static_cast<int32_t>(result->targets.size())).first;
      if (it->second == static_cast<int32_t>(result->targets.size())) {
        result->targets.push_back(target);
      }
      target_map.push_back(it->second);
    }
    for (Task task : part.tasks) {
      task.target = target_map[task.target];
      std::string key = task.workload_key + '\x1f' + result->targets[task.target];
      auto it = task_ids.emplace(key, static_cast<int32_t>(result->tasks.size())).first;
      if (it->second == static_cast<int32_t>(result->tasks.size())) result->tasks.push_back(task);
      plan.task_map[i].push_back(it->second);
    }
    for (const std::string& kind : part.tokens->new_kinds()) {
      plan.kind_map[i].push_back(merged.Add(kind));
    }
    for (const auto& kv : part.tokens->unknown()) result->unknown_kinds[kv.first] += kv.second;
    for (const auto& kv : part.skipped) {
      if (result->skipped[kv.first] == 0) {
        const auto& ex = part.examples[kv.first];
        const ChunkPlace& place = state->places[i];
        result->skip_examples[kv.first] =
            SkipExample{files[static_cast<size_t>(place.file)], place.line_base + ex.first,
                        ex.second.field, ex.second.detail};
      }
      result->skipped[kv.first] += kv.second;
    }
    result->lines += part.lines;
    plan.record_at[i + 1] = plan.record_at[i] + part.columns.task.size();
    plan.cost_at[i + 1] = plan.cost_at[i] + part.columns.costs.size();
    plan.token_at[i + 1] = plan.token_at[i] + part.tokens->kinds().size();
  }
  result->vocab = merged.Kinds();
  return plan;
}

void ResizeColumns(RecordColumns* out, size_t records, size_t costs, size_t tokens, size_t width) {
  out->task.resize(records);
  out->target.resize(records);
  out->error.resize(records);
  out->mean_cost.resize(records);
  out->timestamp.resize(records);
  out->file.resize(records);
  out->line.resize(records);
  out->num_steps.resize(records);
  out->cost_offsets.resize(records + 1, 0);
  out->costs.resize(costs);
  out->token_offsets.resize(records + 1, 0);
  out->kinds.resize(tokens);
  out->fields.resize(tokens * width);
}

/*! \brief Copies chunk i's columns to their place, renumbered, and releases the chunk. */
void MergeChunk(size_t i, const MergePlan& plan, RecordReader::State* state, size_t width) {
  ReadResult* result = &state->result;
  RecordColumns& out = result->columns;
  ChunkResult& part = state->parts[i];
  RecordColumns& c = part.columns;
  const ChunkPlace& place = state->places[i];
  size_t r0 = plan.record_at[i];
  for (size_t k = 0; k < c.task.size(); ++k) {
    out.task[r0 + k] = plan.task_map[i][c.task[k]];
    out.target[r0 + k] = result->tasks[out.task[r0 + k]].target;
    out.file[r0 + k] = place.file;
    out.line[r0 + k] = place.line_base + c.line[k];
    out.cost_offsets[r0 + k + 1] = static_cast<int64_t>(plan.cost_at[i]) + c.cost_offsets[k + 1];
    out.token_offsets[r0 + k + 1] = static_cast<int64_t>(plan.token_at[i]) + c.token_offsets[k + 1];
  }
  CopyInto(c.error, &out.error, r0);
  CopyInto(c.mean_cost, &out.mean_cost, r0);
  CopyInto(c.timestamp, &out.timestamp, r0);
  CopyInto(c.num_steps, &out.num_steps, r0);
  CopyInto(c.costs, &out.costs, plan.cost_at[i]);
  const std::vector<int32_t>& kinds = part.tokens->kinds();
  for (size_t k = 0; k < kinds.size(); ++k) {
    int32_t id = kinds[k];
    out.kinds[plan.token_at[i] + k] = id >= 0 ? id : plan.kind_map[i][static_cast<size_t>(-1 - id)];
  }
  CopyInto(part.tokens->fields(), &out.fields, plan.token_at[i] * width);
  // Release each chunk as soon as it is merged: peak memory stays near one copy.
  c = RecordColumns();
  part.tokens.reset();
}

int Threads(const ReadOptions& options) {
  return ResolveThreads(options.num_threads, std::numeric_limits<int32_t>::max());
}

}  // namespace

RecordReader::RecordReader(const std::vector<std::string>& vocab, bool frozen,
                           const ReadOptions& options)
    : state_(std::make_unique<State>(vocab, frozen, options)) {
  TCL_CHECK(options.tokenizer.max_len > 0)
      << "max_len must be positive, got " << options.tokenizer.max_len;
  TCL_CHECK(options.tokenizer.num_fields > 0)
      << "num_fields must be positive, got " << options.tokenizer.num_fields;
}

RecordReader::~RecordReader() = default;

void RecordReader::Add(const std::vector<RecordInput>& inputs, const std::vector<int32_t>& files) {
  TCL_CHECK(inputs.size() == files.size()) << "one file number per input";
  State& state = *state_;
  std::vector<Workloads> workloads(inputs.size());
  std::vector<long long> lines_before(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    lines_before[i] = state.lines_read[files[i]];
    if (inputs[i].format == RecordFormat::kMetaSchedule) {
      workloads[i] = ReadWorkloads(inputs[i], state.options.strict, &state.result);
    }
  }
  ParsedChunks parsed =
      ParseChunks(inputs, &workloads, state.vocab, state.options, Threads(state.options));
  if (parsed.first_failed < parsed.chunks.size()) {
    size_t i = parsed.first_failed;
    size_t input = parsed.chunks[i].input;
    const Problem& p = parsed.parts[i].error;
    throw RecordError(inputs[input].name,
                      lines_before[input] + parsed.line_base[i] + parsed.parts[i].error_line,
                      p.reason, p.field, p.detail);
  }
  for (size_t i = 0; i < parsed.chunks.size(); ++i) {
    size_t input = parsed.chunks[i].input;
    state.places.push_back(ChunkPlace{files[input], lines_before[input] + parsed.line_base[i]});
    state.lines_read[files[input]] += parsed.parts[i].lines;
    state.parts.push_back(std::move(parsed.parts[i]));
  }
}

ReadResult RecordReader::Finish(const std::vector<std::string>& files) {
  State& state = *state_;
  state.result.files = files;
  MergePlan plan = MergeTables(&state, files);
  size_t width = static_cast<size_t>(state.options.tokenizer.num_fields);
  ResizeColumns(&state.result.columns, plan.record_at.back(), plan.cost_at.back(),
                plan.token_at.back(), width);
  ParallelForEach(static_cast<int64_t>(state.parts.size()), Threads(state.options),
                  [&](int64_t i) { MergeChunk(static_cast<size_t>(i), plan, &state, width); });
  state.parts.clear();
  state.places.clear();
  return std::move(state.result);
}

ReadResult ReadRecords(const std::vector<RecordInput>& inputs, const Vocab& vocab,
                       const ReadOptions& options) {
  RecordReader reader(vocab.Kinds(), vocab.Frozen(), options);
  std::vector<int32_t> numbers;
  std::vector<std::string> files;
  for (size_t i = 0; i < inputs.size(); ++i) {
    numbers.push_back(static_cast<int32_t>(i));
    files.push_back(inputs[i].name);
  }
  reader.Add(inputs, numbers);
  return reader.Finish(files);
}

}  // namespace tcl
