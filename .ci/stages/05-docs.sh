# Documentation (fast, seconds): every relative link in every tracked Markdown file resolves inside the repository (anchors included), and every path of a
# Markdown file under docs/ named in code, scripts or prose exists; CHANGELOG.md lists every
# public header and no other; the API reference builds
# with Doxygen (docs/Doxyfile) with every warning an error.
tc_need_pkgs python3 doxygen git
cd "$TOKCHRON_ROOT"
/usr/bin/env python3 - <<'PY'
import os, re, subprocess, sys

root = os.getcwd()
tracked = subprocess.run(["git", "ls-files", "-z"], capture_output=True, text=True,
                         check=True).stdout.split("\0")
tracked = [f for f in tracked if f and os.path.isfile(f)]
problems = []


def slug(heading):
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose(path):
    """The file's lines outside fenced code blocks, numbered from 1."""
    fence = None
    for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        m = re.match(r"\s*(```|~~~)", line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence is None:
            yield n, line


anchors_of = {}
def anchors(path):
    if path not in anchors_of:
        seen, out = {}, set()
        for _, line in prose(path):
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            s = slug(m.group(1))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else f"{s}-{k}")
        for m in re.finditer(r'<a\s+(?:name|id)="([^"]+)"', open(path, encoding="utf-8").read()):
            out.add(m.group(1))
        anchors_of[path] = out
    return anchors_of[path]


link = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\s*\[[^\]]+\]:\s*(\S+)")
for f in (t for t in tracked if t.endswith(".md")):
    for n, line in prose(f):
        line = re.sub(r"`[^`]*`", "", line)  # inline code is not a link
        for m in link.finditer(line):
            target = m.group(1) or m.group(2)
            if re.match(r"[a-zA-Z][a-zA-Z+.-]*:", target):
                continue  # a URL (https:, mailto:)
            path, _, frag = target.partition("#")
            if path.startswith("/"):
                problems.append(f"{f}:{n}: absolute link {target}")
                continue
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if dest == ".." or dest.startswith("../"):
                problems.append(f"{f}:{n}: {target} points outside the repository")
            elif not os.path.exists(dest):
                problems.append(f"{f}:{n}: {target}: no such file")
            elif frag and dest.endswith(".md") and frag not in anchors(dest):
                problems.append(f"{f}:{n}: {target}: no heading #{frag} in {dest}")

# A docs/ Markdown path named anywhere in a tracked text file (comments, scripts, CMake, prose)
# is relative to the repository root and must exist; so is one a program joins to the root
# (a root joined to a quoted path that starts with a slash).
mention = re.compile(r"(?:(?<=[\"']/)|(?<![\w/.-]))docs/\w[\w./-]*?\.md\b")
for f in tracked:
    if f.startswith("tests/data/") or f.startswith("tests/fuzz/"):
        continue
    try:
        text = open(f, encoding="utf-8").read()
    except (UnicodeDecodeError, OSError):
        continue  # binary
    if f.endswith(".md"):  # link targets were checked above, relative to their file
        text = re.sub(r"\]\([^)]*\)", lambda m: "]" + "\n" * m.group(0).count("\n"), text)
    seen = set()
    for m in mention.finditer(text):
        n = text.count("\n", 0, m.start()) + 1
        if not os.path.isfile(m.group(0)) and (n, m.group(0)) not in seen:
            seen.add((n, m.group(0)))
            problems.append(f"{f}:{n}: names {m.group(0)}, which does not exist")

# CHANGELOG.md's 0.1.0 section lists the public API as released: every header under
# include/tokchron outside a detail/ folder, and only headers that exist.
log = open("CHANGELOG.md", encoding="utf-8").read()
release = re.search(r"^## 0\.1\.0.*?(?=^## |\Z)", log, re.S | re.M)
listed = set(re.findall(r"`(?:tokchron/)?([\w/]+\.hpp)`", release.group(0) if release else ""))
public = {t[len("include/tokchron/"):] for t in tracked
          if t.startswith("include/tokchron/") and t.endswith(".hpp") and "/detail/" not in t}
for h in sorted(public - listed):
    problems.append(f"CHANGELOG.md: the 0.1.0 section does not list public header {h}")
for h in sorted(listed - public):
    problems.append(f"CHANGELOG.md: the 0.1.0 section lists {h}, which is not a public header")

for p in problems:
    print(p)
print(f"docs check: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
PY

echo "--- Doxygen: the API reference, warnings as errors"
dox=$TOKCHRON_CI_BUILD/doxygen
rm -rf "$dox"
mkdir -p "$dox"
(cat docs/Doxyfile; echo "OUTPUT_DIRECTORY = $dox"; echo "WARN_AS_ERROR = FAIL_ON_WARNINGS") |
  doxygen - >"$dox/doxygen.log" 2>&1 || { cat "$dox/doxygen.log"; exit 1; }
test -f "$dox/html/index.html"
echo "API reference in $dox/html/index.html"
