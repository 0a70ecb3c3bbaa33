"""Byte-mutation fuzzing of every input reader (used by tests/test_fuzz_readers.py).

Run as a script, this module is the *worker*: it fuzzes one reader in its own process, under an
address-space limit (``RLIMIT_AS``) and a per-input CPU-time limit (``ITIMER_PROF``), and prints one
JSON line per input::

    python tests/_fuzz_helpers.py READER[,READER...] COUNT SEED --workdir W [--mem-mb M] [--timeout S]
                                  [--crash-dir D]

Input ``i`` of a run is a pure function of ``(READER, SEED, i)`` (its own ``random.Random``), so
any input can be regenerated alone (:func:`make_input`) to reproduce a report.  Outcomes:

* ``accepted``: the reader returned;
* ``rejected``: it raised a :class:`~lattice_tools.core.errors.LatticeToolsError` (the class is kept);
* ``crash``: anything else -- another exception, ``MemoryError`` (the reader tried to allocate
  beyond the limit: it did not bound a size before allocating), a numpy ``RuntimeWarning``
  (turned into an error), or ``hang`` (the input took longer than the time limit).

Seeds are real files: ``tests/data/fuzz/<reader>/`` (see ``tests/data/fuzz/PROVENANCE.md``) and the
vendored NIST/k2 files listed in :data:`EXTRA_SEEDS`.
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import re
import shutil
import sys
import time
import warnings
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEED_DIR = REPO / "tests" / "data" / "fuzz"
_SCLITE = "tests/data/sctk/sclite-testdata/"
_CSRFILT = "tests/data/sctk/csrfilt-testdata/"
# Seed files of each reader, relative to the repository: the files under tests/data/fuzz/<reader>/
# (see tests/data/fuzz/PROVENANCE.md) plus real files vendored for other tests.
EXTRA_SEEDS = {
    "slf": ["tests/data/inputs/004.lat"],
    "kaldi_text_ark": ["tests/data/inputs/insertion.ark"],
    "k2": ["tests/data/k2-fixtures/ctc_lattice.pt", "tests/data/k2-fixtures/word_lattice.pt"],
    "ctm": [_SCLITE + "lvc_hypm.ctm", _SCLITE + "test.cantonese.ctm"],
    "altctm": [_CSRFILT + "test_ctm.out"],
    "stm": [_SCLITE + "lvc_refm.stm", _CSRFILT + "test.stm.in"],
    "trn": [_CSRFILT + "test.trn.in", _SCLITE + "csrnab1.ref", "lattice_tools/data/cards/transcription.trn"],
    "glm": [_CSRFILT + "example.glm"],
    "nbest_tsv": ["tests/data/nbest/generic.tsv"],
    "nbest_jsonl": ["tests/data/nbest/generic.jsonl"],
    "nbest_sherpa": ["tests/data/nbest/sherpa.jsonl"],
}

# Readers -> seed sub-directory.  Every reader of user input the toolkit has (11 formats + scp, and the
# N-best formats: generic TSV, generic JSON lines, sherpa-onnx results).
READERS = ("slf", "kaldi_text_ark", "kaldi_binary_ark", "kaldi_scp", "openfst", "k2", "ctm", "altctm", "stm",
           "trn", "glm", "kaldi_text", "nbest_tsv", "nbest_jsonl", "nbest_sherpa")

# Tokens that broke (or could break) a parser: huge/boundary integers, non-ASCII digits that
# str.isdigit() accepts but int() rejects (or the reverse), special floats, format keywords.
TOKENS = [b"99999999999999999999", b"4294967296", b"4294967295", b"2147483647", b"2147483648", b"-2147483649",
          b"9223372036854775807", b"9223372036854775808", b"18446744073709551616", b"2139081119", b"1000000000",
          b"-1", b"--1", b"+1", b"-0", b"0", b"00", b"1_000", b"0x10", "\u00b2".encode(), "\u0663".encode(),
          "\u2460".encode(), "\uff11".encode(), b"1e300", b"-1e300", b"1e-320", b"inf", b"-inf", b"nan", b"NaN",
          b"Infinity", b"*", b"@", b"{", b"}", b" / ", b"{ a / b }", b"(", b")", b"()", b"[", b"]", b"<", b">",
          b"<ALT_BEGIN>", b"<ALT>", b"<ALT_END>", b";;", b"=>", b"__", b"*", b"'", b'"', b",", b",,", b"_", b"=",
          b"I=", b"J=", b"N=", b"L=", b"S=", b"E=", b"t=", b"W=", b"a=", b"l=", b"n=", b"NODE=", b"LINK=",
          b"start=", b"end=", b"ark:", b"scp:", b"|", b"-", b"/", b".", b"..", b"\x00", b"\xff", b"\xff\xfe",
          b"\xc3\x28", b"\xe2\x82", b"\r", b"\t", b" ", b"\n", b"\n\n", b"\x0b", b"\x1c", b"\x85", "\u2028".encode()]
INT_BYTES = [0, 1, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 32 - 1, 2 ** 24, 2 ** 63 - 1, -2 ** 63, 2139081119, 65536, 255]
REPEATS = [b"{ ", b"{", b"}", b"( ", b"<ALT_BEGIN>", b"x ", b"0 ", b"1_", b"9", b"\n", b"/", b"*"]


# ---------------------------------------------------------------------------------------------
# mutation
# ---------------------------------------------------------------------------------------------
def _mutate_once(data: bytes, rng: random.Random, others: list[bytes], binary: bool) -> bytes:
    n = len(data)
    pos = rng.randint(0, n)
    op = rng.randrange(13)
    if op == 0 and n:  # flip bits
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(n)
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b)
    if op == 1 and n:  # replace a byte
        b = bytearray(data)
        b[rng.randrange(n)] = rng.choice(b" \n\t-{}*,_=\"/()[];<>0123456789\x00\xff\x7f\x80")
        return bytes(b)
    if op == 2:  # insert a token
        return data[:pos] + rng.choice(TOKENS) + data[pos:]
    if op == 3:  # replace a number by a token
        nums = [m.span() for m in re.finditer(rb"-?\d+(?:\.\d+)?(?:e-?\d+)?", data[:200000])]
        if nums:
            a, z = rng.choice(nums)
            return data[:a] + rng.choice(TOKENS[:40]) + data[z:]
        return data[:pos] + rng.choice(TOKENS) + data[pos:]
    if op == 4 and n:  # delete a range
        z = min(n, pos + rng.choice([1, 2, 4, 16, 64, 512]))
        return data[:pos] + data[z:]
    if op == 5 and n:  # duplicate a range
        a = rng.randrange(n)
        z = min(n, a + rng.choice([1, 8, 32, 200, 2000]))
        return data[:pos] + data[a:z] + data[pos:]
    if op == 6:  # a token repeated many times (deep nesting, very long lines/ids)
        tok = rng.choice(REPEATS)
        return data[:pos] + tok * rng.choice([50, 500, 1200, 3000]) + data[pos:]
    if op == 7:  # truncate
        return data[:pos]
    if op == 8 and others:  # splice with another seed
        other = rng.choice(others)
        k = rng.randint(0, len(other))
        return data[:pos] + other[k:k + rng.choice([16, 128, 1024, 100000])]
    if op == 9 and n >= 4 and binary:  # overwrite an int32/int64
        size = rng.choice([4, 8])
        value = rng.choice(INT_BYTES)
        raw = (value % (1 << (8 * size))).to_bytes(size, "little")
        i = rng.randrange(max(1, n - size + 1))
        return data[:i] + raw + data[i + size:]
    if op == 10 and n:  # swap two lines
        lines = data.split(b"\n")
        if len(lines) > 2:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            return b"\n".join(lines)
    if op == 11 and n:  # replace a field of a line by a token
        lines = data.split(b"\n")
        i = rng.randrange(len(lines))
        fields = re.split(rb"([ \t=,_]+)", lines[i])
        if fields:
            k = rng.randrange(0, len(fields), 2) if len(fields) > 1 else 0
            fields[k] = rng.choice(TOKENS)
            lines[i] = b"".join(fields)
            return b"\n".join(lines)
    if op == 12:  # deep but balanced nesting: '{ { ... a ... } }', nested ALT blocks, '(( ))'
        k = rng.choice([3, 40, 300, 1000, 2500])
        lines = data.split(b"\n")
        i = rng.randrange(len(lines))
        f = lines[i].split()
        if len(f) >= 5 and rng.random() < 0.5:  # CTM-like line: nest ALT blocks around it
            tag = b" ".join(f[:2]) + b" * * "
            block = [tag + b"<ALT_BEGIN>"] * k + [lines[i]] + [tag + b"<ALT_END>"] * k
            return b"\n".join(lines[:i] + block + lines[i + 1:])
        o, c = rng.choice([(b"{ ", b" }"), (b"{", b"}"), (b"(", b")"), (b"[", b"]")])
        return data[:pos] + o * k + b"a" + c * k + data[pos:]
    return data[:pos] + rng.choice(TOKENS) + data[pos:]


def mutate(data: bytes, rng: random.Random, others: list[bytes], binary: bool = False) -> bytes:
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4, 8])):
        data = _mutate_once(data, rng, others, binary)
    return data


def _mutate_zip(data: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    """Mutate one entry of a torch.save zip and rebuild the archive (valid CRCs), so that the
    mutations reach the pickle and the tensor records instead of stopping at a bad checksum."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        entries = [(info.filename, zf.read(info)) for info in zf.infolist()]
    pkl = [i for i, (name, _) in enumerate(entries) if name.endswith("data.pkl")]
    k = pkl[0] if pkl and rng.random() < 0.6 else rng.randrange(len(entries))
    name, body = entries[k]
    if rng.random() < 0.1:
        name = name + rng.choice(["x", "/", ""]) if rng.random() < 0.5 else rng.choice([e[0] for e in entries])
    entries[k] = (name, mutate(body, rng, [], binary=True))
    if rng.random() < 0.05:
        del entries[rng.randrange(len(entries))]
    out = io.BytesIO()
    warnings.simplefilter("ignore", UserWarning)  # "Duplicate name": wanted, a reader must cope
    method = zipfile.ZIP_DEFLATED if rng.random() < 0.2 else zipfile.ZIP_STORED
    with zipfile.ZipFile(out, "w", method) as zf:
        for nm, bd in entries:
            zf.writestr(nm, bd)
    return out.getvalue()


