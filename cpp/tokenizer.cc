#include "tokenizer.h"

#include <cmath>

#include "common.h"

namespace tcl {

namespace {

/*!
 * \brief The argument types of each Ansor step, by position, as TVM's auto_scheduler writes them
 * (transform_step.cc, WriteToRecord): n number, N number or null, s string, a array of numbers,
 * A array of numbers or nulls, b number or bool. Arguments past the signature are not checked.
 */
struct StepSignature {
  const char* kind;
  const char* args;
};
constexpr StepSignature kAnsorSteps[] = {
    {"AN", "nnn"},   {"FU", "na"},      {"PR", "nns"},  {"RE", "na"},  {"SP", "nnNAb"},
    {"FSP", "nnnn"}, {"FFSP", "nnanb"}, {"SA", "nnnn"}, {"CA", "nnn"}, {"CI", "n"},
    {"CR", "n"},     {"CHR", "nsa"},    {"CHW", "ns"},  {"RF", "nnn"}};

const char* Describe(char code) {
  switch (code) {
    case 'n': return "a number";
    case 'N': return "a number or null";
    case 's': return "a string";
    case 'a': return "an array of numbers";
    case 'A': return "an array of numbers or nulls";
    default: return "a number or bool";
  }
}

bool Scalar(JsonType type, char code) {
  switch (code) {
    case 'n': return type == JsonType::kNumber;
    case 'N': return type == JsonType::kNumber || type == JsonType::kNull;
    case 's': return type == JsonType::kString;
    default:
      return type == JsonType::kNumber || type == JsonType::kTrue || type == JsonType::kFalse;
  }
}

/*! \brief The tape index of the first element of the array at `index` that array code `code`
 * ('a' numbers, 'A' numbers or nulls) does not allow; 0 when every element is allowed. */
uint32_t FirstBadElement(const JsonTape& tape, uint32_t index, char code) {
  uint32_t child = index + 1;
  for (uint32_t k = 0; k < tape[index].count; ++k, child = tape[child].end) {
    JsonType t = tape[child].type;
    if (t != JsonType::kNumber && !(code == 'A' && t == JsonType::kNull)) return child;
  }
  return 0;
}

bool IsArrayCode(char code) { return code == 'a' || code == 'A'; }

/*! \brief Whether the value at `index` has the type `code` names. */
bool Matches(const JsonTape& tape, uint32_t index, char code) {
  const JsonValue& v = tape[index];
  if (!IsArrayCode(code)) return Scalar(v.type, code);
  return v.type == JsonType::kArray && FirstBadElement(tape, index, code) == 0;
}

/*! \brief What a value that does not match `code` holds ("string", "an array holding a bool"). */
std::string Got(const JsonTape& tape, uint32_t index, char code) {
  const JsonValue& v = tape[index];
  uint32_t bad =
      v.type == JsonType::kArray && IsArrayCode(code) ? FirstBadElement(tape, index, code) : 0;
  if (bad == 0) return TypeName(v.type);
  return std::string("an array holding a ") + TypeName(tape[bad].type);
}

}  // namespace

const std::vector<std::string>& AnsorStepKinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> names;
    for (const StepSignature& step : kAnsorSteps) names.emplace_back(step.kind);
    return names;
  }();
  return kinds;
}

const std::vector<std::string>& MetaScheduleInstructionKinds() {
  // clang-format off: a table, aligned by hand
  static const std::vector<std::string> kinds = {
      "GetSBlock",        "GetLoops",          "GetChildBlocks",
      "GetProducers",     "GetConsumers",      "GetOutputBlocks",
      "SamplePerfectTile", "SamplePartitionedTile", "SampleCategorical",
      "SampleComputeLocation", "Split",         "LoopPartition",
      "Fuse",             "Merge",             "Reorder",
      "ReorderBlockIterVar", "AddUnitLoop",    "Parallel",
      "Vectorize",        "Bind",              "Unroll",
      "CacheRead",        "CacheWrite",        "ReindexCacheRead",
      "ReindexCacheWrite", "CacheInplace",     "CacheIndex",
      "ReIndex",          "ReadAt",            "WriteAt",
      "ComputeAt",        "ReverseComputeAt",  "ComputeInline",
      "ReverseComputeInline", "FuseReductionEpilogue", "DecomposeReduction",
      "RFactor",          "StorageAlign",      "SetScope",
      "UnsafeSetDType",   "Blockize",          "Tensorize",
      "Annotate",         "Unannotate",        "TransformLayout",
      "TransformBlockLayout", "DecomposePadding", "PadEinsum",
      "RollingBuffer",    "EnterPostproc",     "UnsafeHideBufferAccess",
      "AnnotateBufferAccess"};
  // clang-format on
  return kinds;
}

const std::vector<std::string>& AnsorAnnotationNames() {
  static const std::vector<std::string> names = {
      "none",        "unroll",     "vectorize",   "parallel",   "vthread",     "blockIdx.x",
      "threadIdx.x", "blockIdx.y", "threadIdx.y", "blockIdx.z", "threadIdx.z", "tensorize"};
  return names;
}

