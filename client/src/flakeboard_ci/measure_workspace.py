"""Where measure's pool runs from: a folder of its own, and this file compiled into it as the
plugin its workers load, in a thread started before what precedes the runs; the folder is
removed by a process of its own at the end."""

from __future__ import annotations

import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
import threading


def compiled_plugin(folder):
    """This file compiled once into ``folder``, under a name of its own, for the workers
    to load: a worker then neither compiles it (PYTHONDONTWRITEBYTECODE, a read-only
    folder) nor finds a copy of the client in the project first. None when it cannot be
    compiled: the workers load the file itself."""
    path = os.path.join(folder, "flakeboard_ci_worker.pyc")
    try:
        py_compile.compile(os.path.abspath(__file__), cfile=path, doraise=True)
    except (OSError, py_compile.PyCompileError):
        return None
    return path


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
