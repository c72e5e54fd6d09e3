"""Output files written whole or not at all: what hot's Python tools and examples write (a JSON
of results, a plot) goes to a new file beside the target and replaces it by a rename only once
complete, so that a failed write (a full disk, a file-size limit, an exception while writing)
leaves the previous file as it was and no partial file behind."""

import os
import tempfile


def replace_file(path, write):
    """Calls write(tmp_path) to write the whole output into a new file in path's folder, then
    renames it over path. On any exception the new file is removed and the exception goes on;
    path is then untouched. The folder must exist."""
    folder, name = os.path.split(os.path.abspath(path))
    stem, ext = os.path.splitext(name)
    fd, tmp = tempfile.mkstemp(prefix="." + stem + ".", suffix=".tmp" + ext, dir=folder)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def replace_text(path, text):
    """replace_file for a text (UTF-8)."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    replace_file(path, write)
