"""Reading a JSON file that a headstart command wrote (a profile, a bench.json, an order), checked once,
at the door, against its schema in docs/schema/ (shipped in the package as headstart/schema/). A file
that is too big, not UTF-8, not JSON, nested deeper than Python parses, or not what its schema says
is refused in one line that names the first field that is wrong; the code that reads it afterwards
can rely on the types."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headstart.errors import HeadstartError
from headstart.inputfile import read_text

# jsonschema is imported when a file is first checked: it took a tenth of every command's start.
if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

SCHEMAS = Path(__file__).resolve().parent / "schema"

# Each kind of file: its schema (docs/schema/KIND.schema.json) and what the error calls it.
KINDS = {
    "profile": "a profile written by `headstart profile -o`",
    "bench": "a bench.json written by `headstart bench`",
    "order": "an order written by `headstart order record`",
}
_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int, "number": float,
               "null": type(None)}  # fmt: skip
_ARTICLES = {"object": "an object", "array": "an array", "string": "a string", "boolean": "a boolean",
             "integer": "an integer", "number": "a number", "null": "null"}  # fmt: skip


@functools.cache
def validator(kind: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads((SCHEMAS / f"{kind}.schema.json").read_text()))


def parse(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        # Some of json's messages end with "at" ("Unterminated string starting at"): one "at" only.
        where = f"line {e.lineno}" if e.msg.endswith(" at") else f"at line {e.lineno}"
        raise HeadstartError(f"{source}: not JSON ({e.msg} {where})") from e
    except RecursionError as e:  # the C scanner gives up at Python's recursion limit (about 1000 deep)
        raise HeadstartError(f"{source}: JSON nested too deep to read") from e
    except ValueError as e:  # an integer of more than 4300 digits, Python's limit
        raise HeadstartError(f"{source}: not JSON headstart can read ({e})") from e


def _describe(error: ValidationError) -> str:
    where = error.json_path
    if error.validator == "type":
        wanted = error.validator_value
        wanted = " or ".join(map(_ARTICLES.get, wanted)) if isinstance(wanted, list) else _ARTICLES.get(wanted)
        found = next((name for name, t in _JSON_TYPES.items() if type(error.instance) is t), "a value")
        return f"{where} is {_ARTICLES.get(found, found)}, not {wanted}"
    message = error.message
    # The message starts with the wrong value as Python shows it; a long one is shortened there, not at
    # the end, which held why it is wrong ("[13.0, 14.7, ... 1027.4] is too long" lost "is too long").
    shown = repr(error.instance)
    if len(message) > 160 and message.startswith(shown) and len(shown) > 60:
        message = shown[:57] + "..." + message[len(shown) :]
    message = message if len(message) <= 160 else message[:157] + "..."
    return f"{where}: {message}".replace("\n", " ")


def check(data: Any, kind: str, source: str) -> None:
    """Refuse `data` in one line unless it is what docs/schema/KIND.schema.json describes."""
    from jsonschema.exceptions import best_match

    try:
        error = best_match(validator(kind).iter_errors(data))
    except RecursionError as e:
        raise HeadstartError(f"{source}: not {KINDS[kind]}: nested too deep") from e
    if error is not None:
        raise HeadstartError(f"{source}: not {KINDS[kind]} ({_describe(error)})")


@functools.cache
def _probe_record_validators() -> dict[str, Draft202012Validator]:
    """One validator per event of the probe's trace: the schema's oneOf, checked record by record,
    costs five times as much as the branch the record's event names."""
    from jsonschema import Draft202012Validator

    schema = json.loads((SCHEMAS / "probe-trace.schema.json").read_text())
    return {b["properties"]["event"]["const"]: Draft202012Validator(b) for b in schema["oneOf"]}


def check_probe_record(record: Any, source: str) -> None:
    """Refuse one line of a probe trace unless it is what docs/schema/probe-trace.schema.json describes."""
    from jsonschema.exceptions import best_match

    events = _probe_record_validators()
    event = record.get("event") if isinstance(record, dict) else None
    if not isinstance(event, str) or event not in events:
        raise HeadstartError(f"{source} is not a probe record (no event of {', '.join(events)})")
    error = best_match(events[event].iter_errors(record))
    if error is not None:
        raise HeadstartError(f"{source} is not a probe record the way this version writes them ({_describe(error)})")


def read_json(path: Path, kind: str | None = None) -> Any:
    """The file's JSON, checked against the schema of `kind` (one of KINDS) when given."""
    data = parse(read_text(path), str(path))
    if kind is not None:
        check(data, kind, str(path))
    return data
