"""Writing cache files atomically: readers see a whole file or none, never a partial one."""

import os
import tempfile


def write_atomically(path, content):
    """Writes `content` (str or bytes) to `path`: into a temporary file beside it, renamed into place; the
    directory is created if missing. On failure the temporary file is removed and the error raised."""
    directory, name = os.path.split(path)
    os.makedirs(directory, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{name[:16]}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb" if isinstance(content, bytes) else "w", encoding=None
                       if isinstance(content, bytes) else "utf-8") as file:
            file.write(content)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
