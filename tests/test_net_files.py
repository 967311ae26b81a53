"""Crafted net files (issue 62, cause O): a header whose config asks for a huge net, or whose tensors
do not match its config, is refused with one ``ValueError`` naming the file and the field before any
weight is allocated (``nets.config`` bounds every size field; ``nets.io.load`` checks the header's
shapes against the config before building the model)."""

from __future__ import annotations

import json
import time

import pytest
import torch
from pydantic import ValidationError
from safetensors.torch import save as st_save

from nets import io as nio
from nets.config import MAX_BLOCKS, MAX_CHANNELS, NetConfig, preset


def _meta(config: dict) -> dict[str, str]:
    return {"format": nio.FORMAT, "format_version": str(nio.FORMAT_VERSION),
            "encoding_version": str(nio.ENCODING_VERSION), "config": json.dumps(config),
            "preset": "custom", "extra": "{}", "storage_dtype": "float32"}


@pytest.mark.parametrize("field, value", [
    ("blocks", 100_000), ("channels", 1_000_000), ("value_hidden", 10**9), ("in_planes", 10**6),
])
def test_a_huge_header_config_is_refused_naming_the_field(tmp_path, field, value):
    config = {"kind": "upper", "blocks": 6, "channels": 64, "value_hidden": 64, field: value}
    path = tmp_path / "huge.safetensors"
    path.write_bytes(st_save({"x": torch.zeros(4)}, metadata=_meta(config)))  # a few hundred bytes
    assert path.stat().st_size < 10_000
    t0 = time.monotonic()
    with pytest.raises(ValueError, match=rf"huge\.safetensors: invalid net config: field '{field}': .*less than or equal") as info:
        nio.load(path)
    assert "\n" not in str(info.value) and time.monotonic() - t0 < 5


def test_a_lower_net_embedding_is_bounded(tmp_path):
    config = {"kind": "lower", "blocks": 2, "channels": 8, "value_hidden": 8, "action_embedding": 10**7}
    path = tmp_path / "lower.safetensors"
    path.write_bytes(st_save({"x": torch.zeros(4)}, metadata=_meta(config)))
    with pytest.raises(ValueError, match=r"field 'action_embedding'"):
        nio.load(path)


def test_the_largest_config_in_bounds_is_refused_by_its_header_shapes_without_allocating(tmp_path, monkeypatch):
    """A config at the bounds (about 3 * 10^8 weights, 1.2 GB) in a 1 kB file: the header's tensors are
    compared with the config's before the model is built, so no weight is allocated (the model is only
    built on the "meta" device, which has no storage)."""
    from nets import model

    devices = []

    def spy(config):
        devices.append(torch.empty(0).device.type)
        return model.build(config)

    monkeypatch.setattr(nio, "build", spy)
    config = {"kind": "upper", "blocks": MAX_BLOCKS, "channels": MAX_CHANNELS, "value_hidden": 4096}
    path = tmp_path / "big.safetensors"
    path.write_bytes(st_save({"trunk.0.0.weight": torch.zeros(2, 2)}, metadata=_meta(config)))
    t0 = time.monotonic()
    with pytest.raises(ValueError, match=r"big\.safetensors: tensors do not match the upper config: missing"):
        nio.load(path)
    assert set(devices) <= {"meta"} and time.monotonic() - t0 < 10


def test_a_mis_shaped_header_tensor_is_refused_before_reading(tmp_path):
    from nets.model import build

    net = build(NetConfig(kind="slm", blocks=1, channels=8, value_hidden=8))
    tensors = {k: v.clone() for k, v in net.state_dict().items()}
    tensors["value.fc2.bias"] = torch.zeros(7)
    path = tmp_path / "shape.safetensors"
    path.write_bytes(st_save(tensors, metadata=_meta(net.config.model_dump())))
    with pytest.raises(ValueError, match=r"shape\.safetensors: tensor 'value\.fc2\.bias' is torch\.float32 \(7,\), "
                                         r"the config needs torch\.float32 \(1,\)"):
        nio.load(path)


def test_every_size_field_has_an_upper_bound_above_the_paper_preset():
    for kind in ("slm", "upper", "lower"):
        paper = preset(kind, "paper")
        for field in ("blocks", "channels", "value_hidden", "action_embedding", "in_planes"):
            limit = [m.le for m in NetConfig.model_fields[field].metadata if getattr(m, "le", None) is not None]
            assert limit and limit[0] >= 2 * max(getattr(paper, field), 1), field
    with pytest.raises(ValidationError):
        NetConfig(kind="slm", blocks=MAX_BLOCKS + 1, channels=8, value_hidden=8)
