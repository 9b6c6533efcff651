# SPDX-License-Identifier: MIT
"""Cases from xxHash's Makefile (targets check and test-xxhsum-c) and tests/cli-*.sh,
tests/filename-escape.sh (xxhsum 0.8.3).

The Makefile's recipes are command lines whose exit status (and sometimes a grep) is the check; each
case here is one of those lines, run in a directory of sample files standing for xxHash's sources
(TEST_FILES, xxhash.c, README.md, LICENSE). Exact outputs, where a case checks one, are XXH32, XXH64,
XXH128 and XXH3 of "foo" as xxhsum writes them.
"""

from harness import ANY, NA, C, Has, Re, U

MK = "Makefile"
# What the recipes hash: files of xxHash's tree, stand-ins of varied sizes.
SRC = {
    "xxhash.c": "/* xxhash.c */\n" + "int x;\n" * 300,
    "xxhash.h": "/* xxhash.h */\n" + "#define X 1\n" * 2000,
    "xxhsum": "\x7fELF" + "\0" * 5000,
    "xxhsum.1": ".TH XXHSUM 1\n",
    "README.md": "xxHash\n======\n" * 50,
    "LICENSE": "BSD 2-Clause License\n" * 20,
    "Makefile": "all:\n\t@echo make\n" * 40,
}
TEST_FILES = "xxhsum* xxhash.c xxhash.h"
FOO = {"XXH32": "e20f0dd9", "XXH64": "33bf00a859c4ba3f", "XXH128": "79aef92e83454121ab6e5f64077e7d8a",
       "XXH3": "ab6e5f64077e7d8a"}
# 0.8.1 wrote "\r" + 70 spaces + "\r" on stderr after hashing, at the default verbosity.
CLEAR = "\r" + " " * 70 + "\r"

CASES = []


def add(*cases):
    CASES.extend(cases)


def mk(name, script, out=ANY, err=ANY, exit=0, d12="same", tools=("xxhsum",), files=None):
    add(C(f"{name}", f"xxHash {MK}: {name.split(':')[0]}: {script}", script, files=files or SRC, out=out, err=err,
          exit=exit, d12=d12, tools=list(tools)))


# ---- make check ----------------------------------------------------------------------------------
mk("check:stdin", "xxhsum < xxhash.c", out=Re(r"^[0-9a-f]{16}  stdin\n$"))
mk("check:multiple", "xxhsum xxhash.*", out=Re(r"^[0-9a-f]{16}  xxhash\.c\n[0-9a-f]{16}  xxhash\.h\n$"))
mk("check:H0", "xxhsum -H0 xxhash.c", out=Re(r"^[0-9a-f]{8}  xxhash\.c\n$"))
mk("check:H2", "xxhsum -H2 xxhash.c", out=Re(r"^[0-9a-f]{32}  xxhash\.c\n$"))
mk("check:H3", "xxhsum -H3 xxhash.c | grep XXH3", out=Has("XXH3"))
mk("check:H9", "xxhsum -H9 xxhash.c; test $? -eq 1", out="")
for b in ("-bi0", "--benchmark-all -i0", "-b1,2,3 -i0", "-bi0 xxhash.c"):
    add(U(f"check:bench {b}", f"xxHash {MK}: check: xxhsum {b}",
          "xxhsum's benchmark of its hash variants, a tool of xxHash's developers and not checksum behaviour: "
          "fhashctl's xxhsum refuses -b and says so; its speed is measured by bench/run"))

# ---- make test-xxhsum-c --------------------------------------------------------------------------
T = "test-xxhsum-c"
mk(f"{T}:pipe", f"xxhsum {TEST_FILES} | xxhsum -c -")
mk(f"{T}:pipe-H0", f"xxhsum -H0 {TEST_FILES} | xxhsum -c -")
mk(f"{T}:stdin-entry", "xxhsum < README.md > .test.README.md.xxh; xxhsum -c .test.README.md.xxh < README.md",
   out="stdin: OK\n")
mk(f"{T}:no-loading-q", f"! xxhsum -q {TEST_FILES} 2>&1 | grep Loading")
mk(f"{T}:no-loading", f"! xxhsum {TEST_FILES} 2>&1 | grep Loading")
mk(f"{T}:nonexistent", "LC_ALL=C xxhsum nonexistent 2>&1 | grep \"Error: Could not open 'nonexistent'\"",
   out=Has("Error: Could not open 'nonexistent'"))
