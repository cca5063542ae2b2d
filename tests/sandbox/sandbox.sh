#!/usr/bin/env bash
# sandbox.sh - a Debian sid root with CPython 3.13/3.14/3.15 (+ -dbg), gdb and
# lldb, in which pyframes is built and tested.  Run as root on Debian 12.
#
#   sandbox.sh ensure            build the root, or reuse it if up to date
#   sandbox.sh run [--] CMD...   run CMD inside the root, in /src (= this clone)
#   sandbox.sh test              run tests/run_all.sh inside the root, then
#                                the host's gdb against pyenv's 3.13.0
#   sandbox.sh demo              run tests/demo/run_demo.sh inside the root
#   sandbox.sh shell             interactive shell inside the root
#   sandbox.sh destroy           delete the root
#
# The root lives at ${PYFRAMES_ROOT:-/var/lib/pyframes/sid-root}, outside the
# clone.  See tests/sandbox/README.md.
set -euo pipefail
# Callers without a stdin (CI) or stdout: use /dev/null instead.
[[ -e /proc/self/fd/0 ]] || exec </dev/null
[[ -e /proc/self/fd/1 ]] || exec >/dev/null
[[ -e /proc/self/fd/2 ]] || exec 2>/dev/null

# Bump SANDBOX_FORMAT whenever the recipe in build_root changes: a root whose
# manifest differs from manifest_text is rebuilt.
SANDBOX_FORMAT=1
SUITE=sid
# The Debian archive is the one the host's apt uses (see host_mirror);
# PYFRAMES_MIRROR overrides it.
MIRROR=
PACKAGES=(
    python3.13 python3.13-dev python3.13-dbg
    python3.14 python3.14-dev python3.14-dbg
    python3.15 python3.15-dev python3.15-dbg
    gdb lldb python3-lldb python3-pytest
    cmake gcc make libc6-dbg procps binutils file
)
IN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
PYENV_DIR=/root/.pyenv/versions/3.13.0
PYENV_PYTHON=$PYENV_DIR/bin/python3.13
# The host phase of `test` (see host_gdb_phase).
HOST_GDB=/usr/bin/gdb
HOST_PYTHON=/usr/bin/python3
HOST_BUILD=build/host

