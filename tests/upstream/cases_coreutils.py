# SPDX-License-Identifier: MIT
"""Cases from coreutils' tests/cksum/ (v9.11): md5sum, sha*sum, b2sum, cksum and sum.

Each case restates one check of an upstream test, named in its src as "FILE: TEST" (a .pl test's
name) or "FILE: what the step checks" (a .sh test). The .pl tests pass their input files as
arguments and compare stdout, stderr and the exit status exactly; the .sh tests mostly check an
exit status or grep a line, and their cases check just that.
"""

import hashlib
import random

from harness import ANY, NA, All, C, Has, Lacks, Re, U

MD5_E = "d41d8cd98f00b204e9800998ecf8427e"
SHA1_E = "da39a3ee5e6b4b0d3255bfef95601890afd80709"

CASES = []


def add(*cases):
    CASES.extend(cases)


def try_help(prog):
    return f"Try '{prog} --help' for more information.\n"


def pl(file, prog, name, args, ins, aux=None, out="", err="", exit=0, d12="same", text=True):
    """A case of a .pl test: prog, its options (--text first unless a check, as those tests add it),
    then the IN files as arguments."""
    opts = args.split() if isinstance(args, str) else list(args)
    if text and "--check" not in opts and "-c" not in opts:
        opts = ["--text"] + opts
    files = dict(aux or {})
    files.update(ins)
    return C(f"{file}:{name}", f"tests/cksum/{file}: {name}", [prog] + opts + list(ins), files=files, out=out,
             err=err, exit=exit, d12=d12)