def _mutate_gzip(data: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    """Mutate the text inside a gzip file and compress it again (or the compressed bytes)."""
    if rng.random() < 0.4:
        return mutate(data, rng, [], binary=True)
    return gzip.compress(mutate(gzip.decompress(data), rng, [gzip.decompress(o) if o[:2] == b"\x1f\x8b" else o
                                                             for o in others]), mtime=0)


def seed_paths(reader: str) -> list[Path]:
    d = SEED_DIR / reader
    own = sorted(p for p in d.iterdir() if p.is_file()) if d.is_dir() else []
    return own + [REPO / p for p in EXTRA_SEEDS.get(reader, [])]


def load_seeds(reader: str) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in seed_paths(reader)]


def make_input(reader: str, seed: int, i: int, seeds: list[tuple[str, bytes]] | None = None) -> dict[str, bytes]:
    """The files of input ``i``: ``{file name: content}``; the first file is the one read."""
    seeds = seeds if seeds is not None else load_seeds(reader)
    rng = random.Random(f"{reader}:{seed}:{i}")
    if reader == "kaldi_scp":
        files = dict(seeds)
        scp, ark = files["lats.scp"], files["lats.ark"]
        if rng.random() < 0.5:
            scp = mutate(scp, rng, [], binary=False)
        else:
            ark = mutate(ark, rng, [], binary=True)
        return {"lats.scp": scp, "lats.ark": ark}
    name, data = rng.choice(seeds)
    others = [d for n, d in seeds if n != name]
    if data[:2] == b"PK" and rng.random() < 0.7:
        data = _mutate_zip(data, rng, others)
    elif data[:2] == b"\x1f\x8b":
        data = _mutate_gzip(data, rng, others)
    else:
        data = mutate(data, rng, others, binary=reader in ("kaldi_binary_ark", "k2"))
    return {name: data}


