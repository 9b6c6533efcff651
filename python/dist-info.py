#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dist-info.py PYPROJECT VERSION OUTDIR: the dist-info files of the package as Meson installs it
(Debian's python3-fhash), from pyproject.toml, the same metadata the wheel carries, so that pip and
importlib.metadata know it. Fails when pyproject.toml's version is not the project's (meson.build)."""
import os
import sys
import tomllib


def main(pyproject, version, outdir):
    with open(pyproject, "rb") as f:
        project = tomllib.load(f)["project"]
    if project["version"] != version:
        sys.exit(f"dist-info.py: {pyproject} says version {project['version']}, meson.build {version}")
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project['description']}", f"License: {project['license']['text']}",
             f"Requires-Python: {project['requires-python']}"]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines += [f"Project-URL: {k}, {v}" for k, v in project.get("urls", {}).items()]
    for name, text in (("METADATA", "\n".join(lines) + "\n"), ("INSTALLER", "meson\n"),
                       ("top_level.txt", project["name"] + "\n")):
        with open(os.path.join(outdir, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(*sys.argv[1:])
