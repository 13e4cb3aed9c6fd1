"""The mutant list's reader and applier, and the CTest JUnit reader, for
run_mutants.sh (the format is described at the top of mutants.txt).

  mutants.py list LIST              name<TAB>file<TAB>catch, one mutant a line
  mutants.py check LIST SRC [NAME]  every find snippet occurs exactly once
  mutants.py apply LIST SRC NAME    writes the mutant into SRC's file
  mutants.py junit XML              pass|fail|skip<TAB>test, one test a line

Any error in the list, or a snippet absent or ambiguous, is one line on
stderr and exit status 2.
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class ListError(Exception):
    pass


def parse(path):
    """The mutants of the list at path, in order: dicts with name, why, file,
    catch and pairs ([(find, replace)])."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    mutants, cur, block, names = [], None, None, set()

    def where(i):
        return "%s:%d" % (path, i + 1)

    def close_block():
        nonlocal block
        if block is not None:
            kind, body = block
            text = "".join(line + "\n" for line in body)
            if kind == "find":
                cur["pairs"].append([text, None])
            else:
                cur["pairs"][-1][1] = text
            block = None

    for i, line in enumerate(lines):
        if not line.startswith("@@"):
            if block is not None:
                block[1].append(line)
            elif line.strip() == "" or line.startswith("#"):
                continue
            else:
                raise ListError("%s: text outside a find or replace block: %r" % (where(i), line))
            continue
        words = line[2:].strip().split(None, 1)
        key = words[0] if words else ""
        arg = words[1].strip() if len(words) > 1 else ""
        if key == "mutant":
            if cur is not None:
                raise ListError("%s: mutant '%s' has no '@@ end'" % (where(i), cur["name"]))
            if not NAME_RE.match(arg):
                raise ListError("%s: bad mutant name %r" % (where(i), arg))
            if arg in names:
                raise ListError("%s: mutant '%s' listed twice" % (where(i), arg))
            names.add(arg)
            cur = {"name": arg, "why": [], "file": None, "catch": None, "pairs": [], "line": i + 1}
            continue
        if cur is None:
            raise ListError("%s: '@@ %s' outside a mutant" % (where(i), key))
        close_block()
        if key == "why":
            cur["why"].append(arg)
        elif key in ("file", "catch"):
            if not arg:
                raise ListError("%s: '@@ %s' needs a value" % (where(i), key))
            if cur[key] is not None:
                raise ListError("%s: mutant '%s' has two '@@ %s'" % (where(i), cur["name"], key))
            if key == "file" and (arg.startswith("/") or ".." in arg.split("/")):
                raise ListError("%s: the file must be relative to the source root" % where(i))
            if key == "catch":
                try:
                    re.compile(arg)
                except re.error as e:
                    raise ListError("%s: catch regex: %s" % (where(i), e))
            cur[key] = arg
        elif key == "find":
            if cur["pairs"] and cur["pairs"][-1][1] is None:
                raise ListError("%s: '@@ find' without '@@ replace' before it" % where(i))
            block = ("find", [])
        elif key == "replace":
            if not cur["pairs"] or cur["pairs"][-1][1] is not None:
                raise ListError("%s: '@@ replace' without '@@ find'" % where(i))
            block = ("replace", [])
        elif key == "end":
            for field in ("file", "catch"):
                if cur[field] is None:
                    raise ListError("%s: mutant '%s' has no '@@ %s'" % (where(i), cur["name"], field))
            if not cur["pairs"] or cur["pairs"][-1][1] is None:
                raise ListError("%s: mutant '%s' needs find and replace" % (where(i), cur["name"]))
            for find, _ in cur["pairs"]:
                if find.strip() == "":
                    raise ListError("%s: mutant '%s' has an empty find" % (where(i), cur["name"]))
            mutants.append(cur)
            cur = None
        else:
            raise ListError("%s: unknown marker '@@ %s'" % (where(i), key))
    if cur is not None:
        raise ListError("%s: mutant '%s' has no '@@ end'" % (path, cur["name"]))
    if not mutants:
        raise ListError("%s: no mutants" % path)
    return mutants


def mutated(m, src):
    """The text of m's file under src with m applied; ListError when a
    snippet is absent or occurs more than once."""
    path = os.path.join(src, m["file"])
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except OSError as e:
        raise ListError("mutant '%s': %s" % (m["name"], e))
    for n, (find, replace) in enumerate(m["pairs"], 1):
        count = text.count(find)
        if count != 1:
            raise ListError(
                "mutant '%s': find #%d occurs %d times in %s (must be exactly once): %r"
                % (m["name"], n, count, m["file"], find if len(find) < 200 else find[:200] + "..."))
        text = text.replace(find, replace)
    return text


def select(mutants, name):
    for m in mutants:
        if m["name"] == name:
            return m
    raise ListError("no mutant '%s' (the list has: %s)" % (name, ", ".join(x["name"] for x in mutants)))


def junit(path):
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status", "")
        if case.find("failure") is not None or status == "fail":
            verdict = "fail"
        elif status == "run":
            verdict = "pass"
        else:  # notrun, disabled: skipped (SKIP_RETURN_CODE) or not run
            verdict = "skip"
        print("%s\t%s" % (verdict, case.get("name")))


def main(argv):
    if len(argv) < 2:
        raise ListError(__doc__.strip())
    cmd = argv[1]
    if cmd == "junit" and len(argv) == 3:
        junit(argv[2])
        return 0
    if cmd == "list" and len(argv) == 3:
        for m in parse(argv[2]):
            print("%s\t%s\t%s" % (m["name"], m["file"], m["catch"]))
        return 0
    if cmd == "check" and len(argv) in (4, 5):
        mutants = parse(argv[2])
        for m in [select(mutants, argv[4])] if len(argv) == 5 else mutants:
            mutated(m, argv[3])
        return 0
    if cmd == "apply" and len(argv) == 5:
        m = select(parse(argv[2]), argv[4])
        text = mutated(m, argv[3])
        path = os.path.join(argv[3], m["file"])
        # A plain write gives the file a new mtime, so make rebuilds it.
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.utime(path)
        return 0
    raise ListError("bad usage: %s" % " ".join(argv[1:]))


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except ListError as e:
        print("mutants.py: %s" % e, file=sys.stderr)
        sys.exit(2)
