"""GGZ Combat map files (spec ggz-combat §9): the clients' INI format, the map hash, and the 13
maps shipped with the original client, kept in ``gamed/combat/maps/``.

Maps live on the client side: a host's client reads a file and sends it as its options string.
gamed uses them for its own map library, for bots and for tests. A file holds the size, the cell
letters and the army; the map name and hash live in the file name, ``<Name>.<hash>.map`` here (the
original clients used ``<Name>.<hash>``; the ``.map`` suffix only marks the file type, and the name
is still everything before the first '.').
"""

from __future__ import annotations

import configparser
from pathlib import Path

from gamed.combat.wire import (
    T_LAKE,
    T_NULL,
    T_OPEN,
    CombatOptions,
    owner_nibble,
    plus_one,
    write_options,
)
from gamed.stratego.rules import combat_options_check

MAPS_DIR = Path(__file__).with_name("maps")
"""Where the shipped maps are."""

SUFFIX = ".map"

UNIT_KEYS = (
    "flag",
    "bomb",
    "spy",
    "scout",
    "miner",
    "sergeant",
    "lieutenant",
    "captain",
    "major",
    "colonel",
    "general",
    "marshall",
)
"""The ``[army]`` keys in unit-code order (the original's spelling of "marshall")."""

DEFAULT_SIDE = 10
"""Width or height when the file leaves it out."""

_LETTER_TYPES = {"O": T_OPEN, "L": T_LAKE, "N": T_NULL, "1": owner_nibble(0) | T_OPEN, "2": owner_nibble(1) | T_OPEN}
_TERRAIN_LETTERS = {T_OPEN: "O", T_NULL: "N", T_LAKE: "L"}


class MapFileError(ValueError):
    """A map file that cannot be read into valid options."""


def hash_bytes(data: bytes) -> int:
    """The clients' map hash of some bytes (§9): ``s = (s << 1) XOR sext(b)`` in 32 bits."""
    s = 0
    for b in data:
        s = ((s << 1) ^ (b | 0xFFFFFF00 if b & 0x80 else b)) & 0xFFFFFFFF
    return s


def hash_form(options: CombatOptions) -> bytes:
    """The +1-encoded hash form of the options string: no name packet, no final NUL (§6.2, §9)."""
    return plus_one(write_options(options, hash_form=True))


def map_hash(options: CombatOptions) -> int:
    """The hash that names a map's file. The name does not count; the option bits do."""
    return hash_bytes(hash_form(options))


def map_letters(options: CombatOptions) -> str:
    """The ``data`` letters, row-major: ``'1'+owner`` for a zone cell, else ``O``, ``N`` or ``L``.

    Raises ``ValueError`` for a zone cell that is not open: the format has no letter for it."""
    letters = []
    for cell, byte in enumerate(options.types):
        owner = (byte >> 4) - 1
        terrain = byte & 0x0F
        if owner < 0:
            letters.append(_TERRAIN_LETTERS[terrain])
        elif terrain == T_OPEN:
            letters.append(chr(ord("1") + owner))
        else:
            raise ValueError(f"cell {cell}: a zone cell that is not open cannot be written")
    return "".join(letters)


def types_of_letters(letters: str, cells: int) -> bytes:
    """Cell type bytes from ``data`` letters, as the clients load them: only ``1`` and ``2`` are
    zones, any unknown letter is open, and cells past the end of the letters are open."""
    if len(letters) > cells:
        raise MapFileError(f"data has {len(letters)} letters for {cells} cells")
    types = bytearray(cells)
    for cell, letter in enumerate(letters):
        types[cell] = _LETTER_TYPES.get(letter, T_OPEN)
    return bytes(types)


