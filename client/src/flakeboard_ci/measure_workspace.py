"""Where measure's pool runs from: a folder of its own, and this file compiled as the plugin
its workers load (kept in the user's cache from one run to the next, else compiled into the
folder in a thread started before what precedes the runs); the folder is removed by a
process of its own at the end."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
import threading


def compiled_plugin(folder):
    """This file compiled for the workers to load, under a name of its own: a worker then
    neither compiles it (PYTHONDONTWRITEBYTECODE, a read-only folder) nor finds a copy of
    the client in the project first. It is compiled once per version of this file and of
    Python: kept in the user's cache (plugin_cache), else compiled into ``folder``. None
    when it cannot be compiled: the workers load the file itself."""
    source = os.path.abspath(__file__)
    try:
        with open(source, "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    magic = importlib.util.MAGIC_NUMBER
    name = f"flakeboard_ci_worker_{hashlib.sha256(magic + text).hexdigest()[:16]}.pyc"
    cache = plugin_cache()
    if cache is not None and compiled_here(os.path.join(cache, name), magic):
        return os.path.join(cache, name)
    path = os.path.join(folder, name)
    try:
        py_compile.compile(source, cfile=path, doraise=True)
    except (OSError, py_compile.PyCompileError):
        return None
    if cache is not None:
        keep(path, cache, name)
    return path


PLUGIN_CACHE_KEEPS = 8  # compiled versions kept in the cache, the newest


def plugin_cache():
    """The folder that keeps the compiled plugin between runs: flakeboard/ in
    XDG_CACHE_HOME, else in ~/.cache; None where there is no home to keep it in."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None
    return os.path.join(base, "flakeboard")


def compiled_here(path, magic):
    """Whether ``path`` is a compiled file of this Python (a whole one: it is written
    under another name and renamed)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(magic)) == magic
    except OSError:
        return False


def keep(path, cache, name):
    """Copy the compiled plugin into the cache, whole or not at all, and remove all but the
    newest PLUGIN_CACHE_KEEPS there; a cache that cannot be written is left as it is."""
    partial = None
    try:
        os.makedirs(cache, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=cache, prefix=".partial-")
        with os.fdopen(handle, "wb") as out, open(path, "rb") as compiled:
            shutil.copyfileobj(compiled, out)
        os.replace(partial, os.path.join(cache, name))
        partial = None
        with os.scandir(cache) as entries:
            kept = sorted((entry for entry in entries
                           if entry.name.startswith("flakeboard_ci_worker_")),
                          key=lambda entry: entry.stat().st_mtime, reverse=True)
        for entry in kept[PLUGIN_CACHE_KEEPS:]:
            os.remove(entry.path)
    except OSError:
        if partial is not None:
            with contextlib.suppress(OSError):
                os.remove(partial)


REMOVING = []  # the processes removing measure's folders, kept until the interpreter ends


class Workspace:
    """measure's folder, and the plugin compiled into it in a thread of its own: started
    before what precedes the runs (the board's answers), it is ready by the time the first
    worker starts."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="flakeboard-measure-")
        self.compiled = None
        self.thread = threading.Thread(target=self._compile, daemon=True)
        self.thread.start()

    def _compile(self):
        self.compiled = compiled_plugin(self.folder)

    def path(self):
        """The compiled plugin, once it is: None when it could not be."""
        self.thread.join()
        return self.compiled

    def discard(self):
        """Remove the folder, in a process of its own that may outlive measure: it holds
        every run's temporary folder (hundreds, for a test that asks for tmp_path), and
        removing them took as long as measuring fast tests."""
        if self.folder is None:
            return
        self.thread.join()
        folder, self.folder = self.folder, None
        with os.scandir(folder) as entries:
            ran = any(entry.is_dir() for entry in entries)
        if not ran:  # nothing ran: the plugin alone, removed at once
            shutil.rmtree(folder, ignore_errors=True)
            return
        try:
            REMOVING.append(subprocess.Popen(
                [sys.executable, "-c", "import shutil, sys; shutil.rmtree(sys.argv[1], True)",
                 folder], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True))
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
