#!/usr/bin/env bash
# Runs the cargo-fuzz targets of compiletools-core, each for FUZZ_SECONDS
# (default 600), and prints one summary line per target (executions, new
# corpus entries, findings). `make fuzz` calls this.
#
#   rust/fuzz/run.sh [TARGET ...]          (default: every target below)
#   FUZZ_SECONDS=60 FUZZ_PARALLEL=2 rust/fuzz/run.sh timing_decode process_build
#
# * Needs the nightly toolchain; installs cargo-fuzz when it is missing.
# * The committed seeds in rust/fuzz/corpus/<target>/ are only read; what
#   the fuzzer adds goes to $FUZZ_WORK/corpus/<target>/ (default
#   target/fuzz/ at the repository root), its log to $FUZZ_WORK/logs/.
# * A crash, timeout or OOM input is written by libFuzzer to
#   rust/fuzz/artifacts/<target>/ (crash-*, timeout-*, oom-*); reproduce it
#   with `cd rust && cargo +nightly fuzz run <target> <file>`.
# * statslog_parse / outcomes_parse need `statslog::parse(&[u8])` and
#   `outcomes::parse(&[u8])`; while src/lib.rs has no such module the target
#   is reported as SKIPPED instead of failing the run.
# * FUZZ_PARALLEL=N runs N targets at a time (the machine has 2 cores).
# Exit status: 1 when any target found something or failed to build.

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rust=$(dirname "$here")
repo=$(dirname "$rust")
secs=${FUZZ_SECONDS:-600}
parallel=${FUZZ_PARALLEL:-1}
work=${FUZZ_WORK:-$repo/target/fuzz}
all_targets=(timing_decode process_build statslog_parse outcomes_parse)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz: the nightly toolchain is needed (rustup toolchain install nightly)" >&2
    exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz || exit 1
fi
mkdir -p "$work/logs"

dict_for() {
    case $1 in
        timing_decode | process_build) echo "$here/dicts/timing.dict" ;;
        *) echo "$here/dicts/lines.dict" ;;
    esac
}

# The module a target needs, when it is one that may not exist yet.
needed_module() {
    case $1 in
        statslog_parse) echo statslog ;;
        outcomes_parse) echo outcomes ;;
    esac
}

run_one() {
    local t=$1 log="$work/logs/$1.log" mod
    mod=$(needed_module "$t")
    if [ -n "$mod" ] && ! grep -Eq "^pub mod $mod\b" "$rust/src/lib.rs"; then
        echo "$t: SKIPPED (compiletools_core::$mod does not exist yet)" >"$work/logs/$t.summary"
        return 0
    fi
    mkdir -p "$work/corpus/$t" "$here/artifacts/$t"
    (cd "$rust" && cargo +nightly fuzz build "$t") >"$log" 2>&1 || {
        echo "$t: BUILD FAILED (see $log)" >"$work/logs/$t.summary"
        return 1
    }
    local before status
    before=$(find "$here/artifacts/$t" -type f | wc -l)
    (cd "$rust" && cargo +nightly fuzz run "$t" "$work/corpus/$t" "$here/corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -dict="$(dict_for "$t")") >>"$log" 2>&1
    status=$?
    local execs new_files after
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
    after=$(find "$here/artifacts/$t" -type f | wc -l)
    new_files=$(find "$work/corpus/$t" -type f | wc -l)
    if [ "$status" -eq 0 ]; then
        echo "$t: OK ${secs}s, ${execs:-?} executions, corpus $new_files, findings 0" >"$work/logs/$t.summary"
    else
        {
            echo "$t: FINDING after ${execs:-?} executions (exit $status, $((after - before)) new artifact(s))"
            grep -E 'panicked at|^==[0-9]+==ERROR|SUMMARY:|Test unit written to|ALARM|out-of-memory' "$log" | head -8 | sed 's/^/    /'
            grep -A3 'panicked at' "$log" | head -6 | sed 's/^/    /'
        } >"$work/logs/$t.summary"
        return 1
    fi
}

failed=0
pids=()
for t in "${targets[@]}"; do
    run_one "$t" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$parallel" ]; then
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}")
    fi
done
for p in "${pids[@]}"; do
    wait "$p" || failed=1
done
echo "fuzz summary (${secs}s per target, logs in $work/logs):"
for t in "${targets[@]}"; do
    cat "$work/logs/$t.summary" 2>/dev/null || echo "$t: no summary"
done
exit $failed
