#!/usr/bin/env python3
"""Public members take only public types.

Parses translation units that include the library's headers (stage 06 writes them) with
libclang and walks every declaration made in include/tokchron/ outside a `detail` namespace and
outside a `detail/` folder. For each one a user can name (not private, not protected) it reads
the types a user meets: a function's return and parameter types, a field's or variable's type,
an alias's target and a public base class. A type spelled with `detail::` is reported: the
user would have to name, or rely on, something the CHANGELOG says is not part of the API.

One spelling is allowed: `typename detail::dependent_type<T, Clock>::type`, which is `T`
itself, named through the clock only to delay the need for T's definition to instantiation
(live/recorder.hpp, for hot files under TOKCHRON_SEPARATE_INSTANTIATION).

What it does not see: members of class templates that are never instantiated are walked as
written (their dependent types spelled as in the source, which is what is checked), and types
reached only through `auto` return types are not deduced.

Usage: check_public_api.py ROOT TU.cpp [TU.cpp ...] -- COMPILER_ARGS...
Exit 1 with one line per finding (file:line: scope::name what: type), 2 if a unit does not
parse.
"""
import os
import re
import sys

try:
    import clang.cindex as ci
except ImportError:
    sys.exit("check_public_api.py: libclang's Python bindings are missing "
             "(Debian: apt-get install python3-clang-14 libclang1-14)")

ALLOWED = re.compile(r"typename detail::dependent_type<(\w+), \w+>::type")


def main():
    args = sys.argv[1:]
    if "--" not in args or len(args) < 3:
        sys.exit(__doc__)
    split = args.index("--")
    root, units, cflags = args[0], args[1:split], args[split + 1:]
    include_dir = os.path.join(os.path.abspath(root), "include", "tokchron") + os.sep
    if not hasattr(ci.Cursor, "get_children"):
        sys.exit("check_public_api.py: unusable libclang bindings")
    try:
        index = ci.Index.create()
    except ci.LibclangError as e:
        sys.exit(f"check_public_api.py: libclang not found ({e}); "
                 "Debian: apt-get install libclang1-14")
    K = ci.CursorKind
    functions = {K.CXX_METHOD, K.FUNCTION_DECL, K.CONSTRUCTOR, K.FUNCTION_TEMPLATE,
                 K.CONVERSION_FUNCTION}
    classes = {K.CLASS_DECL, K.STRUCT_DECL, K.UNION_DECL, K.CLASS_TEMPLATE,
               K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION}
    hidden = (ci.AccessSpecifier.PRIVATE, ci.AccessSpecifier.PROTECTED)
    findings, walked = set(), set()

    def public_file(cursor):
        f = cursor.location.file
        if f is None:
            return None
        name = os.path.abspath(f.name)
        if not name.startswith(include_dir) or f"{os.sep}detail{os.sep}" in name[len(include_dir) - 1:]:
            return None
        return os.path.relpath(name, os.path.abspath(root))

    def report(where, cursor, scope, what, spelling):
        if "detail::" in ALLOWED.sub(r"\1", spelling):
            findings.add(f"{where}:{cursor.location.line}: {scope}::{cursor.spelling} "
                         f"{what}: {spelling}")

    def walk(parent):
        for c in parent.get_children():
            if c.kind == K.NAMESPACE:
                if c.spelling != "detail":
                    walk(c)
                continue
            where = public_file(c)
            if where is None or c.access_specifier in hidden:
                continue
            key = (where, c.location.line, c.location.column, c.kind)
            if key in walked:
                continue
            walked.add(key)
            scope = parent.spelling
            if c.kind in functions:
                report(where, c, scope, "returns", c.result_type.spelling)
                for a in c.get_arguments():
                    report(where, c, scope, f"parameter '{a.spelling}'", a.type.spelling)
            elif c.kind in (K.FIELD_DECL, K.VAR_DECL):
                report(where, c, scope, "type", c.type.spelling)
            elif c.kind in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL):
                report(where, c, scope, "alias of", c.underlying_typedef_type.spelling)
            elif c.kind == K.CXX_BASE_SPECIFIER and c.access_specifier == ci.AccessSpecifier.PUBLIC:
                report(where, c, scope, "public base", c.type.spelling)
            elif c.kind in classes:
                walk(c)

    for unit in units:
        tu = index.parse(unit, args=["-x", "c++"] + cflags)
        errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
        for d in errors:
            print(f"check_public_api.py: {d}", file=sys.stderr)
        if errors:
            return 2
        walk(tu.cursor)
    for f in sorted(findings):
        print(f)
    if findings:
        print(f"{len(findings)} public declarations name a detail:: type: make the type public, "
              "or the member private")
        return 1
    print(f"public API: {len(walked)} declarations name no detail:: type")
    return 0


if __name__ == "__main__":
    sys.exit(main())
