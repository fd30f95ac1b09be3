"""Where the study's corpora and test sets come from, and how to turn them into plain text.

Used by scripts/prepare-wmt19-*.sh and scripts/build-test-sets.sh:

    wmt_sources.py list    --pair de-en
    wmt_sources.py fetch   URL DEST
    wmt_sources.py corpus  --pair de-en --name europarl --search DIR [--search DIR ...]
                       --raw-dir RAW --out-prefix PREFIX [--offline]
    wmt_sources.py testset --pair de-en --name newstest2018 --search DIR ... --raw-dir RAW
                       --out-prefix PREFIX [--offline] [--stand-in]

``corpus`` and ``testset`` write PREFIX.<src> and PREFIX.<tgt>: one segment per line, the two
files line-parallel, every line break other than "\\n" (\\r, \\u2028, ...) turned into a space
so that later line-based tools cannot split a segment in two.  They look for the data in the
--search directories first (plain text files, or the archives exactly as distributed), then
in RAW (earlier downloads); only then, unless --offline, they download the official archive
into RAW.  Downloads go to NAME.part and are renamed when complete (the WMT19 dev.tgz and
test.tgz only with the md5 sum that sacrebleu records for them); a failed run removes the
outputs it wrote (a step hands the tool temporary names and renames them when it succeeded).
A corpus that cannot be found exits with status 2 and a message naming the files wanted and
where to get them; a damaged archive, a failed download or a WMT test set whose size is not
the official one (newstest2014 De-En: 3,003 segments) exits with status 1 and a message
naming the file and what was expected.
"""
import argparse
import contextlib
import gzip
import hashlib
import io
import itertools
import os
import re
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib

EXIT_MISSING = 2

# --------------------------------------------------------------------------------------
# Registry.  "plain" lists local plain-text names accepted for a corpus (src file, tgt
# file); "archive" is the file as distributed; "members" the two files inside it (matched
# by their final path components); "tsv" the column of (src, tgt) in a tab-separated file.
# --------------------------------------------------------------------------------------
WMT19 = "https://www.statmt.org/wmt19/translation-task.html"
CWMT_SUBSETS = ["casia2015", "casict2011", "casict2015", "datum2015", "datum2017", "neu2017"]