Vocab::Vocab(std::vector<std::string> kinds, bool frozen)
    : kinds_(std::move(kinds)), frozen_(frozen) {
  TCL_CHECK(kinds_.size() >= 2 && kinds_[kPadId] == "<pad>" && kinds_[kUnknownId] == "<unk>")
      << "a vocabulary starts with \"<pad>\" and \"<unk>\"";
  for (size_t i = 0; i < kinds_.size(); ++i) {
    bool inserted = index_.emplace(kinds_[i], static_cast<int32_t>(i)).second;
    TCL_CHECK(inserted) << "duplicate kind in vocabulary: \"" << kinds_[i] << "\"";
  }
}

int32_t Vocab::Add(const std::string& kind) {
  auto it = index_.find(kind);
  if (it != index_.end()) return it->second;
  int32_t id = static_cast<int32_t>(kinds_.size());
  kinds_.push_back(kind);
  index_.emplace(kind, id);
  return id;
}

TokenWriter::TokenWriter(const Vocab* vocab, const TokenizerConfig* config)
    : vocab_(vocab), config_(config) {
  for (const StepSignature& step : kAnsorSteps) {
    base_kinds_[step.kind].flags |= kKnown;
    base_kinds_[step.kind].signature = step.args;
  }
  for (const std::string& kind : MetaScheduleInstructionKinds()) base_kinds_[kind].flags |= kKnown;
  for (const std::string& kind : config->skip_kinds) base_kinds_[kind].flags |= kSkipped;
}

void TokenWriter::BeginRecord() {
  record_kinds_begin_ = kinds_.size();
  record_new_kinds_begin_ = new_kinds_.size();
  record_steps_ = 0;
  record_unknown_.clear();
}

int32_t TokenWriter::EndRecord() {
  for (const auto& kv : record_unknown_) unknown_[kv.first] += kv.second;
  return record_steps_;
}

void TokenWriter::AbandonRecord() {
  kinds_.resize(record_kinds_begin_);
  fields_.resize(record_kinds_begin_ * static_cast<size_t>(config_->num_fields));
  for (size_t i = record_new_kinds_begin_; i < new_kinds_.size(); ++i)
    new_index_.erase(new_kinds_[i]);
  new_kinds_.resize(record_new_kinds_begin_);
  record_unknown_.clear();
}

void TokenWriter::AddSuffix(std::string_view text) {
  if (text.empty() || text.size() > config_->max_kind_string) return;
  kind_.push_back(':');
  kind_.append(text.data(), text.size());
}

bool TokenWriter::AddNumber(double value) {
  if (!std::isfinite(value)) return false;
  numbers_.push_back(value);
  return true;
}

void TokenWriter::Emit(bool base_known) {
  ++record_steps_;
  if (static_cast<int>(kinds_.size() - record_kinds_begin_) >= config_->max_len) return;
  int32_t id;
  if (!base_known) {
    id = kUnknownId;
    ++record_unknown_[kind_];
  } else if ((id = vocab_->Find(kind_)) >= 0) {
  } else if (vocab_->Frozen()) {
    id = kUnknownId;
    ++record_unknown_[kind_];
  } else {
    auto it = new_index_.find(kind_);
    if (it == new_index_.end()) {
      it = new_index_.emplace(kind_, static_cast<int32_t>(new_kinds_.size())).first;
      new_kinds_.push_back(kind_);
    }
    id = -1 - it->second;
  }
  kinds_.push_back(id);
  size_t width = static_cast<size_t>(config_->num_fields);
  size_t used = numbers_.size() < width ? numbers_.size() : width;
  for (size_t i = 0; i < used; ++i) {
    double x = numbers_[i];
    double scaled = std::log2(1.0 + std::fabs(x));
    fields_.push_back(static_cast<float>(x < 0 ? -scaled : scaled));
  }
  for (size_t i = used; i < width; ++i) fields_.push_back(0.0f);
}

bool TokenWriter::AddString(std::string_view text, Strings rule) {
  switch (rule) {
    case Strings::kAnsor: {
      // Pragmas carry "name$value": the name is categorical, the value numeric.
      size_t dollar = text.find('$');
      AddSuffix(text.substr(0, dollar));
      if (dollar == std::string_view::npos) return true;
      std::string_view rest = text.substr(dollar + 1);
      if (IsJsonNumber(rest)) return AddNumber(JsonNumberToDouble(rest));
      AddSuffix(rest);
      return true;
    }
    case Strings::kInputs:
      // Inputs name random variables ("b0", "l5") unless quoted, which marks a string literal.
      if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
        AddSuffix(text.substr(1, text.size() - 2));
      }
      return true;
    case Strings::kAttrs: AddSuffix(text); return true;
    case Strings::kIgnored: return true;
  }
  return true;
}