GEN = (f"xxhsum {TEST_FILES} > .test.xxh64; xxhsum --tag {TEST_FILES} > .test.xxh64_tag; "
       f"xxhsum --little-endian {TEST_FILES} > .test.le_xxh64; xxhsum --tag --little-endian {TEST_FILES} > .test.le_xxh64_tag; "
       f"xxhsum -H0 {TEST_FILES} > .test.xxh32; xxhsum -H0 --tag {TEST_FILES} > .test.xxh32_tag; "
       f"xxhsum -H0 --little-endian {TEST_FILES} > .test.le_xxh32; xxhsum -H0 --tag --little-endian {TEST_FILES} > .test.le_xxh32_tag; "
       f"xxhsum -H2 {TEST_FILES} > .test.xxh128; xxhsum -H2 --tag {TEST_FILES} > .test.xxh128_tag; "
       f"xxhsum -H2 --little-endian {TEST_FILES} > .test.le_xxh128; xxhsum -H2 --tag --little-endian {TEST_FILES} > .test.le_xxh128_tag; "
       f"xxhsum -H3 {TEST_FILES} > .test.xxh3; xxhsum -H3 --tag {TEST_FILES} > .test.xxh3_tag; "
       f"xxhsum -H3 --little-endian {TEST_FILES} > .test.le_xxh3; xxhsum -H3 --tag --little-endian {TEST_FILES} > .test.le_xxh3_tag; ")
mk(f"{T}:check-all", GEN + "xxhsum -c .test.xxh*")
mk(f"{T}:check-le", GEN + "xxhsum -c --little-endian .test.le_xxh*")
mk(f"{T}:check-tag", GEN + "xxhsum -c .test.*_tag")
for v in ("xxh32", "xxh64", "xxh128", "xxh3"):
    mk(f"{T}:stdin-{v}", GEN + f"xxhsum -c < .test.{v}")
mk(f"{T}:cat-all", GEN + "cat .test.xxh* | xxhsum -c -")
mk(f"{T}:star-marker", GEN + "sed 's/  / \\*/' .test.xxh32 | xxhsum -c")
for opts, tag in [("--tag", "XXH64"), ("--tag -H0", "XXH32"), ("--tag -H1", "XXH64"), ("--tag -H2", "XXH128"),
                  ("--tag -H3", "XXH3"), ("--tag -H32", "XXH32"), ("--tag -H64", "XXH64"), ("--tag -H128", "XXH128"),
                  ("--tag -H0 --little-endian", "XXH32_LE"), ("--tag -H1 --little-endian", "XXH64_LE"),
                  ("--tag -H2 --little-endian", "XXH128_LE"), ("--tag -H3 --little-endian", "XXH3_LE"),
                  ("--tag -H32 --little-endian", "XXH32_LE"), ("--tag -H64 --little-endian", "XXH64_LE"),
                  ("--tag -H128 --little-endian", "XXH128_LE")]:
    mk(f"{T}:bsd {opts}", f"xxhsum {opts} xxhsum* | grep {tag}", out=Has(tag + " ("))
mk(f"{T}:gnu-H3-prefix", "xxhsum -H3 xxhsum* | grep XXH3_", out=Has("XXH3_"), d12=NA)
mk(f"{T}:check-bsd", "xxhsum --tag xxhsum* | xxhsum -c")
mk(f"{T}:check-bsd-le", "xxhsum --tag -H32 --little-endian xxhsum* | xxhsum -c")
mk(f"{T}:improperly-xxh32", GEN + "echo '12345678 ' >>.test.xxh32; xxhsum -c .test.xxh32 | grep improperly",
   out=Has("improperly"))
mk(f"{T}:improperly-xxh64", GEN + "echo '123456789  file' >>.test.xxh64; xxhsum -c .test.xxh64 | grep improperly",
   out=Has("improperly"))
mk(f"{T}:failed-16", "echo '0000000000000000  LICENSE' | xxhsum -c -; test $? -eq 1", out=Has("LICENSE: FAILED"))
mk(f"{T}:failed-8", "echo '00000000  LICENSE' | xxhsum -c -; test $? -eq 1", out=Has("LICENSE: FAILED"))
mk(f"{T}:not-found-16", "echo '0000000000000000  test-expects-file-not-found' | xxhsum -c -; test $? -eq 1",
   out=Has("Could not open or read 'test-expects-file-not-found'"))
