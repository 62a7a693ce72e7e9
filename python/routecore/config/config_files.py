"""Reading config files safely: YAML without alias bombs, deep nesting or repeated keys, JSON
without repeated keys, and no file that is not a regular one or is too large to be a config."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from routecore.errors import ConfigError

#: A YAML document may expand to at most this many nodes (aliases counted at every use)
#: and nest this deep: an alias bomb of a few hundred bytes expands to billions.
YAML_MAX_NODES = 2_000_000
YAML_MAX_DEPTH = 64


def load_yaml(text: str, where: Any = "<string>") -> Any:
    """Parse YAML safely: libyaml's C loader when present (a 50 MB config took 81 s
    with the pure-Python one), and a refusal of alias bombs and deep nesting before
    any Python object is built."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        sizes: dict[int, int] = {}

        def expanded(n: Any, depth: int) -> int:
            if depth > YAML_MAX_DEPTH:
                raise ConfigError(f"{where}: YAML nests deeper than {YAML_MAX_DEPTH} levels")
            if id(n) in sizes:
                return sizes[id(n)]
            sizes[id(n)] = 1  # a recursive alias counts once and stops here
            if isinstance(n, yaml.SequenceNode):
                total = 1 + sum(expanded(c, depth + 1) for c in n.value)
            elif isinstance(n, yaml.MappingNode):
                _no_duplicate_keys(n, where)
                total = 1 + sum(expanded(k, depth + 1) + expanded(v, depth + 1) for k, v in n.value)
            else:
                total = 1
            if total > YAML_MAX_NODES:
                raise ConfigError(
                    f"{where}: YAML expands to more than {YAML_MAX_NODES:,} nodes (aliases of aliases?)"
                )
            sizes[id(n)] = total
            return total

        expanded(node, 0)
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        raise ConfigError(f"malformed YAML in {where}: {e}") from None
    except RecursionError:
        raise ConfigError(f"{where}: YAML nests too deep") from None
    finally:
        loader.dispose()


def _no_duplicate_keys(node: Any, where: Any) -> None:
    """A :class:`ConfigError` naming the file, the key and both lines when a YAML mapping repeats a key
    (YAML loaders keep the last one silently). ``<<`` merges may still be overridden by explicit keys."""
    seen: dict[tuple[str, str], int] = {}
    for k, _ in node.value:
        if not hasattr(k, "tag") or not isinstance(k.value, str) or k.tag == "tag:yaml.org,2002:merge":
            continue
        key, line = (k.tag, k.value), k.start_mark.line + 1
        if key in seen:
            raise ConfigError(f"{where}: line {line}: duplicate key {k.value!r} (first at line {seen[key]})")
        seen[key] = line


def _json_object(where: Any) -> Any:
    """``json.loads``'s ``object_pairs_hook``: a dict, or a :class:`ConfigError` on a repeated key."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ConfigError(
                    f"{where}: duplicate key {k!r} in a JSON object (the last would win silently)"
                )
            out[k] = v
        return out

    return hook


#: The largest config file read, in bytes (``/dev/zero`` would be read until memory runs out).
MAX_CONFIG_BYTES = 256 << 20


def read_text(p: Path, encoding: str = "utf-8", limit: int = MAX_CONFIG_BYTES) -> str:
    """The text of a config file, or a :class:`ConfigError` that names it: unreadable, not a regular
    file (a FIFO would block the read forever, a device never end), over ``limit`` bytes, not UTF-8."""
    try:
        # O_NONBLOCK: opening a FIFO does not wait for a writer
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ConfigError(f"{p} is not a regular file (a FIFO, a device or a folder); give a file")
        with open(fd, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise ConfigError(f"cannot read {p}: {e}") from None
    if len(data) > limit:
        raise ConfigError(f"{p} is over {limit >> 20} MiB, the limit for a config file")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p} is not UTF-8 text: byte {e.start}: {e.reason}") from None


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a YAML (``.yaml``/``.yml``) or JSON file into a dict."""
    p = Path(path)
    text = read_text(p)
    if p.suffix in (".yaml", ".yml"):
        data = load_yaml(text, p)
    else:
        try:
            data = json.loads(text, object_pairs_hook=_json_object(p))
        except json.JSONDecodeError as e:
            raise ConfigError(f"malformed JSON in {p}: line {e.lineno}: {e.msg}") from None
        except RecursionError:
            raise ConfigError(f"{p}: JSON nests too deep") from None
    if not data:
        raise ConfigError(f"{p} is empty")
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping with 'routes' and/or 'tools'")
    return data
