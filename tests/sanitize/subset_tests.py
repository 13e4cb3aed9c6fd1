#!/usr/bin/python3
"""The sanitized pass's tests in a build: every `unit` test and those whose
name matches a line of tests/sanitize/subset.txt, less the slow,
nosanitize and oclgrind ones. Prints ctest's -I argument for them
("0,0,1,N,N,..."), or with --names one name a line. (One ctest -R regex of
the whole list is more than CMake's regular expressions compile.)

    subset_tests.py BUILD_DIR [--names] [--rest]

--rest: the tests of the old sanitized pass that the subset leaves out."""
import json
import os
import re
import subprocess
import sys

build, flags = sys.argv[1], set(sys.argv[2:])
here = os.path.dirname(os.path.abspath(__file__))
patterns = []
for line in open(os.path.join(here, "subset.txt")):
    line = line.split("#", 1)[0].strip()
    if line:
        patterns.append(re.compile(line))
listing = json.loads(subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                                    capture_output=True, text=True).stdout)
chosen = []
for number, test in enumerate(listing["tests"], start=1):
    labels = next((p["value"] for p in test.get("properties", []) if p["name"] == "LABELS"), [])
    if {"slow", "nosanitize", "oclgrind"} & set(labels):
        continue
    name = test["name"]
    picked = "unit" in labels or any(p.search(name) for p in patterns)
    if picked != ("--rest" in flags):
        chosen.append((number, name))
if "--names" in flags:
    print("\n".join(name for _, name in chosen))
else:
    print("0,0,1," + ",".join(str(n) for n, _ in chosen))
