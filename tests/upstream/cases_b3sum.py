# SPDX-License-Identifier: MIT
"""Cases from BLAKE3's b3sum/tests/cli_tests.rs and b3sum/src/unit_tests.rs (b3sum 1.8.6).

cli_tests.rs runs b3sum and compares its output with the blake3 crate's; the digests here are
BLAKE3's, written out (foo, bar, a, b, cd, keyed and derive-key examples of those tests). Its
.read() drops one trailing newline: these cases compare the whole output, newline included.
unit_tests.rs calls parse_check_line() and filepath_to_string() directly: here each of its lines
goes through b3sum --check (or a name through b3sum), where what the parser made of it shows: the
name written back with OK/FAILED (a file exists at the path it must parse to), or the parser's
error on stderr.
"""

from harness import ANY, NA, NZ, All, C, Has, Re, U

H = {
    "foo": "04e0bb39f30b1a3feb89f536c93be15055482df748674b00d26e5a75777702e9",
    "bar": "f2e897eed7d206cd855d441598fa521abc75aa96953e97c030c9612c30c1293d",
    "": "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
    "a": "17762fddd969a453925d65717ac3eea21320b66b54342fde15128d6caf21215f",
    "b": "10e5cf3d3c8a4f9f3468c8cc58eea84892a22fdadbc1acb22410190044c1d553",
    "cd": "e8cf3ad3c77be0828dfb8fffc06fed22ab037dfa68a16049fe8267f70265afe2",
}
# The first 100 bytes of BLAKE3's output for "foo".
XOF100 = bytes.fromhex(
    "04e0bb39f30b1a3feb89f536c93be15055482df748674b00d26e5a75777702e9791074b7511b59d31c71c62f5a745689fa6c9497"
    "f68bdf1061fe07f518d410c0b0c27f41b3cf083f8a7fdc67a877e21790515762a754a45dcb8a356722698a7af5ed2bb6")
KEYED = "eca649bc8f5a33b376ed81b687f99536b8f770d5dcd75673af7fd83062dd96c0"  # key [42; 32], "foo"
DERIVED = "78d5ce66182553ed4968d9460bd77f59d4a1309a533878dfb68584417fdcdf9d"  # "key material"
CONTEXT = "BLAKE3 2019-12-28 10:28:41 example context"
CORRUPT = "CORRUPTION"
ENOENT = "No such file or directory (os error 2)"

CLI = "b3sum/tests/cli_tests.rs"
UNIT = "b3sum/src/unit_tests.rs"
# A usage error: clap's "error: ..." and exit 2 (clap 2 in b3sum 1.2.0: exit 1).
USAGE = {"out": "", "err": Re(r"^error: "), "exit": 2}
USAGE12 = {"exit": 1}

CASES = []


def add(*cases):
    CASES.extend(cases)


T = CLI
add(
    C("hash_one", f"{T}: test_hash_one", ["b3sum"], stdin="foo", out=f"{H['foo']}  -\n"),
    C("hash_one_tag", f"{T}: test_hash_one_tag", ["b3sum", "--tag"], stdin="foo", out=f"BLAKE3 (-) = {H['foo']}\n",
      d12=NA),
    C("hash_one_raw", f"{T}: test_hash_one_raw", ["b3sum", "--raw"], stdin="foo", out=XOF100[:32]),
    C("hash_many", f"{T}: test_hash_many", ["b3sum", "file1", "file2"], files={"file1": "foo", "file2": "bar"},
      out=f"{H['foo']}  file1\n{H['bar']}  file2\n"),
    C("hash_many_no_names", f"{T}: test_hash_many, --no-names", ["b3sum", "--no-names", "file1", "file2"],
      files={"file1": "foo", "file2": "bar"}, out=f"{H['foo']}\n{H['bar']}\n"),
    C("hash_many_tag", f"{T}: test_hash_many_tag", ["b3sum", "--tag", "file1", "file2"],
      files={"file1": "foo", "file2": "bar"}, out=f"BLAKE3 (file1) = {H['foo']}\nBLAKE3 (file2) = {H['bar']}\n",
      d12=NA),
    C("missing_files", f"{T}: test_missing_files", ["b3sum", "file1", "missing_file", "file2"],
      files={"file1": "foo", "file2": "bar"}, out=f"{H['foo']}  file1\n{H['bar']}  file2\n",
      err=f"b3sum: missing_file: {ENOENT}\n", exit=NZ),
    C("length_100", f"{T}: test_hash_length_and_seek, --raw --length=100", ["b3sum", "--raw", "--length=100"],
      stdin="foo", out=XOF100),
    C("length_99", f"{T}: test_hash_length_and_seek, --raw --length=99", ["b3sum", "--raw", "--length=99"],
      stdin="foo", out=XOF100[:99]),
    C("seek_1", f"{T}: test_hash_length_and_seek, --raw --length=99 --seek=1",
      ["b3sum", "--raw", "--length=99", "--seek=1"], stdin="foo", out=XOF100[1:], d12=NA),
    C("seek_99", f"{T}: test_hash_length_and_seek, --raw --length=1 --seek=99",
      ["b3sum", "--raw", "--length=1", "--seek=99"], stdin="foo", out=XOF100[99:], d12=NA),
    C("keyed", f"{T}: test_keyed", ["b3sum", "--keyed", "--no-names", "f"], files={"f": "foo"}, stdin=bytes([42] * 32),
      out=f"{KEYED}\n"),
)
for n in (0, 1, 31, 33):
    add(C(f"keyed_bad_length_{n}", f"{T}: test_keyed, a key of {n} bytes", ["b3sum", "--keyed", "f"],
          files={"f": "foo"}, stdin=bytes(n), out="", err=Has("key bytes"), exit=NZ))
