"""docs.links: the README is a front page and every page is one click away.

    links.py SOURCE_DIR MAX_LINES PAGE... [-- FILE#ANCHOR...]

- README.md has at most MAX_LINES lines;
- every relative link of README.md and docs/*.md (outside code) names a
  file or folder that exists, and an anchor, where it has one, that is a
  heading of that Markdown file (GitHub's anchors: lower case, punctuation
  but '-' and '_' dropped, spaces to '-', a repeated one with -1, -2, ...);
- README.md links every docs/*.md page, every "## " section of each PAGE
  (the pages made of the README's former sections), and each FILE#ANCHOR
  given after "--" (sections moved into pages that hold others too).
The standard library alone."""
import glob
import os
import re
import sys

source, max_lines = sys.argv[1], int(sys.argv[2])
rest = sys.argv[3:]
pages = rest[:rest.index("--")] if "--" in rest else rest
anchors_wanted = rest[rest.index("--") + 1:] if "--" in rest else []
failures = []


def fail(message):
    failures.append(message)
    print(f"FAIL: {message}", flush=True)


def prose(path):
    """The file's text with fenced code blocks blanked (lines kept)."""
    out, fence = [], None
    for line in open(path, encoding="utf-8").read().split("\n"):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if fence is None and m:
            fence = m.group(1)[0] * 3
            out.append("")
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append("")
        else:
            out.append(line)
    return out


def slug(heading):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


anchor_cache = {}


def anchors(path):
    if path not in anchor_cache:
        seen, found = {}, set()
        for line in prose(path):
            m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        anchor_cache[path] = found
    return anchor_cache[path]


def links(path):
    """(target, line number) of each inline link outside code."""
    lines = prose(path)
    text = "\n".join(lines)
    text = re.sub(r"`[^`]*`", lambda m: re.sub(r"[^\n]", "x", m.group(0)), text)
    for m in re.finditer(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text):
        yield m.group(1), text.count("\n", 0, m.start()) + 1


readme = os.path.join(source, "README.md")
count = len(open(readme, encoding="utf-8").read().splitlines())
if count > max_lines:
    fail(f"README.md has {count} lines, more than {max_lines}: it is the front page; "
         "move the detail to docs/ and link it")

files = [readme] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
checked = 0
readme_targets = set()
for path in files:
    rel = os.path.relpath(path, source)
    for target, line in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        checked += 1
        name, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), name)) if name else path
        if path == readme:
            readme_targets.add((os.path.relpath(dest, source), anchor))
        if not os.path.exists(dest):
            fail(f"{rel}:{line}: link to {target}: no file {os.path.relpath(dest, source)}")
            continue
        if anchor:
            if not dest.endswith(".md"):
                fail(f"{rel}:{line}: link to {target}: an anchor in a file that is not Markdown")
            elif anchor not in anchors(dest):
                fail(f"{rel}:{line}: link to {target}: {os.path.relpath(dest, source)} has no "
                     f"heading with the anchor #{anchor}")

linked_files = {f for f, _ in readme_targets}
for path in files[1:]:
    if os.path.relpath(path, source) not in linked_files:
        fail(f"README.md does not link {os.path.relpath(path, source)}")
wanted = list(anchors_wanted)
for page in pages:
    for line in prose(os.path.join(source, page)):
        m = re.match(r"^##\s+(.*?)\s*$", line)
        if m:
            wanted.append(f"{page}#{slug(m.group(1))}")
for item in wanted:
    page, _, anchor = item.partition("#")
    if (os.path.normpath(page), anchor) not in readme_targets:
        fail(f"README.md does not link the section {item} (one click from the front page)")

print(f"README.md: {count} lines (at most {max_lines}); {checked} relative links in "
      f"{len(files)} files; {len(wanted)} sections linked from the README")
if failures:
    print(f"FAIL docs.links: {len(failures)} problem(s)")
    sys.exit(1)
print("PASS docs.links")
