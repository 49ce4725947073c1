"""The GPU code a CUDA extension carries: the `sm_*` targets of an ELF shared library's embedded
fatbin, read from headers only (no cuobjdump, no import, no CUDA).

nvcc puts the device code of each translation unit into the `.nv_fatbin` section as a sequence
of fatbin containers: a 16-byte header (magic 0xBA55ED50, version, header size, size of the
entries), then entries, each with its own header (kind: 1 PTX, 2 ELF/cubin; the header's size;
the payload's size; the target architecture, 90 for sm_90). Only those headers are read, with
`os.pread` at their offsets: a library of any size costs a bounded number of small reads. The
payloads (often compressed) are never read.

What is not told apart: the arch-specific variants (`sm_90a`, `sm_100a`, `sm_120a`: not
forward-compatible even within their major) read as their plain number; the rules treat a cubin
of a lower minor of the same major as "cannot verify" for that reason, never as a match.

Every failure is a reason, never an exception: not a regular file (a FIFO, a device), a symlink
loop, not a 64-bit little-endian ELF, a truncated or lying header, too many sections or entries.
"""

from __future__ import annotations

import os
import struct

from h3doctor.errors import H3DoctorError
from h3doctor.safeload import open_regular

MAGIC = 0xBA55ED50
KINDS = {1: "compute", 2: "sm"}  # PTX (JIT-compiled by the driver) / cubin (SASS)
MAX_SECTION_TABLE = 1 << 20  # 16,384 section headers; a real extension has a few dozen
MAX_NAMES = 1 << 20  # the section-name string table
MAX_ENTRIES = 20_000  # fatbin entries walked per file (a big kernel library has a few thousand)
_ELF = struct.Struct("<16sHHIQQQIHHHHHH")  # ELF64 file header (64 bytes)
_SECTION = struct.Struct("<IIQQQQIIQQ")  # ELF64 section header (64 bytes)
_CONTAINER = struct.Struct("<IHHQ")  # fatbin container header (16 bytes)
_ENTRY = struct.Struct("<HHIQIIHHI")  # the part of an entry header read (32 bytes)


class Unreadable(Exception):
    """Why a file's targets cannot be read (its message is the reason shown)."""


def targets(path: str) -> tuple[tuple[str, ...] | None, str]:
    """(the sorted targets, e.g. ("compute_90", "sm_80", "sm_90"), or None; why). An ELF file
    without a `.nv_fatbin` section carries no GPU code: an empty tuple."""
    try:
        # the one reader's open: non-blocking, a regular file by fstat of the descriptor (a FIFO or
        # a directory refused at once); a symlink loop is ELOOP, an OSError
        fh, size = open_regular(path, what="a kernel library")
        with fh:
            found = _read(fh.fileno(), size)
    except H3DoctorError as exc:
        return None, f"{path}: {exc.message}"
    except Unreadable as exc:
        return None, f"{path}: {exc}"
    except (OSError, ValueError) as exc:
        return None, f"{path}: cannot be read ({exc.strerror if isinstance(exc, OSError) else exc})"
    if not found:
        return (), f"{path}: no .nv_fatbin section (no GPU code)"
    return tuple(sorted(found, key=_order)), f"{path}: .nv_fatbin entry headers"


def _order(target: str) -> tuple[int, str]:
    return int(target.rsplit("_", 1)[1]), target


def _pread(fd: int, size: int, offset: int, file_size: int) -> bytes:
    if offset < 0 or size < 0 or offset + size > file_size:
        raise Unreadable("truncated: a header points past the end of the file")
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise Unreadable("truncated while reading")
    return data


def _read(fd: int, size: int) -> set[str]:
    head = _pread(fd, _ELF.size, 0, size)
    ident = head[:16]
    if ident[:4] != b"\x7fELF":
        raise Unreadable("not an ELF file")
    if ident[4] != 2 or ident[5] != 1:
        raise Unreadable("not a 64-bit little-endian ELF file")
    fields = _ELF.unpack(head)
    shoff, shentsize, shnum, shstrndx = fields[6], fields[11], fields[12], fields[13]
    if shentsize != _SECTION.size or shnum == 0 or shstrndx >= shnum:
        raise Unreadable("no section header table h3doctor reads")
    if shnum * shentsize > MAX_SECTION_TABLE:
        raise Unreadable(f"more than {MAX_SECTION_TABLE // _SECTION.size} sections")
    table = _pread(fd, shnum * shentsize, shoff, size)
    sections = [_SECTION.unpack_from(table, i * shentsize) for i in range(shnum)]
    names_off, names_size = sections[shstrndx][4], sections[shstrndx][5]
    if names_size > MAX_NAMES:
        raise Unreadable("an oversized section-name table")
    names = _pread(fd, names_size, names_off, size)
    found: set[str] = set()
    budget = [MAX_ENTRIES]
    for sec in sections:
        name_at = sec[0]
        if names[name_at:name_at + 11] == b".nv_fatbin\x00":
            _walk(fd, sec[4], sec[5], size, found, budget)
    return found


def _walk(fd: int, offset: int, length: int, size: int, found: set[str], budget: list[int]) -> None:
    """The containers of one `.nv_fatbin` section, and their entries' kind and architecture."""
    pos, end = offset, offset + length
    if end > size:
        raise Unreadable("truncated: the .nv_fatbin section runs past the end of the file")
    while pos + _CONTAINER.size <= end:
        magic, _version, header_size, fat_size = _CONTAINER.unpack(_pread(fd, _CONTAINER.size, pos, size))
        if magic != MAGIC:
            budget[0] -= 1  # padding is walked 8 bytes at a time: counted, so zeros cannot spin
            if budget[0] < 0:
                raise Unreadable(f"more than {MAX_ENTRIES} fatbin headers or padding steps")
            if pos % 8:  # containers are 8-aligned; padding between them is zeros
                pos += 8 - pos % 8
                continue
            if magic == 0:
                pos += 8
                continue
            raise Unreadable("a .nv_fatbin container without the fatbin magic")
        entry, stop = pos + header_size, pos + header_size + fat_size
        if header_size < _CONTAINER.size or stop > end:
            raise Unreadable("a fatbin container whose size runs past its section")
        while entry + _ENTRY.size <= stop:
            budget[0] -= 1
            if budget[0] < 0:
                raise Unreadable(f"more than {MAX_ENTRIES} fatbin entries")
            kind, _v, entry_header, payload, *_rest, arch = _ENTRY.unpack(_pread(fd, _ENTRY.size, entry, size))
            if entry_header < _ENTRY.size:  # no progress would loop forever
                raise Unreadable("a fatbin entry header too short to be one")
            if kind in KINDS and 0 < arch < 1000:
                found.add(f"{KINDS[kind]}_{arch}")
            entry += entry_header + payload
        pos = stop
