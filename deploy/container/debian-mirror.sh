#!/usr/bin/env bash
# Prints the Debian archive URI this machine's apt uses for suite $1 (default
# bookworm), so debootstrap fetches from the same place apt does. Reads
# deb822 .sources files and one-line sources.list entries; DEBIAN_MIRROR
# overrides.
set -euo pipefail
suite="${1:-bookworm}"
if [[ -n "${DEBIAN_MIRROR:-}" ]]; then
  echo "$DEBIAN_MIRROR"
  exit 0
fi
shopt -s nullglob
# deb822: a stanza's URIs and Suites, stanzas separated by blank lines.
for f in /etc/apt/sources.list.d/*.sources; do
  awk -v suite="$suite" '
    function flush() {
      if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && uris != "") {
        split(uris, u, " "); print u[1]; found = 1; exit
      }
      types = ""; suites = ""; uris = ""
    }
    /^[[:space:]]*#/ { next }
    /^[[:space:]]*$/ { flush(); next }
    tolower($1) == "types:"  { $1 = ""; types = $0 }
    tolower($1) == "suites:" { $1 = ""; suites = $0 }
    tolower($1) == "uris:"   { $1 = ""; uris = $0 }
    END { if (!found) flush() }
  ' "$f"
done | head -1 | grep . && exit 0
# One-line format: deb [options] URI SUITE COMPONENTS...
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [[ -f "$f" ]] || continue
  awk -v suite="$suite" '
    $1 == "deb" {
      i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      if ($(i + 1) == suite) { print $i; exit }
    }' "$f"
done | head -1 | grep . && exit 0
echo "debian-mirror: no apt source for suite $suite; set DEBIAN_MIRROR" >&2
exit 1
