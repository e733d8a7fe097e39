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
  [ -f "$snapshot/manifest.json" ] || continue
  [ -e "$out/$name" ] && continue
  mkdir -p "$out/$name"
  cp "$snapshot/manifest.json" "$out/$name/"
  for gz in "$snapshot"/*.gz; do gunzip -c "$gz" > "$out/$name/$(basename "$gz" .gz)"; done
  echo "restored $name from $snapshot"
done