add(
    C("derive_key", f"{T}: test_derive_key", ["b3sum", "--derive-key", CONTEXT, "--no-names", "f"],
      files={"f": "key material"}, out=f"{DERIVED}\n"),
    C("no_mmap", f"{T}: test_no_mmap", ["b3sum", "--no-mmap", "--no-names", "f"], files={"f": "foo"},
      out=f"{H['foo']}\n"),
    C("length_without_value", f"{T}: test_length_without_value_is_an_error", ["b3sum", "--length"], stdin="foo",
      **USAGE, d12=USAGE12),
    C("raw_one_file", f"{T}: test_raw_with_multi_files_is_an_error, one file is fine", ["b3sum", "--raw", "f1"],
      files={"f1": ""}, out=bytes.fromhex(H[""])),
    C("raw_multi_files", f"{T}: test_raw_with_multi_files_is_an_error", ["b3sum", "--raw", "f1", "f2"],
      files={"f1": "", "f2": ""}, out="", err="Error: Only one filename can be provided when using --raw\n", exit=1),
    C("escaping", f"{T}: test_newline_and_backslash_escaping_on_unix",
      ["b3sum", "abcdef", "abc\ndef", "abc\\def", "abc\rdef", "abc\r\ndef", "subdir/foo"],
      files={"abcdef": "", "abc\ndef": "", "abc\\def": "", "abc\rdef": "", "abc\r\ndef": "", "subdir/foo": ""},
      out=f"{H['']}  abcdef\n\\{H['']}  abc\\ndef\n\\{H['']}  abc\\\\def\n\\{H['']}  abc\\rdef\n"
          f"\\{H['']}  abc\\r\\ndef\n{H['']}  subdir/foo\n",
      # 1.2.0 escaped '\\' and '\n' only: a '\r' went out raw.
      d12={"out": f"{H['']}  abcdef\n\\{H['']}  abc\\ndef\n\\{H['']}  abc\\\\def\n{H['']}  abc\rdef\n"
                  f"\\{H['']}  abc\r\\ndef\n{H['']}  subdir/foo\n"}),
    C("invalid_unicode", f"{T}: test_invalid_unicode_on_unix", ["b3sum", "abcdef", b"abc\xffdef"],
      files={"abcdef": "", b"abc\xffdef": ""}, out=f"{H['']}  abcdef\n{H['']}  abc\ufffddef\n"),
    C("globbing", f"{T}: test_globbing", "b3sum *", files={"file1": "foo", "file2": "bar"},
      out=f"{H['foo']}  file1\n{H['bar']}  file2\n", tools=["b3sum"]),
)
for w in ("test_null_device_on_windows", "test_slash_normalization_on_windows", "test_invalid_unicode_on_windows"):
    add(U(w, f"{T}: {w}", "Windows only (#[cfg(windows)]): NUL, backslashes as separators, UTF-16 names"))

