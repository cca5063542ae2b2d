#!/usr/bin/env bash
# run_demo.sh - what pyframes shows, each thing once, on a live process.
#
# Meant to run inside the sandbox root (tests/sandbox/sandbox.sh demo), where
# the clone is /src.  Builds the library in build/sandbox if needed (under a
# minute the first time; the whole demo takes about 30 seconds after that),
# then shows one scene per capability, each on its own demo_program.py
# (tests/demo) under one of the root's interpreters, through the command line
# (build/sandbox/pyframes), gdb or lldb:
#
#   threads   every thread's stack, name, GIL state, native wait, exception
#   values    each frame's variables (--locals)
#   deadlock  two threads waiting for each other's lock (--locks)
#   pool      six idle pool workers shown once (--group)
#   tasks     the asyncio task tree (--tasks, CPython 3.14+)
#   bt        Python frames inside gdb's own backtrace
#   profile   a sampling profile and its flame graph, kept in
#             build/sandbox/demo/flame.svg
#
# A scene shows only the command's report (what a debugger prints around it
# is left out) and fails when the command fails or its report lacks what the
# program is known to be doing (SCENE_EXPECT); the demo then exits 1.
#   run_demo.sh [SCENE...]   the scenes named, else all of them
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SRC=$(pwd -P)
BUILD=$SRC/build/sandbox
LIB=$BUILD/native/libpyframes.so
PYFRAMES=$BUILD/pyframes          # the command line, as the build makes it
OUT=$BUILD/demo                   # what the demo keeps: the flame graph
SCENE_TIMEOUT=120
MAX_LINES=50                      # a scene's report beyond this is cut
# The debugger plugins load this build of the library too.
export PYFRAMES_LIBRARY=$LIB

# lldb attaches through lldb-server; the sandbox names it, elsewhere look.
if [[ -z ${LLDB_DEBUGSERVER_PATH:-} ]]; then
    for _srv in /usr/bin/lldb-server /usr/bin/lldb-server-[0-9]*; do
        [[ -x $_srv ]] && export LLDB_DEBUGSERVER_PATH=$_srv
    done
    unset _srv
fi

