#!/usr/bin/env bash
# run_demo.sh - show pyframes reading a live process under each CPython.
#
# Meant to run inside the sandbox (tests/sandbox/sandbox.sh demo), where the
# clone is /src.  Builds build/sandbox if needed, then for python3.15, 3.13,
# 3.14 (and pyenv's 3.13.0 when PYFRAMES_PYENV_PYTHON is set) starts
# tests/demo/demo_program.py, waits for its handshake and runs every view on
# it.  A view is a function view_NAME taking the target PID; list it in VIEWS.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SRC=$(pwd -P)
BUILD=$SRC/build/sandbox
LIB=$BUILD/native/libpyframes.so
VIEW_TIMEOUT=120

INTERPRETERS=(python3.15 python3.13 python3.14)
if [[ -n ${PYFRAMES_PYENV_PYTHON:-} ]]; then
    INTERPRETERS+=("$PYFRAMES_PYENV_PYTHON")
fi

VIEWS=(pyframes_cli)

# ---------------------------------------------------------------- views

view_pyframes_cli() {
    run_view env PYTHONPATH="$SRC/native/python" PYFRAMES_LIBRARY="$LIB" \
        python3 -m pyframes dump --all "$1"
}

# ---------------------------------------------------------------- plumbing

run_view() {
    printf '$ %s\n' "$*"
    timeout "$VIEW_TIMEOUT" "$@"
}

build_if_needed() {
    local log=$WORK/build.log
    echo "run_demo: building $BUILD"
    if ! { [[ -f $BUILD/CMakeCache.txt ]] ||
        cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPYFRAMES_WERROR=ON; } >"$log" 2>&1 ||
        ! cmake --build "$BUILD" -j "$(nproc 2>/dev/null || echo 2)" >>"$log" 2>&1; then
        cat "$log" >&2
        echo "run_demo: FAILED: cannot build $LIB" >&2
        return 1
    fi
    [[ -e $LIB ]] || { echo "run_demo: FAILED: $LIB was not built" >&2; return 1; }
}

WORK=$(mktemp -d /tmp/pyframes-demo.XXXXXX)
TARGET_PID=
TARGET_STDIN=

stop_target() {
    [[ -n $TARGET_PID ]] || return 0
    # Closing its stdin makes the program exit; SIGTERM, then SIGKILL, if not.
    if [[ -n $TARGET_STDIN ]]; then exec {TARGET_STDIN}>&-; fi
    TARGET_STDIN=
    local sig _
    for sig in TERM KILL; do
        for _ in $(seq 50); do
            kill -0 "$TARGET_PID" 2>/dev/null || break 2
            sleep 0.1
        done
        kill -s "$sig" "$TARGET_PID" 2>/dev/null || true
    done
    wait "$TARGET_PID" 2>/dev/null || true
    TARGET_PID=
}

on_exit() {
    stop_target
    rm -rf "$WORK"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_target PYTHON: start demo_program.py, wait for "<pid> ready".
start_target() {
    local py=$1 dir ready_fd pid word
    dir=$(mktemp -d "$WORK/target.XXXXXX")
    mkfifo "$dir/ready" "$dir/stdin"
    exec {ready_fd}<>"$dir/ready"    # read-write: opening never blocks
    "$py" "$SRC/tests/demo/demo_program.py" "$dir/ready" <"$dir/stdin" &
    TARGET_PID=$!
    exec {TARGET_STDIN}>"$dir/stdin"
    if ! read -r -t 30 -u "$ready_fd" pid word || [[ $pid != "$TARGET_PID" || $word != ready ]]; then
        echo "run_demo: no handshake from $py (got '${pid:-} ${word:-}')" >&2
        exec {ready_fd}<&-
        return 1
    fi
    exec {ready_fd}<&-
}

FAILED=()
demo_one() {
    local py=$1 version view
    if ! version=$("$py" -c 'import sys; print(sys.version.split()[0])'); then
        FAILED+=("$py:missing")
        return 0
    fi
    if ! start_target "$py"; then
        FAILED+=("$py:start")
        stop_target
        return 0
    fi
    printf '\n%s\n' "========================================================================"
    printf ' CPython %s (%s), demo_program.py pid %s\n' "$version" "$py" "$TARGET_PID"
    printf '%s\n' "========================================================================"
    for view in "${VIEWS[@]}"; do
        printf '\n--- %s\n' "$view"
        if ! "view_$view" "$TARGET_PID"; then
            echo "run_demo: view $view failed under $py" >&2
            FAILED+=("$py:$view")
        fi
    done
    stop_target
}

build_if_needed || exit 1
for py in "${INTERPRETERS[@]}"; do
    demo_one "$py"
done

echo
if ((${#FAILED[@]} == 0)); then
    echo "run_demo: OK (${#INTERPRETERS[@]} interpreters x ${#VIEWS[@]} views)"
else
    echo "run_demo: FAILED: ${FAILED[*]}"
    exit 1
fi
