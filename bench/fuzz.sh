#!/usr/bin/env bash
# Coverage-guided fuzzing of the C++ record reader with libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer. Usage: bench/fuzz.sh [SECONDS]   (needs clang; apt-get install clang)
# Seeds: bench/fuzz_seeds.py (real records and hostile shapes). Prints one JSON line: seconds,
# executions, crashes found (0 means none), corpus size.
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/fuzz"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DTCL_BUILD_FUZZER=ON -DTCL_WERROR=ON >/dev/null
cmake --build "$build" --target fuzz_records >/dev/null
corpus="$build/corpus"
mkdir -p "$corpus" "$build/crashes"
python3 - "$root" "$corpus" <<'PY'
import pathlib, sys
sys.path.insert(0, str(pathlib.Path(sys.argv[1]) / "bench"))
from fuzz_seeds import seeds
for i, seed in enumerate(seeds(lines_per_file=6)):
    (pathlib.Path(sys.argv[2]) / f"seed{i}").write_bytes(seed)
PY
log="$build/fuzz.log"
set +e
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$build/fuzz_records" "$corpus" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
  -artifact_prefix="$build/crashes/" -print_final_stats=1 >"$log" 2>&1
status=$?
set -e
execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
crashes=$(find "$build/crashes" -type f | wc -l)
units=$(find "$corpus" -type f | wc -l)
printf '{"fuzzer": "libFuzzer+ASan+UBSan", "seconds": %s, "executions": %s, "crashes": %s, "corpus": %s, "exit": %s, "clang": "%s"}\n' \
  "$seconds" "$execs" "$crashes" "$units" "$status" "$(clang++ --version | head -1)"
[ "$status" -eq 0 ] || { tail -40 "$log"; exit 1; }
