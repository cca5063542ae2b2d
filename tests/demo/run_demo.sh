#!/usr/bin/env bash
# run_demo.sh - show pyframes reading a live process under each CPython.
#
# Meant to run inside the sandbox (tests/sandbox/sandbox.sh demo), where the
# clone is /src.  Builds build/sandbox if needed, then for python3.15, 3.13,
# 3.14 (and pyenv's 3.13.0 when PYFRAMES_PYENV_PYTHON is set) starts
# tests/demo/demo_program.py, waits for its handshake and runs every view on
# it: the pyframes CLI, gdb's py-bt-fast and lldb's pystack.  A view is a
# function view_NAME taking the target PID; list it in VIEWS and give it a
# title in VIEW_TITLE.
#
# Each view prints only the stack report: what the debuggers print around it
# (attach banners, thread lists, detach messages) is counted, not shown, and
# runs of identical frames are shortened the way Python's tracebacks do.  A
# view fails when its command fails, when it shows no frames, or when one of
# the three threads' blocking functions is missing; the demo then exits 1.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SRC=$(pwd -P)
BUILD=$SRC/build/sandbox
LIB=$BUILD/native/libpyframes.so
VIEW_TIMEOUT=120
# Every view, the debugger plugins included, loads this build of the library.
export PYFRAMES_LIBRARY=$LIB

INTERPRETERS=(python3.15 python3.13 python3.14)
if [[ -n ${PYFRAMES_PYENV_PYTHON:-} ]]; then
    INTERPRETERS+=("$PYFRAMES_PYENV_PYTHON")
fi

# lldb attaches through lldb-server; the sandbox names it, elsewhere look.
if [[ -z ${LLDB_DEBUGSERVER_PATH:-} ]]; then
    for _srv in /usr/bin/lldb-server /usr/bin/lldb-server-[0-9]*; do
        [[ -x $_srv ]] && export LLDB_DEBUGSERVER_PATH=$_srv
    done
    unset _srv
fi

VIEWS=(pyframes_cli gdb lldb gdb_locals lldb_locals gdb_locks lldb_group gdb_bt gdb_tasks
       cli_sample)
declare -A VIEW_TITLE=(
    [pyframes_cli]="pyframes dump --all"
    [gdb]="gdb py-bt-fast --all (thread names, GIL, native waits, exceptions in flight)"
    [lldb]="lldb pystack --all"
    [gdb_locals]="gdb py-bt-fast --all --locals (each frame's variables, no debug symbols)"
    [lldb_locals]="lldb pystack --all --locals --max-items 3"
    [gdb_locks]="gdb py-bt-fast --all --locks (deadlocks first, then held locks and waits)"
    [lldb_group]="lldb pystack --all --group (threads with the same stack once)"
    [gdb_bt]="gdb bt (Python frames in the debugger's own backtrace)"
    [gdb_tasks]="gdb py-bt-fast --tasks (asyncio task tree, CPython 3.14+)"
    [cli_sample]="pyframes sample --all --mode cpu --duration 1 (where the CPU time goes; a flame graph)"
)
# What a view must show besides the blocking functions (extended regexes,
# one per line; a view whose name is in ONLY_EXPECT is checked by these
# alone).  Under 3.13 the deadlock is inferred (its innermost frames keep no
# stack pointer; the waits are read from their stack slots) and says so.
declare -A VIEW_EXPECT=(
    [gdb]='^Thread 0x[0-9a-f]+ "ledger-writer" \(.*waiting on a lock
^  handling ValueError: order 1042: negative quantity'
    [gdb_locks]='^deadlock: "(ledger-writer|auditor)" waits for <_thread.lock at 0x[0-9a-f]+> held by
^      holds <_thread.lock at 0x[0-9a-f]+>'
    [lldb_group]='^3 threads with the same stack: "pool_[0-2]", "pool_[0-2]", "pool_[0-2]"'
    [gdb_bt]='_PyEval_EvalFrameDefault
^ +\[python\] wait_for_stdin_eof \(\) at .*demo_program.py:[0-9]+'
    [gdb_tasks]='"fetch-prices"
"push-updates"'
    [cli_sample]='crunch_numbers'
)
ONLY_EXPECT=" gdb_bt gdb_tasks cli_sample "

# Functions in which demo_program.py's threads block: every view must show
# all three (as the end of a "  File ..., in FUNCTION" line).
BLOCKING_FUNCTIONS=(
    'wait_for_stdin_eof'
    'source \[generator\]'
    'Outer\.Inner\.method\.<locals>\.closure'
)