mk(f"{T}:not-found-8", "echo '00000000  test-expects-file-not-found' | xxhsum -c -; test $? -eq 1",
   out=Has("Could not open or read 'test-expects-file-not-found'"))

# ---- tests/cli-comment-line.sh -------------------------------------------------------------------
T = "tests/cli-comment-line.sh"
for opt, ext in (("", "xxh"), ("-H32", "xxh32"), ("-H64", "xxh64"), ("-H128", "xxh128")):
    add(C(f"cli-comment-line {opt or 'default'}", f"xxHash {T}: {opt or 'default'}: a '#' line is a comment",
          f"xxhsum {opt} ./Makefile > ./.test.{ext} && echo '# Test comment line' | cat - ./.test.{ext} > temp && "
          f"mv temp ./.test.{ext} && xxhsum --check ./.test.{ext}", files=SRC, out="./Makefile: OK\n", err=ANY,
          # 0.8.1 took '#' lines for bad lines: still exit 0, with a count on stdout.
          d12={"out": "./Makefile: OK\n1 line is improperly formatted\n"}, tools=["xxhsum"]))

# ---- tests/cli-ignore-missing.sh -----------------------------------------------------------------
T = "tests/cli-ignore-missing.sh"
add(
    C("cli-ignore-missing normal", f"xxHash {T}: normal", "xxhsum ./Makefile > ./.test.xxh && xxhsum --check ./.test.xxh",
      files=SRC, out="./Makefile: OK\n", err=ANY, tools=["xxhsum"]),
    C("cli-ignore-missing missing", f"xxHash {T}: a missing file fails",
      "cp Makefile .test.makefile && xxhsum ./.test.makefile > ./.test.xxh && rm ./.test.makefile && "
      "! xxhsum --check ./.test.xxh", files=SRC, out=Has("Could not open or read './.test.makefile'"),
      err=ANY, tools=["xxhsum"]),
    C("cli-ignore-missing some", f"xxHash {T}: --ignore-missing with one file left",
      "cp Makefile .test.makefile && xxhsum Makefile ./.test.makefile > ./.test.xxh && rm ./.test.makefile && "
      "xxhsum --check --ignore-missing ./.test.xxh", files=SRC, out="Makefile: OK\n", err=ANY, tools=["xxhsum"],
      d12=NA),
    C("cli-ignore-missing none", f"xxHash {T}: --ignore-missing with none left fails",
      "cp Makefile .test.makefile && xxhsum ./.test.makefile > ./.test.xxh && rm ./.test.makefile && "
      "! xxhsum --check --ignore-missing ./.test.xxh", files=SRC, out="./.test.xxh: no file was verified\n",
      err=ANY, tools=["xxhsum"], d12=NA),
)

# ---- tests/filename-escape.sh --------------------------------------------------------------------
T = "tests/filename-escape.sh"
NL = "filename-escape-foo\nbar"
add(
    C("filename-escape gnu", f"xxHash {T}: a name with a newline, escaped, checked back",
      "xxhsum \"$(printf 'filename-escape-foo\\nbar')\" > sums && cat sums && xxhsum -c sums",
      files={NL: "filename-escape-test-string\n"},
      out=Re(r"^\\[0-9a-f]{16}  filename-escape-foo\\nbar\n\\filename-escape-foo\\nbar: OK\n$"), tools=["xxhsum"],
      d12=NA),
    C("filename-escape bsd", f"xxHash {T}: the same, --tag",
      "xxhsum --tag \"$(printf 'filename-escape-foo\\nbar')\" > sums && cat sums && xxhsum -c sums",
      files={NL: "filename-escape-test-string\n"},
      out=Re(r"^\\XXH64 \(filename-escape-foo\\nbar\) = [0-9a-f]{16}\n\\filename-escape-foo\\nbar: OK\n$"),
      tools=["xxhsum"], d12=NA),
)

# ---- the output formats, exactly (xxhsum.1: -H, --tag, --little-endian; XXH3's GNU form of 0.8.2) -
T = "xxhsum.1"
for h, name in ((0, "XXH32"), (1, "XXH64"), (2, "XXH128")):
    add(C(f"format -H{h}", f"xxHash cli/{T}: -H{h}", ["xxhsum", f"-H{h}", "foo"], files={"foo": "foo"},
          out=f"{FOO[name]}  foo\n", err="", d12={"err": CLEAR}),
        C(f"format -H{h} --tag", f"xxHash cli/{T}: -H{h} --tag", ["xxhsum", f"-H{h}", "--tag", "foo"],
          files={"foo": "foo"}, out=f"{name} (foo) = {FOO[name]}\n", err="", d12={"err": CLEAR}),
        C(f"format -H{h} --little-endian", f"xxHash cli/{T}: -H{h} --little-endian",
          ["xxhsum", f"-H{h}", "--little-endian", "foo"], files={"foo": "foo"},
          out=f"{bytes.fromhex(FOO[name])[::-1].hex()}  foo\n", err="", d12={"err": CLEAR}))
