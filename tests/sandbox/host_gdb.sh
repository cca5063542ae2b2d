#!/usr/bin/env bash
# host_gdb.sh - the host phase of `sandbox.sh test`: the host's own gdb (on
# Debian 12, gdb 13 embedding Python 3.11), outside the sandbox root, against
# a CPython 3.13-3.15 of the host (find_host_python in common.sh; pyenv's
# builds are PIEs with a shared libpython, another layout than Debian's),
# pyenv's 3.12 and 3.11, the heap-frame 3.10, 3.9 and 3.8 (the suites'
# own lists: test_mixed.py takes 3.10 and 3.8), and Debian 12's own
# /usr/bin/python3.11 (static, non-PIE, stripped: found by its .PyRuntime
# section or .dynsym symbol).
# Builds pyframes with the host's cmake and gcc into build/host and runs the
# debugger suites with their host-gdb driver, then the command line's live
# stacks on Debian's python3.11 (the sandbox root, Debian sid, has none):
#
#   PYFRAMES_DEBUGGERS=host-gdb python3 -m pytest tests/python/test_debuggers.py
#   python3 -m pytest tests/python/test_live_stacks.py -k debian-3.11
#
# CPython's own py-bt, the debugger suite's second oracle, comes with
# pyenv's builds (bin/python3.X-gdb.py, with their DWARF).  For Debian's
# python3.11 it would need python3.11-dbg, which this phase does not
# install: its build-id debug files match only the same package build, so
# installing it upgrades the host's python3.11 packages (8 of them on Debian
# 12 today: the interpreter this gdb embeds and the host's own python3),
# and it ties the run to the mirror of the day.  Debian's 3.11 is compared
# with the target's own view only; its layout equals pyenv's 3.11.7 field
# for field (the builtin_tables test), whose py-bt this phase does run.
#
# Exit status 0 when it passed or was skipped (no host gdb or no host CPython:
# the reason is printed), 1 when it failed.  The last line is the verdict,
# "host-gdb: ...".
set -uo pipefail
[[ -e /proc/self/fd/0 ]] || exec </dev/null

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SANDBOX_DIR=$(dirname "$SELF")
REPO=$(cd "$SANDBOX_DIR/../.." && pwd -P)
# shellcheck source=tests/sandbox/common.sh
. "$SANDBOX_DIR/common.sh"

HOST_GDB=$(command -v gdb || true)
HOST_PYTHON=/usr/bin/python3   # runs pytest (python3-pytest)
HOST_BUILD=$REPO/build/host

verdict() { printf 'host-gdb: %s\n' "$*"; }