# ---------------------------------------------------------------- views

view_pyframes_cli() {
    run_view pyframes env PYTHONPATH="$SRC/native/python" \
        python3 -m pyframes dump --all "$1"
}

# in_gdb PID COMMAND...: the gdb view of each command, with the plugin.
in_gdb() {
    local pid=$1 args=() c
    shift
    for c in "$@"; do args+=(-ex "$c"); done
    run_view gdb gdb --batch -nx -p "$pid" -ex "source $SRC/gdb/pyframes_gdb.py" "${args[@]}"
}

# in_lldb PID COMMAND: the lldb view of one command, with the plugin.
in_lldb() {
    run_view lldb lldb --batch -p "$1" \
        -o "command script import $SRC/lldb/pyframes_lldb.py" -o "$2" -o detach
}

view_gdb() {
    in_gdb "$1" 'py-bt-fast --all'
}

view_lldb() {
    in_lldb "$1" 'pystack --all'
}

view_gdb_locals() {
    in_gdb "$1" 'py-bt-fast --all --locals'
}

view_lldb_locals() {
    in_lldb "$1" 'pystack --all --locals --max-items 3'
}

view_gdb_locks() {
    in_gdb "$1" 'py-bt-fast --all --locks'
}

view_lldb_group() {
    in_lldb "$1" 'pystack --all --group'
}

view_gdb_bt() {
    # the main thread's innermost frames: C frames with the Python frames
    # each eval-loop frame runs
    in_gdb "$1" 'thread 1' 'bt 12'
}

view_gdb_tasks() {
    if [[ $version == 3.13.* ]]; then
        echo "(asyncio task trees are read on CPython 3.14+)"
        return 0
    fi
    in_gdb "$1" 'py-bt-fast --tasks'
}

view_cli_sample() {
    run_view sample env PYTHONPATH="$SRC/native/python" \
        python3 -m pyframes sample --all --mode cpu --duration 1 --top 5 \
        --flamegraph "$WORK/flame-$1.svg" "$1"
}

# ---------------------------------------------------------------- plumbing

# What gdb and lldb print when they attach and detach (not shown).
DEBUGGER_NOISE='^(\[New LWP|\[Thread debugging|Using host libthread_db|\[Inferior [0-9]+ |\[Switching to thread|0x[0-9a-f]+ in .* from /|warning: )'

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

# report_lines: from a view's output, the stack report -- each run of lines
# that starts with a "Thread ...:" header and goes on with thread headers,
# "Traceback ...", indented frame and source lines, or blank lines (blank
# lines at its end excluded).  With OTHER=1, every other line instead.
report_lines() {
    awk -v other="${OTHER:-0}" '
        function out(line, in_report) { if (in_report != other) print line }
        function start(line) {
            return line ~ /^Thread .*:$/ || line ~ /^deadlock: / ||
                line ~ /^[0-9]+ threads with the same stack.*:$/ ||
                line ~ /^("[^"]*"|thread [0-9]+) waits for / || line ~ /^asyncio tasks: /
        }
        function report_line(line) {
            return start(line) || line ~ /^Traceback \(most recent call first\):$/ ||
                line ~ /^  / || line ~ /^[├│└]/ || line == ""
        }
        start($0) { inside = 1 }
        inside && !report_line($0) { inside = 0 }
        inside && $0 == "" { blanks++; next }
        {
            for (; blanks > 0; blanks--) out("", inside)
            out($0, inside)
        }
        END { for (; blanks > 0; blanks--) out("", 0) }
    '
}

# plural N WORD: "1 WORD", "2 WORDs".
plural() {
    if (($1 == 1)); then echo "1 $2"; else echo "$1 $2s"; fi
}

# condense: print the report with runs of identical frames (File line and
# source line) cut after three, as "[Previous frame repeated N more times]".
condense() {
    awk '
        function flush_repeats() {
            if (rep >= 3)
                printf "  [Previous frame repeated %d more time%s]\n", rep - 2, rep == 3 ? "" : "s"
            rep = 0
        }
        function put(e) {
            if (e == prev && e ~ /^  File "/) {
                if (++rep < 3) printf "%s", e
                return
            }
            flush_repeats()
            prev = e
            printf "%s", e
        }
        /^    / && cur ~ /^  File "/ { cur = cur $0 "\n"; next }
        { if (started) put(cur); cur = $0 "\n"; started = 1 }
        END { if (started) put(cur); flush_repeats() }
    '
}

