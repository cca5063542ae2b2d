#!/usr/bin/env bash
# sandbox.sh - a Debian sid root with CPython 3.13/3.14/3.15 (+ -dbg), gdb and
# lldb, in which pyframes is built and tested.  Run as root on Debian 12.
#
#   sandbox.sh ensure            build the root, or reuse it if up to date
#   sandbox.sh run [--] CMD...   run CMD inside the root, in /src (= this clone)
#   sandbox.sh test              run tests/run_all.sh inside the root (with
#                                speedscope's viewer, speedscope.sh), then
#                                host_gdb.sh: the host's gdb against a host
#                                CPython 3.13-3.15, when there are both
#   sandbox.sh demo              run tests/demo/run_demo.sh inside the root
#   sandbox.sh shell             interactive shell inside the root
#   sandbox.sh destroy           delete the root
#
# The root lives at ${PYFRAMES_ROOT:-/var/lib/pyframes/sid-root}, outside the
# clone.  The work is split by concern: common.sh (settings, locking, mounts,
# the host CPython), root.sh (building the root), run.sh (running in it),
# host_gdb.sh (the host phase).  See tests/sandbox/README.md.
set -euo pipefail
# Callers without a stdin (CI) or stdout: use /dev/null instead.
[[ -e /proc/self/fd/0 ]] || exec </dev/null
[[ -e /proc/self/fd/1 ]] || exec >/dev/null
[[ -e /proc/self/fd/2 ]] || exec 2>/dev/null

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SANDBOX_DIR=$(dirname "$SELF")
REPO=$(cd "$SANDBOX_DIR/../.." && pwd -P)
# shellcheck source=tests/sandbox/common.sh
. "$SANDBOX_DIR/common.sh"
# shellcheck source=tests/sandbox/root.sh
. "$SANDBOX_DIR/root.sh"
# shellcheck source=tests/sandbox/run.sh
. "$SANDBOX_DIR/run.sh"
# shellcheck source=tests/sandbox/speedscope.sh
. "$SANDBOX_DIR/speedscope.sh"

# ---------------------------------------------------------------- test

# `test`: tests/run_all.sh inside the root, then host_gdb.sh on the host.
# Fails when either fails; the last line sums both up.
cmd_test() {
    local t0=$SECONDS root_rc root_note verdict=PASS host_rc=0 host_note log_file
    fetch_speedscope
    run_in_root bash tests/run_all.sh
    root_rc=$RUN_RC
    release_root || true
    if ((root_rc == 0)); then
        root_note="tests/run_all.sh passed"
    else
        root_note="tests/run_all.sh FAILED with exit code $root_rc"
        verdict=FAIL
    fi
    log_file=$(mktemp /tmp/pyframes-host-gdb.XXXXXX)
    printf '\n=== host-gdb: tests/sandbox/host_gdb.sh\n'
    bash "$SANDBOX_DIR/host_gdb.sh" </dev/null 9>&- | tee "$log_file" || host_rc=$?
    host_note=$(sed -n 's/^host-gdb: //p' "$log_file" | tail -n 1)
    rm -f "$log_file"
    ((host_rc == 0)) || verdict=FAIL
    compatibility_table
    printf '\nsandbox test: %s (root: %s; host: %s) in %d s\n' \
        "$verdict" "$root_note" "${host_note:-no verdict}" $((SECONDS - t0))
    [[ $verdict == PASS ]] || exit 1
    exit 0
}

# The compatibility matrix of this run (docs/compatibility.md is a copy of
# one): the records both phases' pytest runs wrote, and ctest's C tests.
compatibility_table() {
    local out=$REPO/build/compatibility.md
    printf '\n=== compatibility: %s\n' "$out"
    python3 "$REPO/tests/compat_table.py" -o "$out" \
        --ctest-junit "$REPO/build/sandbox/ctest-junit.xml" \
        "$REPO"/build/sandbox/compat-{timed,half,rest}.json "$REPO"/build/host/compat{,-cli}.json \
        </dev/null || true
    if [[ -f $out ]]; then cat "$out"; fi
}

usage() {
    sed -n '2,15p' "$SELF" | sed 's/^# \{0,1\}//'
}

[[ $(id -u) == 0 ]] || die "must run as root (it uses debootstrap, chroot and mount)"

cmd=${1:-}
(($# > 0)) && shift
case $cmd in
    ensure) cmd_ensure ;;
    run) cmd_run "$@" ;;
    test) cmd_test ;;
    demo) cmd_run bash tests/demo/run_demo.sh ;;
    shell) cmd_run 'exec bash -i' ;;
    destroy) cmd_destroy ;;
    __enter) cmd_enter "$@" ;;
    -h | --help | help) usage ;;
    *) usage >&2; exit 2 ;;
esac
