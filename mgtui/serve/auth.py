"""Who may join a class: students' and teachers' `authorized_keys` files, a class
password read from a file (never from the command line), and the server's host key,
generated once and kept in the user's state directory.
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass
from pathlib import Path

import asyncssh

HOST_KEY_NAME = "ssh_host_ed25519_key"


class AuthError(Exception):
    """The server cannot start with these credentials: the message says why."""


def state_dir() -> Path:
    """`$XDG_STATE_HOME/mgtui`, else `~/.local/state/mgtui`."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "mgtui"


def host_key(directory: Path | None = None) -> asyncssh.SSHKey:
    """The server's host key: read from the state directory, or generated there once
    (readable by this user only), so students' `known_hosts` stay valid. A key others
    can read, or in a directory others can write to (they could put their own key
    there), is refused, with the command that fixes it."""
    directory = directory or state_dir()
    path = directory / HOST_KEY_NAME
    if path.exists():
        check_private(directory, path, "the host key")
        try:
            return asyncssh.read_private_key(path)
        except (OSError, ValueError, asyncssh.KeyImportError) as exc:
            raise AuthError(f"cannot read the host key {path}: {exc} (remove it to make a "
                            "new one)") from None
    key = asyncssh.generate_private_key("ssh-ed25519", comment="mgtui serve")
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        check_private(directory)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.export_private_key())
    except OSError as exc:
        raise AuthError(f"cannot keep the host key in {directory}: {exc.strerror}") from None
    return key


def check_private(directory: Path, path: Path | None = None, what: str = "") -> None:
    """Refuse a secret file (`path`, named `what`) that another user can read or write,
    or that is not this user's, and a `directory` for it that others can write to."""
    if os.name != "posix":  # (no owner and mode bits to go by)
        return
    try:
        mode = directory.stat().st_mode
        if path is not None:
            st = path.stat()
    except OSError as exc:
        raise AuthError(f"cannot read {path or directory}: {exc.strerror}") from None
    if mode & 0o022:
        raise AuthError(f"the directory {directory} can be written by other users (they "
                        f"could put their own key there): chmod go-w {directory}")
    if path is None:
        return
    if st.st_uid != os.getuid():
        raise AuthError(f"{what} {path} belongs to another user: remove it to make a new one")
    if st.st_mode & 0o077:
        raise AuthError(f"{what} {path} can be read by other users: chmod 600 {path}")


def read_keys(path: Path) -> asyncssh.SSHAuthorizedKeys:
    """An authorized_keys file; one that other users can write to (they could add their
    own key, as a teacher) is refused."""
    try:
        mode = path.stat().st_mode
        keys = asyncssh.read_authorized_keys(str(path))
    except OSError as exc:
        raise AuthError(f"cannot read {path}: {exc.strerror}") from None
    except (ValueError, asyncssh.KeyImportError) as exc:
        raise AuthError(f"{path} is not an authorized_keys file: {exc}") from None
    if os.name == "posix" and mode & 0o022:
        raise AuthError(f"{path} can be written by other users (they could add their own "
                        f"key): chmod go-w {path}")
    return keys


def read_password(path: Path) -> str:
    """The class password: the file's first line. A file other users can read (its
    group too) is refused, and so is a password of spaces."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AuthError(f"cannot read the password file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise AuthError(f"the password file {path} is not UTF-8 text") from None
    if os.name == "posix" and mode & 0o077:
        raise AuthError(f"the password file {path} can be read by other users: "
                        f"chmod 600 {path}")
    password = text.splitlines()[0] if text.splitlines() else ""
    if not password.strip():
        raise AuthError(f"the password in {path} is blank: its first line is the password")
    if len(password.strip()) < 6:
        raise AuthError(f"the password in {path} is too short (6 characters at least)")
    return password


@dataclass
class Auth:
    """Who may log in, and who teaches."""

    students: asyncssh.SSHAuthorizedKeys | None = None
    teachers: asyncssh.SSHAuthorizedKeys | None = None
    password: str | None = None

    @classmethod
    def from_files(cls, keys: Path | None = None, teacher_keys: Path | None = None,
                   password_file: Path | None = None) -> Auth:
        auth = cls(read_keys(keys) if keys else None,
                   read_keys(teacher_keys) if teacher_keys else None,
                   read_password(password_file) if password_file else None)
        if auth.students is None and auth.teachers is None and auth.password is None:
            raise AuthError("a class needs a way in: --authorized-keys FILE and/or "
                            "--password-file FILE (and --teacher-keys FILE for teachers)")
        return auth

    @property
    def takes_keys(self) -> bool:
        return self.students is not None or self.teachers is not None

    def role_of(self, key: asyncssh.SSHKey, host: str, addr: str) -> str | None:
        """"teacher", "student", or None for a key that is not let in."""
        if self.teachers is not None and self.teachers.validate(key, host, addr) is not None:
            return "teacher"
        if self.students is not None and self.students.validate(key, host, addr) is not None:
            return "student"
        return None

    def password_ok(self, password: str) -> bool:
        return self.password is not None and hmac.compare_digest(
            password.encode("utf-8"), self.password.encode("utf-8"))
