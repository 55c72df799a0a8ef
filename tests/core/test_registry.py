"""The one registry: names, lookups of every kind, option checks from factory signatures, process snapshots."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from stridegen.core import registry
from stridegen.core.errors import ConfigError

PLUGIN = textwrap.dedent("""
    import numpy as np
    from stridegen.augment.corruptions.base import Corruption

    def _invert(image, level, rng):
        return (255 - image).astype(np.uint8)

    INVERT = Corruption(name="invert", params=(1, 2, 3, 4, 5), sources=("test",), description="negative image",
                        fn=_invert, random=False)

    class EchoJudge:
        def __init__(self, prefix: str = "echo") -> None:
            self.prefix = prefix
""")


@pytest.fixture()
def plugin(tmp_path, monkeypatch) -> str:
    (tmp_path / "sg_registry_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "sg_registry_plugin"


def test_every_builtin_target_imports():
    for kind, entries in registry.BUILTIN.items():
        for name in entries:
            assert callable(registry.resolve(kind, name)), (kind, name)


def test_unknown_names_and_kinds_are_config_errors():
    with pytest.raises(ConfigError, match=r"unknown detector 'nope'; available: \['mmdet3d', 'oracle', 'precomputed'"):
        registry.resolve("detector", "nope")
    with pytest.raises(ConfigError, match="unknown extension kind"):
        registry.resolve("detectors", "oracle")
    with pytest.raises(ConfigError, match="cannot import 'no_such_module_xyz'"):
        registry.resolve("detector", "no_such_module_xyz:Thing")
    with pytest.raises(ConfigError, match="has no attribute 'Nope'"):
        registry.resolve("detector", "stridegen.pipeline.detect.oracle:Nope")
    with pytest.raises(ConfigError, match=r"package\.module:Factory"):
        registry.register("detector", "bad", "not a target")


def test_options_are_checked_against_the_factory_signature():
    registry.validate_options("detector", "simulated", {"profile": "bevfusion", "seed": 3})
    with pytest.raises(registry.OptionError, match=r"unknown option\(s\) \['profle'\]"):
        registry.validate_options("detector", "simulated", {"profle": "bevfusion"})
    with pytest.raises(TypeError):  # an OptionError is a TypeError too, as a bad keyword call is
        registry.make("segmenter", "projected_box", {"no_such_option": 1})
    with pytest.raises(ConfigError, match="seed"):
        registry.validate_options("detector", "simulated", {"seed": "three"})


def test_runtime_registration_snapshot_and_restore():
    target = "stridegen.pipeline.detect.oracle:OracleDetector"
    registry.register("detector", "oracle_again", target)
    try:
        assert "oracle_again" in registry.names("detector")
        state = registry.snapshot()
        assert state == {"detector": {"oracle_again": target}}  # built-ins are not part of it
    finally:
        registry.unregister("detector", "oracle_again")
    assert "oracle_again" not in registry.names("detector") and registry.snapshot() == {}
    registry.restore(state)
    try:
        assert registry.make("detector", "oracle_again").name == "oracle"
    finally:
        registry.unregister("detector", "oracle_again")


def test_overriding_a_builtin_and_unregistering_restores_it():
    registry.register("segmenter", "lidar", "stridegen.pipeline.segment.projected_box:ProjectedBoxSegmenter")
    try:
        assert registry.make("segmenter", "lidar").name == "projected_box"
    finally:
        registry.unregister("segmenter", "lidar")
    assert registry.make("segmenter", "lidar").name == "lidar"


def test_corruption_and_judge_plugins_by_module_string(plugin):
    from stridegen.augment.corruptions import canonical_name, get_corruption
    from stridegen.eval.judges.methods import get_method

    name = f"{plugin}:INVERT"
    assert canonical_name(name) == name
    image = np.full((4, 5, 3), 10, dtype=np.uint8)
    out = get_corruption(name).apply(image, 2, np.random.default_rng(0))
    assert (out == 245).all()
    assert get_method(f"{plugin}:EchoJudge").prefix == "echo"
    registry.register("judge", "echo", f"{plugin}:EchoJudge")
    try:
        assert get_method("echo").prefix == "echo"
    finally:
        registry.unregister("judge", "echo")