PAIRS = {
    "de-en": {
        "src": "de",
        "tgt": "en",
        # how the reference study prepares the pair (Rosendahl et al. 2019, §4): what
        # prepare-wmt19-de-en.sh does with the corpora below
        "preparation": dict(title="WMT19 de-en", textproc="moses", seg="bpe", seg_size=50000,
                            dev_sets=["newstest2015"], test_set="newstest2018",
                            default_test_sets=["newstest_all", "concat_seq", "newstest2018"],
                            concat_of="newstest_all"),
        "corpora": {
            "commoncrawl": {
                "title": "CommonCrawl (WMT13 release, unchanged for WMT19)",
                "url": "https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz",
                "archive": "training-parallel-commoncrawl.tgz",
                "members": ("commoncrawl.de-en.de", "commoncrawl.de-en.en"),
                "plain": [("commoncrawl.de-en.de", "commoncrawl.de-en.en"),
                          ("commoncrawl.de", "commoncrawl.en")],
            },
            "europarl": {
                "title": "Europarl v9",
                "url": "https://www.statmt.org/europarl/v9/training/europarl-v9.de-en.tsv.gz",
                "archive": "europarl-v9.de-en.tsv.gz",
                "tsv": (0, 1),
                "plain": [("europarl-v9.de-en.de", "europarl-v9.de-en.en"),
                          ("europarl.de", "europarl.en")],
            },
            "news-commentary": {
                "title": "News Commentary v14",
                "url": "https://data.statmt.org/news-commentary/v14/training/"
                       "news-commentary-v14.de-en.tsv.gz",
                "archive": "news-commentary-v14.de-en.tsv.gz",
                "tsv": (0, 1),
                "plain": [("news-commentary-v14.de-en.de", "news-commentary-v14.de-en.en"),
                          ("news-commentary.de", "news-commentary.en")],
            },
            "rapid": {
                "title": "Rapid 2019 (document-split, Tilde)",
                "url": "https://s3-eu-west-1.amazonaws.com/tilde-model/rapid2019.de-en.zip",
                "archive": "rapid2019.de-en.zip",
                "members": ("rapid2019.de-en.de", "rapid2019.de-en.en"),
                "plain": [("rapid2019.de-en.de", "rapid2019.de-en.en"),
                          ("rapid.de", "rapid.en")],
            },
        },
    },
    "zh-en": {
        "src": "zh",
        "tgt": "en",
        "preparation": dict(title="WMT19 zh-en", textproc="normalize", seg="spm", seg_size=32000,
                            dev_sets=["newsdev2017", "newstest2017"], test_set="newstest2019",
                            default_test_sets=["newstest2019"], concat_of=""),
        "corpora": {
            "news-commentary": {
                "title": "News Commentary v14",
                "url": "https://data.statmt.org/news-commentary/v14/training/"
                       "news-commentary-v14.en-zh.tsv.gz",
                "archive": "news-commentary-v14.en-zh.tsv.gz",
                "tsv": (1, 0),  # the file is en<TAB>zh; checked against the script below
                "plain": [("news-commentary-v14.en-zh.zh", "news-commentary-v14.en-zh.en"),
                          ("news-commentary.zh", "news-commentary.en")],
            },
            "un": {
                "title": "United Nations Parallel Corpus v1.0 (en-zh)",
                "url": None,
                "manual": "https://conferences.unite.un.org/UNCorpus -- manual download: "
                          "accept the terms on that page and fetch the en-zh archive "
                          "(UNv1.0.en-zh.tar.gz, distributed in parts UNv1.0.en-zh.tar.gz.00, "
                          ".01); put the archive, its parts, or the extracted "
                          "UNv1.0.en-zh.zh/.en into a --local-dir",
                "archive": "UNv1.0.en-zh.tar.gz",
                "parts": True,
                "members": ("UNv1.0.en-zh.zh", "UNv1.0.en-zh.en"),
                "plain": [("UNv1.0.en-zh.zh", "UNv1.0.en-zh.en"),
                          ("en-zh/UNv1.0.en-zh.zh", "en-zh/UNv1.0.en-zh.en"),
                          ("un.zh", "un.en")],
            },
            "cwmt": {
                "title": "CWMT corpora (casia2015, casict2011, casict2015, datum2015, "
                         "datum2017, neu2017)",
                "url": None,
                "manual": "the CWMT link on " + WMT19 + " (http://mteval.cipsc.org.cn:81/"
                          "agreement/wmt) -- manual download after registering and signing "
                          "the CWMT agreement; put the sub-corpus zips (casia2015.zip, ...), "
                          "a directory cwmt/ holding their *_ch.txt|*_cn.txt / *_en.txt "
                          "pairs, or one concatenated pair cwmt.zh/cwmt.en into a --local-dir",
                "plain": [("cwmt.zh", "cwmt.en")],
                "cwmt": True,
            },
        },
    },
}

# Test and development sets: the WMT19 archives that hold them (dev.tgz: newstest2008-2018
# and newsdev2017; test.tgz: newstest2019), each with the sacrebleu dataset that records its
# md5 sum, and the official number of segments of each set, which a set must have.
TESTSET_ARCHIVES = {
    "dev.tgz": ("https://data.statmt.org/wmt19/translation-task/dev.tgz", "wmt19/dev"),
    "test.tgz": ("https://data.statmt.org/wmt19/translation-task/test.tgz", "wmt19"),
}
EXPECTED_LINES = {
    "de-en": {"newstest2008": 2051, "newstest2009": 2525, "newstest2010": 2489,
              "newstest2011": 3003, "newstest2012": 3003, "newstest2013": 3000,
              "newstest2014": 3003, "newstest2015": 2169, "newstest2016": 2999,
              "newstest2017": 3004, "newstest2018": 2998, "newstest2019": 2000},
    "zh-en": {"newsdev2017": 2002, "newstest2017": 2001, "newstest2018": 3981,
              "newstest2019": 2000},
}

# Every character but "\n" on which Python's str.splitlines() (and so some line-based tools)
# ends a line.
LINE_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")

# What reading a damaged or truncated zip, tar or gzip file raises.
DAMAGED_ARCHIVE = (zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile, EOFError, zlib.error)


def log(msg):
    print(f"[corpora] {msg}", file=sys.stderr, flush=True)