SCENES=(threads values deadlock pool tasks bt profile)
# scene: "PYTHON SCENARIO TITLE": the interpreter, demo_program.py's
# scenario it runs and what the scene shows
declare -A SCENE=(
    [threads]="python3.15 threads every thread: its name, the GIL, where it waits in native code, the exception it handles"
    [values]="python3.14 values each frame's variables, as repr() shows them (gdb, no debug symbols)"
    [deadlock]="python3.13 deadlock a two-lock deadlock, then the locks each frame holds (gdb)"
    [pool]="python3.14 pool threads with the same stack once: an idle thread pool (lldb)"
    [tasks]="python3.14 tasks asyncio tasks as a tree: what each task awaits (CPython 3.14+)"
    [bt]="python3.13 values Python frames inside gdb's own backtrace"
    [profile]="python3.15 threads a sampling profile: where the CPU time goes, and its flame graph"
)
# What each scene's report must show (extended regexes, one per line),
# known from demo_program.py.
declare -A SCENE_EXPECT=(
    [threads]='"request-handler"
handling ValueError: order 1042: negative quantity
"pipeline-worker"
in read_chunks
"cruncher"
in crunch_numbers'
    [values]='in checkout
customer = <__main__\.Customer object at 0x[0-9a-f]+>
cart = \[\{.sku.: .A-100., .qty.: 2, .price.: 9\.5\}'
    [deadlock]='^deadlock: "(ledger-writer|auditor)" waits for
holds [a-z_]+ <_thread\.lock'
    [pool]='^6 threads with the same stack'
    [tasks]='fetch-prices
push-updates
report
watchdog'
    [bt]='_PyEval_EvalFrameDefault
\[python\] (checkout|wait_for_stdin_eof)'
    [profile]='crunch_numbers'
)

# ---------------------------------------------------------------- scenes

# in_gdb PID COMMAND...: gdb's output of the commands, with the plugin.
in_gdb() {
    local pid=$1 args=() c
    shift
    for c in "$@"; do args+=(-ex "$c"); done
    run_scene gdb --batch -nx -p "$pid" -ex "source $SRC/gdb/pyframes_gdb.py" \
        -ex 'echo @@BEGIN@@\n' "${args[@]}" -ex 'echo @@END@@\n'
}

# in_lldb PID COMMAND: lldb's output of the command, with the plugin.
in_lldb() {
    run_scene lldb --batch -p "$1" -o "command script import $SRC/lldb/pyframes_lldb.py" \
        -o "script print('@@BEGIN@@')" -o "$2" -o "script print('@@END@@')" -o detach
}

scene_threads() { run_scene "$PYFRAMES" dump --all "$1"; }
scene_values() { in_gdb "$1" 'py-bt-fast --locals'; }
scene_deadlock() { in_gdb "$1" 'py-bt-fast --all --locks --no-source'; }
scene_pool() { in_lldb "$1" 'pystack --all --group --no-source'; }
scene_tasks() { run_scene "$PYFRAMES" dump --tasks "$1"; }
scene_bt() { in_gdb "$1" 'bt -frame-arguments presence 14'; }
scene_profile() {
    run_scene "$PYFRAMES" sample --all --mode cpu --duration 1 --top 5 \
        --flamegraph "$OUT/flame.svg" "$1"
}

# ---------------------------------------------------------------- plumbing

# shell_words ARG...: the arguments as a copyable command line.
shell_words() {
    local out=() a
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then
            out+=("$a")
        else
            out+=("'${a//\'/\'\\\'\'}'")
        fi
    done
    printf '%s\n' "${out[*]}"
}

# report: the lines between @@BEGIN@@ and @@END@@ when there are such
# markers (a debugger's output), else every line.
report() {
    if grep -q '^@@BEGIN@@' "$1"; then
        # (lldb echoes each command: "(lldb) CMD")
        sed -n '/^@@BEGIN@@/,/^@@END@@/{/^@@BEGIN@@/d;/^@@END@@/d;/^(lldb) /d;p}' "$1"
    else
        cat "$1"
    fi
}

# run_scene CMD...: run CMD, show its report (at most MAX_LINES lines) and
# check it against SCENE_EXPECT.
run_scene() {
    local out rc=0 t0 ms lines re missing=()
    printf '$ %s\n' "$(shell_words "$@" | sed "s|$SRC/||g")"
    out=$(mktemp "$WORK/scene.XXXXXX")
    t0=$(date +%s%N)
    timeout "$SCENE_TIMEOUT" "$@" </dev/null >"$out" 2>&1 || rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    report "$out" >"$out.report"
    lines=$(wc -l <"$out.report")
    head -n "$MAX_LINES" "$out.report"
    if ((lines > MAX_LINES)); then
        printf '[... %d more lines]\n' $((lines - MAX_LINES))
    fi
    printf '[%d.%03d s]\n' $((ms / 1000)) $((ms % 1000))
    while IFS= read -r re; do
        [[ -n $re ]] || continue
        grep -Eq -- "$re" "$out.report" || missing+=("$re")
    done <<<"${SCENE_EXPECT[$scene]:-}"
    if ((rc != 0 || ${#missing[@]} > 0)); then
        if ((rc != 0)); then
            echo "run_demo: $scene: $1 exited with status $rc" >&2
        else
            printf 'run_demo: %s: the report lacks %s\n' "$scene" "${missing[*]//\\/}" >&2
        fi
        echo "run_demo: full output of $scene:" >&2
        sed 's/^/  | /' "$out" >&2
        return 1
    fi
}

build_if_needed() {
    local log=$WORK/build.log
    if [[ -f $BUILD/CMakeCache.txt ]]; then
        echo "run_demo: updating $BUILD"
    else
        echo "run_demo: building the library in $BUILD (the first time: under a minute)"
    fi
    if ! { [[ -f $BUILD/CMakeCache.txt ]] ||
        cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPYFRAMES_WERROR=ON; } >"$log" 2>&1 ||
        ! cmake --build "$BUILD" --target pyframes -j "$(nproc 2>/dev/null || echo 2)" >>"$log" 2>&1; then
        cat "$log" >&2
        echo "run_demo: FAILED: cannot build $LIB" >&2
        return 1
    fi
    [[ -e $LIB && -x $PYFRAMES ]] || { echo "run_demo: FAILED: $BUILD is incomplete" >&2; return 1; }
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

# start_target PYTHON SCENARIO: start demo_program.py, wait for "<pid> ready".
start_target() {
    local py=$1 dir ready_fd pid word
    dir=$(mktemp -d "$WORK/target.XXXXXX")
    mkfifo "$dir/ready" "$dir/stdin"
    exec {ready_fd}<>"$dir/ready"    # read-write: opening never blocks
    "$py" "$SRC/tests/demo/demo_program.py" "$dir/ready" "$2" <"$dir/stdin" &
    TARGET_PID=$!
    exec {TARGET_STDIN}>"$dir/stdin"
    if ! read -r -t 30 -u "$ready_fd" pid word || [[ $pid != "$TARGET_PID" || $word != ready ]]; then
        echo "run_demo: no handshake from $py $2 (got '${pid:-} ${word:-}')" >&2
        exec {ready_fd}<&-
        return 1
    fi
    exec {ready_fd}<&-
}

FAILED=()
show_scene() {
    local scene=$1 py scenario title version
    read -r py scenario title <<<"${SCENE[$scene]}"
    if ! version=$("$py" -c 'import sys; print(sys.version.split()[0])'); then
        FAILED+=("$scene")
        return 0
    fi
    printf '\n== %s: %s ==\n' "$scene" "$title"
    if ! start_target "$py" "$scenario"; then
        FAILED+=("$scene")
        stop_target
        return 0
    fi
    printf '(CPython %s: demo_program.py %s, pid %s)\n' "$version" "$scenario" "$TARGET_PID"
    "scene_$scene" "$TARGET_PID" || FAILED+=("$scene")
    stop_target
}

if (($# > 0)); then
    for scene in "$@"; do
        [[ -n ${SCENE[$scene]:-} ]] || { echo "run_demo: no scene $scene (${SCENES[*]})" >&2; exit 2; }
    done
    SCENES=("$@")
fi
T0=$SECONDS
build_if_needed || exit 1
mkdir -p "$OUT"
for scene in "${SCENES[@]}"; do
    show_scene "$scene"
done

echo
if ((${#FAILED[@]} > 0)); then
    echo "run_demo: FAILED after $((SECONDS - T0)) s: ${FAILED[*]}"
    exit 1
fi
echo "run_demo: OK (${#SCENES[@]} scenes, $((SECONDS - T0)) s)"
if [[ " ${SCENES[*]} " == *" profile "* ]]; then
    echo "run_demo: the flame graph is build/sandbox/demo/flame.svg (open it in a browser)"
fi
echo "run_demo: on your own program: bash tests/sandbox/sandbox.sh shell, then" \
    "build/sandbox/pyframes dump --all PID (README.md: \"Your own program in the root\")"