# test_check: a directory of files, its sums, --check of them, then a corrupted and a deleted file.
TREE = {"a": "a", "b": "b", "c/d": "cd"}
for tagged in (False, True):
    sfx = "_tagged" if tagged else ""
    d12 = NA if tagged else "same"
    if tagged:
        sums = f"BLAKE3 (a) = {H['a']}\nBLAKE3 (b) = {H['b']}\nBLAKE3 (c/d) = {H['cd']}\n"
    else:
        sums = f"{H['a']}  a\n{H['b']}  b\n{H['cd']}  c/d\n"
    okout = "a: OK\nb: OK\nc/d: OK\n"
    add(
        C(f"check_write{sfx}", f"{T}: test_check (tagged={tagged}): the sums written",
          ["b3sum", "a", "b", "c/d"] + (["--tag"] if tagged else []), files=TREE, out=sums, d12=d12),
        C(f"check_stdin{sfx}", f"{T}: test_check (tagged={tagged}): --check from stdin", ["b3sum", "--check"],
          files=TREE, stdin=sums, out=okout, d12=d12),
        C(f"check_crlf{sfx}", f"{T}: test_check (tagged={tagged}): --check of Windows-style lines",
          ["b3sum", "--check"], files=TREE, stdin=sums.replace("\n", "\r\n"), out=okout,
          # 1.2.0 trimmed '\n' only: the names end with '\r', and there are no such files.
          d12=d12 if tagged else {"out": f"a\r: FAILED ({ENOENT})\nb\r: FAILED ({ENOENT})\nc/d\r: FAILED ({ENOENT})\n",
                                   "exit": 1}),
        C(f"check_twice{sfx}", f"{T}: test_check (tagged={tagged}): the same checkfile twice",
          ["b3sum", "--check", "checkfile", "checkfile"], files=dict(TREE, checkfile=sums), out=okout + okout, d12=d12),
        C(f"check_corrupt{sfx}", f"{T}: test_check (tagged={tagged}): a corrupted file",
          ["b3sum", "--check", "checkfile"], files=dict(TREE, b=CORRUPT, checkfile=sums),
          out="a: OK\nb: FAILED\nc/d: OK\n", err="b3sum: WARNING: 1 computed checksum did NOT match\n", exit=NZ,
          d12=d12 if tagged else {"err": ""}),
        C(f"check_deleted{sfx}", f"{T}: test_check (tagged={tagged}): a deleted file",
          ["b3sum", "--check", "checkfile"], files={"a": "a", "c/d": "cd", "checkfile": sums},
          out=f"a: OK\nb: FAILED ({ENOENT})\nc/d: OK\n", err="b3sum: WARNING: 1 computed checksum did NOT match\n",
          exit=NZ, d12=d12 if tagged else {"err": ""}),
        C(f"check_quiet{sfx}", f"{T}: test_check (tagged={tagged}): --quiet hides the OKs, not the FAILEDs",
          ["b3sum", "--check", "--quiet", "checkfile"], files={"a": "a", "c/d": "cd", "checkfile": sums},
          out=f"b: FAILED ({ENOENT})\n", err="b3sum: WARNING: 1 computed checksum did NOT match\n", exit=NZ,
          d12=d12 if tagged else {"err": ""}),
    )

Z = "0" * 64
add(
    C("check_nul", f"{T}: test_check_invalid_characters, a NUL in the path", ["b3sum", "--check"],
      stdin=f"{Z}  \0", out="", err="b3sum: Null character in path\nb3sum: WARNING: 1 computed checksum did NOT match\n",
      exit=NZ, d12={"err": "b3sum: Null character in path\n"}),
    C("check_replacement", f"{T}: test_check_invalid_characters, U+FFFD in the path", ["b3sum", "--check"],
      stdin=f"{Z}  \ufffd", out="",
      err="b3sum: Unicode replacement character in path\nb3sum: WARNING: 1 computed checksum did NOT match\n", exit=NZ,
      d12={"err": "b3sum: Unicode replacement character in path\n"}),
    C("check_bad_escape", f"{T}: test_check_invalid_characters, an invalid escape", ["b3sum", "--check"],
      stdin=f"\\{Z}  \\a", out="",
      err="b3sum: Invalid backslash escape\nb3sum: WARNING: 1 computed checksum did NOT match\n", exit=NZ,
      d12={"err": "b3sum: Invalid backslash escape\n"}),
)
add(U("check_backslash_windows", f"{T}: test_check_invalid_characters, a backslash in the path",
      "Windows only (cfg!(windows)): on Unix a backslash is a character of the name"))

# unit_tests.rs: test_parse_check_line, line by line through --check. A line that parses names a
# file that exists (so the path it parsed to shows: OK or FAILED, not "No such file"); the digests
# are the test's own patterns (09.., fa.., ...), so every parsed line reports FAILED.
T = UNIT
WARN1 = "b3sum: WARNING: 1 computed checksum did NOT match\n"


