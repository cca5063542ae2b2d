# run.sh - running a command inside the root: registering as a user of the
# root, mounting /proc, /sys and /dev once (refcounted), a private mount
# namespace per run with this clone bound at /src, and killing whatever the
# command left running.  Sourced by sandbox.sh after common.sh and root.sh.

# ---------------------------------------------------------------- run

REGISTERED=
CHILD=
NS_FILE=

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
    # The host's own CPython (a PIE with a shared libpython, when it comes
    # from pyenv), bound read-only at the same path inside the root.
    export PYFRAMES_SANDBOX_HOST_PYTHON= PYFRAMES_SANDBOX_HOST_PREFIX=
    if PYFRAMES_SANDBOX_HOST_PYTHON=$(find_host_python) &&
        PYFRAMES_SANDBOX_HOST_PREFIX=$(host_python_prefix "$PYFRAMES_SANDBOX_HOST_PYTHON"); then
        mkdir -p "$R$PYFRAMES_SANDBOX_HOST_PREFIX"
    else
        PYFRAMES_SANDBOX_HOST_PYTHON= PYFRAMES_SANDBOX_HOST_PREFIX=
    fi
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
# clone (and the host's CPython, if any: find_host_python) into the root, run the command there, and
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
            PYFRAMES_ROOT | PYFRAMES_SANDBOX_* | PYFRAMES_PYENV_PYTHON | PYFRAMES_IN_SANDBOX |\
                PYFRAMES_OLDER_PYTHONS) ;;
            PYFRAMES_*) envs+=("$v=${!v}") ;;
        esac
    done < <(compgen -e)

    local srv=
    for v in "$R"/usr/bin/lldb-server-[0-9]*; do
        [[ -e $v ]] && srv=${v##*/}
    done
    [[ -n $srv ]] && envs+=(LLDB_DEBUGSERVER_PATH="/usr/bin/$srv")

    # The host's older CPythons (find_older_pythons), each prefix bound
    # read-only at its own path: PYFRAMES_OLDER_PYTHONS lists those that run
    # inside the root, colon-separated.
    local older=() old oprefix
    while IFS= read -r old; do
        oprefix=$(host_python_prefix "$old") || continue
        mkdir -p "$R$oprefix" && mount --bind -o ro "$oprefix" "$R$oprefix" || continue
        if in_root "$R" "$old" -c 'import sys' >/dev/null 2>&1; then
            older+=("$old")
        else
            log "note: $old does not run inside the root; left out of PYFRAMES_OLDER_PYTHONS"
        fi
    done < <(find_older_pythons)
    ((${#older[@]} > 0)) && envs+=(PYFRAMES_OLDER_PYTHONS="$(IFS=:; echo "${older[*]}")")

    local py=${PYFRAMES_SANDBOX_HOST_PYTHON:-} prefix=${PYFRAMES_SANDBOX_HOST_PREFIX:-}
    if [[ -n $py && -n $prefix ]]; then
        mount --bind -o ro "$prefix" "$R$prefix"
        local out
        if out=$(in_root "$R" "$py" -c 'import os, sys, threading; print(sys.version_info[:2])' 2>&1) &&
            [[ $out == "(3, 1"[345]")" ]]; then
            envs+=(PYFRAMES_PYENV_PYTHON="$py")
        else
            log "note: $py does not run inside the root (${out//$'\n'/ }); PYFRAMES_PYENV_PYTHON not set"
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
