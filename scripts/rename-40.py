#!/usr/bin/env python3
"""rename-40.py - the renames of issue 40 (one word per idea: docs/api.md, "Glossary").

Usage:  scripts/rename-40.py [--check] [ROOT]
Rewrites the tree at ROOT (default: the repository this script is in) in place:
  1. functions and macros: word-boundary replacement of each old identifier, in every text
     file under the directories below (C, Python, shell, Markdown, the man page, ...);
  2. struct fields: a member access (x.old, p->old, f().old, a[i].old) or designated
     initializer (.old = ...) is renamed only where x is declared with one of the renamed
     struct types, in the same function (or at file scope, for globals and struct members),
     in C sources and headers;
  3. prose: sub-filter becomes link in C comments and in docs/*.md (not where quoted).
It looks at identifiers only, never at file names, so it runs the same on a tree whose files
were split or moved.  Idempotent: no new name is an old name, and a second run changes
nothing.  --check changes nothing and exits 1 if a run would.

Left alone: the files that keep the old names on purpose (EXCLUDE), and in any text file the
lines between one holding "rename-40: old names" and one holding "rename-40: end".
Signature changes (amq_cuckoo_count and amq_scuckoo_count return the count; byte sizes are
size_t) are not renames: they were made by hand, and the compiler points at any caller left.
"""
import os
import re
import sys

# Old -> new.  Functions and macros; stable ones keep their old name in amq/compat.h.
IDENTS = {
    # object <-> bytes: serialize / deserialize (a handle), decode (into a struct)
    "amq_guava_decode": "amq_guava_deserialize",
    "amq_guava_encode": "amq_guava_serialize",
    "amq_guava_encoded_size": "amq_guava_serialized_size",
    "amq_sbloom_header_encode": "amq_sbloom_header_serialize",
    "amq_sbloom_header_decode": "amq_sbloom_header_deserialize",
    "amq_sbloom_header_size": "amq_sbloom_header_serialized_size",
    "amq_scuckoo_header_encode": "amq_scuckoo_header_serialize",
    "amq_aging_export": "amq_aging_serialize_raw",
    "amq_aging_import": "amq_aging_deserialize_raw",
    "amq_aging_impl_decode": "amq_aging_impl_deserialize",  # internal: a new object
    # a handle from a header struct: from_header
    "amq_sbloom_from_raw": "amq_sbloom_from_header",
    "amq_sbloom_from_raw_owning": "amq_sbloom_from_header_owning",
    # sizing: <result>_for(n, rate)
    "amq_bloom_size_fpp": "amq_bloom_bits_for",
    "amq_bloom_size_bpk": "amq_bloom_bits_for_bpk",
    "amq_blocked_size_fpp": "amq_blocked_blocks_for",
    "amq_blocked_size_bpk": "amq_blocked_blocks_for_bpk",
    "amq_aging_plan": "amq_aging_info_for",
    "amq_sbloom_link_sizing": "amq_sbloom_link_info_for",
    # checking: _check
    "amq_scuckoo_validate": "amq_scuckoo_check",
    "amq_cuckoo_check_params": "amq_cuckoo_params_check",
    # raw arrays: _data_mut; link, not sub-filter
    "amq_aging_payload": "amq_aging_data_mut",
    "amq_scuckoo_subfilter": "amq_scuckoo_link",
    "amq_scuckoo_subfilter_mut": "amq_scuckoo_link_data_mut",
    "amq_scuckoo_set_max_filters": "amq_scuckoo_set_max_links",
    "AMQ_SCUCKOO_MAX_FILTERS": "AMQ_SCUCKOO_MAX_LINKS",
}

# Struct type -> {old field: new field}.
FIELDS = {
    "amq_sbloom_params": {"error": "fpp", "growth": "expansion"},
    "amq_sbloom_link_info": {"error": "fpp"},
    "amq_sbloom_info": {"size": "info_bytes", "num_filters": "links", "growth": "expansion"},
    "amq_sbloom_header": {"size": "items", "nfilters": "links", "growth": "expansion"},
    "amq_scuckoo_params": {"max_iterations": "max_kicks", "max_filters": "max_links"},
    "amq_scuckoo_info": {"size": "info_bytes", "capacity": "slots", "num_filters": "links",
                         "max_iterations": "max_kicks", "max_filters": "max_links"},
    "amq_scuckoo_header": {"num_filters": "links", "max_iterations": "max_kicks"},
}

DIRS = ["src", "include", "cli", "redis", "python", "tests", "fuzz", "bench", "docs",
        "examples", "scripts", "completions"]
