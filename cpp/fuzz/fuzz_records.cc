// libFuzzer harness for the record reader: any input must either parse or raise tcl::Error,
// never crash, hang or touch memory it does not own (built with ASan + UBSan, see bench/fuzz.sh).
//
// The first byte picks the format; a MetaSchedule input is split at the first 0x1E byte into
// the workload file and the tuning-record file.
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "common.h"
#include "records.h"
#include "tokenizer.h"

namespace {

std::vector<std::string> DefaultVocab() {
  std::vector<std::string> kinds = {"<pad>", "<unk>"};
  for (const std::string& k : tcl::AnsorStepKinds()) kinds.push_back(k);
  for (const std::string& k : tcl::MetaScheduleInstructionKinds()) kinds.push_back(k);
  return kinds;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const tcl::Vocab growable(DefaultVocab(), false);
  static const tcl::Vocab frozen(DefaultVocab(), true);
  uint8_t mode = data[0];
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  tcl::RecordInput input;
  input.name = "fuzz";
  if (mode & 1) {
    input.format = tcl::RecordFormat::kMetaSchedule;
    size_t split = body.find('\x1e');
    input.workload_name = "fuzz_workload";
    input.workload_data =
        split == std::string_view::npos ? std::string_view() : body.substr(0, split);
    input.data = split == std::string_view::npos ? body : body.substr(split + 1);
  } else {
    input.format = tcl::RecordFormat::kAnsor;
    input.data = body;
  }
  tcl::ReadOptions options;
  options.strict = (mode & 2) != 0;
  options.num_threads = (mode & 4) ? 2 : 1;
  options.chunk_bytes = 64;  // many tiny chunks: exercises splitting and merging
  options.tokenizer.max_len = 1 + (mode >> 4);
  options.tokenizer.num_fields = 1 + ((mode >> 3) & 1) * 9;
  options.tokenizer.skip_kinds = {"GetLoops", "SP"};
  try {
    tcl::ReadResult result = tcl::ReadRecords({input}, (mode & 8) ? frozen : growable, options);
    const tcl::RecordColumns& c = result.columns;
    // Invariants of every successful read.
    if (c.token_offsets.size() != c.task.size() + 1 || c.cost_offsets.size() != c.task.size() + 1 ||
        c.fields.size() != c.kinds.size() * static_cast<size_t>(options.tokenizer.num_fields)) {
      __builtin_trap();
    }
    for (int32_t kind : c.kinds) {
      if (kind < 0 || static_cast<size_t>(kind) >= result.vocab.size()) __builtin_trap();
    }
    for (int32_t task : c.task) {
      if (task < 0 || static_cast<size_t>(task) >= result.tasks.size()) __builtin_trap();
    }
  } catch (const tcl::Error&) {
  }
  return 0;
}
