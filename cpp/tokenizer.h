/*!
 * \file tokenizer.h
 * \brief Schedule steps (Ansor) and trace instructions (MetaSchedule) to fixed-width step vectors.
 *
 * Each step becomes one token: a kind id and `num_fields` numbers. The kind is the step's name
 * joined with its categorical string arguments (an annotation key, a storage scope, a pragma
 * name), so "Annotate:meta_schedule.parallel" and "CHW:local" are kinds of their own; every
 * number (split factors, extents, sampled decisions, pragma values) becomes a field, scaled as
 * sign(x) * log2(1 + |x|). Kind names outside the two formats' known step kinds map to <unk>.
 */
#ifndef TCL_TOKENIZER_H_
#define TCL_TOKENIZER_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "json_reader.h"

namespace tcl {

constexpr int32_t kPadId = 0;
constexpr int32_t kUnknownId = 1;

/*! \brief The 14 Ansor/TenSet step kinds. */
const std::vector<std::string>& AnsorStepKinds();
/*! \brief MetaSchedule instruction kinds of apache-tvm 0.27. */
const std::vector<std::string>& MetaScheduleInstructionKinds();
/*! \brief Names of Ansor's IteratorAnnotation codes, used in "AN:<name>" kinds. */
const std::vector<std::string>& AnsorAnnotationNames();

struct TokenizerConfig {
  /*! \brief Tokens kept per record; longer schedules are cut (their full length is recorded). */
  int max_len = 64;
  /*! \brief Numeric fields per token; extra numbers are dropped, missing ones are zero. */
  int num_fields = 10;
  /*! \brief Step kinds dropped before tokenizing (bookkeeping instructions with no choices). */
  std::vector<std::string> skip_kinds;
  /*! \brief Strings longer than this never join a kind name (they are names or index maps). */
  size_t max_kind_string = 32;
};

/*! \brief Kind names and ids; id 0 is <pad>, id 1 is <unk>. */
class Vocab {
 public:
  Vocab(std::vector<std::string> kinds, bool frozen);

  int32_t Find(const std::string& kind) const {
    auto it = index_.find(kind);
    return it == index_.end() ? -1 : it->second;
  }
  int32_t Add(const std::string& kind);
  const std::vector<std::string>& Kinds() const { return kinds_; }
  bool Frozen() const { return frozen_; }

 private:
  std::vector<std::string> kinds_;
  std::unordered_map<std::string, int32_t> index_;
  bool frozen_;
};

/*!
 * \brief Tokens of one chunk of records, written against a shared read-only vocabulary.
 *
 * Kinds new to the vocabulary get provisional negative ids (-1 - local index) so that chunks can
 * be tokenized in parallel; MergeInto assigns them real ids in chunk order, which gives the same
 * vocabulary as one sequential pass.
 */
class TokenWriter {
 public:
  TokenWriter(const Vocab* vocab, const TokenizerConfig* config);

  enum class Status { kOk, kBadShape, kNonFinite, kWrongArgument };

  /*!
   * \brief Tokenizes one Ansor step ([kind, args...]). A known kind whose arguments do not have
   * the types TVM writes gives kWrongArgument, with bad_argument() and bad_detail() saying which.
   */
  Status AddAnsorStep(const JsonTape& tape, uint32_t step);
  size_t bad_argument() const { return bad_argument_; }
  const std::string& bad_detail() const { return bad_detail_; }
  /*!
   * \brief Tokenizes one MetaSchedule instruction whose shape the caller has checked
   * ([kind, inputs, attrs, outputs]), with the tape index of its decision (0: none).
   */
  Status AddMetaScheduleInstruction(const JsonTape& tape, uint32_t inst, uint32_t decision);

  /*! \brief Starts a record; EndRecord returns the number of tokens it had before capping. */
  void BeginRecord();
  int32_t EndRecord();
  /*! \brief Drops the tokens of the current record (it turned out to be invalid). */
  void AbandonRecord();

  std::vector<int32_t>& kinds() { return kinds_; }
  std::vector<float>& fields() { return fields_; }
  const std::vector<std::string>& new_kinds() const { return new_kinds_; }
  const std::map<std::string, int64_t>& unknown() const { return unknown_; }
  std::map<std::string, int64_t>& unknown() { return unknown_; }

 private:
  enum BaseFlags : uint8_t { kKnown = 1, kSkipped = 2 };
  /*! \brief What tcl knows of a base kind name: kKnown / kSkipped bits, and for the Ansor steps
   * the argument types TVM writes (tokenizer.cc, kAnsorSteps). */
  struct KindInfo {
    uint8_t flags = 0;
    const char* signature = nullptr;
  };
  /*! \brief One hash lookup per step. */
  const KindInfo& Info(const std::string& kind) const {
    static const KindInfo kNone;
    auto it = base_kinds_.find(kind);
    return it == base_kinds_.end() ? kNone : it->second;
  }
  /*! \brief What a string inside a step means. */
  enum class Strings {
    kAnsor,    // categorical, or "name$number" (pragmas)
    kInputs,   // a random variable's name, or a quoted literal (MetaSchedule inputs)
    kAttrs,    // categorical (MetaSchedule attributes)
    kIgnored,  // names of blocks and functions; strings in decisions
  };
  void AddSuffix(std::string_view text);
  bool AddNumber(double value);
  bool AddString(std::string_view text, Strings rule);
  /*! \brief Adds every number and categorical string under a value; false on a non-finite. */
  bool Walk(const JsonTape& tape, uint32_t index, Strings rule);
  void Emit(bool base_known);
  /*! \brief Whether the arguments of the step at `step` (kind in kind_) have the types `args`
   * names; else bad_argument_ and bad_detail_ say which does not. */
  bool CheckAnsorArguments(const JsonTape& tape, uint32_t step, const char* args);

  const Vocab* vocab_;
  const TokenizerConfig* config_;
  std::unordered_map<std::string, KindInfo> base_kinds_;
  std::unordered_map<std::string, int32_t> new_index_;
  std::vector<std::string> new_kinds_;
  std::map<std::string, int64_t> unknown_;
  std::vector<int32_t> kinds_;
  std::vector<float> fields_;
  // Scratch for the token being built.
  std::string kind_;
  std::vector<double> numbers_;
  size_t record_kinds_begin_ = 0;
  size_t bad_argument_ = 0;
  std::string bad_detail_;
  size_t record_new_kinds_begin_ = 0;
  int32_t record_steps_ = 0;
  std::map<std::string, int64_t> record_unknown_;
};

}  // namespace tcl

#endif  // TCL_TOKENIZER_H_
