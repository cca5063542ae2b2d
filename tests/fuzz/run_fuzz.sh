#!/usr/bin/env bash
# run_fuzz.sh - build the libFuzzer targets with clang and run each one for
# a bounded time over a copy of its corpus.
#
#   tests/fuzz/run_fuzz.sh [SECONDS]      # SECONDS split between the targets
#                                         # (default 45: the run_all.sh step)
#   FUZZ_TARGETS="cache" tests/fuzz/run_fuzz.sh 600
#
# Build dir: build/fuzz (PYFRAMES_FUZZ=ON, RelWithDebInfo, ASan + UBSan,
# -Werror).  The committed corpus (tests/fuzz/corpus/<target>) is copied to
# a temporary directory first: the repository is never written.  Every
# input of it runs first (the regression inputs among them), then the
# fuzzer mutates for its share of the time, each input limited to 5 s and
# the process to 2 GiB.  LeakSanitizer is on (libFuzzer's -detect_leaks).
# Any crash, leak, timeout or broken invariant fails the script; the input
# is kept under build/fuzz/artifacts/ and its path printed.  The last lines
# give, per target, executions, exec/s and libFuzzer's cov/ft.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1

TOTAL=${1:-45}
TARGETS=(${FUZZ_TARGETS:-walk tasks cache values core})
BUILD=${FUZZ_BUILD:-build/fuzz}
JOBS=$(nproc 2>/dev/null || echo 2)
CC_FUZZ=${CC_FUZZ:-clang}

if ! command -v "$CC_FUZZ" >/dev/null; then
    echo "run_fuzz: $CC_FUZZ not found (the fuzzers need clang with libFuzzer)" >&2
    exit 1
fi
CC="$CC_FUZZ" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPYFRAMES_FUZZ=ON \
    -DPYFRAMES_WERROR=ON -DBUILD_TESTING=OFF >/dev/null || exit 1
cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]/#/fuzz_}" || exit 1

per=$((TOTAL / ${#TARGETS[@]}))
((per >= 1)) || per=1
work=$(mktemp -d "${TMPDIR:-/tmp}/pyframes-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
artifacts=$BUILD/artifacts
mkdir -p "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:handle_abort=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
summary=()
for t in "${TARGETS[@]}"; do
    corpus=$work/$t
    mkdir -p "$corpus"
    cp tests/fuzz/corpus/"$t"/* "$corpus"/
    log=$work/$t.log
    echo "=== fuzz_$t: ${per}s over $(ls "$corpus" | wc -l) corpus inputs"
    rc=0
    "$BUILD/tests/fuzz/fuzz_$t" -max_total_time="$per" -timeout=5 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/$t-" "$corpus" >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
    line="fuzz_$t: ${execs:-?} executions, ${rate:-?} exec/s, ${cov:-cov ?} in ${per}s"
    if ((rc != 0)); then
        failed+=("$t")
        tail -n 60 "$log"
        crash=$(grep -oE "Test unit written to [^ ]+" "$log" | tail -1 | sed 's/Test unit written to //')
        line="$line: FAILED (exit $rc), input: ${crash:-see the log above}"
    fi
    echo "$line"
    summary+=("$line")
done
echo
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
    echo "run_fuzz: FAIL (${failed[*]}); reproduce with $BUILD/tests/fuzz/fuzz_<target> <input>"
    exit 1
fi
echo "run_fuzz: ok"
