#!/usr/bin/env bash
# Commit subjects of at most 72 characters (details go in the body), for
# every commit since BASE (the first commit held to the rule). A clone
# without BASE (shallow) checks what it has.
set -euo pipefail
base=${1:?usage: check_commit_subjects.sh BASE}
range=HEAD
if git cat-file -e "$base^{commit}" 2>/dev/null; then range="$base..HEAD"; fi
long=$(git log --format='%h %s' "$range" | awk '{ s = $0; sub(/^[^ ]+ /, "", s); if (length(s) > 72) print length(s) ": " $0 }')
if [ -n "$long" ]; then
  echo "commit subjects over 72 characters (put the details in the body):"
  echo "$long"
  exit 1
fi
echo "check_commit_subjects: every subject since ${base:0:12} is at most 72 characters"
