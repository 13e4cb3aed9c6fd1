"""Where `cmake --install` puts the Python package for the prefix PREFIX:
the directory under PREFIX that this interpreter searches for packages
(site.getsitepackages), so that it imports lbknn with no PYTHONPATH. On
Debian that is /usr/local/lib/python3.X/dist-packages for /usr/local and
/usr/lib/python3/dist-packages for /usr. A prefix the interpreter does not
search (a venv, /opt/lbknn) gets sysconfig's purelib for it, the
directory a venv made at PREFIX searches (PREFIX/lib/python3.X/site-packages).

    python3 python_site_dir.py PREFIX    prints the directory relative to PREFIX
"""
import os
import site
import sys
import sysconfig


def site_dir(prefix):
    prefix = os.path.normpath(os.path.abspath(prefix))
    for path in site.getsitepackages():
        rel = os.path.relpath(os.path.normpath(path), prefix)
        # Directly under the prefix's own lib directories: Debian's
        # /usr/local/lib/... lies under /usr too, but belongs to /usr/local.
        if not rel.startswith(os.pardir) and rel.split(os.sep)[0].startswith("lib"):
            return rel
    purelib = sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
    return os.path.relpath(purelib, prefix)


if __name__ == "__main__":
    print(site_dir(sys.argv[1]))
