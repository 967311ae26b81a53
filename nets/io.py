"""Saving and loading nets: one ``.safetensors`` file per net, written atomically.

File format: the net's ``state_dict`` as safetensors tensors, and in the safetensors header metadata
(string -> string; no sidecar file, so a single ``os.replace`` makes the write atomic):

================  ======================================================================
key               value
================  ======================================================================
format            ``"jiu-jfa-net"``
format_version    ``"1"`` (this file layout)
encoding_version  ``nets.config.ENCODING_VERSION`` when saved (action encodings + planes)
config            the ``NetConfig`` as JSON
preset            ``"paper"``, ``"tiny"`` or ``"custom"``
extra             JSON of the caller's ``extra`` dict (training info: step, games, ...), ``{}``
storage_dtype     ``"float32"`` or ``"float16"``: the dtype the floating-point tensors are stored in
================  ======================================================================

Floating-point tensors may be stored as float16 (``save(..., half=True)``; ``python cli.py export-net``)
to halve the file (the shipped model in ``models/default``); :func:`load` casts them back to the
float32 the model computes in. Files without the key are float32.

:func:`load` checks all of it and raises ``ValueError`` naming the file and the reason for: a file that is
not a readable safetensors file (corrupt, truncated), a missing or foreign format tag, an encoding
version other than the current one, an invalid config (every size field bounded, ``nets.config``), a
kind other than ``expected_kind``, missing, unexpected or mis-shaped tensors, and non-finite weights.
The tensor names, dtypes and shapes in the header are checked against the config before any tensor is
read or the model is built, so a file can only make :func:`load` allocate what it holds. A missing file raises ``FileNotFoundError``.
:func:`read_metadata` reads the header only (cheap; for listings).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from core.atomic import atomic_write_bytes
import torch
from pydantic import ValidationError
from safetensors import safe_open
from safetensors.torch import save as st_save
from torch import nn

from nets.config import ENCODING_VERSION, NetConfig, preset_name
from nets.model import build, with_tactics

FORMAT = "jiu-jfa-net"
FORMAT_VERSION = 1
# torch dtypes of a net's state_dict -> the dtype names of a safetensors header
_ST_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64"}


def save(model: nn.Module, config: NetConfig, path: str | os.PathLike, extra: dict[str, Any] | None = None,
         half: bool = False) -> Path:
    """Write ``model``'s weights and ``config`` (and ``extra``, JSON-serialisable) to ``path`` atomically
    (a temporary file in the same directory, fsync, ``os.replace``). ``half``: store floating-point
    tensors as float16 (half the size; values rounded to about 3 significant digits). Returns the path."""
    path = Path(path)
    if getattr(model, "config", config) != config:
        raise ValueError(f"save {path}: the model was built from {model.config!r}, not from the given config")
    try:
        extra_json = json.dumps(extra or {}, sort_keys=True)
    except (TypeError, ValueError) as e:
        raise ValueError(f"save {path}: extra is not JSON-serialisable ({e})") from e
    metadata = {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "encoding_version": str(ENCODING_VERSION),
        "config": config.model_dump_json(),
        "preset": preset_name(config) or "custom",
        "extra": extra_json,
        "storage_dtype": "float16" if half else "float32",
    }
    storage = torch.float16 if half else None
    tensors = {k: v.detach().cpu().to(storage if storage is not None and v.is_floating_point() else v.dtype)
               .contiguous().clone() for k, v in model.state_dict().items()}
    data = st_save(tensors, metadata=metadata)
    atomic_write_bytes(path, data)
    return path


def _not_a_file(path: Path) -> str:
    """What an existing path that is not a regular file is, for an error message."""
    for test, what in ((path.is_dir, "a directory"), (path.is_fifo, "a FIFO"), (path.is_char_device, "a device"),
                       (path.is_block_device, "a device"), (path.is_socket, "a socket")):
        if test():
            return f"is {what}, not a regular file"
    return "not a regular file"


def read_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The header metadata of a saved net (see the module docstring), validated only as far as the
    format tag; ``ValueError`` for unreadable or foreign files and for a path that is not a regular
    file (a directory, a device such as ``/dev/zero``, a FIFO: the message says which),
    ``FileNotFoundError`` if missing."""
    path = Path(path)
    if not path.is_file():
        if not path.exists():
            raise FileNotFoundError(f"net file {path} does not exist")
        raise ValueError(f"net file {path}: {_not_a_file(path)}")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata()
    except Exception as e:  # safetensors raises its own error types for corrupt headers
        raise ValueError(f"net file {path}: not a readable safetensors file ({e})") from e
    if not meta or meta.get("format") != FORMAT:
        raise ValueError(f"net file {path}: not a {FORMAT} file (format tag {(meta or {}).get('format')!r})")
    return dict(meta)