bool TokenWriter::Walk(const JsonTape& tape, uint32_t index, Strings rule) {
  const JsonValue& v = tape[index];
  switch (v.type) {
    case JsonType::kNumber: return AddNumber(v.number);
    case JsonType::kTrue: return AddNumber(1.0);
    case JsonType::kFalse: return AddNumber(0.0);
    case JsonType::kNull: return AddNumber(-1.0);
    case JsonType::kString: return AddString(v.text, rule);
    case JsonType::kArray: {
      uint32_t child = index + 1;
      for (uint32_t k = 0; k < v.count; ++k, child = tape[child].end) {
        if (!Walk(tape, child, rule)) return false;
      }
      return true;
    }
    case JsonType::kObject: {
      uint32_t child = index + 1;
      for (uint32_t k = 0; k < v.count; ++k) {
        uint32_t value = tape[child].end;
        if (!Walk(tape, value, rule)) return false;
        child = tape[value].end;
      }
      return true;
    }
  }
  return true;
}

bool TokenWriter::CheckAnsorArguments(const JsonTape& tape, uint32_t step, const char* args) {
  size_t expected = std::char_traits<char>::length(args);
  if (tape[step].count - 1 < expected) {
    bad_argument_ = tape[step].count;  // the first missing one
    bad_detail_ = "a " + kind_ + " step takes " + std::to_string(expected) + " arguments, got " +
                  std::to_string(tape[step].count - 1);
    return false;
  }
  uint32_t child = tape[step + 1].end;
  for (size_t k = 0; k < expected; ++k, child = tape[child].end) {
    if (Matches(tape, child, args[k])) continue;
    bad_argument_ = k + 1;
    bad_detail_ = kind_ + " argument " + std::to_string(k + 1) + ": expected " + Describe(args[k]) +
                  ", got " + Got(tape, child, args[k]);
    return false;
  }
  return true;
}

TokenWriter::Status TokenWriter::AddAnsorStep(const JsonTape& tape, uint32_t step) {
  const JsonValue& s = tape[step];
  if (s.type != JsonType::kArray || s.count == 0 || tape[step + 1].type != JsonType::kString) {
    return Status::kBadShape;
  }
  kind_.assign(tape[step + 1].text);
  const KindInfo& info = Info(kind_);
  if (info.flags & kSkipped) return Status::kOk;
  bool known = (info.flags & kKnown) != 0;
  if (info.signature && !CheckAnsorArguments(tape, step, info.signature)) {
    return Status::kWrongArgument;
  }
  bool annotation = kind_ == "AN";  // kind_ grows suffixes below; decide on the base name
  numbers_.clear();
  uint32_t child = tape[step + 1].end;
  for (uint32_t k = 1; k < s.count; ++k, child = tape[child].end) {
    const JsonValue& arg = tape[child];
    // The annotation of "AN" is an enum: it names the kind (parallel, vectorize, ...).
    if (k == 3 && annotation && arg.type == JsonType::kNumber && arg.number >= 0 &&
        arg.number < static_cast<double>(AnsorAnnotationNames().size()) &&
        arg.number == std::floor(arg.number)) {
      AddSuffix(AnsorAnnotationNames()[static_cast<size_t>(arg.number)]);
      continue;
    }
    if (!Walk(tape, child, Strings::kAnsor)) return Status::kNonFinite;
  }
  Emit(known);
  return Status::kOk;
}

TokenWriter::Status TokenWriter::AddMetaScheduleInstruction(const JsonTape& tape, uint32_t inst,
                                                            uint32_t decision) {
  // The caller has checked the shape: [kind, inputs, attrs, outputs].
  uint32_t kind_index = inst + 1;
  uint32_t inputs = tape[kind_index].end;
  uint32_t attrs = tape[inputs].end;
  kind_.assign(tape[kind_index].text);
  uint8_t flags = Info(kind_).flags;
  if (flags & kSkipped) return Status::kOk;
  bool known = (flags & kKnown) != 0;
  bool categorical = kind_ == "SampleCategorical";
  bool names = kind_ == "GetSBlock";
  numbers_.clear();
  if (decision != 0) {
    // A categorical decision is an index into the candidates: the chosen value is what matters.
    const JsonValue& d = tape[decision];
    uint32_t candidates = attrs + 1;
    if (categorical && d.type == JsonType::kNumber && tape[attrs].count > 0 &&
        tape[candidates].type == JsonType::kArray && d.number >= 0 &&
        d.number < static_cast<double>(tape[candidates].count) &&
        d.number == std::floor(d.number)) {
      decision = tape.Child(candidates, static_cast<uint32_t>(d.number));
    }
    if (!Walk(tape, decision, Strings::kIgnored)) return Status::kNonFinite;
  }
  if (!Walk(tape, inputs, names ? Strings::kIgnored : Strings::kInputs) ||
      !Walk(tape, attrs, names ? Strings::kIgnored : Strings::kAttrs)) {
    return Status::kNonFinite;
  }
  Emit(known);
  return Status::kOk;
}

}  // namespace tcl
