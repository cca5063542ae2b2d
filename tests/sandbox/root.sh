# root.sh - building the Debian sid root: its recipe (suite, archive,
# packages), debootstrap in a temporary directory renamed into place, the
# manifest that decides whether an existing root is reused, and deleting it.
# Sourced by sandbox.sh after common.sh.

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
    gdb gdbserver lldb python3-lldb python3-pytest
    cmake gcc make libc6-dbg procps binutils file
    clang libclang-rt-dev
    chromium fonts-dejavu-core
    python3-aiohttp python3-sphinx
    libzstd-dev liblzma-dev liblz4-dev zlib1g-dev libdw-dev zstd xz-utils lz4 gzip
)
# lldb 22 (frame providers) beside lldb 21: Debian's packages of the two
# conflict, so lldb 22's are unpacked into a prefix of their own and run by
# the wrapper /usr/local/bin/lldb-22 (LD_LIBRARY_PATH, PYTHONPATH).
LLDB22_PACKAGES=(lldb-22 liblldb-22 python3-lldb-22 libclang-cpp22)
LLDB22_PREFIX=/opt/lldb-22

manifest_text() {
    printf 'pyframes-sandbox format %s\n' "$SANDBOX_FORMAT"
    printf 'suite %s\n' "$SUITE"
    printf 'packages %s\n' "${PACKAGES[*]}"
    printf 'unpacked %s into %s\n' "${LLDB22_PACKAGES[*]}" "$LLDB22_PREFIX"
}

# lldb 22 unpacked into $LLDB22_PREFIX of the root being built, and its
# wrapper (tests/sandbox/lldb-22).
unpack_lldb22() {
    local debs=$BUILD_DIR/var/cache/pyframes-lldb22 deb
    mkdir -p "$debs"
    run_logged "apt-get download (lldb 22)" "${ROOT_ARGV[@]}" bash -c \
        "cd /var/cache/pyframes-lldb22 && apt-get download ${LLDB22_PACKAGES[*]}"
    for deb in "$debs"/*.deb; do
        dpkg-deb -x "$deb" "$BUILD_DIR$LLDB22_PREFIX" >>"$BUILD_LOG" 2>&1 ||
            fail_build "unpacking $deb"
    done
    rm -rf "$debs" "$BUILD_DIR$LLDB22_PREFIX/usr/share"
    install -m 755 "$SANDBOX_DIR/lldb-22" "$BUILD_DIR/usr/local/bin/lldb-22"
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
    log "building Debian $SUITE root at $R (about 2 minutes, most of it downloading about 740 MB; log: $BUILD_LOG)..."

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
    unpack_lldb22
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
    rm -f "$R".speedscope-*.tgz # speedscope.sh's download
    drop_lock
}