def clean_line(raw):
    """One segment: bytes or str without its newline -> str with no line-break characters."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    return LINE_BREAKS.sub(" ", raw.rstrip("\n")).strip()


def iter_lines(fh):
    """Lines of a binary stream split on b"\\n" only (never on \\r or \\u2028)."""
    for line in fh:
        yield line[:-1] if line.endswith(b"\n") else line


# --------------------------------------------------------------------------------------
# Output: two files, PREFIX.SRC and PREFIX.TGT (a step hands the tool temporary names and
# renames them when it succeeded); a failed run removes what it wrote.
# --------------------------------------------------------------------------------------
class PairWriter:
    def __init__(self, prefix, src, tgt):
        self.paths = [f"{prefix}.{src}", f"{prefix}.{tgt}"]
        os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
        self.fh = [open(p, "w", encoding="utf-8") for p in self.paths]
        self.n = 0

    def write(self, s, t):
        self.fh[0].write(clean_line(s) + "\n")
        self.fh[1].write(clean_line(t) + "\n")
        self.n += 1

    def commit(self):
        for f in self.fh:
            f.close()
        return self.n

    def abort(self):
        for f in self.fh:
            f.close()
        for path in self.paths:
            if os.path.exists(path):
                os.remove(path)


_END = object()


def write_parallel(writer, src_lines, tgt_lines, what):
    """Write two line iterators in lockstep; they must have the same length."""
    n0 = writer.n
    for s, t in itertools.zip_longest(src_lines, tgt_lines, fillvalue=_END):
        if s is _END or t is _END:
            side = "source" if s is _END else "target"
            raise SystemExit(f"error: {what}: the {side} side ends after "
                             f"{writer.n - n0} lines, the other side goes on")
        writer.write(s, t)


# --------------------------------------------------------------------------------------
# Downloads
# --------------------------------------------------------------------------------------
def fetch(url, dest, retries=None, md5=None, by_hand=None):
    """Download URL to DEST via DEST.part (resumed when possible), renamed when complete and,
    if MD5 is given, only when the download has that md5 sum.  A download that fails every
    attempt exits with one line: what failed, and BY_HAND, how to place the file instead
    (by default: into DEST's folder or a --local-dir)."""
    if os.path.exists(dest):
        return dest
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    part = dest + ".part"
    if retries is None:
        retries = int(os.environ.get("RELPOS_FETCH_RETRIES", "3"))
    if by_hand is None:
        by_hand = (f"fetch it by hand into {os.path.dirname(os.path.abspath(dest))} "
                   f"(or a --local-dir) and re-run")
    for attempt in range(1, retries + 1):
        have = os.path.getsize(part) if os.path.exists(part) else 0
        req = urllib.request.Request(url, headers={"User-Agent": "fairseq-relpos/0.1"})
        if have and not url.startswith("file:"):
            req.add_header("Range", f"bytes={have}-")
        try:
            log(f"downloading {url} -> {dest}" + (f" (resuming at {have} bytes)" if have else ""))
            with urllib.request.urlopen(req, timeout=60) as resp:
                status = getattr(resp, "status", 200)
                mode = "ab" if have and status == 206 else "wb"
                total = resp.headers.get("Content-Length")
                with open(part, mode) as out:
                    shutil.copyfileobj(resp, out, length=1 << 20)
            if total is not None and mode == "wb" and os.path.getsize(part) != int(total):
                raise OSError(f"short download: {os.path.getsize(part)} of {total} bytes")
            if md5 is not None:
                got = md5sum(part)
                if got != md5:
                    os.remove(part)  # complete but not the file wanted: nothing to resume
                    raise OSError(f"the download has md5 {got}, expected {md5}")
            os.replace(part, dest)
            return dest
        except Exception as exc:  # network errors: retry, keep the .part for resuming
            if attempt >= retries:
                raise SystemExit(f"error: could not download {url} ({why(exc)}); "
                                 f"{by_hand}") from None
            log(f"download failed ({why(exc)}); attempt {attempt + 1} of {retries} "
                f"in {5 * attempt} s")
            time.sleep(5 * attempt)
    return dest


def why(exc):
    """What went wrong in a download, in a few words."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc)


def md5sum(path):
    digest = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sacrebleu_md5(dataset, archive):
    """The md5 sum that sacrebleu records for ARCHIVE (a file name), a download of its DATASET."""
    import sacrebleu
    from sacrebleu.dataset import DATASETS

    entry = DATASETS.get(dataset)
    # sacrebleu 2.0 and 2.1 keep a dataset as a dict, later versions as an object
    urls, sums = ((entry["data"], entry.get("md5")) if isinstance(entry, dict)
                  else (getattr(entry, "data", ()), getattr(entry, "md5", None)))
    for url, md5 in zip(urls, sums or ()):
        if url.rsplit("/", 1)[-1] == archive:
            return md5
    raise SystemExit(f"error: sacrebleu {sacrebleu.__version__} records no md5 sum for {archive} "
                     f"in its dataset {dataset}; expected one to check the download against")


@contextlib.contextmanager
def refusing_damaged_archive(path, expected):
    """Reading the archive PATH inside this block: a damaged or truncated archive exits with
    an error naming PATH and what was EXPECTED, instead of a traceback."""
    try:
        yield
    except DAMAGED_ARCHIVE as exc:
        raise SystemExit(f"error: {path}: a damaged or truncated archive ({exc}); "
                         f"expected {expected}") from None


# --------------------------------------------------------------------------------------
# Finding files
# --------------------------------------------------------------------------------------
def find_all(d, relname, depth=3):
    """Files under directory d whose path ends with relname (d/relname first), at most
    `depth` directory levels down."""
    p = os.path.join(d, relname)
    if os.path.isfile(p):
        yield p
    if not os.path.isdir(d):
        return
    base = os.path.basename(relname)
    root_depth = d.rstrip(os.sep).count(os.sep)
    for root, subdirs, files in os.walk(d):
        subdirs.sort()
        if root.count(os.sep) - root_depth >= depth:
            subdirs[:] = []
        if base in files:
            q = os.path.join(root, base)
            if q.endswith(relname) and os.path.normpath(q) != os.path.normpath(p):
                yield q


def find_file(dirs, relname, depth=3):
    for d in dirs:
        for p in find_all(d, relname, depth):
            return p
    return None


def find_pair(dirs, pairs):
    """The first (src, tgt) file pair found side by side in one directory.  Directories are
    tried in order, so that e.g. the de-en and the zh-en newstest2018.en of two --local-dir
    directories (or of two sub-directories) are never mixed up."""
    for d in dirs:
        for s, t in pairs:
            for ps in find_all(d, s):
                pt = os.path.join(os.path.dirname(ps), os.path.basename(t))
                if os.path.dirname(s) != os.path.dirname(t):
                    pt = find_file([d], t)
                if pt and os.path.isfile(pt):
                    return ps, pt
    return None


def open_parts(path):
    """A binary stream over PATH, or over PATH.00, PATH.01, ... concatenated."""
    if os.path.isfile(path):
        return open(path, "rb")
    parts = sorted(p for p in (f"{path}.{i:02d}" for i in range(100)) if os.path.isfile(p))
    return _Chain(parts)


class _Chain(io.RawIOBase):
    def __init__(self, paths):
        self.paths, self.fh = list(paths), None

    def readable(self):
        return True

    def readinto(self, b):
        while True:
            if self.fh is None:
                if not self.paths:
                    return 0
                self.fh = open(self.paths.pop(0), "rb")
            n = self.fh.readinto(b)
            if n:
                return n
            self.fh.close()
            self.fh = None


def archive_members(path, wanted, dest_dir):
    """Extract the members of a .tgz/.tar.gz(.NN)/.zip whose path ends with a wanted name
    into dest_dir (one streaming pass); returns {wanted-name: extracted path}."""
    found = {}
    os.makedirs(dest_dir, exist_ok=True)

    def save(fh, w):
        out = os.path.join(dest_dir, w)
        with open(out + ".tmp", "wb") as o:
            shutil.copyfileobj(fh, o, length=1 << 20)
        os.replace(out + ".tmp", out)
        found[w] = out

    for w in wanted:  # kept from an earlier, completed extraction
        if os.path.isfile(os.path.join(dest_dir, w)):
            found[w] = os.path.join(dest_dir, w)
    todo = [w for w in wanted if w not in found]
    if not todo:
        return found
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                for w in todo:
                    if info.filename.endswith("/" + w) or info.filename == w:
                        with zf.open(info) as fh:
                            save(fh, w)
        return found
    with tarfile.open(fileobj=open_parts(path), mode="r|*") as tf:
        for member in tf:
            for w in todo:
                if member.isfile() and (member.name.endswith("/" + w) or member.name == w):
                    save(tf.extractfile(member), w)
            if all(w in found for w in wanted):
                break
    return found


def cjk_share(lines):
    text = "".join(lines)
    if not text:
        return 0.0
    return sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff") / len(text)


# --------------------------------------------------------------------------------------
# Training corpora
# --------------------------------------------------------------------------------------
def missing(pair, name, spec, dirs, offline):
    wanted = [f"{s} + {t}" for s, t in spec.get("plain", [])]
    if spec.get("archive"):
        wanted.insert(0, spec["archive"] + (" (or its parts .00, .01, ...)" if spec.get("parts") else ""))
    if spec.get("cwmt"):
        wanted.append("cwmt/ (directory of *_ch.txt|*_cn.txt / *_en.txt pairs)")
        wanted.append(", ".join(f"{s}.zip" for s in CWMT_SUBSETS))
    where = spec.get("manual") or (f"{spec['url']} (official WMT19 location, {WMT19})")
    why = "offline run" if offline and spec.get("url") else "no public download"
    msg = [f"error: missing {pair} training corpus '{name}': {spec['title']}",
           f"  looked in: {', '.join(dirs) if dirs else '(no directories)'}",
           f"  wanted one of: {'; '.join(wanted)}",
           f"  get it from: {where}"]
    if spec.get("url"):
        msg.append(f"  ({why}: re-run without --offline to download it, or place it in a --local-dir)")
    print("\n".join(msg), file=sys.stderr)
    raise SystemExit(EXIT_MISSING)


def cwmt_pairs_in_tree(root):
    pairs = []
    for d, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            m = re.match(r"(.*)_(ch|cn)\.txt$", f)
            if m and f"{m.group(1)}_en.txt" in files:
                pairs.append((os.path.join(d, f), os.path.join(d, f"{m.group(1)}_en.txt")))
    return pairs


def extract_corpus(pair, name, dirs, raw_dir, prefix, offline):
    info = PAIRS[pair]
    src, tgt = info["src"], info["tgt"]
    if name not in info["corpora"]:
        raise SystemExit(f"error: unknown {pair} corpus '{name}'; known: "
                         f"{', '.join(info['corpora'])}")
    spec = info["corpora"][name]
    search = list(dirs) + [raw_dir]
    writer = PairWriter(prefix, src, tgt)
    try:
        n = _extract_corpus(spec, name, src, tgt, search, raw_dir, writer, offline, pair, dirs)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    log(f"{pair} {name}: {n} lines -> {prefix}.{{{src},{tgt}}}")


def _raw_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as fh:
        for x in iter_lines(fh):
            yield x.decode("utf-8", errors="replace")


def _extract_corpus(spec, name, src, tgt, search, raw_dir, writer, offline, pair, dirs):
    # 1. plain text pair
    found = find_pair(search, spec.get("plain", []))
    if found:
        log(f"{name}: plain text {found[0]} / {found[1]}")
        write_parallel(writer, _raw_lines(found[0]), _raw_lines(found[1]), name)
        return writer.n
    # 2. CWMT: a tree or the sub-corpus zips
    if spec.get("cwmt"):
        trees = [os.path.join(d, "cwmt") for d in search if os.path.isdir(os.path.join(d, "cwmt"))]
        pairs = [p for t in trees[:1] for p in cwmt_pairs_in_tree(t)]
        zips = [find_file(search, f"{s}.zip", depth=1) for s in CWMT_SUBSETS]
        zips = [z for z in zips if z]
        if pairs:
            for ps, pt in pairs:
                log(f"{name}: {ps} / {pt}")
                write_parallel(writer, _raw_lines(ps), _raw_lines(pt), ps)
            return writer.n
        if zips:
            for z in zips:
                with refusing_damaged_archive(z, "a CWMT sub-corpus zip as distributed, whole"), \
                        zipfile.ZipFile(z) as zf:
                    names = zf.namelist()
                    for n_src in sorted(names):
                        m = re.match(r"(.*)_(ch|cn)\.txt$", n_src)
                        if m and f"{m.group(1)}_en.txt" in names:
                            with zf.open(n_src) as a, zf.open(f"{m.group(1)}_en.txt") as b:
                                log(f"{name}: {z}:{n_src}")
                                write_parallel(writer, iter_lines(a), iter_lines(b), n_src)
            return writer.n
        missing(pair, name, spec, dirs, offline)
    # 3. the archive as distributed (local, earlier download, or download now)
    archive = spec.get("archive")
    path = find_file(search, archive, depth=1) if archive else None
    if path is None and archive and spec.get("parts"):
        for d in search:
            if os.path.isfile(os.path.join(d, archive + ".00")):
                path = os.path.join(d, archive)
                break
    if path is None:
        if offline or not spec.get("url"):
            missing(pair, name, spec, dirs, offline)
        path = fetch(spec["url"], os.path.join(raw_dir, archive))
    log(f"{name}: reading {path}")
    expected = f"{archive} as distributed, whole ({spec.get('url') or spec['title']})"
    with refusing_damaged_archive(path, expected):
        return _read_archive(spec, name, src, path, raw_dir, writer)


def _read_archive(spec, name, src, path, raw_dir, writer):
    """The pairs of corpus NAME from its archive as distributed (tsv.gz, tgz or zip)."""
    archive = spec["archive"]
    if "tsv" in spec:
        si, ti = spec["tsv"]
        if src == "zh":  # make sure the Chinese column is the source column
            head = list(itertools.islice(_raw_lines(path), 200))
            rows = [x.split("\t") for x in head]
            col = [cjk_share([r[i] for r in rows if len(r) > i]) for i in (0, 1)]
            if col[ti] > col[si]:
                log(f"{name}: the Chinese text is in column {ti + 1}; swapping the columns")
                si, ti = ti, si
        for line in _raw_lines(path):
            r = line.split("\t")
            writer.write(r[si] if len(r) > si else "", r[ti] if len(r) > ti else "")
        return writer.n
    ms, mt = spec["members"]
    got = archive_members(path, [ms, mt], os.path.join(raw_dir, os.path.basename(archive) + ".d"))
    if ms not in got or mt not in got:
        raise SystemExit(f"error: {path} does not contain {ms} and {mt}; is it the right archive?")
    write_parallel(writer, _raw_lines(got[ms]), _raw_lines(got[mt]), path)
    return writer.n


# --------------------------------------------------------------------------------------
# Test sets
# --------------------------------------------------------------------------------------
def sgm_lines(path):
    out = []
    with open(path, "rb") as fh:
        for raw in iter_lines(fh):
            line = raw.decode("utf-8", errors="replace")
            if line.lstrip().startswith("<seg"):
                out.append(re.sub(r"\s+", " ", re.sub(r"<seg.*?>(.*)</seg>.*?", r"\1", line).strip()))
    return out


def testset_candidates(name, src, tgt):
    """(kind, src-file, tgt-file) in the order they are tried."""
    plain = [(f"{name}.{src}", f"{name}.{tgt}")]
    if name == "newstest2008":
        plain.append((f"news-test2008.{src}", f"news-test2008.{tgt}"))
    sgm = [(f"{name}-{src}{tgt}-src.{src}.sgm", f"{name}-{src}{tgt}-ref.{tgt}.sgm"),
           (f"{name}-src.{src}.sgm", f"{name}-src.{tgt}.sgm"),
           (f"{name}-src.{src}.sgm", f"{name}-ref.{tgt}.sgm")]
    return [("plain", s, t) for s, t in plain] + [("sgm", s, t) for s, t in sgm]


def _find_testset(search, name, src, tgt):
    for kind, s, t in testset_candidates(name, src, tgt):
        found = find_pair(search, [(s, t)])
        if found:
            return kind, found
    return None


def unpack(tgz, dest, expected):
    """Unpack the archive TGZ into the folder DEST (through DEST.tmp.PID, renamed when
    complete); a damaged archive exits naming it and what was EXPECTED."""
    if os.path.isdir(dest):
        return dest
    tmp = f"{dest}.tmp.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    log(f"unpacking {tgz}")
    try:
        with refusing_damaged_archive(tgz, expected), tarfile.open(tgz) as tf:
            for m in tf.getmembers():
                if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in m.name.split("/"):
                    continue
                tf.extract(m, tmp)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def size_note(pair, name, n, files, stand_in):
    """A WMT set must have its official number of segments (a set of another size is another
    release or a part of it: sacrebleu's wmt14 newstest2014 has 2,737 of the 3,003), unless
    it is a deliberate STAND_IN; what the log adds to its size."""
    expected = EXPECTED_LINES.get(pair, {}).get(name)
    if expected is None or n == expected:
        return ""
    if stand_in:
        return f" (a stand-in: the official set has {expected})"
    raise SystemExit(f"error: {' and '.join(files)} hold {n:,} segments, but the official {pair} "
                     f"{name} has {expected:,} (another release, or a part of it?); expected the "
                     f"WMT19 release of {name}, or pass --stand-in for a deliberate cut")


def extract_testset(pair, name, dirs, raw_dir, prefix, offline, stand_in):
    info = PAIRS[pair]
    src, tgt = info["src"], info["tgt"]
    search = list(dirs) + [raw_dir]
    hit = _find_testset(search, name, src, tgt)
    tarball = "test.tgz" if name.endswith("2019") else "dev.tgz"
    url, dataset = TESTSET_ARCHIVES[tarball]
    if hit is None:
        local_tgz = find_file(search, tarball, depth=1)
        if local_tgz is None and not offline:
            md5 = sacrebleu_md5(dataset, tarball)
            local_tgz = fetch(url, os.path.join(raw_dir, tarball), md5=md5,
                              by_hand=f"download it by hand (md5 {md5}) into {raw_dir} or a "
                                      f"--local-dir, or put {name}'s plain text files there, "
                                      f"and re-run")
        if local_tgz is not None:
            unpacked = unpack(local_tgz, os.path.join(raw_dir, tarball.replace(".tgz", "")),
                              f"the WMT19 {tarball} as distributed, whole ({url})")
            hit = _find_testset([unpacked], name, src, tgt)
    if hit is None:
        wanted = "; ".join(f"{s} + {t}" for _, s, t in testset_candidates(name, src, tgt))
        print(f"error: missing {pair} test set {name}\n"
              f"  looked in: {', '.join(search)}\n"
              f"  wanted one of: {wanted}; or the WMT19 {tarball}\n"
              f"  get it from: {url} (official WMT19 {tarball}; re-run without --offline "
              f"to download it)", file=sys.stderr)
        raise SystemExit(EXIT_MISSING)
    kind, (ps, pt) = hit
    read = sgm_lines if kind == "sgm" else _raw_lines
    writer = PairWriter(prefix, src, tgt)
    try:
        write_parallel(writer, read(ps), read(pt), name)
        note = size_note(pair, name, writer.n, (ps, pt), stand_in)
        n = writer.commit()
    except BaseException:
        writer.abort()
        raise
    log(f"{pair} {name}: {n} lines from {ps}{note}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="print the corpora of a pair and where they come from")
    p.add_argument("--pair", required=True, choices=sorted(PAIRS))
    p = sub.add_parser("fetch", help="download URL to DEST (via DEST.part)")
    p.add_argument("url")
    p.add_argument("dest")
    p.add_argument("--retries", type=int)
    for cmd in ("corpus", "testset"):
        p = sub.add_parser(cmd)
        p.add_argument("--pair", required=True, choices=sorted(PAIRS))
        p.add_argument("--name", required=True)
        p.add_argument("--search", action="append", default=[])
        p.add_argument("--raw-dir", required=True)
        p.add_argument("--out-prefix", required=True)
        p.add_argument("--offline", action="store_true")
        if cmd == "testset":
            p.add_argument("--stand-in", action="store_true",
                           default=os.environ.get("SMOKE") == "1",
                           help="the files are a deliberate cut of the set: accept any number "
                                "of segments (the default under SMOKE=1, whose runs cut every set)")
    a = ap.parse_args(argv)
    if hasattr(a, "search"):
        a.search = [d for d in a.search if d]
    if a.cmd == "list":
        for name, spec in PAIRS[a.pair]["corpora"].items():
            where = spec.get("url") or spec["manual"]
            print(f"  {name:16s} {spec['title']}\n  {'':16s} {where}")
    elif a.cmd == "fetch":
        fetch(a.url, a.dest, a.retries)
    elif a.cmd == "corpus":
        extract_corpus(a.pair, a.name, a.search, a.raw_dir, a.out_prefix, a.offline)
    else:
        extract_testset(a.pair, a.name, a.search, a.raw_dir, a.out_prefix, a.offline, a.stand_in)


if __name__ == "__main__":
    main()