# ---------------------------------------------------------------------------------------------
# what "reading" means for each reader: everything a command does with the file before it
# computes anything (parse, convert to the hub types, parse transcripts into networks)
# ---------------------------------------------------------------------------------------------
def run_reader(reader: str, path: str) -> None:
    if reader in ("ctm", "altctm", "stm", "trn", "kaldi_text"):
        from lattice_tools.io.transcripts.detect import detect_transcript_format

        detect_transcript_format(path)  # what score/oracle do first with a transcript
    if reader in ("slf", "openfst", "k2"):
        from lattice_tools.io import read_lattices

        for _ in read_lattices(path, format=reader):
            pass
    elif reader in ("kaldi_text_ark", "kaldi_binary_ark"):
        from lattice_tools.io import read_lattices

        for _ in read_lattices("ark:" + path):
            pass
    elif reader == "kaldi_scp":
        from lattice_tools.io import read_lattices

        for _ in read_lattices("scp:" + path):
            pass
    elif reader == "ctm":
        from lattice_tools.io.transcripts.ctm import read_ctm

        read_ctm(path)
        read_ctm(path, nested="flatten")
    elif reader == "altctm":
        from lattice_tools.io.transcripts.altctm import read_alternatives_ctm

        read_alternatives_ctm(path)
    elif reader == "stm":
        from lattice_tools.io.transcripts.stm import read_stm
        from lattice_tools.scoring.network import parse_transcript

        for seg in read_stm(path).segments:
            parse_transcript(seg.text, where=f"{path}:{seg.lineno}")
    elif reader == "trn":
        from lattice_tools.io.transcripts.trn import read_trn
        from lattice_tools.scoring.network import parse_transcript

        for utt in read_trn(path):
            parse_transcript(utt.text, where=f"{path}:{utt.lineno}")
    elif reader == "glm":
        from lattice_tools.io.transcripts.glm import read_glm

        glm = read_glm(path)
        glm.select("ctm")
    elif reader in ("nbest_tsv", "nbest_jsonl", "nbest_sherpa"):
        from lattice_tools.alternatives.nbest_merge import nbest_lattice
        from lattice_tools.io.transcripts.nbest_files import read_nbest

        for nb in read_nbest(path, reader.split("_")[1]):
            nbest_lattice(nb)
    elif reader == "kaldi_text":
        from lattice_tools.io.transcripts.kaldi_data import read_kaldi_text
        from lattice_tools.oracle.representations import load_references
        from lattice_tools.scoring.network import parse_transcript

        for utt in read_kaldi_text(path):
            parse_transcript(utt.text, where=f"{path}:{utt.lineno}")
        load_references(path)  # format detected from the content, as `oracle -r` does
    else:
        raise ValueError(reader)


