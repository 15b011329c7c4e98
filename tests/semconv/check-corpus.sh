#!/usr/bin/env bash
# Runs every corpus build through ct-otel-dump (default options, host name
# "h") and the conformance checker, with the receiver's documented
# deviations (allowed.txt); exits as the checker does. Leaves the checker
# built in OUT_DIR.
#   check-corpus.sh CT_OTEL_DUMP CASES_DIR OUT_DIR
set -euo pipefail
dump=$1 cases=$2
out=$(mkdir -p "$3" && cd "$3" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
(cd "$here" && go build -o "$out/semconvcheck" ./cmd/semconvcheck)
files=()
while IFS= read -r timing; do
  inv=$(dirname "$timing")
  case_name=${inv#"$cases"/}
  case_name=${case_name%%/*}
  file="$out/$case_name-$(basename "$inv").jsonl"
  "$dump" -host-name h "$inv" >"$file"
  files+=("$file")
done < <(find "$cases" -name timing.json | sort)
if [ ${#files[@]} -eq 0 ]; then
  echo "check-corpus.sh: no timing.json under $cases" >&2
  exit 2
fi
"$out/semconvcheck" -allow "$here/allowed.txt" "${files[@]}"
