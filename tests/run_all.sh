#!/usr/bin/env bash
# run_all.sh - build pyframes three ways and run every test suite.
#
# Meant to run inside the sandbox (tests/sandbox/sandbox.sh test), where the
# clone is /src, but works on any machine with the same tools.  In order:
#   build/sandbox-asan  Debug, -Werror, ASan + UBSan   -> ctest: C tests, then the
#                       live CLI, sampling and frame-cache pytest files against
#                       this library with the sanitizer runtimes preloaded
#                       (readers only: the target processes run without them)
#   build/sandbox       RelWithDebInfo, -Werror        -> ctest: C tests, then pytest
#   build/sandbox-fuzz  clang, libFuzzer + ASan + UBSan -> each fuzzer for a
#                       bounded time over a copy of its corpus (tests/fuzz),
#                       beside the sanitized pytest run
# pytest is registered with ctest (tests/CMakeLists.txt, label "python").
# Exits non-zero if any step fails; the last line is a one-line summary.
# shellcheck disable=SC2317  # functions are called through step()
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

JOBS=$(nproc 2>/dev/null || echo 2)
PLAIN=build/sandbox
ASAN=build/sandbox-asan
FUZZ=build/sandbox-fuzz
# seconds of fuzzing, split between the targets (docs/fuzzing.md: longer runs)
FUZZ_SECONDS=${PYFRAMES_FUZZ_SECONDS:-48}
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

# start_step NAME CMD...: step NAME in the background, beside the steps that
# follow; its lines are kept apart and printed by finish_step NAME.
declare -A BG_PID BG_LOG
start_step() {
    local name=$1
    shift
    BG_LOG[$name]=$(mktemp "${TMPDIR:-/tmp}/pyframes-step.XXXXXX") || return 1
    printf '\n=== %s: started in the background (its lines follow when it ends)\n' "$name"
    step "$name" "$@" >"${BG_LOG[$name]}" 2>&1 &
    BG_PID[$name]=$!
}

finish_step() {
    local name=$1 rc=0
    wait "${BG_PID[$name]}" || rc=$?
    cat "${BG_LOG[$name]}"
    rm -f "${BG_LOG[$name]}"
    if ((rc == 0)); then
        PASSED+=("$name")
    else
        FAILED+=("$name")
    fi
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
    # -V: pytest's own report in the log, test by test (each line led by
    # the number of the pytest run it comes from: two run side by side)
    ctest --test-dir "$PLAIN" --no-tests=error -L python -V -j "$JOBS"
}

# The pytest files (or tests) run against the sanitized library: the CLI on
# live targets, sampling, the frame cache, snapshots given again, the task CLI
# and the CLI's dumps of a churning target (not the debugger
# tests: see docs/fuzzing.md).
ASAN_PYTEST=(test_cli.py test_live_stacks.py test_sampling.py test_frame_cache.py test_heap_frames.py
             test_same_reads.py
             test_tasks.py::test_thousand_idle_tasks test_tasks.py::test_no_tasks_to_read
             test_churn.py::test_cli_dumps_under_churn test_churn.py::test_snapshots_under_churn
             test_values.py::test_library_values_equal_the_targets_repr
             test_values.py::test_limits test_values.py::test_budget_cuts_values_not_the_frame
             test_values.py::test_py_print test_values.py::test_cli_json)

run_pytest_asan() {
    # The runtimes are preloaded into the python3 that runs pytest (the
    # library is used in-process too) and, through conftest.py, into every
    # `python3 -m pyframes` it starts; conftest keeps them out of targets.
    # Every report goes to a file of $logs: any file there fails the step,
    # whatever the test made of the exit code (86).
    local preload logs rc=0
    preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
    logs=$(mktemp -d "${TMPDIR:-/tmp}/pyframes-asan-logs.XXXXXX") || return 1
    (
        cd tests/python &&
        LD_PRELOAD="$preload" PYFRAMES_SANITIZER_PRELOAD="$preload" \
        PYFRAMES_LIBRARY="$PWD/../../$ASAN/native/libpyframes.so" \
        ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=86:log_path=$logs/asan" \
        LSAN_OPTIONS="suppressions=$PWD/lsan.supp:print_suppressions=0" \
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan" \
        python3 -m pytest -v -p no:cacheprovider --durations=10 "${ASAN_PYTEST[@]}"
    ) || rc=$?
    if compgen -G "$logs/*" >/dev/null; then
        echo "sanitizer reports:"
        for f in "$logs"/*; do
            printf -- '--- %s\n' "$f"
            cat "$f"
        done
        ((rc != 0)) || rc=1
    fi
    rm -rf "$logs"
    return "$rc"
}

run_fuzz() {
    FUZZ_BUILD=$FUZZ tests/fuzz/run_fuzz.sh "$FUZZ_SECONDS"
}

if step build-asan configure_and_build "$ASAN" -DCMAKE_BUILD_TYPE=Debug -DPYFRAMES_SANITIZE=ON; then
    step ctest-asan run_ctest "$ASAN"
    # The fuzzers (single processes, for a fixed time) beside the sanitized
    # pytest run, which leaves a core mostly idle.
    start_step fuzz run_fuzz
    step pytest-asan run_pytest_asan
    finish_step fuzz
else
    step fuzz run_fuzz
    skip ctest-asan "build-asan failed"
    skip pytest-asan "build-asan failed"
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