def load(path: str | os.PathLike, expected_kind: str | None = None,
         tactics: bool = False) -> tuple[nn.Module, NetConfig, dict[str, Any]]:
    """Load a net saved by :func:`save`: ``(model, config, extra)``, the model in ``eval()`` mode on the
    CPU. Raises ``ValueError`` naming the file and the reason when the file does not match (module
    docstring); ``expected_kind`` (``"slm"``, ``"upper"``, ``"lower"``) also checks the net's kind.
    ``tactics``: a net without the tactical planes is widened (``nets.model.with_tactics``: the same
    function), and ``config`` is the widened net's. ``with_tactics`` is the one function that widens a
    net; the learner calls it through here, the pipeline's init phase directly on the net it validated."""
    path = Path(path)
    meta = read_metadata(path)

    def fail(reason: str) -> ValueError:
        return ValueError(f"net file {path}: {reason}")

    if meta.get("format_version") != str(FORMAT_VERSION):
        raise fail(f"file format version {meta.get('format_version')!r}, this code reads {FORMAT_VERSION}")
    if meta.get("encoding_version") != str(ENCODING_VERSION):
        raise fail(
            f"encoding version {meta.get('encoding_version')!r} but the current ENCODING_VERSION is "
            f"{ENCODING_VERSION} (action encodings or feature planes changed; retrain or convert the net)"
        )
    try:
        config = NetConfig.model_validate_json(meta.get("config", ""))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "config"
        more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
        raise fail(f"invalid net config: field {where!r}: {err['msg']}{more}") from e
    storage = meta.get("storage_dtype", "float32")
    if storage not in ("float32", "float16"):
        raise fail(f"storage dtype {storage!r}, expected 'float32' or 'float16'")
    if expected_kind is not None and config.kind != expected_kind:
        raise fail(f"wrong kind: a {config.kind!r} net, expected a {expected_kind!r} net")
    try:
        extra = json.loads(meta.get("extra", "{}"))
    except json.JSONDecodeError as e:
        raise fail(f"extra metadata is not JSON ({e})") from e

    # The header's names, dtypes and shapes against the config's, before any tensor is read or any
    # weight allocated: the expected shapes come from the net built on the "meta" device (no storage).
    with torch.device("meta"):
        expected = {k: (v.dtype, tuple(v.shape)) for k, v in build(config).state_dict().items()}
    try:
        with safe_open(str(path), framework="pt") as f:
            header = {k: (f.get_slice(k).get_dtype(), tuple(f.get_slice(k).get_shape())) for k in f.keys()}
    except Exception as e:
        raise fail(f"tensor header unreadable ({e})") from e
    missing = sorted(set(expected) - set(header))
    unexpected = sorted(set(header) - set(expected))
    if missing or unexpected:
        raise fail(
            f"tensors do not match the {config.kind} config: missing {missing[:5]}{' ...' if len(missing) > 5 else ''}"
            f", unexpected {unexpected[:5]}{' ...' if len(unexpected) > 5 else ''}"
        )
    for k, (dtype, shape) in expected.items():
        stored, stored_shape = header[k]
        allowed = {_ST_DTYPES[dtype]} | ({"F16"} if storage == "float16" and dtype == torch.float32 else set())
        if stored_shape != shape or stored not in allowed:
            shown = next((str(t) for t, name in _ST_DTYPES.items() if name == stored), stored)
            raise fail(f"tensor {k!r} is {shown} {stored_shape}, the config needs {dtype} {shape}")

    try:
        with safe_open(str(path), framework="pt") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as e:
        raise fail(f"tensor data unreadable ({e})") from e
    model = build(config)
    for k, v in model.state_dict().items():
        t = tensors[k]
        if t.dtype == torch.float16 and v.dtype == torch.float32:
            t = tensors[k] = t.float()
        if t.is_floating_point() and not torch.isfinite(t).all():
            raise fail(f"tensor {k!r} has non-finite values")
    model.load_state_dict(tensors, strict=True)
    if tactics and not config.tactics:
        model = with_tactics(model)
        config = model.config
    model.eval()
    return model, config, extra
