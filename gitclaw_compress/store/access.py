"""Where archived payloads come from: this clone, the commits that hold a line intact, the
remote."""

from __future__ import annotations

from collections.abc import Callable

from gitclaw_compress.config import Config
from gitclaw_compress.core.marker import HERE, MissingObjectError, restore_data
from gitclaw_compress.errors import GitClawError, shell_line
from gitclaw_compress.store.git import GitFailureError
from gitclaw_compress.store.objects import BlobLinePool
from gitclaw_compress.store.remote import archive_fix, archive_state, fetch_archive
from gitclaw_compress.store.repository import Repository


def commit_line_source(
    repo: Repository, rel: str
) -> Callable[[int], Callable[[str], bytes | None]]:
    """For line `number`, the line at that number in a commit's version of the file; each
    version is read forward once (lines are restored in order), never held whole."""
    versions: dict[str, str | None] = {}  # commit -> the file's blob there
    lines = BlobLinePool(repo.root, repo.objects_dir)

    def for_line(number: int) -> Callable[[str], bytes | None]:
        def from_commit(commit: str) -> bytes | None:
            if commit not in versions:
                info = repo.object_info(f"{commit}:{rel}")
                versions[commit] = info[0] if info is not None else None
            oid = versions[commit]
            return None if oid is None else lines.line(oid, number)

        return from_commit

    return for_line


def line_originals(repo: Repository, rel: str, ref: str) -> Callable[[int, bytes], bytes | None]:
    """The original of one compressed line of `rel`, from this clone (the archive ref, the
    commits where it is intact; never a fetch), or None when it cannot be had: for figures
    that compare a line with its original, never for restoring."""
    from_commit = commit_line_source(repo, rel)
    access = ArchiveAccess(repo, ref)

    def original(number: int, data: bytes) -> bytes | None:
        try:
            return access.restore(data, f"{rel}:{number}", from_commit(number), number)
        except GitClawError:
            return None

    return original


class ArchiveAccess:
    """Where archived payloads come from: this clone first (the archive ref's objects, then
    the commits where a line was intact), then, once per run, the archive ref fetched from
    the remote (`archive.autoFetch`, `archive.remote`)."""

    def __init__(
        self,
        repo: Repository,
        ref: str,
        *,
        remote: str = "origin",
        auto_fetch: bool = False,
        notify: Callable[[str], None] | None = None,
        store_remote: str = "",
    ) -> None:
        self.repo = repo
        self.ref = ref
        self.remote = remote
        self.store_remote = store_remote  # an agent's store: the remote the user named for it
        self.auto_fetch = auto_fetch
        self.notify = notify
        self.fetched = False  # a fetch was tried in this run
        self._remote_state: str | None = None  # archive_state of the remote, once asked
        self.fetch_error: str | None = None
        self._archived: set[str] | None = None
        self.missing: set[str] = set()  # payloads not in the object store, for verify
        self.notes: list[str] = []  # lines restored from their commit, and why, for verify
        # The intact blobs v2 and v3 markers read lines from, each read forward: a file's lines
        # come in order, mostly in runs per blob, so each is read once.
        self._intact = BlobLinePool(repo.root, repo.objects_dir)

    def _get(self, oid: str) -> bytes | None:
        data = self.repo.reader.get(oid)
        if data is None:
            self.missing.add(oid)
        return data

    def _blob_line(self, oid: str, number: int) -> bytes | None:
        """Line `number` of an intact blob (None if it is missing, empty past its end)."""
        data = self._intact.line(oid, number)
        if data is None:
            self.missing.add(oid)
        return data

    @classmethod
    def from_config(
        cls,
        repo: Repository,
        config: Config,
        *,
        fetch: bool = True,
        notify: Callable[[str], None] | None = None,
    ) -> ArchiveAccess:
        return cls(
            repo,
            config["archive.ref"],
            remote=config["archive.remote"],
            auto_fetch=fetch and config["archive.autoFetch"],
            notify=notify,
            store_remote=config["stores.remote"],
        )

    @property
    def place(self) -> str:
        """Where archived objects are looked for, in words: an agent's store is no clone."""
        if self.repo.kind == "store":
            return f"the store's archive ({self.repo.git_dir})"
        return HERE

    def fetch_once(self) -> bool:
        """Fetch the archive ref from the remote, once, when allowed; whether it worked."""
        if self.fetched or not self.auto_fetch or not self.repo.has_remote(self.remote):
            return False
        self.fetched = True
        if self.notify is not None:
            self.notify(f"fetching {self.ref} from {self.remote} (archive.autoFetch)")
        try:
            fetch_archive(self.repo, self.ref, self.remote)
        except GitClawError as error:
            self.fetch_error = str(error)
            return False
        self._archived = None
        return True

    def archived(self) -> set[str]:
        """Every payload id reachable from the archive ref."""
        if self._archived is None:
            self._archived = self.repo.archive_oids(self.ref)
        return self._archived

    def hint(self) -> str:
        if self.fetch_error is not None:
            return f"fetching it failed: {self.fetch_error}"
        if self.repo.kind == "store":  # no clone, no origin: the archive is all there is
            return _store_hint(self.repo, self.ref, self.store_remote)
        if self._remote_state is None:  # asked once, and only when something is missing
            self._remote_state = archive_state(self.repo, self.ref, self.remote)["state"]
        return archive_fix(self._remote_state, self.ref, self.remote)

    def restore(
        self,
        data: bytes,
        where: str,
        from_commit: Callable[[str], bytes | None] | None,
        number: int | None = None,
    ) -> bytes:
        """The original bytes of one line (line `number` of its file, when given: a marker
        compress cannot have written there is refused), fetching the archive once if a
        payload is missing."""
        try:
            return self._restore(data, where, from_commit, number)
        except GitFailureError as error:
            if str(error).startswith(where):
                raise
            raise type(error)(f"{where}: {error}") from None

    def _restore(
        self,
        data: bytes,
        where: str,
        from_commit: Callable[[str], bytes | None] | None,
        number: int | None,
    ) -> bytes:
        def attempt() -> bytes:
            return restore_data(
                data, where, self._get, from_commit, self.notes, self._blob_line, number, self.place
            )

        try:
            return attempt()
        except MissingObjectError as error:
            missing = error
        if self.fetch_once():
            self.missing.clear()
            try:
                return attempt()
            except MissingObjectError as error:
                missing = error
        if self.fetched and self.fetch_error is None:
            raise GitClawError(
                f"{missing}, nor on {self.remote}'s {self.ref}; the archive was not pushed "
                "from the clone that compressed this line"
            )
        raise GitClawError(f"{missing}; {self.hint()}")


def _store_hint(repo: Repository, ref: str, store_remote: str) -> str:
    """How to get an agent's store's archive back: from a backup, or the remote the user
    named (`stores.remote`)."""
    if store_remote:
        git_dir, refspec = str(repo.git_dir), f"{ref}:{ref}"
        command = shell_line("git", "--git-dir", git_dir, "fetch", store_remote, refspec)
        source = f"from {store_remote!r}, the remote stores.remote names: `{command}`"
    else:
        source = "from the remote you pushed it to, if you named one"
    return (
        f"put the store's archive back from your backup, or fetch {ref} into it "
        f"{source} (docs/stores.md)"
    )
