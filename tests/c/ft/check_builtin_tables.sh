#!/usr/bin/env bash
# check_builtin_tables.sh - the builtin_tables test: each block of
# native/src/layout_tables.h (the layouts of CPython 3.8-3.12) made
# again from every copy of that version's headers found here (the prefixes
# in PYFRAMES_OLDER_PYTHONS, pyenv's builds, Debian's python3.X-dev), field
# by field; any difference fails.  Exit 77 (skipped) where no headers are,
# except inside the sandbox, which must have them.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tables=$here/../../../native/src/layout_tables.h
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

dirs=()
add_dir() { [[ -e $1/internal/pycore_pystate.h ]] && dirs+=("$1"); }
IFS=: read -r -a listed <<<"${PYFRAMES_OLDER_PYTHONS:-}"
for py in "${listed[@]}"; do
    [[ -n $py ]] || continue
    prefix=$(cd "$(dirname "$(readlink -f "$py")")/.." && pwd -P)
    minor=${py##*python}
    add_dir "$prefix/include/python$minor"
done
for d in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.{8,9,10,11,12}.*/include/python3.{8,9,10,11,12} \
         /usr/include/python3.{8,9,10,11,12}; do
    [[ -d $d ]] || continue
    case " ${dirs[*]-} " in *" $(cd "$d" && pwd -P) "* | *" $d "*) continue ;; esac
    add_dir "$d"
done
if ((${#dirs[@]} == 0)); then
    echo "no CPython 3.8-3.12 headers here"
    [[ ${PYFRAMES_IN_SANDBOX:-} == 1 ]] && exit 1
    exit 77
fi

# The field lines of the block of 3.<minor> in a file.
block() { awk -v m="$2" '$0 ~ "pyf__builtin_3" m "\\[\\] = \\{" {on=1; next} on && /^};/ {exit} on' "$1"; }

fail=0
for d in "${dirs[@]}"; do
    if ! "${CC:-cc}" -O0 -w -DNDEBUG -no-pie -Wl,--unresolved-symbols=ignore-all -I"$d" \
        -o "$tmp/emit" "$here/emit_builtin_table.c" 2>"$tmp/cc.err"; then
        echo "FAIL $d: the emitter does not compile against these headers:"
        head -20 "$tmp/cc.err"
        fail=1
        continue
    fi
    "$tmp/emit" "$d" >"$tmp/made" || { echo "FAIL $d: the emitter failed"; fail=1; continue; }
    minor=$(sed -n 's/.*pyf__builtin_3\([0-9]*\)\[\].*/\1/p' "$tmp/made")
    if ! diff -u <(block "$tables" "$minor") <(block "$tmp/made" "$minor") >"$tmp/diff"; then
        echo "FAIL $d: CPython 3.$minor's headers give another layout than layout_tables.h:"
        cat "$tmp/diff"
        fail=1
    else
        echo "ok   $d: 3.$minor, $(block "$tmp/made" "$minor" | wc -l) fields equal"
    fi
done
exit $fail