R=${PYFRAMES_ROOT:-/var/lib/pyframes/sid-root}
R=${R%/}
case $R in
    /*/*) ;;
    *) echo "sandbox: PYFRAMES_ROOT must be an absolute path below a directory, not '$R'" >&2; exit 2 ;;
esac
if [[ $R =~ [[:space:]] ]]; then
    echo "sandbox: PYFRAMES_ROOT must not contain whitespace" >&2; exit 2
fi
LOCK=$R.lock            # flock: serialises build, mount refcount and teardown
USERS=$R.users          # one file per live `run`: <pid> (start time), <pid>.ns
BUILD_LOG=$R.build.log
MANIFEST=/etc/pyframes-sandbox.manifest

SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "$(dirname "$SELF")/../.." && pwd -P)

log() { printf 'sandbox: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- helpers

manifest_text() {
    printf 'pyframes-sandbox format %s\n' "$SANDBOX_FORMAT"
    printf 'suite %s\n' "$SUITE"
    printf 'packages %s\n' "${PACKAGES[*]}"
}

# Mount points at or below $1 in this mount namespace, deepest first.
mounts_under() {
    awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

umount_under() {
    local dir=$1 list m
    for _ in 1 2 3 4 5 6; do
        list=$(mounts_under "$dir")
        [[ -z $list ]] && return 0
        while IFS= read -r m; do
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        done <<<"$list"
    done
    [[ -z $(mounts_under "$dir") ]]
}

# Process listing.  Listers fill PIDS and never include this shell; they use
# only builtins where they may run inside a sandbox namespace, so that they
# never see their own helper processes.

# stat_field PID N: REPLY = field N (N >= 3) of /proc/PID/stat.
stat_field() {
    local s f
    { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
    s=${s##*) }
    read -r -a f <<<"$s"
    REPLY=${f[$2 - 3]}
}

# Processes whose root directory is $1.
list_root() {
    local p
    PIDS=()
    for p in /proc/[0-9]*; do
        if [[ ${p#/proc/} != "$$" && $p/root -ef $1 ]]; then PIDS+=("${p#/proc/}"); fi
    done
}

# Processes in the root that share this shell's mount namespace.
list_own_ns() {
    local p
    PIDS=()
    for p in /proc/[0-9]*; do
        if [[ ${p#/proc/} != "$$" && $p/root -ef $R && $p/ns/mnt -ef /proc/$$/ns/mnt ]]; then
            PIDS+=("${p#/proc/}")
        fi
    done
}

# Processes in the root in mount namespace $1 (e.g. "mnt:[4026532177]"),
# except descendants of live runs (LIVE_PIDS): a namespace id is reused once
# its namespace is gone.
list_stale_ns() {
    local p q n live
    PIDS=()
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [[ $p != "$$" && /proc/$p/root -ef $R ]] || continue
        n=$(readlink "/proc/$p/ns/mnt" 2>/dev/null) || continue
        [[ $n == "$1" ]] || continue
        q=$p
        while [[ $q =~ ^[0-9]+$ ]] && ((q > 1)); do
            for live in "${LIVE_PIDS[@]}"; do
                [[ $q == "$live" ]] && continue 3
            done
            stat_field "$q" 4 || break
            q=$REPLY
        done
        PIDS+=("$p")
    done
}

# terminate LISTER [ARGS]: SIGTERM what LISTER lists, SIGKILL after 5 s.
terminate() {
    local sig
    for sig in TERM KILL; do
        "$@"
        ((${#PIDS[@]})) || return 0
        kill -s "$sig" "${PIDS[@]}" 2>/dev/null
        for _ in {1..50}; do
            "$@"
            ((${#PIDS[@]})) || return 0
            sleep 0.1
        done
    done
    log "warning: processes still alive: ${PIDS[*]}"
    return 1
}

# Delete a directory that may still have mounts or processes inside it.
safe_rm() {
    local dir=$1
    case $dir in "$R"|"$R".build.*|"$R".old.*) ;; *) die "refusing to delete $dir" ;; esac
    [[ -e $dir ]] || return 0
    terminate list_root "$dir" || true
    umount_under "$dir" || die "cannot unmount everything below $dir; not deleting it"
    rm -rf --one-file-system -- "$dir"
}

take_lock() {
    mkdir -p "$(dirname "$R")"
    exec 9>>"$LOCK"
    flock 9
}
drop_lock() { flock -u 9; }

# The registry of running `run`s: $USERS/<pid> holds the start time of the
# `run` process, $USERS/<pid>.ns the id of its private mount namespace.
# prune_users (lock held) sets LIVE_PIDS, LIVE_NS and LIVE_COUNT, and drops
# the entries of `run`s that died without cleaning up, after killing what
# they left in the root.
LIVE_PIDS=()
LIVE_NS=()
LIVE_COUNT=0
prune_users() {
    local f pid ns dead=()
    LIVE_PIDS=()
    LIVE_NS=()
    mkdir -p "$USERS"
    for f in "$USERS"/*; do
        pid=${f##*/}
        [[ -f $f && $pid =~ ^[0-9]+$ ]] || continue
        if stat_field "$pid" 22 && [[ $REPLY == "$(<"$f")" ]]; then
            LIVE_PIDS+=("$pid")
            if [[ -s $f.ns ]]; then LIVE_NS+=("$(<"$f.ns")"); fi
        else
            dead+=("$pid")
        fi
    done 2>/dev/null
    LIVE_COUNT=${#LIVE_PIDS[@]}
    for pid in "${dead[@]}"; do
        f=$USERS/$pid
        ns=$(cat "$f.ns" 2>/dev/null || true)
        if [[ -n $ns ]] && ! printf '%s\n' "${LIVE_NS[@]}" | grep -qxF -- "$ns"; then
            terminate list_stale_ns "$ns" || true
        fi
        rm -f "$f" "$f.ns"
    done
    for f in "$USERS"/*.ns; do
        if [[ -e $f && ! -e ${f%.ns} ]]; then rm -f "$f"; fi
    done
}

mount_core() {
    local d=$1
    mountpoint -q "$d/proc" || mount -t proc proc "$d/proc"
    mountpoint -q "$d/sys" || mount -t sysfs sysfs "$d/sys"
    if ! mountpoint -q "$d/dev"; then
        mount --rbind /dev "$d/dev"
        mount --make-rslave "$d/dev"
    fi
}

# Argument vector running a command inside root $1 with a clean environment.
root_argv() {
    ROOT_ARGV=(chroot "$1" /usr/bin/env -i PATH="$IN_PATH" HOME=/root
        LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
}

in_root() {
    local ROOT_ARGV
    root_argv "$1"
    shift
    env --default-signal=INT,QUIT "${ROOT_ARGV[@]}" "$@" 9>&-
}

# ---------------------------------------------------------------- build

BUILD_DIR=
BG_PID=
fail_build() {
    log "error: $1 failed; last lines of $BUILD_LOG:"
    tail -n 40 "$BUILD_LOG" >&2 || true
    exit 1
}

# run_logged WHAT CMD...: run CMD with its output in the build log, in its own
# session so that cleanup can stop it and all its children, and in the
# background so that signals to this script are handled at once.
run_logged() {
    local what=$1
    shift
    setsid "$@" >>"$BUILD_LOG" 2>&1 </dev/null 9>&- &
    BG_PID=$!
    wait "$BG_PID" || fail_build "$what"
    BG_PID=
}

# The URI of the Debian archive in the host's apt configuration: the first
# entry (one-line .list or deb822 .sources) serving the host's own suite
# (VERSION_CODENAME of /etc/os-release) with the main component.
host_mirror() {
    local codename
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    [[ -n $codename ]] || return 1
    local files=() f
    [[ -f /etc/apt/sources.list ]] && files+=(/etc/apt/sources.list)
    for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] && files+=("$f")
    done
    ((${#files[@]})) || return 1
    awk -v want="$codename" '
        function emit(u) { sub(/\/+$/, "", u); print u; found = 1; exit }
        function check822() {
            if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " want " ") &&
                (" " comps " ") ~ / main /) { split(uris, u, " "); emit(u[1]) }
            types = uris = suites = comps = ""
        }
        FNR == 1 { if (deb822) check822(); deb822 = (FILENAME ~ /\.sources$/) }
        deb822 {
            if ($0 ~ /^[ \t]*$/) { check822(); next }
            if ($0 ~ /^#/) next
            key = tolower($1); $1 = ""; sub(/^ +/, "")
            if (key == "types:") types = $0
            else if (key == "uris:") uris = $0
            else if (key == "suites:") suites = $0
            else if (key == "components:") comps = $0
            else if (key == "enabled:" && tolower($0) == "no") types = ""
            next
        }
        /^[ \t]*deb[ \t]/ {
            line = $0; sub(/^[ \t]*deb[ \t]+/, "", line)
            if (line ~ /^\[/) sub(/^\[[^]]*\][ \t]*/, "", line)
            n = split(line, w, /[ \t]+/)
            if (w[2] == want) for (i = 3; i <= n; i++) if (w[i] == "main") emit(w[1])
        }
        END { if (!found && deb822) check822() }
    ' "${files[@]}"
}

