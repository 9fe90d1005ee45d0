"""The fixture pin: one manifest digest over the fixture tree, the same for the same tree on
every OS and checkout, and the pin command that prints it with the seed, for a lead to set as
the suite's pin on the board (a reviewed step, never the patch's)."""

from __future__ import annotations

import collections
import hashlib
import os
import re
import stat
import sys
import unicodedata

from .core import UsageError

Manifest = collections.namedtuple("Manifest", "digest files crlf root in_git")
HASH_CHUNK = 1 << 20
DIGEST_PREFIX = "sha256:"
# flakeboard.rules.digests, copied (the client imports nothing of the board; a test holds the
# two equal): a digest is sha256: and hex digits, or the hex digits alone, in any case.
_DIGEST = re.compile(r"(?:sha256:)?([0-9a-f]+)", re.IGNORECASE | re.ASCII)


class FixturesMissing(UsageError):
    """A fixture folder is not there: pin refuses it, gate sends the lock as missing."""


def canonical_digest(value):
    """``sha256:`` and the lower-case hex of a digest written either way; None when
    ``value`` is not a digest."""
    match = _DIGEST.fullmatch(value)
    return None if match is None else DIGEST_PREFIX + match[1].lower()


def same_digest(one, other):
    """Whether two manifests name one digest, however each is spelled; a value that is no
    digest matches itself only."""
    return one == other or (canonical_digest(one) or one) == (canonical_digest(other) or other)


def repository_root(start):
    """The folder that holds ``.git`` (a folder, or a file in a worktree), from ``start``
    upwards, as git finds a checkout's top; ``start`` itself when there is none. Returns the
    root and whether it is a git checkout."""
    folder = os.path.abspath(start)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder, True
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.path.abspath(start), False
        folder = parent


def manifest_path(path, root):
    """A file's path in the manifest: relative to the root, ``/``-separated, in NFC."""
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    if relative == ".." or relative.startswith("../"):
        raise UsageError(f"the fixture file {path} is outside the repository root {root}")
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"the fixture file name {path!r} is not UTF-8: rename it") from None
    return unicodedata.normalize("NFC", relative)


def fixture_files(folders, root):
    """Every regular file under the folders, by manifest path; UsageError on a symlink or
    anything else that is not a regular file or a folder, FixturesMissing on a missing
    folder."""
    files = {}
    for given in folders:
        top = os.path.abspath(given)
        if not os.path.lexists(top):
            raise FixturesMissing(f"the fixture folder {given} does not exist")
        pending = [top]
        while pending:
            path = pending.pop()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise UsageError(f"{path} is a symbolic link: the fixture manifest refuses "
                                 f"links, whose targets differ between checkouts and OSes; "
                                 f"copy the file in instead")
            if stat.S_ISDIR(mode):
                pending.extend(os.path.join(path, name) for name in os.listdir(path))
            elif stat.S_ISREG(mode):
                files[manifest_path(path, root)] = path
            else:
                raise UsageError(f"{path} is not a regular file or a folder: the fixture "
                                 f"manifest holds regular files only")
    return files


def file_sha256(path):
    """The file's sha256 as read, and whether it holds a CRLF line end."""
    digest, crlf, last = hashlib.sha256(), False, b""
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(HASH_CHUNK), b""):
            digest.update(chunk)
            crlf = crlf or b"\r\n" in last[-1:] + chunk
            last = chunk
    return digest.hexdigest(), crlf


def fixture_manifest(folders, start="."):
    """The manifest of the fixture folders: each regular file's line ``<sha256>  <path>\\n``,
    sorted by the path's UTF-8 bytes; the digest is ``sha256:`` and the sha256 of the lines.
    No timestamps or modes, so the same tree gives the same digest on every checkout."""
    root, in_git = repository_root(start)
    files = fixture_files(folders, root)
    lines, crlf = hashlib.sha256(), []
    for name in sorted(files, key=lambda path: path.encode("utf-8")):
        hexdigest, has_crlf = file_sha256(files[name])
        lines.update(f"{hexdigest}  {name}\n".encode())
        if has_crlf:
            crlf.append(name)
    return Manifest(DIGEST_PREFIX + lines.hexdigest(), len(files), crlf, root, in_git)


def cmd_pin(board, args):
    manifest = fixture_manifest(args.fixtures)
    for name in manifest.crlf:
        print(f"flakeboard: warning: {name} holds CRLF line ends: a checkout that rewrites "
              f"line ends (core.autocrlf) gives another digest", file=sys.stderr)
    where = "the git checkout" if manifest.in_git else "the current folder (no git checkout)"
    print(f"fixture_manifest: {manifest.digest}")
    print(f"seed: {args.seed}")
    print(f"{manifest.files} file{'s' * (manifest.files != 1)}, paths relative to {where} "
          f"{manifest.root}. A lead sets these two as the suite's fixture pin (Settings).")
    return 0