TOP_FILES = ["README.md", "Makefile", "amq.pc.in"]
EXCLUDE = {
    "include/amq/compat.h",      # the old names, deprecated
    "src/compat.c",              # their exported definitions
    "tests/unit/test_compat.c",  # uses them
    "scripts/check-headers.sh",  # checks they are deprecated
    "scripts/api-renames.sed",   # the renames of 0.2.0
    "scripts/rename-40.py",      # this script
}
SKIP_DIRS = {".git", "build", "__pycache__", "golden", "regressions", "corpus"}
C_EXT = (".c", ".h", ".cc")
KEEP_ON = "rename-40: old names"
KEEP_OFF = "rename-40: end"

assert not set(IDENTS.values()) & set(IDENTS), "a new name is an old name: not idempotent"
for _m in FIELDS.values():
    assert not set(_m.values()) & set(_m), "a new field is an old field: not idempotent"

IDENT_RE = re.compile(r"\b(" + "|".join(sorted(IDENTS, key=len, reverse=True)) + r")\b")
TYPE_RE = re.compile(r"\b(" + "|".join(FIELDS) + r")\b")
PROSE_RE = re.compile(r"(?<![\"`])\b([Ss])ub-filter")  # a quoted one names the old word
KEYWORDS = {"const", "volatile", "static", "struct", "union", "enum", "unsigned", "signed",
            "int", "char", "long", "short", "double", "float", "void", "return", "sizeof"}


def split_regions(text):
    """[(keep, piece)]: keep is True inside the rename-40 guard lines."""
    out, keep, buf = [], False, []
    for line in text.splitlines(keepends=True):
        if not keep and KEEP_ON in line:
            out.append((False, "".join(buf)))
            buf, keep = [line], True
            continue
        buf.append(line)
        if keep and KEEP_OFF in line:
            out.append((True, "".join(buf)))
            buf, keep = [], False
    out.append((keep, "".join(buf)))
    return out


def lex(text):
    """[(kind, piece)] with kind 'code', 'comment' or 'string' (literals of both quotes)."""
    out, i, n, start = [], 0, len(text), 0

    def flush(upto, kind="code"):
        if upto > start:
            out.append((kind, text[start:upto]))

    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            flush(i)
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(("comment", text[i:j]))
            i = start = j
        elif c == "/" and text.startswith("//", i):
            flush(i)
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(("comment", text[i:j]))
            i = start = j
        elif c in "\"'":
            flush(i)
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(("string", text[i:j]))
            i = start = j
        else:
            i += 1
    flush(n)
    return out


def chunks(pieces):
    """Groups lexed pieces into top-level chunks: a function (up to its closing brace) or a
    file-scope declaration (up to its ';').  Yields lists of (kind, piece)."""
    cur, depth = [], 0
    for kind, piece in pieces:
        if kind != "code":
            cur.append((kind, piece))
            continue
        start = 0
        for k, ch in enumerate(piece):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth = max(depth - 1, 0)
                if depth == 0:
                    # a struct body ends at its ';' (typedef name), a function at '}'
                    rest = piece[k + 1:].split("\n", 1)[0].strip()
                    if not re.match(r"[A-Za-z_;,)]", rest):
                        cur.append((kind, piece[start:k + 1]))
                        yield cur
                        cur, start = [], k + 1
            elif ch == ";" and depth == 0:
                cur.append((kind, piece[start:k + 1]))
                yield cur
                cur, start = [], k + 1
        if start < len(piece):
            cur.append((kind, piece[start:]))
    if cur:
        yield cur


DECL_RE = re.compile(r"\b(?:struct\s+)?(" + "|".join(FIELDS) + r")\b((?:\s|\*|\bconst\b)*)"
                     r"([A-Za-z_]\w*)")


