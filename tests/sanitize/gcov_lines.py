#!/usr/bin/python3
"""The lines of src/ that a coverage build's .gcda files say ran, one
"src/FILE:LINE" a line (tests/sanitize/subset_coverage.sh).

    gcov_lines.py BUILD_DIR"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

build = sys.argv[1]
gcdas = [os.path.join(d, f) for d, _, files in os.walk(os.path.join(build, "src"))
         for f in files if f.endswith(".gcda")]
seen = set()
with tempfile.TemporaryDirectory() as tmp:
    for gcda in gcdas:
        subprocess.run(["gcov", "--json-format", "-o", os.path.dirname(gcda), gcda], cwd=tmp,
                       check=True, capture_output=True)
    for name in os.listdir(tmp):
        if not name.endswith(".gcov.json.gz"):
            continue
        with gzip.open(os.path.join(tmp, name)) as f:
            data = json.load(f)
        for entry in data["files"]:
            path = entry["file"]
            at = path.find("/src/")
            if at < 0:
                continue
            for line in entry["lines"]:
                if line["count"] > 0:
                    seen.add(f"{path[at + 1:]}:{line['line_number']}")
print("\n".join(sorted(seen)))
