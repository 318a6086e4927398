"""The documents tell the truth about the repository: every file they cite is in it, the README's
example of a person playing an AI hides the AI's army, and the README names what a fresh machine
needs besides what pip installs."""

from __future__ import annotations

import pathlib
import re
import shlex

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("examples/*/README.md")])
# A path in backticks under one of the repository's top-level folders, or under specs/ (which the
# documents used to cite although it is not part of the repository).
_CITED = re.compile(r"`((?:specs|docs|examples|gamed|tests|bench|etc|systemd)/[^`\s]+)`")


def test_every_file_a_document_cites_is_in_the_repository():
    missing = []
    for doc in DOCUMENTS:
        for path in _CITED.findall(doc.read_text(encoding="utf-8")):
            if any(c in path for c in "<>*…") or path.endswith("/"):
                continue  # a pattern or a folder, not one file
            built = (ROOT / path).with_suffix(".c")  # a program `make` builds from its C source
            if not (ROOT / path).exists() and not (not (ROOT / path).suffix and built.exists()):
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
    assert missing == []


def _switches(words: list[str]) -> set[str]:
    """The one-letter switches among ``words`` (grouped ones too: -pr = -p -r)."""
    return {c for w in words if re.fullmatch(r"-[a-zA-Z]+", w) for c in w[1:]}


def test_the_readme_hides_the_army_of_the_program_a_person_plays():
    examples = [
        shlex.split(line.split("#")[0])
        for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
        if "gamed-stratego" in line and "@human" in line
    ]
    assert examples, "the README shows how to play an AI"
    for words in examples:
        players = [w for w in words[1:] if not w.startswith("-") and not re.fullmatch(r"[0-9.]+", w)]
        program_is_red = players[-1] == "@human"
        assert ("r" if program_is_red else "b") in _switches(words), f"{' '.join(words)} shows the program's army"


def test_the_readme_names_what_pip_does_not_install():
    start = (ROOT / "README.md").read_text(encoding="utf-8").split("| game |")[0]
    for tool in ("telnet", "nc", "chromium", "chromedriver"):
        assert re.search(rf"\b{tool}\b", start), f"the README's first section does not mention {tool}"
