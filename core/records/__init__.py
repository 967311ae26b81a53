"""Game records (rule book section 7): the project's JSON record, the competition "JIU" record and the
open-tournament CSV (import only), one module per format.

Every reader validates every move against the rules engine and raises ``RecordError`` naming the
field, line, entry or move index and the reason; nothing is guessed. Every reader reads at most
``core.inputs.MAX_RECORD_BYTES`` (``InputError`` beyond). Every writer serialises first and then writes
atomically (``core.atomic``), so a failed write never leaves a half-written or clobbered file.

Modules: ``record`` (:class:`GameRecord`, shared by all formats), ``json`` (JSON record, lossless),
``jiu`` (JIU record; carries the ruleset in a ``[ruleset ...]`` header field), ``csv`` (CSV import),
``resolve`` (matching listed stones to legal moves, shared by the JIU and CSV readers) and ``files``
(format detection and dispatch). Everything public is re-exported here: ``from core.records import X``.
"""

from core.records.csv import parse_csv_line, read_csv
from core.records.files import FORMATS, detect_format, read_record, write_record
from core.records.jiu import (
    format_jiu_entry,
    format_jiu_point,
    jiu_to_record,
    parse_jiu_entry,
    parse_jiu_point,
    read_jiu,
    record_to_jiu,
    write_jiu,
)
from core.records.json import (
    record_from_dict,
    record_from_json,
    record_to_dict,
    record_to_json,
    read_json,
    write_json,
)
from core.records.record import COLOUR_NAMES, GameRecord, Result
from core.records.resolve import parse_result_text

__all__ = [
    "COLOUR_NAMES",
    "FORMATS",
    "GameRecord",
    "Result",
    "detect_format",
    "format_jiu_entry",
    "format_jiu_point",
    "jiu_to_record",
    "parse_csv_line",
    "parse_jiu_entry",
    "parse_jiu_point",
    "parse_result_text",
    "read_csv",
    "read_json",
    "read_jiu",
    "read_record",
    "record_from_dict",
    "record_from_json",
    "record_to_dict",
    "record_to_jiu",
    "record_to_json",
    "write_jiu",
    "write_json",
    "write_record",
]
