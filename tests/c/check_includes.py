#!/usr/bin/env python3
"""Each file of the library includes the private headers it uses, and only those.

For every source and header of native/src: a private header it includes of
whose declared names it uses none is flagged (an include left over), and so is
a private header whose names it uses without including it (a name that arrives
only through another header).  A header's names are what it declares at file
scope: macros, typedefs, struct, union and enum tags, enumerators, functions
and variables; api.h's are pyframes.h's too.  The one exception: a file that
uses pyf_target's members includes target.h, though the typedef is pyframes.h's.

usage: check_includes.py SRC_DIR PUBLIC_HEADER   (exit 1 when anything is flagged)
"""
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_]\w*")
KEYWORDS = {"sizeof", "__attribute__", "_Static_assert", "defined", "return", "if", "for", "while"}


def strip(text):
    """The text without comments, string and character literals, or #include lines."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#\s*include[^\n]*", " ", text, flags=re.M)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)


def declared(text):
    """The names a header declares at file scope."""
    text = strip(text).replace("\\\n", " ")  # continued lines joined
    names = set(re.findall(r"^\s*#\s*define\s+(\w+)", text, re.M))
    names -= {n for n in names if re.fullmatch(r"PYF(RAMES)?_\w+_H", n)}  # guards
    text = re.sub(r"^\s*#\s*ifdef\s+__cplusplus\b.*?^\s*#\s*endif", " ", text, flags=re.M | re.S)
    code = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    names |= set(re.findall(r"\b(?:struct|union|enum)\s+(\w+)\s*\{", code))
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", code):
        names |= set(re.findall(r"(?:^|,)\s*(\w+)", body))
    # statements at file scope: their text with every braced part cut out
    depth, stmt = 0, []
    for ch in code:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                stmt.append(" {} ")
                if re.search(r"\)\s*\{\}\s*$", "".join(stmt)):  # a function's body
                    names |= statement_name("".join(stmt))
                    stmt = []
        elif depth == 0:
            if ch == ";":
                names |= statement_name("".join(stmt))
                stmt = []
            else:
                stmt.append(ch)
    return names


def statement_name(s):
    s = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", " ", s)
    if re.match(r"\s*_Static_assert", s):
        return set()
    if re.match(r"\s*typedef\b", s):
        m = re.search(r"\(\s*\*\s*(\w+)\s*\)", s)  # a function pointer type
        if m:
            return {m.group(1)}
        idents = IDENT.findall(re.sub(r"\[[^\]]*\]", " ", s))
        return {idents[-1]} if idents else set()
    m = re.search(r"(\w+)\s*\(", s)
    if m and m.group(1) not in KEYWORDS and "=" not in s[: m.start()]:
        return {m.group(1)}  # a function
    m = re.search(r"(\w+)\s*(?:\[[^\]]*\]\s*)*(?:=|$)", s.strip())
    return {m.group(1)} if m else set()  # a variable


def main():
    src, public = sys.argv[1], sys.argv[2]
    headers = sorted(f for f in os.listdir(src) if f.endswith(".h"))
    names = {h: declared(open(os.path.join(src, h)).read()) for h in headers}
    names.get("api.h", set()).update(declared(open(public).read()))
    names["target.h"].discard("pyf_target")  # the typedef is pyframes.h's
    owners = {}
    for h, ns in names.items():
        for n in ns:
            owners.setdefault(n, set()).add(h)
    # a name two headers declare (an X macro's parameter) says nothing
    for n, hs in owners.items():
        if len(hs) > 1:
            for h in hs:
                names[h].discard(n)
    flagged = 0
    for f in sorted(os.listdir(src)):
        if not f.endswith((".c", ".h")):
            continue
        raw = open(os.path.join(src, f)).read()
        text = strip(raw)
        tokens = set(IDENT.findall(text))
        included = set(re.findall(r'^\s*#\s*include\s+"([^"/]+)"', raw, re.M)) & set(headers)
        used = {h for h in headers if h != f and names[h] & tokens}
        if f.endswith(".c") and re.search(r"\bpyf_target\s*\*\s*(\w+)\b", text):
            for var in re.findall(r"\bpyf_target\s*\*\s*(\w+)\b", text):
                if re.search(r"\b%s->" % re.escape(var), text):
                    used.add("target.h")
                    break
        for h in sorted(included - used):
            print("%s: includes %s but uses none of its names" % (f, h))
            flagged += 1
        for h in sorted(used - included):
            print("%s: uses %s (%s) without including it"
                  % (f, h, ", ".join(sorted(names[h] & tokens)[:3])))
            flagged += 1
    print("%d files checked, %d flagged" % (len([f for f in os.listdir(src)
                                                  if f.endswith((".c", ".h"))]), flagged))
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