add(C("format -H3", f"xxHash cli/{T}: -H3: XXH3_ and the digest, GNU style", ["xxhsum", "-H3", "foo"],
      files={"foo": "foo"}, out=f"XXH3_{FOO['XXH3']}  foo\n", err="",
      d12={"out": f"XXH3 (foo) = {FOO['XXH3']}\n", "err": CLEAR}),
    C("format xxh32sum", f"xxHash cli/{T}: xxh32sum is xxhsum -H0", ["xxh32sum", "foo"], files={"foo": "foo"},
      out=f"{FOO['XXH32']}  foo\n", err="", d12={"err": CLEAR}),
    C("format xxh128sum", f"xxHash cli/{T}: xxh128sum is xxhsum -H2", ["xxh128sum", "foo"], files={"foo": "foo"},
      out=f"{FOO['XXH128']}  foo\n", err="", d12={"err": CLEAR}),
    C("format xxh3sum", f"xxHash cli/{T}: xxh3sum is xxhsum -H3", ["xxh3sum", "foo"], files={"foo": "foo"},
      out=f"XXH3_{FOO['XXH3']}  foo\n", err="", d12=NA),
    C("check xxh32sum other lines", f"xxHash cli/{T}: xxh32sum -c takes XXH32 lines only",
      ["xxh32sum", "-c", "sums"], files={"foo": "foo", "sums": f"{FOO['XXH64']}  foo\n"},
      out="", err="sums: no properly formatted xxHash checksum lines found\n", exit=1,
      d12={"out": "foo: OK\n", "err": "", "exit": 0}),
    C("check summary on stdout", f"xxHash cli/{T}: -c's counts go to stdout", ["xxhsum", "-c", "sums"],
      files={"foo": "foo", "sums": f"{FOO['XXH64']}  foo\n0000000000000000  foo\nbad line\n"},
      out="foo: OK\nfoo: FAILED\n1 line is improperly formatted\n1 computed checksum did NOT match\n", err="", exit=1),
    C("check warn on stderr", f"xxHash cli/{T}: -w: each bad line on stderr", ["xxhsum", "-c", "-w", "sums"],
      files={"foo": "foo", "sums": f"{FOO['XXH64']}  foo\nbad line\n"},
      out="foo: OK\n1 line is improperly formatted\n",
      err="sums:2: Error: Improperly formatted checksum line.\n", exit=0),
    C("check status", f"xxHash cli/{T}: --status prints nothing", ["xxhsum", "-c", "--status", "sums"],
      files={"foo": "foo", "sums": f"0000000000000000  foo\n"}, out="", err="", exit=1),
    C("check strict", f"xxHash cli/{T}: --strict fails on a bad line", ["xxhsum", "-c", "--strict", "sums"],
      files={"foo": "foo", "sums": f"{FOO['XXH64']}  foo\nbad line\n"},
      out="foo: OK\n1 line is improperly formatted\n", err="", exit=1),
    C("check quiet", f"xxHash cli/{T}: -q: no OK lines", ["xxhsum", "-c", "-q", "sums"],
      files={"foo": "foo", "sums": f"{FOO['XXH64']}  foo\n"}, out="", err="", exit=0),
    C("check le", f"xxHash cli/{T}: --little-endian -c reads reversed digests",
      ["xxhsum", "-c", "--little-endian", "sums"],
      files={"foo": "foo", "sums": f"{bytes.fromhex(FOO['XXH64'])[::-1].hex()}  foo\n"}, out="foo: OK\n", err=""),
    C("directory", f"xxHash cli/{T}: a directory is said to be one", ["xxhsum", "d"], files={"d/x": ""}, out="",
      err="xxhsum: d: Is a directory \n", exit=1, d12={"err": "xxhsum: d: Is a directory \n" + CLEAR}),
    C("bad option", f"xxHash cli/{T}: an unknown option", ["xxhsum", "-Z", "foo"], files={"foo": "foo"}, out="",
      err=Has("Wrong parameters"), exit=1),
)