# ---- md5sum.pl -----------------------------------------------------------------------------------
F = "md5sum.pl"
add(
    pl(F, "md5sum", "1", "", {"f": ""}, out=f"{MD5_E}  f\n"),
    pl(F, "md5sum", "2", "", {"f": "a"}, out="0cc175b9c0f1b6a831c399e269772661  f\n"),
    pl(F, "md5sum", "3", "", {"f": "abc"}, out="900150983cd24fb0d6963f7d28e17f72  f\n"),
    pl(F, "md5sum", "4", "", {"f": "message digest"}, out="f96b697d7cb7938d525a2f31aaf161d0  f\n"),
    pl(F, "md5sum", "5", "", {"f": "abcdefghijklmnopqrstuvwxyz"}, out="c3fcd3d76192e4007dfb496cca67e13b  f\n"),
    pl(F, "md5sum", "6", "", {"f": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"},
       out="d174ab98d277d9f5a5611c2c9f419d9f  f\n"),
    pl(F, "md5sum", "7", "", {"f": "1234567890" * 8}, out="57edf4a22be3c955ac49da2e2107b67a  f\n"),
    pl(F, "md5sum", "backslash-1", "", {".\nfoo": ""}, out=f"\\{MD5_E}  .\\nfoo\n"),
    pl(F, "md5sum", "backslash-2", "", {".\\foo": ""}, out=f"\\{MD5_E}  .\\\\foo\n"),
    pl(F, "md5sum", "backslash-3", "", {".\rfoo": ""}, out=f"\\{MD5_E}  .\\rfoo\n"),
    pl(F, "md5sum", "check-1", "--check", {"f.md5": f"{MD5_E}  f\n"}, {"f": ""}, out="f: OK\n"),
    pl(F, "md5sum", "check-windows", "--check", {"f.md5": f"{MD5_E}  f\r\n"}, {"f": ""}, out="f: OK\n"),
    pl(F, "md5sum", "ck-strict-1", "--check --strict", {"f.md5": f"{MD5_E}  f\n\n"}, {"f": ""}, out="f: OK\n"),
    pl(F, "md5sum", "ck-strict-2", "--check --strict", {"in.md5": f"ERR\n{MD5_E}  f\n"}, {"f": ""},
       out="f: OK\n", err="md5sum: WARNING: 1 line is improperly formatted\n", exit=1),
    pl(F, "md5sum", "check-2", "--check --status", {"f.md5": f"{MD5_E}  f\n"}, {"f": "foo"}, exit=1),
    pl(F, "md5sum", "check-quiet1", "--check --quiet", {"f.md5": f"{MD5_E}  f\n"}, {"f": ""}, out=""),
    pl(F, "md5sum", "check-quiet2", "--check --quiet", {"f.md5": f"{MD5_E}  f\n"}, {"f": "foo"},
       out="f: FAILED\n", err="md5sum: WARNING: 1 computed checksum did NOT match\n", exit=1),
    pl(F, "md5sum", "check-multifail", "--check", {"f.md5": f"{MD5_E}  f\n{MD5_E}  f\ninvalid\n"}, {"f": "foo"},
       out="f: FAILED\nf: FAILED\n",
       err="md5sum: WARNING: 1 line is improperly formatted\nmd5sum: WARNING: 2 computed checksums did NOT match\n",
       exit=1),
    pl(F, "md5sum", "check-multifail-warn", "--check --warn", {"f.md5": f"{MD5_E}  f\n{MD5_E}  f\ninvalid\n"},
       {"f": "foo"}, out="f: FAILED\nf: FAILED\n",
       err="md5sum: f.md5: 3: improperly formatted MD5 checksum line\n"
           "md5sum: WARNING: 1 line is improperly formatted\n"
           "md5sum: WARNING: 2 computed checksums did NOT match\n", exit=1),
    pl(F, "md5sum", "check-multifail-state", "--check --warn", {"f.md5": f"{MD5_E}  f\n{MD5_E}  g\n{MD5_E}  f\n"},
       {"f": "", "g": "a"}, out="f: OK\ng: FAILED\nf: OK\n",
       err="md5sum: WARNING: 1 computed checksum did NOT match\n", exit=1),
    pl(F, "md5sum", "check-bsd", "--check", {"f.sha1": f"SHA1 (f) = {MD5_E}\n"}, {"f": ""},
       err="md5sum: f.sha1: no properly formatted checksum lines found\n", exit=1),
    pl(F, "md5sum", "check-bsd2", "--check", {"f.md5": f"MD5 (f) = {MD5_E}\n"}, {"f": ""}, out="f: OK\n"),
    pl(F, "md5sum", "check-bsd3", "--check --status", {"f.md5": f"MD5 (f) = {MD5_E}\n"}, {"f": "bar"}, exit=1),
    pl(F, "md5sum", "check-openssl", "--check", {"f.sha1": f"SHA1(f)= {MD5_E}\n"}, {"f": ""},
       err="md5sum: f.sha1: no properly formatted checksum lines found\n", exit=1),
    pl(F, "md5sum", "check-openssl2", "--check", {"f.md5": f"MD5(f)= {MD5_E}\n"}, {"f": ""}, out="f: OK\n"),
    pl(F, "md5sum", "check-openssl3", "--check --status", {"f.md5": f"MD5(f)= {MD5_E}\n"}, {"f": "bar"}, exit=1),
    pl(F, "md5sum", "check-ignore-missing-1", "--check --ignore-missing",
       {"f.md5": f"{MD5_E}  f\n{MD5_E}  f.missing\n"}, {"f": ""}, out="f: OK\n"),
    pl(F, "md5sum", "check-ignore-missing-3", "--check --quiet --ignore-missing",
       {"f.md5": f"{MD5_E}  missing/f\n{MD5_E}  f\n"}, {"f": ""}, out=""),
    pl(F, "md5sum", "check-ignore-missing-4", "--ignore-missing", {"f": ""},
       err="md5sum: the --ignore-missing option is meaningful only when verifying checksums\n" + try_help("md5sum"),
       exit=1),
    pl(F, "md5sum", "check-ignore-missing-5", "--check --ignore-missing", {"f.md5": f"{MD5_E}  missing\n"},
       {"f": ""}, err="md5sum: f.md5: no file was verified\n", exit=1),
    pl(F, "md5sum", "check-ignore-missing-6", "--check --ignore-missing",
       {"f.md5": "006999e6df389641adf1fa3a74801d9d  f\n"}, {"f": "9t"}, out="f: OK\n"),
    pl(F, "md5sum", "bsd-segv", "--check", {"z": "MD5 ("},
       err="md5sum: z: no properly formatted checksum lines found\n", exit=1),
    pl(F, "md5sum", "nul-in-cksum", "--check", {"h": "\0" * 32 + "  h\n"},
       err="md5sum: h: no properly formatted checksum lines found\n", exit=1),
)
# check-ignore-missing-2 repeats -1 word for word upstream; so does this.
add(pl(F, "md5sum", "check-ignore-missing-2", "--check --ignore-missing",
       {"f.md5": f"{MD5_E}  f\n{MD5_E}  f.missing\n"}, {"f": ""}, out="f: OK\n"))

# ---- sha1sum.pl ----------------------------------------------------------------------------------
F = "sha1sum.pl"
add(
    pl(F, "sha1sum", "s1", "", {"f": ""}, out=f"{SHA1_E}  f\n"),
    pl(F, "sha1sum", "s2", "", {"f": "a"}, out="86f7e437faa5a7fce15d1ddcb9eaeaea377667b8  f\n"),
    pl(F, "sha1sum", "s3", "", {"f": "abc"}, out="a9993e364706816aba3e25717850c26c9cd0d89d  f\n"),
    pl(F, "sha1sum", "s4", "", {"f": "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"},
       out="84983e441c3bd26ebaae4aa1f95129e5e54670f1  f\n"),
    pl(F, "sha1sum", "s5", "", {"f": "abcdefghijklmnopqrstuvwxyz"}, out="32d10c7b8cf96570ca04ce37f2a19d84240d3a89  f\n"),
    pl(F, "sha1sum", "s6", "", {"f": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"},
       out="761c457bf73b14d27e9e9265c46f4b4dda11f940  f\n"),
    pl(F, "sha1sum", "s7", "", {"f": "1234567890" * 8}, out="50abf5706a150990a08b2c5ea40fa0e585554732  f\n"),
    pl(F, "sha1sum", "million-a", "", {"f": "a" * 1000000}, out="34aa973cd4c4daa4f61eeb2bdbad27316534016f  f\n"),
    pl(F, "sha1sum", "bs-sha-1", "", {".\nfoo": ""}, out=f"\\{SHA1_E}  .\\nfoo\n"),
    pl(F, "sha1sum", "bs-sha-2", "", {".\\foo": ""}, out=f"\\{SHA1_E}  .\\\\foo\n"),
    pl(F, "sha1sum", "bs-sha-3", "", {".\rfoo": ""}, out=f"\\{SHA1_E}  .\\rfoo\n"),
    pl(F, "sha1sum", "check-bsd", "--check", {"f.md5": f"MD5 (f) = {SHA1_E}\n"}, {"f": ""},
       err="sha1sum: f.md5: no properly formatted checksum lines found\n", exit=1),
    pl(F, "sha1sum", "check-bsd2", "--check", {"f.sha1": f"SHA1 (f) = {SHA1_E}\n"}, {"f": ""}, out="f: OK\n"),
    pl(F, "sha1sum", "check-bsd3", "--check --status", {"f.sha1": f"SHA1 (f) = {SHA1_E}\n"}, {"f": "bar"}, exit=1),
    pl(F, "sha1sum", "check-openssl", "--check", {"f.md5": f"MD5(f)= {SHA1_E}\n"}, {"f": ""},
       err="sha1sum: f.md5: no properly formatted checksum lines found\n", exit=1),
    pl(F, "sha1sum", "check-openssl2", "--check", {"f.sha1": f"SHA1(f)= {SHA1_E}\n"}, {"f": ""}, out="f: OK\n"),
    pl(F, "sha1sum", "check-openssl3", "--check --status", {"f.sha1": f"SHA1(f)= {SHA1_E}\n"}, {"f": "bar"},
       exit=1),
    pl(F, "sha1sum", "bsd-segv", "--check", {"z": "SHA1 ("},
       err="sha1sum: z: no properly formatted checksum lines found\n", exit=1),
)

# ---- sha224/256/384/512sum.pl and sm3sum.pl: FIPS and GB/T example values ------------------------
M448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
M896 = ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
        "mnopqrstnopqrstu")
MILLION = "a" * 1000000
for prog, tests in [
    ("sha224sum", [("s3", "abc", "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"),
                   ("s4", M448, "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525"),
                   ("s8", MILLION, "20794655980c91d8bbb4c1ea97618a4bf03f42581948b2ee4ee7ad67")]),
    ("sha256sum", [("s1", "", None), ("s2", "a", None), ("s3", "abc", None), ("s4", M448, None), ("s8", MILLION, None)]),
    ("sha384sum", [("s1", "", None), ("s2", "a", None), ("s3", "abc", None), ("s4", M896, None), ("s8", MILLION, None)]),
    ("sha512sum", [("s1", "", None), ("s2", "a", None), ("s3", "abc", None), ("s4", M896, None), ("s8", MILLION, None)]),
]:
    algo = prog[:-3]
    for name, data, want in tests:
        # Python's hashlib gives the same example values the .pl files hold.
        want = want or hashlib.new(algo, data.encode()).hexdigest()
        add(pl(f"{prog}.pl", prog, name, "", {"f": data}, out=f"{want}  f\n"))

SM3 = [("s1", "", "1ab21d8355cfa17f8e61194831e81a8f22bec8c728fefb747ed035eb5082aa2b"),
       ("s2", "a", "623476ac18f65a2909e43c7fec61b49c7e764a91a18ccb82f1917a29c86c5e88"),
       ("s3", "abc", "66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0"),
       ("s4", M448, "639b6cc5e64d9e37a390b192df4fa1ea0720ab747ff692b9f38c4e66ad7b8c05"),
       ("s8", MILLION, "c8aaf89429554029e231941a2acc0ad61ff2a5acd8fadd25847a3a732b3b02c3")]
for name, data, want in SM3:
    # cksum --untagged --text -a sm3: --text came to cksum in 9.2.
    add(pl("sm3sum.pl", "cksum", name, "--untagged --text -a sm3", {"f": data}, out=f"{want}  f\n", text=False,
           d12=NA))

# ---- sha1sum-vec.pl ------------------------------------------------------------------------------
# 229 NIST SHA-1 bit-string messages, each "N B n1 ... nN ^": N runs of alternating bits starting with
# B. The vectors themselves are not copied here: 229 messages of the same form and spread are made
# from a fixed seed, and Python's hashlib gives their digests.
rnd = random.Random(1995)
for i in range(1, 230):
    runs = [rnd.randint(1, 10) for _ in range(rnd.randint(1, 40))]
    bit = rnd.randint(0, 1)
    bits = ""
    for n in runs:
        bits += str(bit) * n
        bit = 1 - bit
    bits += "0" * (-len(bits) % 8)
    data = bytes(int(bits[k:k + 8], 2) for k in range(0, len(bits), 8))
    add(C(f"sha1sum-vec.pl:{i}", f"tests/cksum/sha1sum-vec.pl: {i} (a message of the same form)",
          ["sha1sum", "--text", "f"], files={"f": data}, out=f"{hashlib.sha1(data).hexdigest()}  f\n"))

# ---- md5sum-newline.pl ---------------------------------------------------------------------------
add(pl("md5sum-newline.pl", "md5sum", "newline", "", {"a\nb": ""}, out=f"\\{MD5_E}  a\\nb\n"),
    pl("md5sum-newline.pl", "md5sum", "zero", "--zero", {"a\nb": ""}, out=f"{MD5_E}  a\nb\0"))

# ---- md5sum-parallel.sh --------------------------------------------------------------------------
# 1,500 names in 3 processes, 2 at a time: every line whole, nothing on stderr.
add(C("md5sum-parallel.sh", "tests/cksum/md5sum-parallel.sh: xargs -n500 -P2 md5sum: lines never mix",
      "mkdir tmp && (cd tmp && seq 500 | xargs touch) && "
      "find tmp tmp tmp -type f | xargs -n500 -P2 md5sum 2>err | sed -n '/^[0-9a-f]\\{32\\}  /!p' && cat err",
      out="", err="", tools=["md5sum"]))

# ---- md5sum-bsd.sh -------------------------------------------------------------------------------
F = "md5sum-bsd.sh"
NAMES = "for i in 'a' ' b' '*c' 'dd' ' '; do echo \"$i\" > \"$i\"; done; "
add(
    C(f"{F}:strict-standard", f"tests/cksum/{F}: --strict -c of md5sum --text lines, awkward names",
      NAMES + "for i in 'a' ' b' '*c' 'dd' ' '; do md5sum --text \"$i\" >> check.md5sum; done; "
      "md5sum --strict -c check.md5sum", out=ANY, tools=["md5sum"]),
    C(f"{F}:strict-reversed", f"tests/cksum/{F}: --strict -c of the same as BSD reversed lines (one space)",
      NAMES + "for i in 'a' ' b' '*c' 'dd' ' '; do md5sum --text \"$i\" >> check.md5sum; done; "
      "sed 's/  / /' check.md5sum > check.md5 && md5sum --strict -c check.md5", out=ANY, tools=["md5sum"]),
    C(f"{F}:gpg-header", f"tests/cksum/{F}: a non-hex first line does not switch to BSD reversed",
      NAMES + "for i in 'a' ' b' '*c' 'dd' ' '; do md5sum --text \"$i\" >> check.md5sum; done; "
      "{ echo '____not_all_hex_so_no_match_____ blah'; cat check.md5sum; } > check2.md5sum; "
      "md5sum -c check2.md5sum >/dev/null", err="md5sum: WARNING: 1 line is improperly formatted\n",
      tools=["md5sum"]),
    C(f"{F}:reversed-ambiguous", f"tests/cksum/{F}: reversed lines starting with ' b' read as standard fail",
      NAMES + "for i in 'a' ' b' '*c' 'dd' ' '; do md5sum --text \"$i\" >> check.md5sum; done; "
      "sed 's/  / /' check.md5sum | tail -n+2 | md5sum --strict -c", out=ANY, err=ANY, exit=1, tools=["md5sum"]),
    C(f"{F}:tag-check", f"tests/cksum/{F}: --tag and --check exclude each other",
      ["md5sum", "--tag", "--check", "/dev/null"], out="", err=ANY, exit=1),
    C(f"{F}:tag-text", f"tests/cksum/{F}: --tag and --text exclude each other",
      ["md5sum", "--tag", "--text", "/dev/null"], out="", err=ANY, exit=1),
    C(f"{F}:tag-strict", f"tests/cksum/{F}: --strict -c of md5sum --tag lines, awkward names",
      NAMES + "for i in 'a' ' b' '*c' 'dd' ' '; do md5sum --tag \"$i\" >> check.md5; done; "
      "md5sum --strict -c check.md5", out=ANY, tools=["md5sum"]),
    C(f"{F}:tag-escapes", f"tests/cksum/{F}: -c of --tag lines with escaped names prints them shell-quoted",
      "for i in 'a\\b' 'a\\' '\\a' \"a\nb\" \"a\tb\"; do touch \"$i\" && md5sum --tag \"$i\" >> check.md5; done; "
      "md5sum --strict -c check.md5",
      out="'a\\b': OK\n'a\\': OK\n'\\a': OK\n'a'$'\\n''b': OK\n'a'$'\\t''b': OK\n",
      d12={"out": "a\\b: OK\na\\: OK\n\\a: OK\n\\a\\nb: OK\na\tb: OK\n"}, tools=["md5sum"]),
    C(f"{F}:tag-escape-format", f"tests/cksum/{F}: --tag escapes '\\n' and '\\\\' in the name",
      ["md5sum", "--tag", "test\n\\\\file"], files={"test\n\\\\file": ""},
      out=f"\\MD5 (test\\n\\\\\\\\file) = {MD5_E}\n"),
)

# ---- sum.pl and sum-sysv.sh ----------------------------------------------------------------------
F = "sum.pl"
for name, opt, data, want in [
    ("1", "", "", "00000     0 f"), ("2", "", "a", "00097     1 f"), ("3", "", "abc", "16556     1 f"),
    ("4", "", "message digest", "26423     1 f"), ("5", "", "abcdefghijklmnopqrstuvwxyz", "53553     1 f"),
    ("6", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "25587     1 f"),
    ("7", "", "1234567890" * 8, "21845     1 f"),
    ("a-r-1k", "-r", "a" * 1024, "65409     1 f"), ("a-s-1k", "-s", "a" * 1024, "33793 2 f"),
    ("b-r-2k", "-r", "b" * 2048, "65223     2 f"), ("b-s-2k", "-s", "b" * 2048, "4099 4 f"),
    ("1s", "-s", "", "0 0 f"), ("2s", "-s", "a", "97 1 f"), ("3s", "-s", "abc", "294 1 f"),
    ("4s", "-s", "message digest", "1413 1 f"), ("5s", "-s", "abcdefghijklmnopqrstuvwxyz", "2847 1 f"),
    ("6s", "-s", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "5387 1 f"),
    ("7s", "-s", "1234567890" * 8, "4200 1 f"),
]:
    add(pl(F, "sum", name, opt, {"f": data}, out=want + "\n", text=False))
add(C("sum-sysv.sh:wrap", "tests/cksum/sum-sysv.sh: 2^32/255 bytes of 0xff, the 32-bit sum wraps",
      "head -c 16843009 /dev/zero | tr '\\000' '\\377' | sum -s", out="65535 32897\n", tools=["sum"]),
    C("sum-sysv.sh:wrap+1", "tests/cksum/sum-sysv.sh: one byte more",
      "head -c 16843010 /dev/zero | tr '\\000' '\\377' | sum -s", out="254 32897\n", tools=["sum"]))

# ---- b2sum.sh (for b2sum and for cksum -a blake2b) -----------------------------------------------
F = "b2sum.sh"
for prog, tagopt, untag in [("b2sum", "--tag", ""), ("cksum -a blake2b", "", "--untagged")]:
    p = prog.split()[0]
    d12 = "same" if p == "b2sum" else NA  # cksum's --untagged --text and -c of untagged lines: 9.2
    key = p
    mk = ("for i in 'a' ' b' '*c' '44' ' '; do echo \"$i\" > \"$i\"; for l in 0 128; do "
          f"{prog} -l $l {tagopt} \"$i\" >> check.b2sum; done; done; ")
    add(
        C(f"{F}:{key}:tagged-mixed", f"tests/cksum/{F}: {prog}: --strict -c infers -l from the tags",
          mk + f"{prog} --strict -c check.b2sum", out=ANY, tools=[p],
          d12=d12 if p == "b2sum" else "same"),
        C(f"{F}:{key}:openssl", f"tests/cksum/{F}: {prog}: the OpenSSL form of the same lines",
          mk + "sed 's/ //; s/ =/=/' < check.b2sum > openssl.b2sum; " + f"{prog} --strict -c openssl.b2sum",
          out=ANY, tools=[p]),
    )
    for l in (0, 128):
        add(C(f"{F}:{key}:untagged-{l}", f"tests/cksum/{F}: {prog}: -c of untagged -l {l} lines, with -l and without",
              f"{prog} {untag} --text -l {l} /dev/null > check.b2sum && {prog} -l {l} --strict -c check.b2sum && "
              f"{prog} --strict -c check.b2sum", out=ANY, tools=[p], d12=d12))
    add(
        C(f"{F}:{key}:value", f"tests/cksum/{F}: {prog}: --length=128 of the untagged lines is the reference value",
          f"{prog} {untag} --text -l 0 /dev/null > check.vals; {prog} {untag} --text -l 128 /dev/null >> check.vals; "
          f"{prog} {untag} --length=128 check.vals | tr '*' ' '",
          out="796485dd32fe9b754ea5fd6c721271d9  check.vals\n", tools=[p], d12=d12),
        C(f"{F}:{key}:crash", f"tests/cksum/{F}: {prog}: truncated BLAKE2 tags are refused, not a crash",
          "printf '%s\\n' 'BLAKE2' 'BLAKE2b' 'BLAKE2-' 'BLAKE2(' 'BLAKE2 (' > crash.check; "
          f"{prog} -c crash.check", out=ANY, err=ANY, exit=1, tools=[p]),
        C(f"{F}:{key}:overflow", f"tests/cksum/{F}: {prog}: a short hex line is refused",
          f"printf '0A0BA0' > overflow.check; {prog} -c overflow.check", out=ANY, err=ANY, exit=1, tools=[p]),
        C(f"{F}:{key}:last-length", f"tests/cksum/{F}: {prog}: only the last -l counts (since 9.4)",
          f"{prog} -l 123 -l 128 /dev/null", out=ANY, tools=[p], d12=NA),
    )
    for length in ("513", "1024", "18446744073709551616"):
        # 9.1 held each -l to a multiple of 8 as it came, and took numbers as unsigned ones.
        old = {"513": {"err": f"{p}: invalid length: '513'\n{p}: length is not a multiple of 8\n"},
               "1024": "same",
               "18446744073709551616": {"err": f"{p}: invalid length: '{length}': Value too large for defined data "
                                               "type\n"}}[length]
        add(C(f"{F}:{key}:length-{length}", f"tests/cksum/{F}: {prog}: -l {length} is too long",
              f"{prog} -l {length} /dev/null", out="",
              err=f"{p}: invalid length: '{length}'\n{p}: maximum digest length for 'BLAKE2b' is 512 bits\n", exit=1,
              tools=[p], d12=old))

# ---- cksum-a.sh ----------------------------------------------------------------------------------
F = "cksum-a.sh"
for algo, prog, mode in [("bsd", "sum -r", ""), ("sysv", "sum -s", ""), ("crc", "cksum", ""),
                         ("md5", "md5sum", "MODE"), ("sha1", "sha1sum", "MODE"), ("sha224", "sha224sum", "MODE"),
                         ("sha256", "sha256sum", "MODE"), ("sha384", "sha384sum", "MODE"),
                         ("sha512", "sha512sum", "MODE"), ("blake2b", "b2sum", "MODE")]:
    for cmode in ("-b", "-t"):
        pmode = cmode if mode == "MODE" else ""
        script = f"{prog} {pmode} /dev/null > out && cksum --untagged {cmode} --algorithm={algo} /dev/null > out-c && cmp out out-c"
        if algo.startswith("sha") and algo != "sha1":
            bits = algo[3:]
            script += f" && cksum --algorithm={algo} /dev/null > t1 && cksum --algorithm=sha2 --length={bits} /dev/null > t2 && cmp t1 t2"
        if algo not in ("bsd", "sysv", "crc"):
            script += f" && cksum --check --algorithm={algo} out-c"
        add(C(f"{F}:{algo}{cmode}", f"tests/cksum/{F}: cksum -a {algo} {cmode} --untagged is {prog} {pmode}".rstrip(),
              script, out=ANY, tools=["cksum", prog.split()[0]], d12=NA))
add(
    C(f"{F}:check-bsd", f"tests/cksum/{F}: --check is refused with -a bsd", ["cksum", "-a", "bsd", "--check"],
      stdin="", out="", err=ANY, exit=1),
    C(f"{F}:abbrev", f"tests/cksum/{F}: -a takes no abbreviation", ["cksum", "-a", "sha22"], stdin="", out="",
      err=ANY, exit=1),
    C(f"{F}:text-tag", f"tests/cksum/{F}: --text --tag is refused", ["cksum", "--text", "--tag", "-a", "md5"],
      stdin="", out="", err=ANY, exit=1),
    C(f"{F}:tag-text", f"tests/cksum/{F}: --tag --text is refused", ["cksum", "--tag", "--text", "-a", "md5"],
      stdin="", out="", err=ANY, exit=1),
    C(f"{F}:tag-untagged", f"tests/cksum/{F}: --tag then --untagged resets the binary marker",
      "cksum --tag --untagged -a md5 /dev/null > o1 && cksum --untagged -a md5 /dev/null > o2 && cmp o1 o2",
      tools=["cksum"], out=""),
    C(f"{F}:binary-marker", f"tests/cksum/{F}: --tag --untagged --binary writes ' *'",
      ["cksum", "--tag", "--untagged", "--binary", "-a", "md5", "/dev/null"], out=f"{MD5_E} */dev/null\n", d12=NA),
    C(f"{F}:binary-order-1", f"tests/cksum/{F}: --binary --untagged, the same",
      ["cksum", "--binary", "--untagged", "-a", "md5", "/dev/null"], out=f"{MD5_E} */dev/null\n", d12=NA),
    C(f"{F}:binary-order-2", f"tests/cksum/{F}: --binary --tag --untagged, the same",
      ["cksum", "--binary", "--tag", "--untagged", "-a", "md5", "/dev/null"], out=f"{MD5_E} */dev/null\n", d12=NA),
)

# ---- cksum-base64-untagged.sh --------------------------------------------------------------------
F = "cksum-base64-untagged.sh"
for algo in ("sha2", "sha3"):
    for length in (224, 256, 384, 512):
        add(C(f"{F}:{algo}-{length}", f"tests/cksum/{F}: -a {algo} -l {length}: untagged base64 is checked",
              f"echo 'test input' > inp; cksum -a {algo} --length {length} --base64 --untagged inp > check && "
              f"cksum -a {algo} --check check", out="inp: OK\n", tools=["cksum"], d12=NA),
            C(f"{F}:{algo}-{length}-truncated", f"tests/cksum/{F}: -a {algo} -l {length}: a truncated digest is refused",
              f"echo 'test input' > inp; cksum -a {algo} --length {length} --base64 --untagged inp > check && "
              f"sed 's|[a-zA-Z0-9+/=]  inp$|  inp|g' check > truncated; cksum -a {algo} --check truncated",
              out="", err="cksum: truncated: no properly formatted checksum lines found\n", exit=1, tools=["cksum"],
              d12=NA))
for length in (8, 216, 224, 232, 248, 256, 264, 376, 384, 392, 504, 512):
    add(C(f"{F}:blake2b-{length}", f"tests/cksum/{F}: -a blake2b -l {length}: untagged base64 is checked",
          f"echo 'test input' > inp; cksum -a blake2b --length {length} --base64 --untagged inp > check && "
          "cksum -a blake2b --check check", out="inp: OK\n", tools=["cksum"], d12=NA))

# ---- cksum-base64.pl -----------------------------------------------------------------------------
F = "cksum-base64.pl"
PAIRS = [("sysv", "0 0 f"), ("bsd", "00000     0 f"), ("crc", "4294967295 0 f"), ("crc32b", "0 0 f"),
         ("md5", "1B2M2Y8AsgTpgAmY7PhCfg=="), ("sha1", "2jmj7l5rSw0yVb/vlWAYkK/YBwk="),
         ("sha2", "z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="),
         ("sha3", "pp9zzKI6msXItWfcGFp1bpfJghZP4lhZ4NHcwUdcgKYVshI68fX5TBHj6UAsOsVY9QAZnZW20+MBdYWGKB3NJg=="),
         ("blake2b", "eGoC90IBWQPGxv2FJVLScpEvR0DhWEdhiobiF/cfVBnSXhAxr+5YUxOJZESTTrBLkDpoWxRIt1XVb3Aa/pvizg=="),
         ("sm3", "GrIdg1XPoX+OYRlIMegajyK+yMco/vt0ftA161CCqis=")]


def b64_line(h, v):
    if h in ("sysv", "bsd", "crc", "crc32b"):
        return v
    tag = {"blake2b": "BLAKE2b", "sha3": "SHA3-512", "sha2": "SHA512"}.get(h, h.upper())
    return f"{tag} (f) = {v}"


for h, v in PAIRS:
    opts = {"sha3": ["sha3", "--length=512"], "sha2": ["sha512"]}.get(h, [h])
    add(C(f"{F}:{h}", f"tests/cksum/{F}: {h}: --base64 of an empty file", ["cksum", "--base64", "-a"] + opts + ["f"],
          files={"f": ""}, out=b64_line(h, v) + "\n", d12=NA))
for h, v in PAIRS:
    if h in ("sysv", "bsd", "crc", "crc32b"):
        continue
    add(C(f"{F}:chk-{h}", f"tests/cksum/{F}: chk-{h}: --check --strict of the base64 line",
          ["cksum", "--check", "--strict", "in"], files={"in": b64_line(h, v) + "\n", "f": ""}, out="f: OK\n", d12=NA))
    for cut in ("=", "=="):
        if not v.endswith(cut) or (cut == "=" and False):
            continue
        add(C(f"{F}:chk-eq{len(cut)}-{h}", f"tests/cksum/{F}: chk-eq{len(cut)}-{h}: without its last '{cut}' it is refused",
              ["cksum", "--check", "in"], files={"in": b64_line(h, v[:-len(cut)]) + "\n", "f": ""}, out="",
              err=Has("no properly formatted checksum lines found\n"), exit=1, d12=NA))
add(C(f"{F}:nul", f"tests/cksum/{F}: nul: NULs where a digest should be", ["cksum", "-a", "sha1", "--check", "in"],
      files={"in": "\\0\\0\\0"}, out="", err=Has("no properly formatted checksum lines found\n"), exit=1),
    C(f"{F}:help-algorithms", f"tests/cksum/{F}: cksum --help lists exactly these algorithms",
      "cksum --help | sed -n 's/^  \\([a-z][a-z0-9]*\\) .*/\\1/p' | tr '\\n' ' '",
      out="sysv bsd crc crc32b md5 sha1 sha2 sha3 blake2b sm3 ", tools=["cksum"],
      d12={"out": "sysv bsd crc md5 sha1 sha224 sha256 sha384 sha512 blake2b sm3 "}))

# ---- cksum-c.sh ----------------------------------------------------------------------------------
F = "cksum-c.sh"
SUMS = ("shuf -i 1-10 --random-source=/dev/zero > input; for a in '-a sha2 -l 384' '-a blake2b' "
        "'-a blake2b -l 384' '-a sm3'; do cksum $a input >> CHECKSUMS; done; ")
SUMS_OLD = ("shuf -i 1-10 --random-source=/dev/zero > input; for a in '-a sha384' '-a blake2b' "
            "'-a blake2b -l 384' '-a sm3'; do cksum $a input >> CHECKSUMS; done; ")
BAD = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaafdb57c725157cb40b5aee8d937b8351477e"
# The state of CHECKSUMS when the test comes to --warn: the four lines, a comment, two bad lines, a
# wrong SM3 digest, a BLAKE2b line for a missing file.
WARN = (SUMS + "echo '# Very important comment' >> CHECKSUMS; echo 'invalid line' >> CHECKSUMS; "
        f"echo 'invalid line' >> CHECKSUMS; echo 'SM3 (input) = {BAD}' >> CHECKSUMS; "
        f"echo 'BLAKE2b (missing-file) = {BAD}' >> CHECKSUMS; ")
MISSING = f"echo 'SM3 (nonexistent) = {BAD}' > CHECKSUMS-missing; "
add(
    C(f"{F}:strict", f"tests/cksum/{F}: --strict --check of mixed tagged lines", SUMS + "cksum --strict --check CHECKSUMS",
      out=ANY, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:sha2-tag", f"tests/cksum/{F}: 'SHA2-384 (f) = ' lines are checked, with and without -a sha2",
      "echo x > input; cksum -a sha2 -l 384 input > sha384-tag.sum; sed 's/^SHA/SHA2-/' sha384-tag.sum > sha2-tag.sum; "
      "for f in sha384-tag.sum sha2-tag.sum; do cksum --check $f && cksum --check -a sha2 $f || exit 1; done",
      out=ANY, tools=["cksum"], d12=NA),
    C(f"{F}:sha2-bad-length", f"tests/cksum/{F}: 'SHA2-128' is no SHA-2 length",
      ["cksum", "--check", "sha2-bad-length.sum"],
      files={"sha2-bad-length.sum": "SHA2-128 (/dev/null) = 38b060a751ac96384cd9327eb1b1e36a\n"}, out="",
      err="cksum: sha2-bad-length.sum: no properly formatted checksum lines found\n", exit=1),
    C(f"{F}:tag-prefix", f"tests/cksum/{F}: an untagged base64 digest that starts like a tag is a digest",
      ["cksum", "--check", "-a", "sha1", "tag-prefix.sum"],
      files={"tag-prefix.sum": "SHA1+++++++++++++++++++++++=  /dev/null\n"}, out="/dev/null: FAILED\n",
      err="cksum: WARNING: 1 computed checksum did NOT match\n", exit=1, d12=NA),
    C(f"{F}:leading-blank", f"tests/cksum/{F}: leading blanks and a backslash are allowed",
      SUMS + "sed 's/^/ \\\\/' CHECKSUMS | cksum --strict -c", out=ANY, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:awkward-name", f"tests/cksum/{F}: a name holding ' (=' is read back",
      "touch 'abc (f) = abc'; cksum -a sha1 'abc (f) = abc' > tag-awkward.sum; cksum --check tag-awkward.sum",
      out="'abc (f) = abc': OK\n", tools=["cksum"], d12={"out": "abc (f) = abc: OK\n"}),
    C(f"{F}:signed", f"tests/cksum/{F}: a PGP-signed checksum file passes without --strict",
      SUMS + "{ printf '%s\\n' '-----BEGIN PGP SIGNED MESSAGE-----' 'Hash: SHA384' '' '# ignored comment'; "
      "cat CHECKSUMS; printf '%s\\n' '-----BEGIN PGP SIGNATURE-----' '' "
      "'# Note base64 doesn'\"'\"'t have ambiguous delimiters in its charset' "
      "'SHA384+BCAAdFiEEjFummQvbJuGfKhqAEWGuaUVxmjkFAmCDId0ACgkQEWGuaUVx' "
      "'BLAKE2b/00001EuON62pTEnqrJ5lav61QxRByiuDp/6VODrRL2JWM6Stxu1Myws=' '=AWU7' "
      "'-----END PGP SIGNATURE-----'; } > signed; cksum --check signed", out=ANY, err=ANY,
      tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:one-algo", f"tests/cksum/{F}: -a sm3 checks the SM3 lines of a mixed file",
      SUMS + "cksum --check -a sm3 CHECKSUMS", out=ANY, err=ANY, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:crc-check", f"tests/cksum/{F}: -a crc -c is refused", SUMS + "cksum -a crc -c CHECKSUMS", out="", err=ANY,
      exit=1, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:crc-lines", f"tests/cksum/{F}: CRC lines are not checkable",
      "echo x > input; cksum -a crc input > CHECKSUMS.crc; cksum -c CHECKSUMS.crc", out="", err=ANY, exit=1,
      tools=["cksum"]),
    C(f"{F}:status", f"tests/cksum/{F}: --status prints nothing", SUMS + "cksum --status --check CHECKSUMS 2>&1",
      out="", tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:status-comment", f"tests/cksum/{F}: a comment is no error",
      SUMS + "echo '# Very important comment' >> CHECKSUMS; cksum --status --check CHECKSUMS 2>&1", out="",
      tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:one-bad-line", f"tests/cksum/{F}: one bad line: warned, exit 0",
      SUMS + "echo 'invalid line' >> CHECKSUMS; cksum --check CHECKSUMS 2>&1",
      out=Has("1 line is improperly formatted"), tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:one-bad-line-strict", f"tests/cksum/{F}: one bad line with --strict: exit 1",
      SUMS + "echo 'invalid line' >> CHECKSUMS; cksum --strict --check CHECKSUMS 2>&1",
      out=Has("1 line is improperly formatted"), exit=1, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:plural", f"tests/cksum/{F}: two bad lines: the plural",
      SUMS + "echo 'invalid line' >> CHECKSUMS; echo 'invalid line' >> CHECKSUMS; cksum --strict --check CHECKSUMS 2>&1",
      out=Has("2 lines are improperly formatted"), exit=1, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:mismatch", f"tests/cksum/{F}: a wrong SM3 digest: FAILED and counted",
      SUMS + f"echo 'SM3 (input) = {BAD}' >> CHECKSUMS; cksum --check CHECKSUMS 2>&1",
      out=Has("1 computed checksum did NOT match", "input: FAILED"), exit=1, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:mismatch-strict", f"tests/cksum/{F}: the same with --strict",
      SUMS + f"echo 'SM3 (input) = {BAD}' >> CHECKSUMS; cksum --check --strict CHECKSUMS 2>&1", out=ANY, exit=1,
      tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:missing", f"tests/cksum/{F}: a missing file: FAILED open or read, counted",
      f"echo 'SM3 (input2) = {BAD}' > CHECKSUMS2; cksum --check CHECKSUMS2 2>&1",
      out=Has("input2: FAILED open or read", "1 listed file could not be read"), exit=1, tools=["cksum"]),
    C(f"{F}:missing-strict", f"tests/cksum/{F}: the same with --strict",
      f"echo 'SM3 (input2) = {BAD}' > CHECKSUMS2; cksum --check --strict CHECKSUMS2 2>&1", out=ANY, exit=1,
      tools=["cksum"]),
    C(f"{F}:status-errors", f"tests/cksum/{F}: --status hides failures too",
      SUMS + f"echo 'invalid line' >> CHECKSUMS; echo 'SM3 (input) = {BAD}' >> CHECKSUMS; "
      "cksum --status --check CHECKSUMS 2>&1", out="", exit=1, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:warn", f"tests/cksum/{F}: --warn names each bad line with the algorithm of the line before",
      WARN + "cksum --warn --check CHECKSUMS 2>&1",
      out=Has("CHECKSUMS: 6: improperly formatted SM3 checksum line",
              "CHECKSUMS: 9: improperly formatted BLAKE2b checksum line"), exit=1, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:missing-streams", f"tests/cksum/{F}: a missing file: FAILED on stdout, the reason on stderr",
      MISSING + "cksum --check CHECKSUMS-missing", out=Has("nonexistent: FAILED open or read"),
      err=Has("nonexistent: No such file or directory", "1 listed file could not be read"), exit=1, tools=["cksum"]),
    C(f"{F}:ignore-missing", f"tests/cksum/{F}: --ignore-missing: no file was verified",
      MISSING + "cksum --ignore-missing --check CHECKSUMS-missing",
      out=Lacks("nonexistent: No such file or directory", "nonexistent: FAILED open or read"),
      err=Has("CHECKSUMS-missing: no file was verified"), exit=1, tools=["cksum"]),
    C(f"{F}:status-warn", f"tests/cksum/{F}: --status --warn: --warn wins",
      WARN + "cksum --status --warn --check CHECKSUMS 2>&1",
      out=Has("CHECKSUMS: 9: improperly formatted BLAKE2b checksum line", "WARNING: 3 lines are improperly formatted",
              "WARNING: 1 computed checksum did NOT match"), exit=1, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:warn-status", f"tests/cksum/{F}: --warn --status: --status wins",
      WARN + "cksum --warn --status --check CHECKSUMS 2>&1",
      out=Lacks("improperly formatted BLAKE2b checksum line", "WARNING: 3 lines are improperly formatted",
                "WARNING: 1 computed checksum did NOT match"), exit=1, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:status-ignore-missing", f"tests/cksum/{F}: --status --ignore-missing prints nothing",
      WARN + "cksum --status --ignore-missing --check CHECKSUMS 2>&1", out="", exit=1, tools=["cksum", "shuf"], d12=NA),
    C(f"{F}:all-three", f"tests/cksum/{F}: --status --warn --ignore-missing: no file was verified",
      MISSING + "cksum --status --warn --ignore-missing --check CHECKSUMS-missing 2>&1",
      out=All(Has("CHECKSUMS-missing: no file was verified"), Lacks("nonexistent: No such file or directory")),
      exit=1, tools=["cksum"]),
    C(f"{F}:several-missing", f"tests/cksum/{F}: two checkfiles that do not exist",
      "cksum --check non-existing-1 non-existing-2 2>&1",
      out=Has("non-existing-1: No such file or directory", "non-existing-2: No such file or directory"), exit=1,
      tools=["cksum"]),
    C(f"{F}:several-empty", f"tests/cksum/{F}: two empty checkfiles",
      "touch empty-1 empty-2; cksum --check empty-1 empty-2 2>&1",
      out=Has("empty-1: no properly formatted checksum lines found", "empty-2: no properly formatted checksum lines found"),
      exit=1, tools=["cksum"]),
    C(f"{F}:tag-check", f"tests/cksum/{F}: --tag --check is refused, with the reason",
      ["cksum", "--tag", "--check", "/dev/null"], out="",
      err=Has("the --tag option is meaningless when verifying checksums"), exit=1, d12=NA),
    C(f"{F}:untagged-check", f"tests/cksum/{F}: --untagged --check is allowed",
      "cksum -a md5 /dev/null | cksum --untagged --check", out="/dev/null: OK\n", tools=["cksum"]),
)
# A read error in the middle of --check: strace makes the reads of one file fail with EIO.
add(C(f"{F}:eio", f"tests/cksum/{F}: a file whose reads fail (EIO) is FAILED open or read, the next one checked",
      "touch ok eio; cksum -a md5 eio ok > check.md5; "
      "strace -o /dev/null -P \"$PWD/eio\" -e /read,splice -e fault=all:error=EIO cksum --check check.md5",
      out="eio: FAILED open or read\nok: OK\n",
      err="cksum: eio: Input/output error\ncksum: WARNING: 1 listed file could not be read\n", exit=1,
      tools=["cksum"], needs=["strace"],
      env={"ASAN_OPTIONS": "detect_leaks=0"}))  # LeakSanitizer cannot run under ptrace

# ---- cksum-raw.sh --------------------------------------------------------------------------------
F = "cksum-raw.sh"
for algo, odtype, lengths in [("bsd", "u2", [None]), ("sysv", "u2", [None]), ("crc", "u4", [None]),
                              ("md5", "x1", [None]), ("sha1", "x1", [None]), ("sha2", "x1", [224, 256, 384, 512]),
                              ("sha3", "x1", [224, 256, 384, 512]), ("blake2b", "x1", [8, 256, 512]),
                              ("sm3", "x1", [None])]:
    for l in lengths:
        lo = f"-l{l}" if l else "-l0"
        pad = " | { read n; printf '%05d\\n' \"$n\"; }" if algo == "bsd" else ""
        add(C(f"{F}:{algo}{'-' + str(l) if l else ''}", f"tests/cksum/{F}: -a {algo} {lo}: --raw is the text digest's bytes",
              f"date > file.in; cksum --raw -a {algo} {lo} file.in > digest.bin && "
              f"od --endian=big -An -w1024 -t{odtype} < digest.bin | tr -d ' '{pad} > d.txt && "
              f"cksum --untagged -a {algo} {lo} < file.in | cut -d ' ' -f1 > digest.txt && cmp digest.txt d.txt",
              out="", tools=["cksum"], d12=NA))
add(C(f"{F}:base64-raw", f"tests/cksum/{F}: --base64 and --raw exclude each other", ["cksum", "--base64", "--raw"],
      stdin="", out="", err=ANY, exit=1, d12=NA),
    C(f"{F}:raw-files", f"tests/cksum/{F}: --raw takes one file", ["cksum", "--raw", "/dev/null", "/dev/null"], out="",
      err=ANY, exit=1, d12=NA))

# ---- cksum-sha3.sh -------------------------------------------------------------------------------
F = "cksum-sha3.sh"
MK3 = ("for i in 'a' ' b' '*c' '44' ' '; do echo \"$i\" > \"$i\"; for l in 224 256 384 512; do "
       "cksum -a sha3 -l $l \"$i\" >> check.sha3; done; done; ")
add(
    C(f"{F}:tagged", f"tests/cksum/{F}: -c infers -l from SHA3-N tags", MK3 + "cksum -a sha3 --strict -c check.sha3",
      out=ANY, tools=["cksum"], d12=NA),
    C(f"{F}:openssl", f"tests/cksum/{F}: the OpenSSL form of the same lines",
      MK3 + "sed 's/ //; s/ =/=/' < check.sha3 > openssl.sha3; cksum -a sha3 --strict -c openssl.sha3", out=ANY,
      tools=["cksum"], d12=NA),
)
for l in (224, 256, 384, 512):
    add(C(f"{F}:untagged-{l}", f"tests/cksum/{F}: -c of untagged -l {l} lines, with -l and without",
          f"cksum -a sha3 --untagged --text -l {l} /dev/null > check.sha3 && cksum -a sha3 -l {l} --strict -c check.sha3 && "
          "cksum -a sha3 --strict -c check.sha3", out=ANY, tools=["cksum"], d12=NA))
add(
    C(f"{F}:value", f"tests/cksum/{F}: -l 256 of the untagged lines is OpenSSL's value",
      "for l in 224 256 384 512; do cksum -a sha3 --untagged --text -l $l /dev/null >> check.vals; done; "
      "cksum -a sha3 --length=256 check.vals",
      out="SHA3-256 (check.vals) = b4753bf1696fda712821b665494c89090ffb0e87b8645559ad9f5db25b42d4f3\n",
      tools=["cksum"], d12=NA),
    C(f"{F}:truncated", f"tests/cksum/{F}: 'SHA3-248' is refused with --warn's words",
      ["cksum", "-a", "sha3", "-c", "--warn", "inp"],
      files={"inp": "SHA3-248 (check.vals) = b4753bf1696fda712821b665494c89090ffb0e87b8645559ad9f5db25b42d4\n"},
      out="", err="cksum: inp: 1: improperly formatted SHA3 checksum line\n"
                  "cksum: inp: no properly formatted checksum lines found\n", exit=1, d12=NA),
    C(f"{F}:last-length", f"tests/cksum/{F}: only the last -l counts", ["cksum", "-a", "sha3", "-l", "253", "-l", "256",
                                                                       "/dev/null"], out=ANY, d12=NA),
)
for length in ("216", "248", "376", "504", "513", "1024", "18446744073709551616"):
    msg = f"cksum: invalid length: '{length}'\ncksum: digest length for 'SHA3' must be 224, 256, 384, or 512\n"
    add(C(f"{F}:length-{length}", f"tests/cksum/{F}: -l {length} is no SHA-3 length",
          ["cksum", "-a", "sha3", "-l", length, "/dev/null"], out="", err=msg, exit=1, d12=NA),
        C(f"{F}:length-{length}-check", f"tests/cksum/{F}: -l {length} is checked with --check too",
          ["cksum", "-a", "sha3", "-l", length, "--check", "/dev/null"], out="", err=msg, exit=1, d12=NA))

# ---- cksum.sh ------------------------------------------------------------------------------------
F = "cksum.sh"
add(
    C(f"{F}:missing", f"tests/cksum/{F}: a missing file fails", ["cksum", "missing"], out="", err=ANY, exit=1),
    C(f"{F}:debug", f"tests/cksum/{F}: --debug with the CPU features hidden names no hardware support",
      "GLIBC_TUNABLES='glibc.cpu.hwcaps=-AVX512F,-AVX2,-AVX,-PMULL' cksum --debug /dev/null 2>debug >/dev/null && "
      "! grep 'using.*hardware support' debug", out="", tools=["cksum"],
      d12=NA),  # 9.1 did not heed GLIBC_TUNABLES (9.6 does): it says "using pclmul hardware support"
)
CRC_INPUTS = [
    ("all-bytes", "for o in $(seq -1 6); do env printf $(env printf '\\\\%03o' $(seq 0 $o)); "
                  "env printf $(env printf '\\\\%03o' $(seq 0 255)); done > in", 4097727897, 559400337),
    ("131-bytes", "env printf $(env printf '\\\\%03o' $(seq 0 130)) > in", 3800919234, 3739179551),
    ("65-bytes", "env printf $(env printf '\\\\%03o' $(seq 0 64)) > in", 796287823, 1086353368),
    ("seq-12780", "seq 1 12780 > in", 3720986905, 388883562),
    ("seq-12795", "seq 1 12795 > in", 4278270357, 2796628507),
]
for name, make, crc, crc32b in CRC_INPUTS:
    for algo, want in (("crc", crc), ("crc32b", crc32b)):
        add(C(f"{F}:{name}-{algo}", f"tests/cksum/{F}: crc_check of {name}, -a {algo} (each hwcaps setting alike)",
              make + f"; cksum -a {algo} in | sed \"s/ $(stat -c %s in) in$/ SIZE in/\"",
              out=f"{want} SIZE in\n", tools=["cksum"], d12="same" if algo == "crc" else NA))

# ---- tests/misc/invalid-opt.pl, tests/help/help-version.sh, help-version-getopt.sh ----------------
# What coreutils checks of every program, for these nine.
for prog in ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum"):
    add(
        C(f"invalid-opt.pl:{prog}", f"tests/misc/invalid-opt.pl: {prog}-invalid-opt", [prog, "-/"], out="",
          err=f"{prog}: invalid option -- '/'\n" + try_help(prog), exit=1),
        C(f"help-version.sh:{prog}-help", f"tests/help/help-version.sh: {prog} --help succeeds", [prog, "--help"],
          out=Re(f"^Usage: {prog} "), exit=0),
        C(f"help-version.sh:{prog}-version", f"tests/help/help-version.sh: {prog} --version succeeds",
          [prog, "--version"], out=Re(f"^{prog} \\("), exit=0),
        C(f"help-version.sh:{prog}-help-full", f"tests/help/help-version.sh: {prog} --help >/dev/full fails",
          f"{prog} --help >/dev/full 2>/dev/null", out="", exit=1, tools=[prog]),
        C(f"help-version.sh:{prog}-version-full", f"tests/help/help-version.sh: {prog} --version >/dev/full fails",
          f"{prog} --version >/dev/full 2>/dev/null", out="", exit=1, tools=[prog]),
        C(f"help-version-getopt.sh:{prog}", f"tests/help/help-version-getopt.sh: {prog}: --help before, between "
          "and after other arguments prints the same", f"{prog} --help > exp && {prog} --help AFTER > o1 && "
          f"{prog} BEFORE --help > o2 && {prog} BEFORE --help AFTER > o3 && cmp exp o1 && cmp exp o2 && cmp exp o3",
          out="", tools=[prog]),
    )

# ---- beyond the upstream tests: what comparing with Debian 12's tools found ----------------------
# Not restated from a test of coreutils: behaviours of its documentation and NEWS that differ between
# 9.1 and 9.11 or depend on the locale, each run against Debian 12's tool too.
add(
    C("compat:c-locale-quoting", "coreutils quotef() in the C locale: bytes past ASCII as octal escapes",
      ["md5sum", "caf\u00e9"], out="", err="md5sum: 'caf'$'\\303\\251': No such file or directory\n", exit=1),
    C("compat:utf8-quoting", "coreutils quote() in a UTF-8 locale: curly quotes",
      ["b2sum", "-l", "7", "f"], files={"f": ""}, env={"LC_ALL": "C.UTF-8"}, out="",
      err="b2sum: invalid length: \u20187\u2019\nb2sum: length is not a multiple of 8\n", exit=1),
    C("compat:cksum-directory", "coreutils NEWS 9.4: cksum again diagnoses read errors of its CRC",
      ["cksum", "d"], files={"d/x": ""}, out="", err="cksum: d: Is a directory\n", exit=1,
      d12={"out": "4294967295 0 d\n", "err": "", "exit": 0}),
)