def parsed(name, line, path, shown, d12="same"):
    add(C(f"parse_{name}", f"{T}: test_parse_check_line, {name}", ["b3sum", "--check", "sums"],
          files={"sums": line + "\n", path: "x"}, out=f"{shown}: FAILED\n", err=WARN1, exit=1,
          d12=d12 if d12 != "same" else {"err": ""}))


def refused(name, line, why, why12=None, newline=True):
    add(C(f"parse_{name}", f"{T}: test_parse_check_line, {name}", ["b3sum", "--check", "sums"],
          files={"sums": line + ("\n" if newline else "")}, out="", err=f"b3sum: {why}\n" + WARN1, exit=1,
          d12={"err": f"b3sum: {why12 or why}\n"}))


parsed("basic", "09" * 32 + "  foo", "foo", "foo")
parsed("one_space_path", "42" * 32 + "   ", " ", " ")
parsed("unescaped_backslashes", "43" * 32 + "  fo\\a\\no", "fo\\a\\no", "fo\\a\\no")
parsed("escaped_newlines", "\\" + "44" * 32 + "  fo\\r\\n\\n\\ro", "fo\r\n\n\ro", "\\fo\\r\\n\\n\\ro",
       d12={"out": "", "err": "b3sum: Invalid backslash escape\n"})
parsed("escaped_newline_backslash", "\\" + "45" * 32 + "  fo\\n\\\\o", "fo\n\\o", "\\fo\\n\\\\o")
parsed("non_ascii_path", "46" * 32 + "  否认", "否认", "否认")
parsed("untagged_separator_in_name", "47" * 32 + "  foo  bar", "foo  bar", "foo  bar")
parsed("tagged_separator_in_name", "BLAKE3 (foo) = bar) = " + "48" * 32, "foo) = bar", "foo) = bar",
       d12={"out": "", "err": "b3sum: Invalid space\n"})
add(U("parse_regular_whitespace", f"{T}: test_parse_check_line, regular whitespace",
      "the line holds '\\n' in the middle: from a checkfile, read_line() ends it there, so only the direct call "
      "can make it; the trailing blanks it keeps are covered by one_space_path"))
refused("too_short_empty", "", "Empty line")
refused("too_short_0", "0", "Invalid check line format", "Short line")
refused("too_short_00", "00", "Invalid check line format", "Short line")
refused("too_short_hash", Z, "Invalid check line format", "Short line")
refused("too_short_hash_spaces", Z + "  ", "empty file path", "Short line")
refused("not_enough_spaces", Z + " foo", "Invalid check line format", "Invalid space")
refused("capital_hex", "A" * 64 + "  foo", "Invalid hex")
refused("non_hex_hex", "x" * 64 + "  foo", "Invalid hex")
refused("non_ascii_hex", "你好, 我叫杰克. 认识你很高兴. 要不要吃个香蕉?  foo", "Invalid hex", "Non-ASCII prefix")
refused("invalid_escape", "\\" + Z + "  fo\\o", "Invalid backslash escape")
refused("truncated_escape", "\\" + Z + "  foo\\", "Invalid backslash escape")
refused("null_char", Z + "  fo\0o", "Null character in path")
refused("replacement_char", Z + "  fo\ufffdo", "Unicode replacement character in path")
add(U("parse_windows_backslashes", f"{T}: test_parse_check_line, backslashes on Windows",
      "Windows only (cfg!(windows))"))

# test_filepath_to_string: through the name b3sum writes.
add(C("filepath_plain", f"{T}: test_filepath_to_string, foo", ["b3sum", "foo"], files={"foo": ""},
      out=f"{H['']}  foo\n"),
    C("filepath_escaped", f"{T}: test_filepath_to_string, f\\ \\t\\r\\noo", ["b3sum", "f\\ \t\r\noo"],
      files={"f\\ \t\r\noo": ""}, out=f"\\{H['']}  f\\\\ \t\\r\\noo\n",
      d12={"out": f"\\{H['']}  f\\\\ \t\r\\noo\n"}))

# ---- beyond the upstream tests: what comparing with Debian 12's b3sum found ----------------------
add(
    C("compat:bad-length", "b3sum's --length: a usage error since clap 4 (1.2.0: per file, after opening it)",
      ["b3sum", "-l", "x", "f", "nonexistent"], files={"f": ""}, **USAGE,
      d12={"exit": 1, "err": f"b3sum: f: Failed to parse length.\nb3sum: nonexistent: {ENOENT}\n"}),
)
