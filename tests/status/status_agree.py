"""The library's codes, lbknn_status_string, the exit codes and Python's
constants against the text of the one status list (src/core/status.h) and
of lbknn.h, read here with regular expressions, not with the C
preprocessor that generates them.

usage: status_agree.py STATUS_H LBKNN_H LIB_PY STATUS_PY -- MAP_PROGRAM
(MAP_PROGRAM: tests/status/status_map.c, built)
"""

import re
import subprocess
import sys

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


status_h, lbknn_h, lib_py, status_py = sys.argv[1:5]
program = sys.argv[sys.argv.index("--") + 1:]

# lbknn.h: the enum as written, NAME = VALUE.
enum = re.search(r"typedef enum \{(.*?)\} lbknn_status;", read(lbknn_h), re.S)
check(enum is not None, f"{lbknn_h}: no lbknn_status enum")
codes = {}
for name, value in re.findall(r"\b(LBKNN_\w+)\s*=\s*(-?\d+)", enum.group(1) if enum else ""):
    check(name not in codes, f"{lbknn_h}: {name} twice")
    check(int(value) not in codes.values(), f"{lbknn_h}: value {value} twice")
    codes[name] = int(value)
check(codes.get("LBKNN_OK") == 0, "LBKNN_OK is not 0")

# status.h: the list's rows. Every PUBLIC( and STATUS( of the list must be
# read, or a row this parser misses would pass unchecked.
body = re.search(r"#define LBK_STATUS_LIST\(PUBLIC, STATUS\)(.*?[^\\])\n", read(status_h), re.S)
check(body is not None, f"{status_h}: no LBK_STATUS_LIST(PUBLIC, STATUS)")
body = body.group(1) if body else ""
public = re.findall(r'\bPUBLIC\(\s*(\w+)\s*,\s*"([^"]*)"\s*\)', body)
statuses = re.findall(r'\bSTATUS\(\s*(\w+)\s*,\s*"([^"]*)"\s*,\s*(\d+)\s*,\s*(\w+)\s*\)', body)
check(len(public) == body.count("PUBLIC("), f"{status_h}: a PUBLIC row not read: {body}")
check(len(statuses) == body.count("STATUS("), f"{status_h}: a STATUS row not read: {body}")
check(len(statuses) > 1, f"{status_h}: no STATUS rows")

# Each code of lbknn.h has exactly one PUBLIC row, and the list names no other.
public_names = [code for code, _ in public]
check(sorted(public_names) == sorted(codes),
      f"PUBLIC rows {sorted(public_names)} are not lbknn.h's codes {sorted(codes)}")
messages = {codes.get(code): message for code, message in public}

# Every status names a code of lbknn.h; only LBK_OK is LBKNN_OK (a failure
# reported as success was the hand-kept table's bug).
for constant, name, exit_code, code in statuses:
    check(code in codes, f"{constant}: public code {code} is not in lbknn.h")
    check((code == "LBKNN_OK") == (constant == "LBK_OK"),
          f"{constant} is reported as {code}")
check(statuses[0][0] == "LBK_OK", "LBK_OK is not the list's first status (value 0)")

# What the built code says.
run = subprocess.run(program, capture_output=True, text=True)
check(run.returncode == 0, f"{program}: exit {run.returncode}: {run.stderr}")
rows = [line.split(" ", 5) for line in run.stdout.splitlines() if line.startswith("status ")]
check(len(rows) == len(statuses), f"the program printed {len(rows)} statuses, the list has "
      f"{len(statuses)}")
for i, ((constant, name, exit_code, code), row) in enumerate(zip(statuses, rows)):
    want = ["status", constant, str(i), exit_code, str(codes.get(code)), name]
    check(row == want, f"{constant}: built {row}, the list says {want}")
strings = {}
for line in run.stdout.splitlines():
    if line.startswith("string "):
        _, value, message = line.split(" ", 2)
        strings[int(value)] = message
for value in range(-2, 16):
    want = messages.get(value, "unknown status")
    check(strings.get(value) == want,
          f"lbknn_status_string({value}) is {strings.get(value)!r}, the list says {want!r}")

# Python: the generated _status.py holds exactly lbknn.h's codes, without
# LBKNN_; _lib.py assigns none of its own.
constants = {}
exec(compile(read(status_py), status_py, "exec"), constants)
constants = {k: v for k, v in constants.items() if not k.startswith("__")}
want = {name[len("LBKNN_"):]: value for name, value in codes.items()}
check(constants == want, f"{status_py}: {constants}, lbknn.h says {want}")
own = re.findall(r"^((?:OK|ERR_\w+)\s*=.*)$", read(lib_py), re.M)
check(not own, f"{lib_py} keeps codes of its own: {own}")
check(re.search(r"^from \._status import \*", read(lib_py), re.M) is not None,
      f"{lib_py} does not take its codes from _status")

if failures:
    sys.exit(f"{len(failures)} disagreement(s) with the status list")
print(f"ok: {len(codes)} codes, {len(statuses)} statuses agree with the list")
