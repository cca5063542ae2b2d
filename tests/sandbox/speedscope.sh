# speedscope.sh - speedscope's own viewer, for the browser test of
# `sample --speedscope` (tests/python/test_speedscope_viewer.py).  Sourced
# by sandbox.sh after common.sh.  The viewer is speedscope's npm package,
# fetched once with the host's npm into a file beside the root and unpacked
# into the clone's build/speedscope for each test run; PYFRAMES_SPEEDSCOPE
# names its dist/release directory inside the root.  Without npm, or when
# the fetch fails, the test skips and says why; nothing else depends on it.

SPEEDSCOPE_VERSION=1.25.0
SPEEDSCOPE_TGZ=$R.speedscope-$SPEEDSCOPE_VERSION.tgz

fetch_speedscope() {
    local dir=$REPO/build/speedscope tmp why
    unset PYFRAMES_SPEEDSCOPE
    if [[ ! -s $SPEEDSCOPE_TGZ ]]; then
        if ! command -v npm >/dev/null 2>&1; then
            log "speedscope $SPEEDSCOPE_VERSION: no npm on the host; test_speedscope_viewer will skip"
            return 0
        fi
        tmp=$(mktemp -d)
        if ! (cd "$tmp" && timeout 180 npm pack --silent "speedscope@$SPEEDSCOPE_VERSION" \
                </dev/null >/dev/null 2>"$tmp/err") ||
            [[ ! -s $tmp/speedscope-$SPEEDSCOPE_VERSION.tgz ]]; then
            why=$(tail -n 1 "$tmp/err" 2>/dev/null)
            log "speedscope $SPEEDSCOPE_VERSION: npm pack failed (${why:-no package}); test_speedscope_viewer will skip"
            rm -rf "$tmp"
            return 0
        fi
        mkdir -p "$(dirname "$SPEEDSCOPE_TGZ")"
        mv "$tmp/speedscope-$SPEEDSCOPE_VERSION.tgz" "$SPEEDSCOPE_TGZ.part"
        mv "$SPEEDSCOPE_TGZ.part" "$SPEEDSCOPE_TGZ"
        rm -rf "$tmp"
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! tar -xzf "$SPEEDSCOPE_TGZ" -C "$dir" package/dist/release 2>/dev/null ||
        [[ ! -f $dir/package/dist/release/index.html ]]; then
        log "speedscope $SPEEDSCOPE_VERSION: $SPEEDSCOPE_TGZ does not unpack; fetched again next time"
        rm -f "$SPEEDSCOPE_TGZ"
        return 0
    fi
    export PYFRAMES_SPEEDSCOPE=/src/build/speedscope/package/dist/release
    log "speedscope $SPEEDSCOPE_VERSION's viewer in build/speedscope, for test_speedscope_viewer"
}