def skip_init(code, j):
    """Index after an initializer starting at code[j] (after '='): to ',' or ';' or ')'
    at bracket depth 0."""
    depth = 0
    while j < len(code):
        ch = code[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return j
            depth -= 1
        elif ch in ",;" and depth == 0:
            return j
        j += 1
    return j


def declared(code):
    """{name: type} of the variables, parameters, members and functions declared with a
    renamed struct type in this code, and a set of the function names among them."""
    names, funcs = {}, set()
    for m in DECL_RE.finditer(code):
        typ, name = m.group(1), m.group(3)
        if name in KEYWORDS or name in FIELDS:
            continue
        j = m.end()
        while True:
            rest = code[j:]
            if re.match(r"\s*\(", rest):
                funcs.add(name)
                names[name] = typ
                break
            names[name] = typ
            mm = re.match(r"\s*(\[[^\]]*\]\s*)*", rest)
            j += mm.end()
            if code[j:j + 1] == "=":
                j = skip_init(code, j + 1)
            if code[j:j + 1] != ",":
                break
            mm = re.match(r",\s*((?:\*|\s|\bconst\b)*)([A-Za-z_]\w*)\s*(?=[,;=\[)])", code[j:])
            if not mm or mm.group(2) in KEYWORDS:
                break
            name = mm.group(2)
            j += mm.end()
    return names, funcs


def rename_access(code, names, funcs):
    for name, typ in names.items():
        for old, new in FIELDS[typ].items():
            if name in funcs:
                pat = r"(\b%s\s*\([^()]*\)\s*(?:\.|->)\s*)%s\b" % (re.escape(name), old)
            else:
                pat = r"((?<![\w.>])%s\s*(?:\[[^\]]*\]\s*)*(?:\.|->)\s*)%s\b" % (re.escape(name), old)
            code = re.sub(pat, lambda m: m.group(1) + new, code)
    return code


def rename_members(code, members):
    """x.member.old / x->member.old for struct members of a renamed type."""
    for name, typ in members.items():
        for old, new in FIELDS[typ].items():
            pat = r"((?:\.|->)\s*%s\s*(?:\[[^\]]*\]\s*)*(?:\.|->)\s*)%s\b" % (re.escape(name), old)
            code = re.sub(pat, lambda m: m.group(1) + new, code)
    return code


INIT_RE = re.compile(r"(?:\(\s*(?:const\s+)?(" + "|".join(FIELDS) + r")\s*\)\s*|\b(" +
                     "|".join(FIELDS) + r")\b[^;{}()]*=\s*)\{")


def rename_designators(code):
    """.old = inside the braces of an initializer of a renamed type."""
    out, pos = [], 0
    for m in INIT_RE.finditer(code):
        if m.start() < pos:
            continue
        typ = m.group(1) or m.group(2)
        depth, j = 0, m.end() - 1
        while j < len(code):
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            if depth == 0:
                break
            j += 1
        body = code[m.end():j]
        for old, new in FIELDS[typ].items():
            body = re.sub(r"(\.\s*)%s(\s*=)" % old, lambda mm: mm.group(1) + new + mm.group(2), body)
        out.append(code[pos:m.end()])
        out.append(body)
        pos = j
    out.append(code[pos:])
    return "".join(out)


def rename_fields(text):
    if not TYPE_RE.search(text):
        return text
    all_chunks = list(chunks(lex(text)))
    # file scope: struct members and globals of a renamed type
    members, globals_ = {}, {}
    for ch in all_chunks:
        code = "".join(p for k, p in ch if k == "code")
        head = code.split("{", 1)[0]
        if "{" in code and "(" in head:
            # a function: its name, when it returns a renamed type
            names, funcs = declared(head)
            for name in funcs:
                globals_[name] = names[name]
            continue
        names, funcs = declared(code)
        for name, typ in names.items():
            if name in funcs:
                globals_[name] = typ
            elif "{" in code:
                members[name] = typ
            else:
                globals_[name] = typ
    out = []
    for ch in all_chunks:
        code_all = "".join(p for k, p in ch if k == "code")
        names, funcs = declared(code_all)
        for g, typ in globals_.items():
            names.setdefault(g, typ)
        gfuncs = funcs | {g for g in globals_ if re.search(r"\b%s\s*\(" % re.escape(g), text)}
        pieces = []
        for kind, piece in ch:
            if kind == "code":
                piece = rename_access(piece, names, gfuncs)
                piece = rename_members(piece, members)
            pieces.append((kind, piece))
        # designated initializers may span pieces only through comments: run on code joined
        joined = "".join(p for _, p in pieces)
        out.append(rename_designators(joined))
    return "".join(out)


def prose_in_comments(text):
    return "".join(PROSE_RE.sub(_prose, p) if k == "comment" else p for k, p in lex(text))


def _prose(m):
    return "Link" if m.group(1) == "S" else "link"


def rewrite(path, text):
    parts = []
    for keep, piece in split_regions(text):
        if keep:
            parts.append(piece)
            continue
        piece = IDENT_RE.sub(lambda m: IDENTS[m.group(1)], piece)
        if path.endswith(C_EXT):
            piece = rename_fields(piece)
            piece = prose_in_comments(piece)
        elif path.startswith("docs/") and path.endswith(".md"):
            piece = PROSE_RE.sub(_prose, piece)
        parts.append(piece)
    return "".join(parts)


def files(root):
    for top in TOP_FILES:
        if os.path.isfile(os.path.join(root, top)):
            yield top
    for d in DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, d)):
            dirnames[:] = sorted(x for x in dirnames if x not in SKIP_DIRS)
            for f in sorted(filenames):
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                if rel not in EXCLUDE:
                    yield rel


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    changed = 0
    for rel in files(root):
        path = os.path.join(root, rel)
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except (UnicodeDecodeError, OSError):
            continue  # binary
        if "\0" in text:
            continue
        new = rewrite(rel, text)
        if new != text:
            changed += 1
            if check:
                print("would change: " + rel)
            else:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(new)
    print("rename-40: %d file(s) %s" % (changed, "to change" if check else "changed"))
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