def parse_map(text: str, name: str = "") -> CombatOptions:
    """Read a map file's text (§9) into options named ``name``. A missing width or height is 10,
    a missing army count 0, a missing ``[options] bin1`` no options."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as e:
        raise MapFileError(f"not a map file: {e}") from None

    def number(section: str, key: str, default: int, base: int = 10) -> int:
        value = parser.get(section, key, fallback=None)
        if value is None:
            return default
        try:
            return int(value.strip(), base)
        except ValueError:
            raise MapFileError(f"[{section}] {key} = {value!r} is not a number") from None

    width = number("map", "width", DEFAULT_SIDE)
    height = number("map", "height", DEFAULT_SIDE)
    army = tuple(number("army", key, 0) for key in UNIT_KEYS)
    mask = number("options", "bin1", 0, base=16)
    letters = parser.get("map", "data", fallback="").strip()
    try:
        return CombatOptions(width, height, types_of_letters(letters, max(width, 0) * max(height, 0)), army, mask, name)
    except ValueError as e:
        raise MapFileError(str(e)) from None


def write_map(options: CombatOptions) -> str:
    """A map file's text for ``options`` (its name goes in the file name, ``map_file_name``).
    ``[options]`` is written only when some option bit is set."""
    lines = [
        "[map]",
        f"width = {options.width}",
        f"height = {options.height}",
        f"data = {map_letters(options)}",
        "",
        "[army]",
    ]
    lines += [f"{key} = {count}" for key, count in zip(UNIT_KEYS, options.army)]
    if options.options:
        lines += ["", "[options]", f"bin1 = {int(options.options):X}"]
    return "\n".join(lines) + "\n"


def map_file_name(options: CombatOptions) -> str:
    """``<Name>.<hash>.map``."""
    name = options.name
    if not name or any(c in name for c in "./\\"):
        raise ValueError(f"map name {name!r} cannot be a file name (empty, or with '.', '/' or '\\')")
    return f"{name}.{map_hash(options)}{SUFFIX}"


def split_file_name(file_name: str) -> tuple[str, int | None]:
    """The map name (before the first '.') and the hash in a file name (None if there is none)."""
    base = file_name[: -len(SUFFIX)] if file_name.endswith(SUFFIX) else file_name
    name, _, rest = base.partition(".")
    digits = rest.split(".", 1)[0]
    return name, int(digits) if digits.isdigit() else None


def load_map(path: str | Path) -> CombatOptions:
    """Read a map file; its name comes from the file name."""
    path = Path(path)
    name, _ = split_file_name(path.name)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise MapFileError(f"{path}: {e}") from None
    return parse_map(text, name)


def save_map(options: CombatOptions, directory: str | Path) -> Path:
    """Write ``options`` to ``directory`` under ``map_file_name``; return the path."""
    path = Path(directory) / map_file_name(options)
    path.write_text(write_map(options), encoding="utf-8")
    return path


def shipped_maps() -> dict[str, CombatOptions]:
    """The maps in ``MAPS_DIR`` by name."""
    maps = {}
    for path in sorted(MAPS_DIR.glob(f"*{SUFFIX}")):
        options = load_map(path)
        maps[options.name] = options
    return maps


def opening_maps(seats: int = 2) -> tuple[CombatOptions, ...]:
    """The shipped maps of the plain rules (no option bits) that a table of ``seats`` can play
    (they pass the options check), by name: the maps of a tournament's openings (``opening_map``)."""
    return tuple(
        options
        for _, options in sorted(shipped_maps().items())
        if not options.options and not combat_options_check(options.layout(seats), options.army, seats)
    )


def opening_map(number: int, seats: int = 2) -> CombatOptions | None:
    """The map of opening ``number``, a tournament pair's: None for opening 0 (the host chooses,
    as always); opening n >= 1 is the n-th of ``opening_maps(seats)``, from the first again after
    the last (None when no shipped map fits the table)."""
    if not isinstance(number, int) or isinstance(number, bool) or number < 0:
        raise ValueError(f"an opening number is 0 or more, not {number!r}")
    maps = opening_maps(seats) if number else ()
    return maps[(number - 1) % len(maps)] if maps else None
