#!/usr/bin/env bash
# Unpacks the committed snapshot (data/) into a collection root, for platform directories the
# root does not have yet, so that tcl collect resumes where the snapshot ends. A platform whose
# id differs on this machine (another CPU) is simply collected anew under its own directory.
# Usage: scripts/restore_dataset.sh OUT_ROOT
set -eu
out=${1:?usage: restore_dataset.sh OUT_ROOT}
data="$(cd "$(dirname "$0")/.." && pwd)/data"
for snapshot in "$data"/*/; do
  name=$(basename "$snapshot")
  # a platform of random programs, search-drawn ones (tcl collect --search alone), or both
  [ -f "$snapshot/manifest.json" ] || [ -f "$snapshot/search/manifest.json" ] || continue
  [ -e "$out/$name" ] && continue
  # The platform's random programs, and its search-drawn ones where the snapshot has them.
  for sub in "" search; do
    [ -f "$snapshot/$sub/manifest.json" ] || continue
    mkdir -p "$out/$name/$sub"
    cp "$snapshot/$sub/manifest.json" "$out/$name/$sub/"
    for gz in "$snapshot/$sub"/*.gz; do gunzip -c "$gz" > "$out/$name/$sub/$(basename "$gz" .gz)"; done
  done
  echo "restored $name from $snapshot"
done
