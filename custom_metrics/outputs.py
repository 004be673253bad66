"""Writing the suite's output files and folders: whole or not at all, never over another
writer, never over earlier output unless asked, readable by whoever the umask allows.

Why one module: every command that writes something a user keeps (rescore's scores and
summaries, the data mirror's splits, the report and meta-eval folders) has the same
four duties, and each writer doing its own is how one of them forgets:

* **whole or nothing**: a temporary file (or folder) with a unique name in the target
  folder, renamed into place; on any failure it is removed, so no ``.partial`` is left;
* **one writer at a time**: :func:`claim` takes a lock beside the target for the whole
  command, so of two concurrent commands writing the same output the second refuses in
  one line (before it scores anything) instead of silently replacing the first's; a
  file written with ``replace=False`` is also put in place by a hard link, which fails
  when the final path appeared meanwhile;
* **permissions from the umask**: :func:`tempfile.mkstemp` and ``mkdtemp`` create
  0600 / 0700 entries, which would hide a report from colleagues on a shared cluster;
* **one line for an operating-system failure**: a full disk, a file-size limit
  (``ulimit -f``), a read-only or forbidden folder become :class:`OutputError` naming
  the path, which ``domsum`` prints as one line.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from custom_metrics.errors import SuiteError


class OutputError(SuiteError, OSError):
    """An output could not be written (disk full, size limit, permission denied)."""

    def __str__(self) -> str:  # OSError's own __str__ would show "[Errno ...]" tuples
        return str(self.args[0]) if self.args else ""


class OutputExistsError(OutputError, FileExistsError):
    """The output holds earlier results, or another process is writing it."""


#: what an operating-system error means for the user, by errno
_HINTS = {errno.ENOSPC: "the disk is full", errno.EFBIG: "the file-size limit (ulimit -f) is reached",
          errno.EDQUOT: "the disk quota is exceeded", errno.EACCES: "permission denied",
          errno.EPERM: "permission denied", errno.EROFS: "the file system is read-only"}


def os_error(exc: OSError, path: Path | str) -> OutputError:
    """``exc`` as one line naming the path it concerns (``exc.filename`` where it has one)."""
    where = exc.filename if isinstance(exc.filename, (str, Path)) and exc.filename else path
    reason = _HINTS.get(exc.errno or 0) or exc.strerror or str(exc)
    return OutputError(f"cannot write {where}: {reason} ({exc.strerror or type(exc).__name__}); "
                       f"nothing was left half-written")


def umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc``);
    elsewhere by setting and restoring it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _temp_name(path: Path) -> str:
    return f".{path.name}."


def write_atomically(path: Path, text: str, *, replace: bool = True) -> None:
    """Write ``path`` whole or not at all (see the module docstring).

    ``replace=False``: the final path is claimed exclusively (a hard link, which fails
    if it exists), so a file another writer put there meanwhile is never replaced; that
    is :class:`OutputExistsError`. Any operating-system failure is :class:`OutputError`
    naming ``path``, and the temporary file is gone.
    """
    path = Path(path)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=_temp_name(path), suffix=".partial", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~umask())
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise OutputExistsError(f"{path} appeared while this command ran (another process wrote it); "
                                        f"nothing was replaced: pass --overwrite to replace it, or write "
                                        f"elsewhere") from None
            os.unlink(tmp)
        tmp = None
    except SuiteError:
        raise
    except OSError as exc:
        raise os_error(exc, path) from None
    finally:
        if tmp is not None:
            with _quiet():
                os.unlink(tmp)


@contextmanager
def _quiet() -> Iterator[None]:
    try:
        yield
    except OSError:
        pass


def _lock_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.lock")


@contextmanager
def claim(*targets: Path) -> Iterator[None]:
    """Hold a lock beside each target (``.NAME.lock``) for the block; a target another
    process holds is :class:`OutputExistsError` at once, naming it and that process.

    Why ``flock`` on a file: the kernel releases it when its holder dies (a killed
    command leaves no stale lock), and the lock file is removed by its holder. A lock
    file removed between another process's open and lock is detected (its inode is no
    longer the path's) and taken again.
    """
    import fcntl

    held: list[tuple[Path, int]] = []
    try:
        for target in dict.fromkeys(Path(t).resolve() for t in targets):
            lock = _lock_path(target)
            while True:
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
                except OSError as exc:
                    raise os_error(exc, lock) from None
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    holder = os.read(fd, 64).decode("ascii", "replace").strip() or "?"
                    os.close(fd)
                    raise OutputExistsError(f"{target} is being written by another process (pid {holder}, lock "
                                            f"{lock}); wait for it to finish, or write elsewhere") from None
                try:
                    same = os.fstat(fd).st_ino == os.stat(lock).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    break
                os.close(fd)  # the holder removed it as we opened it: take the new one
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            held.append((lock, fd))
        yield
    finally:
        for lock, fd in reversed(held):
            with _quiet():
                os.unlink(lock)
            os.close(fd)


def _has_files(folder: Path) -> bool:
    return folder.is_dir() and any(folder.iterdir())


def check_folder(out: Path, overwrite: bool) -> None:
    """Before any work: ``out`` is a folder (or absent), and holds no earlier output
    unless ``overwrite`` (:class:`OutputExistsError` in one line otherwise)."""
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"--out {out} is a file; give a folder")
    if _has_files(out) and not overwrite:
        raise OutputExistsError(f"{out} is not empty (an earlier run's output?); pass --overwrite to replace it, "
                                f"or choose another --out")


@contextmanager
def claimed_folder(out: Path, overwrite: bool = False) -> Iterator[Path]:
    """``out`` itself to write into, file by file (:func:`write_atomically`): checked on
    entry (:func:`check_folder`) and claimed for the block. For commands whose folder
    also holds work resumed or read back while they run (harness runs, figures drawn
    from files written earlier in the same command), where a swap at the end cannot work."""
    out = Path(out)
    check_folder(out, overwrite)
    with claim(out):
        try:
            out.mkdir(parents=True, exist_ok=True)
            yield out
        except OSError as exc:
            if isinstance(exc, SuiteError):
                raise
            raise os_error(exc, out) from None


@contextmanager
def output_folder(out: Path, overwrite: bool = False) -> Iterator[Path]:
    """A temporary folder beside ``out`` to write into; when the block ends without an
    error it becomes ``out`` (replacing an earlier one only with ``overwrite``).

    Checked on entry (:func:`check_folder`) and claimed (:func:`claim`) for the block,
    so a refusal costs no work and a second concurrent writer refuses. On any failure
    the temporary folder is removed and ``out`` is as it was; an operating-system
    failure is :class:`OutputError` naming the path.
    """
    out = Path(out)
    check_folder(out, overwrite)
    with claim(out):
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            partial = Path(tempfile.mkdtemp(prefix=_temp_name(out), suffix=".partial", dir=out.parent))
            os.chmod(partial, 0o777 & ~umask())
        except OSError as exc:
            raise os_error(exc, out) from None
        try:
            yield partial
            check_folder(out, overwrite)  # a writer that takes no lock may have been here meanwhile
            if out.is_dir():
                shutil.rmtree(out)
            partial.rename(out)
        except BaseException as exc:
            shutil.rmtree(partial, ignore_errors=True)
            if isinstance(exc, OSError) and not isinstance(exc, SuiteError):
                raise os_error(exc, out) from None
            raise


__all__ = ["OutputError", "OutputExistsError", "check_folder", "claim", "claimed_folder", "os_error", "output_folder", "umask",
           "write_atomically"]
