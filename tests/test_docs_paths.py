"""README.md and the pages of docs/ name only repository paths that exist, and link only to headings that are there.

When a module, test or doc moves, a page that still names the old path fails here with the page, the line and the
path. What counts as a path is decided by these rules, never by a list of exceptions:

- Only inline code spans and link targets are read. Fenced code blocks are examples (commands, their output,
  JSON) and are not read.
- A code span is split into words. In ``NAME=value`` the value is the word; in ``path::test`` (a pytest node id)
  the path.
- Not a path: a word with a colon (a URL, an image tag, ``host:port``); a word starting with ``/`` (an API path,
  a URL path, a path on a host or in a container), ``~`` or ``-``; a word holding a placeholder, glob or pattern
  character (``< > { } [ ] ( ) * ? $ | ^``, a backslash, ``…`` or ``...``); a word whose first segment is a DNS
  name, with a dot after its first character (``nvidia.com/gpu``, ``resource.k8s.io/v1``,
  ``nvcr.io/nvidia/pytorch``).
- A word with a slash is a path when its first segment is a top-level entry of the repository
  (``provisioning/domain/placement/engine.py``, ``.ci/run``), when it ends with ``/`` (a folder: write folders so), or
  when it ends with the extension of a kind of file the repository holds (``.py``, ``.md``, ``.yaml``, ...). Any
  other slashed word names something else: an API group and version (``apps/v1``), a MIME type, a fabric
  (``eu-west-1a/ib-0``), a SKU.
- A code span of one word without a slash is a path when it is a Python module or a Markdown page
  (``engine.py``, ``api.md``); inside a longer span (a command) a bare word is an argument (``python train.py``).
- Resolving: a path starting at a top-level entry is read from the repository root. Any other path is written
  relative to a folder the text names (``services/ledger.py`` on billing's page, ``overlays/dev/`` beside
  ``deploy/kustomize/``, ``engine.py`` beside ``provisioning/domain/placement/``): it exists when some file or folder of
  the repository ends with it. A path ending with ``/`` must be a folder. A link target is read relative to its
  page.
- What the repository's ``.gitignore`` files ignore is made at run time (``var/beat_inline.log``, ``db.sqlite3``,
  ``staticfiles/``), not kept in the repository, and is not checked.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

from tests.support import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SETTING = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=(.*)$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
PLACEHOLDER = re.compile(r"[<>{}\[\]()*?$|^\\…]|\.\.\.")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class IgnoreRule:
    """One pattern of a ``.gitignore``: negations and ``**`` do not occur in this repository's files."""

    base: str  # the folder of the .gitignore, "" at the root
    pattern: str

    def matches(self, path: str, *, is_dir: bool) -> bool:
        if self.base:
            if not path.startswith(self.base + "/"):
                return False
            path = path[len(self.base) + 1 :]
        segments = path.split("/")
        pattern = self.pattern.rstrip("/")
        if "/" in pattern:  # anchored at the .gitignore's folder
            pattern = pattern.lstrip("/")
            return any(fnmatch.fnmatch("/".join(segments[:n]), pattern) for n in range(1, len(segments) + 1))
        dir_only = self.pattern.endswith("/")
        candidates = segments if (is_dir or not dir_only) else segments[:-1]
        return any(fnmatch.fnmatch(segment, pattern) for segment in candidates)


@dataclass(frozen=True)
class Repository:
    top_level: frozenset[str]  # entries at the root, ignored ones left out
    paths: frozenset[str]  # every file and folder, relative, "/"-separated
    folders: frozenset[str]
    kinds: frozenset[str]  # the extensions of its files: ".py", ".md", ...
    ignore: tuple[IgnoreRule, ...]

    def ignored(self, path: str, *, is_dir: bool = False) -> bool:
        return any(rule.matches(path, is_dir=is_dir) for rule in self.ignore)


def _rules(folder: Path, base: str) -> list[IgnoreRule]:
    gitignore = folder / ".gitignore"
    if not gitignore.is_file():
        return []
    lines = (line.strip() for line in gitignore.read_text().splitlines())
    return [IgnoreRule(base, line) for line in lines if line and not line.startswith(("#", "!"))]


@cache
def repository() -> Repository:
    rules = _rules(ROOT, "")
    paths: set[str] = set()
    folders: set[str] = set()
    for folder, dirnames, filenames in os.walk(ROOT):
        here = Path(folder).relative_to(ROOT).as_posix()
        here = "" if here == "." else here
        rules += _rules(Path(folder), here) if here else []
        kept = []
        for name in sorted(dirnames):
            path = f"{here}/{name}" if here else name
            if name != ".git" and not any(rule.matches(path, is_dir=True) for rule in rules):
                kept.append(name)
                folders.add(path)
        dirnames[:] = kept
        for name in filenames:
            path = f"{here}/{name}" if here else name
            if name != ".git" and not any(rule.matches(path, is_dir=False) for rule in rules):
                paths.add(path)
    return Repository(
        top_level=frozenset(p for p in paths | folders if "/" not in p),
        paths=frozenset(paths | folders),
        folders=frozenset(folders),
        kinds=frozenset(PurePosixPath(p).suffix for p in paths if PurePosixPath(p).suffix),
        ignore=tuple(rules),
    )


def repository_path(word: str, *, alone: bool, repo: Repository) -> str | None:
    """The repository path ``word`` names, or None when by the rules above it names something else."""
    if "::" in word:
        word = word.split("::")[0]
    setting = SETTING.match(word)
    if setting:
        word = setting.group(1)
    if not word or ":" in word or word[0] in "/~-" or PLACEHOLDER.search(word):
        return None
    if "/" not in word:
        return word if alone and PurePosixPath(word).suffix in (".py", ".md") else None
    first = word.split("/")[0]
    if "." in first[1:]:
        return None
    if first in repo.top_level or word.endswith("/") or PurePosixPath(word).suffix in repo.kinds:
        return word
    return None