# run_view WHAT CMD...: run CMD, show its stack report and check it.
run_view() {
    local what=$1 out rc=0 t0 ms threads frames other fn missing=()
    shift
    printf '$ %s\n' "$(shell_words "$@")"
    out=$(mktemp "$WORK/view.XXXXXX")
    t0=$(date +%s%N)
    timeout "$VIEW_TIMEOUT" "$@" </dev/null >"$out" 2>&1 || rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [[ $ONLY_EXPECT == *" $view "* ]]; then
        # a view with no thread report: all it printed but the debugger's
        # attach and detach messages
        grep -Ev "$DEBUGGER_NOISE" "$out" >"$out.report" || true
    else
        report_lines <"$out" >"$out.report"
    fi
    other=$(($(grep -c . "$out" || true) - $(grep -c . "$out.report" || true)))
    threads=$(grep -c '^Thread .*:$' "$out.report" || true)
    frames=$(grep -c '^  File "' "$out.report" || true)
    if ((other > 0)); then
        printf '[%s: %s of attach/detach messages not shown]\n' "$what" "$(plural "$other" line)"
    fi
    condense <"$out.report"
    local only=0 re
    [[ $ONLY_EXPECT == *" $view "* ]] && only=1
    if ((only)); then # no thread report to count: a backtrace, a task tree, a profile
        printf '[%s: %d.%03d s]\n' "$what" $((ms / 1000)) $((ms % 1000))
    else
        printf '[%s: %s, %s, %d.%03d s]\n' "$what" "$(plural "$threads" thread)" \
            "$(plural "$frames" frame)" $((ms / 1000)) $((ms % 1000))
    fi
    if ((only == 0)); then
        for fn in "${BLOCKING_FUNCTIONS[@]}"; do
            grep -Eq "^  File \".*, in $fn\$" "$out.report" || missing+=("$fn")
        done
    fi
    while IFS= read -r re; do
        [[ -n $re ]] || continue
        grep -Eq -- "$re" "$out.report" || missing+=("$re")
    done <<<"${VIEW_EXPECT[$view]:-}"
    if ((rc != 0 || (frames == 0 && only == 0) || ${#missing[@]} > 0)); then
        if ((rc != 0)); then
            echo "run_demo: $what exited with status $rc" >&2
        elif ((${#missing[@]} > 0)); then
            echo "run_demo: $what did not show ${missing[*]//\\/}" >&2
        else
            echo "run_demo: $what showed no Python frames" >&2
        fi
        echo "run_demo: full output of $what:" >&2
        sed 's/^/  | /' "$out" >&2
        return 1
    fi
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
# label PYTHON: how headers name an interpreter.
label() {
    if [[ $1 =~ /\.pyenv/versions/([^/]+)/bin/([^/]+)$ ]]; then
        echo "${BASH_REMATCH[2]} (pyenv ${BASH_REMATCH[1]})"
    else
        echo "${1##*/}"
    fi
}

demo_one() {
    local py=$1 version view name
    if ! version=$("$py" -c 'import sys; print(sys.version.split()[0])'); then
        FAILED+=("$py:missing")
        return 0
    fi
    if ! start_target "$py"; then
        FAILED+=("$py:start")
        stop_target
        return 0
    fi
    name=$(label "$py")
    printf '\n%s\n' "========================================================================"
    printf ' CPython %s (%s), demo_program.py pid %s\n' "$version" "$py" "$TARGET_PID"
    printf '%s\n' "========================================================================"
    for view in "${VIEWS[@]}"; do
        printf '\n== %s: %s ==\n' "$name" "${VIEW_TITLE[$view]:-$view}"
        if ! "view_$view" "$TARGET_PID"; then
            echo "run_demo: view $view failed under $py" >&2
            FAILED+=("$py:$view")
        fi
    done
    stop_target
}

T0=$SECONDS
build_if_needed || exit 1
echo "run_demo: PYFRAMES_LIBRARY=$PYFRAMES_LIBRARY"
[[ -z ${LLDB_DEBUGSERVER_PATH:-} ]] || echo "run_demo: LLDB_DEBUGSERVER_PATH=$LLDB_DEBUGSERVER_PATH"
for py in "${INTERPRETERS[@]}"; do
    demo_one "$py"
done

echo
if ((${#FAILED[@]} == 0)); then
    echo "run_demo: OK (${#INTERPRETERS[@]} interpreters x ${#VIEWS[@]} views, $((SECONDS - T0)) s)"
else
    echo "run_demo: FAILED after $((SECONDS - T0)) s: ${FAILED[*]}"
    exit 1
fi
