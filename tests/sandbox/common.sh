# common.sh - settings and helpers shared by the sandbox scripts: where the
# root lives, its lock and users, logging, mounts, killing what runs in the
# root, and finding a host CPython.  Sourced by sandbox.sh and host_gdb.sh
# (which set SELF and REPO first); defines functions and settings only.

IN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
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

log() { printf 'sandbox: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- helpers
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

# Reaped or zombie?
gone() {
    stat_field "$1" 3 || return 0
    [[ $REPLY == Z ]]
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
        # A zombie `run` (killed, not yet reaped) cannot clean up: dead.
        if stat_field "$pid" 22 && [[ $REPLY == "$(<"$f")" ]] && ! gone "$pid"; then
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

# A CPython 3.13-3.15 of the host (not of the root), printed as a path:
# $PYFRAMES_HOST_PYTHON when set; else the newest 3.13-3.15 installed by pyenv
# ($PYENV_ROOT, else ~/.pyenv); else python3.15/3.14/3.13 on the host's PATH.
# Fails when there is none.
find_host_python() {
    local dir p v
    if [[ -n ${PYFRAMES_HOST_PYTHON:-} ]]; then
        [[ -x $PYFRAMES_HOST_PYTHON ]] || return 1
        echo "$PYFRAMES_HOST_PYTHON"
        return 0
    fi
    while IFS= read -r dir; do
        for p in "$dir"/bin/python3.1[345]; do
            [[ -x $p ]] && { echo "$p"; return 0; }
        done
    done < <(ls -d "${PYENV_ROOT:-${HOME:-/root}/.pyenv}"/versions/3.1[345]* 2>/dev/null | sort -rV)
    for v in 3.15 3.14 3.13; do
        p=$(command -v "python$v" 2>/dev/null) && { echo "$p"; return 0; }
    done
    return 1
}

# The host's CPython 2.7 and 3.6-3.12 builds made by pyenv ($PYENV_ROOT, else
# ~/.pyenv; every machine this project is tested on has them: PIEs with a
# shared libpython and their headers; 3.11 and 3.12 are read, the others
# refused by name), the newest patch release of each minor, newest minor
# first, printed one path a line.
find_older_pythons() {
    local version dir p
    for version in 3.12 3.11 3.10 3.9 3.8 3.7 3.6 2.7; do
        while IFS= read -r dir; do
            p=$dir/bin/python$version
            if [[ -x $p ]]; then
                echo "$p"
                break
            fi
        done < <(ls -d "${PYENV_ROOT:-${HOME:-/root}/.pyenv}"/versions/"$version".* 2>/dev/null |
            grep -E '/'"${version//./\\.}"'\.[0-9]+$' | sort -rV)
    done
}

# The installation prefix of a host python (what the root needs bind-mounted
# to run it: its bin/ and lib/), or nothing when it is a system directory
# that must not be mounted over the root's own.
host_python_prefix() {
    local prefix
    prefix=$(cd "$(dirname "$(readlink -f "$1")")/.." && pwd -P) || return 1
    case $prefix in
        / | /usr | /usr/local | /opt) return 1 ;;
    esac
    echo "$prefix"
}