def missing(path: str, repo: Repository) -> str | None:
    """Why ``path`` (as a code span names it) does not resolve, or None when it does."""
    folder = path.endswith("/")
    path = path.rstrip("/")
    if repo.ignored(path, is_dir=folder):
        return None
    if path.split("/")[0] in repo.top_level:
        found = {path} & repo.paths
        where = "from the repository root"
    else:
        found = {p for p in repo.paths if p == path or p.endswith("/" + path)}
        where = "no file or folder of the repository ends with it"
    if folder:
        found &= repo.folders
    if found:
        return None
    return f"is not a folder ({where})" if folder and ({path} & repo.paths) else f"does not exist ({where})"


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a page outside fenced code blocks, numbered from 1."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def _links(text: str) -> Iterator[tuple[int, str]]:
    for number, line in _lines(text):
        for link in LINK.finditer(line):
            yield number, link.group(1)


def problems_in(page: Path, text: str, repo: Repository) -> list[str]:
    """Every path ``text`` (the content of ``page``) names that does not exist, as ``page:line: what``."""
    name = page.relative_to(ROOT).as_posix()
    found = []
    for number, line in _lines(text):
        for span in CODE_SPAN.finditer(line):
            words = span.group(2).split()
            for word in words:
                path = repository_path(word, alone=len(words) == 1, repo=repo)
                why = path and missing(path, repo)
                if why:
                    found.append(f"{name}:{number}: `{path}` {why}")
    for number, target in _links(text):
        path = target.split("#")[0]
        if not path or SCHEME.match(path):
            continue
        resolved = (page.parent / path).resolve()
        try:
            relative = resolved.relative_to(ROOT).as_posix()
        except ValueError:
            found.append(f"{name}:{number}: link to `{target}` leaves the repository")
            continue
        if repo.ignored(relative, is_dir=path.endswith("/")):
            continue
        if not resolved.exists() or (path.endswith("/") and not resolved.is_dir()):
            found.append(f"{name}:{number}: link to `{target}` does not exist (`{relative}`, relative to the page)")
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings; a repeated heading gets ``-1``, ``-2``, ... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _lines(page.read_text()):
        heading = HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            repeats = seen.get(base, 0)
            found.add(base if repeats == 0 else f"{base}-{repeats}")
            seen[base] = repeats + 1
    return found


def broken_anchors(page: Path, text: str) -> list[str]:
    name = page.relative_to(ROOT).as_posix()
    found = []
    for number, target in _links(text):
        if "#" not in target or SCHEME.match(target):
            continue
        path, fragment = target.split("#", 1)
        destination = (page.parent / path).resolve() if path else page
        if destination.suffix == ".md" and destination.is_file() and fragment not in anchors(destination):
            where = destination.relative_to(ROOT).as_posix()
            found.append(f"{name}:{number}: link to `{target}`: {where} has no heading `#{fragment}`")
    return found


def test_every_path_the_docs_name_exists() -> None:
    repo = repository()
    problems = [problem for page in PAGES for problem in problems_in(page, page.read_text(), repo)]
    assert not problems, "paths that do not exist:\n" + "\n".join(problems)


def test_every_link_to_a_heading_finds_it() -> None:
    problems = [problem for page in PAGES for problem in broken_anchors(page, page.read_text())]
    assert not problems, "links to headings that are not there:\n" + "\n".join(problems)


EXAMPLE = """\
`provisioning/domain/placement/engine.py` exists; `provisioning/gone.py` does not.
Not paths: `/api/v1/allocations/{id}` `apps/v1` `application/json` `nvidia.com/gpu` `eu-west-1a/ib-0` `ldr-<id>`
`tests/<app>/…` `render*.py` `https://example.com/gone.py` `nvcr.io/nvidia/pytorch:25.01-py3` `python gone.py`.
`placement/engine.py` beside its package; `placement/gone.py` beside none. `engine.py` alone; `gone.md` alone.
[the API](api.md), [the Makefile](../Makefile), [a heading](#paths), [a site](https://example.com/gone.md),
[gone](gone.md).
`staticfiles/` is made at run time; `deploy/kustomize/` is a folder, `deploy/kustomize/gone/` is not.
`LADDER_SCREENSHOTS=docs/portal` names a folder, `tests/billing/test_margin.py::test_the_worked_example` a test.
```sh
cat provisioning/gone-in-an-example.py
```
"""


def test_the_rules_tell_paths_from_other_names() -> None:
    """The rules above, on a page written for them: each missing path named with its page and line, nothing else."""
    found = problems_in(ROOT / "docs" / "example.md", EXAMPLE, repository())
    assert found == [
        "docs/example.md:1: `provisioning/gone.py` does not exist (from the repository root)",
        "docs/example.md:4: `placement/gone.py` does not exist (no file or folder of the repository ends with it)",
        "docs/example.md:4: `gone.md` does not exist (no file or folder of the repository ends with it)",
        "docs/example.md:7: `deploy/kustomize/gone/` does not exist (from the repository root)",
        "docs/example.md:6: link to `gone.md` does not exist (`docs/gone.md`, relative to the page)",
    ]


def test_a_link_to_a_missing_heading_is_named() -> None:
    page = ROOT / "docs" / "api.md"
    text = "See [errors](#errors), [the layers](architecture.md#layers) and [nothing](architecture.md#no-such).\n"
    assert broken_anchors(page, text) == [
        "docs/api.md:1: link to `architecture.md#no-such`: docs/architecture.md has no heading `#no-such`"
    ]
