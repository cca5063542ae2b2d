#!/usr/bin/env bash
# run_all.sh - build pyframes twice and run every test suite.
#
# Meant to run inside the sandbox (tests/sandbox/sandbox.sh test), where the
# clone is /src, but works on any machine with the same tools.
#   build/sandbox       RelWithDebInfo, -Werror        -> ctest: C tests, then pytest
#   build/sandbox-asan  Debug, -Werror, ASan + UBSan   -> ctest: C tests
# pytest is registered with ctest (tests/CMakeLists.txt, label "python").
# Exits non-zero if any step fails; the last line is a one-line summary.
# shellcheck disable=SC2317  # functions are called through step()
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

JOBS=$(nproc 2>/dev/null || echo 2)
PLAIN=build/sandbox
ASAN=build/sandbox-asan
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

PASSED=()
FAILED=()
SKIPPED=()

# step NAME CMD...: run CMD, record the result.
step() {
    local name=$1 t0=$SECONDS rc=0
    shift
    printf '\n=== %s: %s\n' "$name" "$*"
    "$@" || rc=$?
    if ((rc == 0)); then
        PASSED+=("$name")
        printf '=== %s: ok (%d s)\n' "$name" $((SECONDS - t0))
    else
        FAILED+=("$name")
        printf '=== %s: FAILED with exit code %d (%d s)\n' "$name" "$rc" $((SECONDS - t0))
    fi
    return "$rc"
}

skip() {
    SKIPPED+=("$1")
    printf '\n=== %s: skipped (%s)\n' "$1" "$2"
}

configure_and_build() {
    local dir=$1
    shift
    cmake -S . -B "$dir" -DPYFRAMES_WERROR=ON "$@" && cmake --build "$dir" -j "$JOBS"
}

run_ctest() {
    # A tree without tests is an error, not a pass.
    local dir=$1
    shift
    ctest --test-dir "$dir" --output-on-failure --no-tests=error -L c -j "$JOBS" \
        --output-junit ctest-junit.xml "$@"
}

run_pytest() {
    # -V: pytest's own report in the log, test by test.
    ctest --test-dir "$PLAIN" --no-tests=error -L python -V
}

if step build-asan configure_and_build "$ASAN" -DCMAKE_BUILD_TYPE=Debug -DPYFRAMES_SANITIZE=ON; then
    step ctest-asan run_ctest "$ASAN"
else
    skip ctest-asan "build-asan failed"
fi

if step build configure_and_build "$PLAIN" -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
    step ctest run_ctest "$PLAIN"
    step pytest run_pytest
else
    skip ctest "build failed"
    skip pytest "build failed"
fi

echo
if ((${#FAILED[@]} == 0 && ${#SKIPPED[@]} == 0)); then
    echo "run_all: PASS (${PASSED[*]})"
    exit 0
fi
echo "run_all: FAIL (failed: ${FAILED[*]:-none}; skipped: ${SKIPPED[*]:-none}; passed: ${PASSED[*]:-none})"
exit 1