# ---------------------------------------------------------------------------------------------
# worker
# ---------------------------------------------------------------------------------------------
class _Hang(BaseException):
    pass


def _on_cpu_limit(signum, frame):
    raise _Hang()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("readers", help="reader names, comma-separated")
    ap.add_argument("count", type=int)
    ap.add_argument("seed", type=int)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--mem-mb", type=int, default=1024, help="address space allowed above the baseline")
    ap.add_argument("--timeout", type=float, default=5.0,
                    help="CPU seconds per input (CPU, not wall time: the machine may be busy with other work)")
    ap.add_argument("--crash-dir", default=None)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--inject", action="store_true",
                    help="replace the reader by one that fails (ValueError, hang, memory, in turn) to test the "
                         "harness itself")
    args = ap.parse_args(argv)
    readers = args.readers.split(",")
    args.workdir = os.path.abspath(args.workdir)
    args.crash_dir = os.path.abspath(args.crash_dir) if args.crash_dir else None
    unknown = sorted(set(readers) - set(READERS))
    if unknown:
        ap.error(f"unknown reader(s) {unknown}; known: {', '.join(READERS)}")

    import resource
    import signal
    import tempfile

    import numpy as np  # noqa: F401  (imported before the limit: its address space is the baseline)

    import lattice_tools.io  # noqa: F401
    import lattice_tools.io.lattices.k2file  # noqa: F401
    import lattice_tools.io.lattices.kaldi  # noqa: F401
    import lattice_tools.io.lattices.slf  # noqa: F401
    import lattice_tools.oracle.representations  # noqa: F401
    import lattice_tools.scoring.network  # noqa: F401
    from lattice_tools.core.errors import LatticeToolsError

    warnings.simplefilter("error", RuntimeWarning)  # numpy overflow/invalid warnings = garbage numbers
    seeds = {r: load_seeds(r) for r in readers}
    with open("/proc/self/statm") as f:
        baseline = int(f.read().split()[0]) * resource.getpagesize()
    limit = baseline + args.mem_mb * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    reader_fn = run_reader
    if args.inject:
        calls = []

        def reader_fn(reader, path):
            calls.append(path)
            if len(calls) % 3 == 1:
                int("not a number")
            elif len(calls) % 3 == 2:
                while True:
                    pass
            return bytearray(2 * args.mem_mb << 20)
    signal.signal(signal.SIGPROF, _on_cpu_limit)
    os.chdir(args.workdir)
    out = sys.stdout
    for reader, i in ((r, i) for r in readers for i in range(args.start, args.start + args.count)):
        files = make_input(reader, args.seed, i, seeds[reader])
        d = tempfile.mkdtemp(prefix=f"in{i}.", dir=".")
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        first = next(iter(files))
        os.chdir(d)  # an scp names its archive relative to the current directory, as in Kaldi
        rec = {"r": reader, "i": i}
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            signal.setitimer(signal.ITIMER_PROF, args.timeout)
            try:
                reader_fn(reader, first)
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            rec["outcome"] = "accepted"
        except LatticeToolsError as exc:
            rec["outcome"] = "rejected"
            rec["error"] = type(exc).__name__
            if "\n" in str(exc) or not str(exc).strip():
                rec["outcome"] = "crash"
                rec["error"] = f"{type(exc).__name__} with a message that is not one non-empty line: {str(exc)!r}"
        except _Hang:
            rec["outcome"] = "crash"
            rec["error"] = f"hang: more than {args.timeout} s of CPU"
        except BaseException as exc:  # noqa: BLE001 - that is the point: anything else is a crash
            if isinstance(exc, KeyboardInterrupt):
                raise
            rec["outcome"] = "crash"
            rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        rec["seconds"] = round(time.perf_counter() - t0, 4)
        rec["cpu_seconds"] = round(time.process_time() - c0, 4)
        os.chdir(args.workdir)
        if rec["outcome"] == "crash" and args.crash_dir:
            cdir = os.path.join(args.crash_dir, f"{reader}-{args.seed}-{i}")
            os.makedirs(cdir, exist_ok=True)
            for name, data in files.items():
                with open(os.path.join(cdir, name), "wb") as f:
                    f.write(data)
        shutil.rmtree(d)
        out.write(json.dumps(rec) + "\n")
        out.flush()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.write(json.dumps({"done": True, "maxrss_mb": round(usage.ru_maxrss / 1024, 1),
                          "baseline_mb": round(baseline / 2 ** 20, 1)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