resolve_mirror() {
    [[ -n $MIRROR ]] && return 0
    MIRROR=${PYFRAMES_MIRROR:-$(host_mirror || true)}
    [[ -n $MIRROR ]] || die "no Debian archive found in the host's apt configuration (/etc/apt/sources.list, /etc/apt/sources.list.d/): add one, or set PYFRAMES_MIRROR to the URI of a Debian archive"
}

ensure_debootstrap() {
    command -v debootstrap >/dev/null && return 0
    log "installing debootstrap on the host"
    run_logged "apt-get update (host)" env DEBIAN_FRONTEND=noninteractive apt-get update
    run_logged "apt-get install debootstrap (host)" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends debootstrap debian-archive-keyring
}

build_root() {
    local t0=$SECONDS f
    command -v chroot >/dev/null || die "chroot not found"
    : >"$BUILD_LOG"
    ensure_debootstrap
    resolve_mirror
    for f in "$R".build.* "$R".old.*; do
        [[ -d $f ]] && safe_rm "$f"
    done
    BUILD_DIR=$R.build.$$
    mkdir -p "$BUILD_DIR"
    log "building Debian $SUITE root at $R (about 70 s; log: $BUILD_LOG)..."

    run_logged debootstrap debootstrap --variant=minbase \
        --keyring=/usr/share/keyrings/debian-archive-keyring.gpg "$SUITE" "$BUILD_DIR" "$MIRROR"
    log "  base system ready after $((SECONDS - t0)) s; installing packages..."

    # The frozen mirror's Release file may be past its Valid-Until date.
    echo 'Acquire::Check-Valid-Until "false";' >"$BUILD_DIR/etc/apt/apt.conf.d/99pyframes-no-valid-until"
    cat >"$BUILD_DIR/etc/apt/apt.conf.d/99pyframes-sandbox" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Retries "3";
EOF
    printf '#!/bin/sh\nexit 101\n' >"$BUILD_DIR/usr/sbin/policy-rc.d"
    chmod 755 "$BUILD_DIR/usr/sbin/policy-rc.d"
    cat >"$BUILD_DIR/etc/dpkg/dpkg.cfg.d/01pyframes-nodoc" <<'EOF'
path-exclude=/usr/share/doc/*
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-exclude=/usr/share/lintian/*
EOF
    echo pyframes-sid >"$BUILD_DIR/etc/debian_chroot"

    mount_core "$BUILD_DIR"
    local ROOT_ARGV
    root_argv "$BUILD_DIR"
    run_logged "apt-get update" "${ROOT_ARGV[@]}" apt-get update
    run_logged "apt-get install" "${ROOT_ARGV[@]}" apt-get install -y --no-install-recommends "${PACKAGES[@]}"
    # shellcheck disable=SC2016
    in_root "$BUILD_DIR" dpkg-query -W -f '${Package} ${Version}\n' "${PACKAGES[@]}" \
        >"$BUILD_DIR/etc/pyframes-sandbox.versions" 2>>"$BUILD_LOG" || fail_build dpkg-query
    run_logged "apt-get clean" "${ROOT_ARGV[@]}" apt-get clean
    terminate list_root "$BUILD_DIR" || true
    umount_under "$BUILD_DIR" || die "cannot unmount below $BUILD_DIR"

    rm -rf "$BUILD_DIR"/var/lib/apt/lists/* "$BUILD_DIR"/var/cache/apt/*.bin \
        "$BUILD_DIR"/usr/share/doc/* "$BUILD_DIR"/usr/share/man/* "$BUILD_DIR"/usr/share/info/* \
        "$BUILD_DIR"/usr/share/locale/* "$BUILD_DIR"/var/log/apt/* "$BUILD_DIR"/var/log/*.log
    mkdir -p "$BUILD_DIR/src"
    manifest_text >"$BUILD_DIR$MANIFEST"

    # Only a finished root ever appears at $R.
    if [[ -e $R ]]; then
        mv "$R" "$R.old.$$"
    fi
    mv "$BUILD_DIR" "$R"
    BUILD_DIR=
    [[ -e $R.old.$$ ]] && safe_rm "$R.old.$$"
    log "built $R in $((SECONDS - t0)) s ($(du -sh --one-file-system "$R" | cut -f1))"
}

# Caller holds the lock.
ensure_locked() {
    if [[ -f $R$MANIFEST ]] && cmp -s <(manifest_text) "$R$MANIFEST"; then
        log "reusing Debian $SUITE root at $R"
        return 0
    fi
    if [[ -e $R ]]; then
        prune_users
        if ((LIVE_COUNT > 0)); then
            die "$R is out of date but in use by $LIVE_COUNT running sandbox command(s); retry when they finish"
        fi
        log "$R is incomplete or out of date; rebuilding it"
        terminate list_root "$R" || true
        umount_under "$R" || die "cannot unmount below $R"
    fi
    build_root
}

# ---------------------------------------------------------------- run

REGISTERED=
CHILD=
NS_FILE=

# Reaped or zombie?
gone() {
    stat_field "$1" 3 || return 0
    [[ $REPLY == Z ]]
}

# Unregister this `run`; the last one out stops what is left in the root and
# unmounts it.  Call with errexit off.
release_root() {
    [[ -n $REGISTERED ]] || return 0
    flock 9
    local ns
    ns=$(cat "$NS_FILE" 2>/dev/null)
    rm -f "$USERS/$$" "$NS_FILE"
    prune_users
    # Leftovers of a wrapper that was killed before it could clean up.
    if [[ -n $ns ]] && ! printf '%s\n' "${LIVE_NS[@]}" | grep -qxF -- "$ns"; then
        terminate list_stale_ns "$ns"
    fi
    if ((LIVE_COUNT == 0)); then
        # Last one out: stop anything left in the root, then unmount.
        terminate list_root "$R"
        umount_under "$R" || log "warning: mounts left below $R: $(mounts_under "$R" | tr '\n' ' ')"
    fi
    REGISTERED=
    flock -u 9
}

cleanup() {
    local rc=$?
    set +e
    trap - INT TERM HUP
    # The wrapper in the private namespace stops everything the command
    # started when asked to (or when the command ends).
    if [[ -n $CHILD ]]; then
        gone "$CHILD" || kill -TERM "$CHILD" 2>/dev/null
        for _ in {1..150}; do
            gone "$CHILD" && break
            sleep 0.1
        done
        gone "$CHILD" || kill -KILL "$CHILD" 2>/dev/null
        wait "$CHILD" 2>/dev/null
    fi
    release_root
    if [[ -n $BG_PID ]]; then
        kill -TERM -- "-$BG_PID" 2>/dev/null
        for _ in {1..50}; do
            kill -0 -- "-$BG_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$BG_PID" 2>/dev/null
        wait "$BG_PID" 2>/dev/null
    fi
    if [[ -n $BUILD_DIR ]]; then
        log "removing unfinished build $BUILD_DIR"
        terminate list_root "$BUILD_DIR"
        umount_under "$BUILD_DIR" && rm -rf --one-file-system -- "$BUILD_DIR"
    fi
    exit "$rc"
}

install_traps() {
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
}

cmd_ensure() {
    install_traps
    take_lock
    ensure_locked
    drop_lock
}

cmd_run() {
    run_in_root "$@"
    exit "$RUN_RC"
}

# run_in_root [--] CMD...: what `run` does; sets RUN_RC to CMD's exit code.
# The root stays registered until release_root or exit.
RUN_RC=
run_in_root() {
    [[ ${1:-} == -- ]] && shift
    (($# > 0)) || die "usage: sandbox.sh run [--] CMD..."
    install_traps
    take_lock
    ensure_locked
    prune_users
    NS_FILE=$USERS/$$.ns
    stat_field $$ 22
    echo "$REPLY" >"$USERS/$$"
    REGISTERED=1
    mount_core "$R"
    mkdir -p "$R/src"
    [[ -d $PYENV_DIR ]] && mkdir -p "$R$PYENV_DIR"
    drop_lock

    export PYFRAMES_ROOT=$R
    export PYFRAMES_SANDBOX_HOST_NS
    PYFRAMES_SANDBOX_HOST_NS=$(readlink /proc/self/ns/mnt)
    unshare --mount --propagation slave -- bash "$SELF" __enter "$NS_FILE" "$@" <&0 9>&- &
    CHILD=$!
    local rc=0
    wait "$CHILD" || rc=$?
    CHILD=    # reaped: its PID may be reused from now on
    RUN_RC=$rc
}

# The wrapper, in the private mount namespace created by cmd_run: bind the
# clone (and pyenv's 3.13.0, if any) into the root, run the command there, and
# stop whatever it left running.  These mounts vanish with the namespace;
# proc, sys and dev are shared, refcounted host mounts.  While this wrapper
# lives, the namespace (and so its id) stays ours.
cmd_enter() {
    local ns_file=$1
    shift
    local ns
    ns=$(readlink /proc/self/ns/mnt)
    [[ $ns != "${PYFRAMES_SANDBOX_HOST_NS:-}" ]] || die "internal: not in a private mount namespace"
    echo "$ns" >"$ns_file.tmp"
    mv "$ns_file.tmp" "$ns_file"

    mount --bind "$REPO" "$R/src"

    local envs=(PATH="$IN_PATH" HOME=/root LC_ALL=C.UTF-8 LANG=C.UTF-8
        DEBIAN_FRONTEND=noninteractive PYFRAMES_IN_SANDBOX=1)
    local v
    for v in TERM CI; do
        [[ -n ${!v:-} ]] && envs+=("$v=${!v}")
    done
    while IFS= read -r v; do
        case $v in
            PYFRAMES_ROOT | PYFRAMES_SANDBOX_* | PYFRAMES_PYENV_PYTHON | PYFRAMES_IN_SANDBOX) ;;
            PYFRAMES_*) envs+=("$v=${!v}") ;;
        esac
    done < <(compgen -e)

    local srv=
    for v in "$R"/usr/bin/lldb-server-[0-9]*; do
        [[ -e $v ]] && srv=${v##*/}
    done
    [[ -n $srv ]] && envs+=(LLDB_DEBUGSERVER_PATH="/usr/bin/$srv")

    if [[ -x $PYENV_PYTHON ]]; then
        mount --bind -o ro "$PYENV_DIR" "$R$PYENV_DIR"
        local out
        if out=$(in_root "$R" "$PYENV_PYTHON" -c 'import os, sys, threading; print(sys.version_info[:2])' 2>&1) &&
            [[ $out == "(3, 13)" ]]; then
            envs+=(PYFRAMES_PYENV_PYTHON="$PYENV_PYTHON")
        else
            log "note: $PYENV_PYTHON does not run inside the root (${out//$'\n'/ }); PYFRAMES_PYENV_PYTHON not set"
        fi
    fi

    local script
    if (($# == 1)); then
        script="cd /src && $1"     # one argument: a shell command line
        set --
    else
        script='cd /src && exec "$@"'
    fi
    trap 'terminate list_own_ns; exit 130' INT
    trap 'terminate list_own_ns; exit 143' TERM
    trap 'terminate list_own_ns; exit 129' HUP
    env --default-signal=INT,QUIT chroot "$R" /usr/bin/env -i "${envs[@]}" \
        bash -c "$script" sandbox "$@" <&0 &
    local rc=0
    wait "$!" || rc=$?
    terminate list_own_ns || true
    exit "$rc"
}

# ---------------------------------------------------------------- test

# `test`: tests/run_all.sh inside the root, then host_gdb_phase on the host.
# Fails when either fails; the last line sums both up.
cmd_test() {
    local t0=$SECONDS root_rc root_note verdict=PASS
    run_in_root bash tests/run_all.sh
    root_rc=$RUN_RC
    release_root || true
    if ((root_rc == 0)); then
        root_note="tests/run_all.sh passed"
    else
        root_note="tests/run_all.sh FAILED with exit code $root_rc"
        verdict=FAIL
    fi
    host_gdb_phase
    ((HOST_RC == 0)) || verdict=FAIL
    printf '\nsandbox test: %s (root: %s; host: %s) in %d s\n' \
        "$verdict" "$root_note" "$HOST_NOTE" $((SECONDS - t0))
    [[ $verdict == PASS ]] || exit 1
    exit 0
}

# On the Debian 12 host itself: its gdb (13, embedding Python 3.11) against
# pyenv's CPython 3.13.0, when both exist.  Builds pyframes with the host's
# cmake and gcc into $HOST_BUILD and runs tests/python/test_host_gdb.py with
# the host's python3.  Sets HOST_RC (0 when passed or skipped) and HOST_NOTE.
HOST_RC=0
HOST_NOTE=
host_gdb_phase() {
    local t0=$SECONDS out rc=0 dir=$REPO/$HOST_BUILD summary gdb_version
    HOST_RC=0
    printf '\n=== host-gdb: %s -p PID (%s) with tests/python/test_host_gdb.py\n' "$HOST_GDB" "$PYENV_PYTHON"
    if [[ ! -x $PYENV_PYTHON || ! -x $HOST_GDB ]]; then
        HOST_NOTE="skipped, no $([[ -x $PYENV_PYTHON ]] && echo "$HOST_GDB" || echo "$PYENV_PYTHON")"
        printf '=== host-gdb: %s\n' "$HOST_NOTE"
        return 0
    fi
    HOST_RC=1
    if ! ensure_host_packages; then
        HOST_NOTE="host-gdb FAILED: cannot install host packages"
        printf '=== %s\n' "$HOST_NOTE"
        return 0
    fi
    gdb_version=$("$HOST_GDB" --batch -nx -ex \
        'python import sys; print("gdb %s with Python %d.%d.%d" % ((gdb.VERSION,) + tuple(sys.version_info[:3])))' \
        </dev/null 2>/dev/null 9>&- | tail -n 1) || gdb_version="gdb"
    printf '=== host-gdb: host %s, target %s\n' "$gdb_version" "$("$PYENV_PYTHON" -V 2>&1)"

    out=$(mktemp /tmp/pyframes-host-build.XXXXXX)
    printf '=== host-gdb: building %s with the host cmake and %s\n' "$dir" \
        "$(gcc --version 2>/dev/null | head -n 1)"
    if ! { cmake -S "$REPO" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPYFRAMES_WERROR=ON &&
        cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)"; } </dev/null >"$out" 2>&1 9>&-; then
        tail -n 40 "$out"
        HOST_NOTE="host-gdb FAILED: the host build failed (full log: $out)"
        printf '=== %s\n' "$HOST_NOTE"
        return 0
    fi
    rm -f "$out"

    out=$(mktemp /tmp/pyframes-host-pytest.XXXXXX)
    (
        cd "$REPO"
        exec env -u PYTHONPATH -u PYTHONHOME -u PYTHONSTARTUP -u PYFRAMES_IN_SANDBOX \
            LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 \
            PYFRAMES_LIBRARY="$dir/native/libpyframes.so" PYFRAMES_REQUIRE_HOST_GDB=1 \
            "$HOST_PYTHON" -m pytest -v -p no:cacheprovider tests/python/test_host_gdb.py
    ) </dev/null 9>&- 2>&1 | tee "$out" 9>&- || rc=$?
    summary=$(grep -E '^=+ .* in [0-9.]+s' "$out" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//') || true
    rm -f "$out"
    if ((rc == 5)); then
        echo "pytest collected no tests: treated as a failure"
    fi
    summary="host $gdb_version against pyenv 3.13.0: ${summary:-no pytest summary}"
    if ((rc == 0)); then
        HOST_RC=0
        HOST_NOTE="host-gdb passed ($summary)"
        printf '=== host-gdb: ok (%d s)\n' $((SECONDS - t0))
    else
        HOST_NOTE="host-gdb FAILED with exit code $rc ($summary)"
        printf '=== host-gdb: FAILED with exit code %d (%d s)\n' "$rc" $((SECONDS - t0))
    fi
}

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
            "${apt[@]}" update </dev/null 9>&- || return 1
            break
        fi
    done
    if ! "${apt[@]}" install -y --no-install-recommends "${need[@]}" </dev/null 9>&-; then
        "${apt[@]}" update </dev/null 9>&- || return 1
        "${apt[@]}" install -y --no-install-recommends "${need[@]}" </dev/null 9>&- || return 1
    fi
    "$HOST_PYTHON" -m pytest --version >/dev/null 2>&1 </dev/null
}

cmd_destroy() {
    install_traps
    take_lock
    if [[ -e $R ]]; then
        prune_users
        ((LIVE_COUNT == 0)) || die "$R is in use by $LIVE_COUNT running sandbox command(s)"
        log "deleting $R"
        safe_rm "$R"
    fi
    rm -rf "$USERS"
    drop_lock
}

usage() {
    sed -n '2,14p' "$SELF" | sed 's/^# \{0,1\}//'
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