# Install what the host phase needs and the host lacks, running apt-get update
# first when a package is unknown to apt, or when the install fails.
ensure_host_packages() {
    local need=() p
    [[ -x $HOST_PYTHON ]] && "$HOST_PYTHON" -m pytest --version >/dev/null 2>&1 </dev/null ||
        need+=(python3-pytest)
    command -v cmake >/dev/null || need+=(cmake)
    command -v gcc >/dev/null || need+=(gcc libc6-dev)
    command -v make >/dev/null || need+=(make)
    ((${#need[@]} > 0)) || return 0
    log "installing on the host: ${need[*]}"
    local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -q)
    for p in "${need[@]}"; do
        if ! apt-cache show "$p" >/dev/null 2>&1; then
            "${apt[@]}" update </dev/null || return 1
            break
        fi
    done
    if ! "${apt[@]}" install -y --no-install-recommends "${need[@]}" </dev/null; then
        "${apt[@]}" update </dev/null || return 1
        "${apt[@]}" install -y --no-install-recommends "${need[@]}" </dev/null || return 1
    fi
    "$HOST_PYTHON" -m pytest --version >/dev/null 2>&1 </dev/null
}

main() {
    local t0=$SECONDS out rc=0 summary gdb_version target
    if [[ -z $HOST_GDB ]]; then
        verdict "skipped: the host has no gdb"
        return 0
    fi
    if ! target=$(find_host_python); then
        verdict "skipped: no CPython 3.13-3.15 on the host (set PYFRAMES_HOST_PYTHON, or install one with pyenv)"
        return 0
    fi
    printf '=== host-gdb: %s -p PID against %s\n' "$HOST_GDB" "$target"
    if ! ensure_host_packages; then
        verdict "FAILED: cannot install host packages"
        return 1
    fi
    gdb_version=$("$HOST_GDB" --batch -nx -ex \
        'python import sys; print("gdb %s with Python %d.%d.%d" % ((gdb.VERSION,) + tuple(sys.version_info[:3])))' \
        </dev/null 2>/dev/null | tail -n 1) || gdb_version="gdb"
    printf '=== host-gdb: host %s, target %s\n' "$gdb_version" "$("$target" -V 2>&1)"

    out=$(mktemp /tmp/pyframes-host-build.XXXXXX)
    printf '=== host-gdb: building %s with the host cmake and %s\n' "$HOST_BUILD" \
        "$(gcc --version 2>/dev/null | head -n 1)"
    if ! { cmake -S "$REPO" -B "$HOST_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPYFRAMES_WERROR=ON \
        -DBUILD_TESTING=OFF && cmake --build "$HOST_BUILD" -j "$(nproc 2>/dev/null || echo 2)"; } \
        </dev/null >"$out" 2>&1; then
        tail -n 40 "$out"
        verdict "FAILED: the host build failed (full log: $out)"
        return 1
    fi
    rm -f "$out"

    out=$(mktemp /tmp/pyframes-host-pytest.XXXXXX)
    (
        cd "$REPO" || exit 1
        exec env -u PYTHONPATH -u PYTHONHOME -u PYTHONSTARTUP -u PYFRAMES_IN_SANDBOX \
            LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYFRAMES_DEBUGGERS=host-gdb \
            PYFRAMES_LIBRARY="$HOST_BUILD/native/libpyframes.so" PYFRAMES_REQUIRE_HOST_GDB=1 \
            PYFRAMES_PYENV_PYTHON="$target" PYFRAMES_COMPAT_JSON="$HOST_BUILD/compat.json" \
            "$HOST_PYTHON" -m pytest -v -p no:cacheprovider --durations=10 tests/python/test_debuggers.py \
            tests/python/test_mixed.py
    ) </dev/null 2>&1 | tee "$out" || rc=$?
    summary=$(grep -E '^=+ .* in [0-9.]+s' "$out" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//') || true
    if ((rc == 5)); then
        echo "pytest collected no tests: treated as a failure"
    fi
    # the command line on Debian's own python3.11, when the host has it
    local cli_rc=0 cli_summary=
    if [[ -x /usr/bin/python3.11 ]]; then
        (
            cd "$REPO" || exit 1
            exec env -u PYTHONPATH -u PYTHONHOME -u PYTHONSTARTUP -u PYFRAMES_IN_SANDBOX \
                LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 \
                PYFRAMES_LIBRARY="$HOST_BUILD/native/libpyframes.so" \
                PYFRAMES_PYENV_PYTHON="$target" PYFRAMES_COMPAT_JSON="$HOST_BUILD/compat-cli.json" \
                "$HOST_PYTHON" -m pytest -v -p no:cacheprovider tests/python/test_live_stacks.py \
                -k debian-3.11
        ) </dev/null 2>&1 | tee "$out" || cli_rc=$?
        cli_summary=$(grep -E '^=+ .* in [0-9.]+s' "$out" | tail -n 1 |
            sed -E 's/^=+ //; s/ =+$//') || true
        ((rc != 0)) || rc=$cli_rc
    fi
    rm -f "$out"
    summary="host $gdb_version against $target: ${summary:-no pytest summary}"
    [[ -n $cli_summary ]] && summary+="; command line on Debian's python3.11: $cli_summary"
    if ((rc == 0)); then
        printf '=== host-gdb: ok (%d s)\n' $((SECONDS - t0))
        verdict "passed ($summary)"
        return 0
    fi
    printf '=== host-gdb: FAILED with exit code %d (%d s)\n' "$rc" $((SECONDS - t0))
    verdict "FAILED with exit code $rc ($summary)"
    return 1
}

main
