"""Shard identity on every read (issue 33): a shard that is not the one its manifest lists, or a manifest edited by
hand, is refused by every command that reads the dataset, with one line naming the file and what differs; counts
are read from the shards. Before: another build's scene-0001.h5 copied over this one's gave `eval lsr --dataset`
exit 0 with LSR 0.404 (1.000 before), `inspect` and `report` exit 0; a manifest claiming 100 more QA was printed as
the truth by `inspect` and `inspect --verify`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.shards.integrity import DIGEST_ATTR, content_digest
from stridegen.shards.reader import open_dataset
from stridegen.shards.schema import ShardError
from tests.conftest import SMALL_BUILD

SCENE = "scene-0001"


@pytest.fixture(scope="module")
def other_build(tmp_path_factory) -> Path:
    """The two-scene build's config over another synthetic log (seed 6): same scene names, same config hash."""
    from stridegen.jobs.build import run_build
    from stridegen.logs.synthetic.generator import generate_dataset
    from stridegen.run.config import load_build_config

    root = tmp_path_factory.mktemp("other-build")
    generate_dataset(root / "log", progress=False, overwrite=True, scenes=2, seconds=8.0, seed=6, width=320, height=180)
    result = run_build(root / "log", root / "ds", load_build_config(None, SMALL_BUILD))
    assert result.ok
    return root / "ds"


@pytest.fixture(scope="module")
def answers(two_scene_dataset, tmp_path_factory) -> Path:
    """The dataset's own answers (LSR 1.000 on it)."""
    from stridegen.jobs.export import run_export

    out = tmp_path_factory.mktemp("identity-answers") / "answers"
    assert run_export(two_scene_dataset, out, "answers").ok
    return out / "answers_spatiotemporal.jsonl"


def _copy(dataset: Path, tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    shutil.copytree(dataset, out)
    return out


def _edit_manifest(ds: Path, edit) -> None:
    path = ds / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True))


def _match_files(ds: Path) -> None:
    """The manifest's sizes and sha256 set to the files' (as if the shards had been written so)."""
    sizes = {p.name: p.stat().st_size for p in (ds / "shards").glob("*.h5")}

    def match(m) -> None:
        for e in m["shards"]:
            e["bytes"] = sizes[Path(e["file"]).name]
            e["sha256"] = hashlib.sha256((ds / e["file"]).read_bytes()).hexdigest()
        m["totals"]["bytes"] = sum(sizes.values())

    _edit_manifest(ds, match)


def _commands(ds: Path, answers: Path, tmp: Path) -> dict[str, list[str]]:
    return {
        "eval lsr": ["eval", "lsr", "--dataset", str(ds), "--pred", str(answers), "--out", str(tmp / "lsr")],
        "inspect": ["inspect", str(ds)],
        "inspect --verify": ["inspect", str(ds), "--verify"],
        "report": ["report", str(ds), "--out", str(tmp / "report")],
    }


def _refused_by_every_command(ds: Path, answers: Path, tmp: Path, *expected: str) -> None:
    for name, args in _commands(ds, answers, tmp).items():
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (name, result.output)
        [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        for text in expected:
            assert text in line, (name, line)


def test_clean_dataset_reads_and_scores_one(two_scene_dataset, answers, tmp_path):
    """The control: every command reads the intact dataset (LSR of its own answers: 1.000)."""
    for name, args in _commands(two_scene_dataset, answers, tmp_path).items():
        result = CliRunner().invoke(app, [*args, "--json"] if name == "eval lsr" else args)
        assert result.exit_code == 0, (name, result.output)
        if name == "eval lsr":
            assert json.loads(result.stdout[: result.stdout.rindex("}") + 1])["avg"]["lsr"] == pytest.approx(1.0)


def test_a_shard_of_another_build_is_refused(two_scene_dataset, other_build, answers, tmp_path):
    ds = _copy(two_scene_dataset, tmp_path)
    shard = ds / "shards" / f"{SCENE}.h5"
    shutil.copyfile(other_build / "shards" / f"{SCENE}.h5", shard)
    _refused_by_every_command(ds, answers, tmp_path, f"error: {shard}: ", "size", "differs from the manifest's")
    with open_dataset(ds) as dataset:
        with pytest.raises(ShardError, match="size") as info:
            dataset.scene(SCENE).qa  # noqa: B018 (the read is the test)
        assert info.value.path == str(shard)
        dataset.scene("scene-0000").check()  # the other shard is this build's: read


def test_a_foreign_shard_of_the_listed_size_is_refused_by_its_digest(two_scene_dataset, other_build, answers, tmp_path):
    """The size can match (the manifest's bytes set to the copy's, as a same-sized shard would): the content digest
    differs, and says so."""
    ds = _copy(two_scene_dataset, tmp_path)
    shard = ds / "shards" / f"{SCENE}.h5"
    shutil.copyfile(other_build / "shards" / f"{SCENE}.h5", shard)
    size = shard.stat().st_size

    def same_size(manifest) -> None:
        entry = next(s for s in manifest["shards"] if s["scenes"] == [SCENE])
        manifest["totals"]["bytes"] += size - entry["bytes"]
        entry["bytes"] = size

    _edit_manifest(ds, same_size)
    for name, args in _commands(ds, answers, tmp_path).items():
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (name, result.output)
        stderr = " ".join(result.stderr.split())
        assert stderr.startswith(f"error: {shard}: ") and "not the shard the manifest lists" in stderr, (name, stderr)
        assert "content digest" in stderr, (name, stderr)
        assert ("sha256" in stderr) == (name == "inspect --verify"), (name, stderr)  # --verify hashes the file first


def test_a_manifest_claiming_more_qa_is_refused(two_scene_dataset, answers, tmp_path):
    """100 more QA in the shard's entry, the totals and the QA summary (consistent among themselves): the shard's own
    count says otherwise. 100 more in the totals alone: the manifest does not add up."""
    ds = _copy(two_scene_dataset, tmp_path)
    shard = ds / "shards" / f"{SCENE}.h5"

    def more_qa(manifest) -> None:
        entry = next(s for s in manifest["shards"] if s["scenes"] == [SCENE])
        entry["counts"]["qa"] += 100
        manifest["totals"]["qa"] += 100
        manifest["qa"]["total"] += 100

    _edit_manifest(ds, more_qa)
    stored = 0
    with h5py.File(shard, "r") as f:
        stored = int(f["scenes"][SCENE].attrs["count_qa"])
    _refused_by_every_command(
        ds,
        answers,
        tmp_path,
        str(shard),
        f"the manifest's count 'qa' of scene '{SCENE}' is {stored + 100}, the shard holds {stored}",
    )

    ds2 = _copy(two_scene_dataset, tmp_path / "b")
    _edit_manifest(ds2, lambda m: m["totals"].update(qa=m["totals"]["qa"] + 100))
    _refused_by_every_command(ds2, answers, tmp_path, str(ds2 / "manifest.json"), "totals.qa is")


def test_inspect_prints_the_shards_counts(two_scene_dataset):
    """The totals line is the sum of the shards' own counts (equal to the manifest's on an intact dataset)."""
    result = CliRunner().invoke(app, ["inspect", str(two_scene_dataset)])
    assert result.exit_code == 0
    manifest = json.loads((two_scene_dataset / "manifest.json").read_text())
    qa = 0
    for shard in manifest["shards"]:
        with h5py.File(two_scene_dataset / shard["file"], "r") as f:
            qa += int(f["scenes"][shard["scenes"][0]]["qa/answer"].shape[0])
    assert f"qa {qa}" in " ".join(result.stdout.split()) and qa == manifest["totals"]["qa"] > 0


def test_the_digest_binds_scene_config_checksums_and_counts(two_scene_dataset, tmp_path):
    """The stored digest is content_digest of the shard's own attributes, and a digest edited in the shard alone (or
    in shard and manifest alike, without the checksums) is refused."""
    manifest = json.loads((two_scene_dataset / "manifest.json").read_text())
    entry = next(s for s in manifest["shards"] if s["scenes"] == [SCENE])
    with h5py.File(two_scene_dataset / entry["file"], "r") as f:
        group = f["scenes"][SCENE]
        checksums = dict(
            zip(group.attrs["checksum_paths"].tolist(), group.attrs["checksum_crc32"].tolist(), strict=True)
        )
        counts = {k[6:]: int(v) for k, v in group.attrs.items() if k.startswith("count_")}
        assert group.attrs[DIGEST_ATTR] == entry["content_digest"]
    want = content_digest(SCENE, manifest["config_hash"], {str(k): int(v) for k, v in checksums.items()}, counts)
    assert entry["content_digest"] == want
    assert content_digest("scene-0000", manifest["config_hash"], checksums, counts) != want
    assert content_digest(SCENE, "other", checksums, counts) != want
    assert content_digest(SCENE, manifest["config_hash"], checksums, {**counts, "qa": counts["qa"] + 1}) != want

    ds = _copy(two_scene_dataset, tmp_path)
    shard = ds / entry["file"]
    with h5py.File(shard, "r+") as f:  # a forged digest, written into the shard and the manifest
        f["scenes"][SCENE].attrs[DIGEST_ATTR] = "0" * 64
    size = shard.stat().st_size

    def forged(m) -> None:
        e = next(s for s in m["shards"] if s["scenes"] == [SCENE])
        m["totals"]["bytes"] += size - e["bytes"]
        e.update(content_digest="0" * 64, bytes=size, sha256=hashlib.sha256(shard.read_bytes()).hexdigest())

    _edit_manifest(ds, forged)
    with open_dataset(ds) as dataset, pytest.raises(ShardError, match="do not give the content digest it stores"):
        dataset.scene(SCENE).qa  # noqa: B018


def test_a_v3_shard_is_checked_by_what_it_has(two_scene_dataset, tmp_path):
    """A v3 shard (no content digest) still reads; its size, config hash and counts are still checked."""
    ds = _copy(two_scene_dataset, tmp_path)
    for path in sorted((ds / "shards").glob("*.h5")):
        with h5py.File(path, "r+") as f:
            f.attrs["schema_version"] = np.int64(3)
            del f["scenes"][path.stem].attrs[DIGEST_ATTR]
    _edit_manifest(ds, lambda m: [e.pop("content_digest") for e in m["shards"]])
    _match_files(ds)
    with open_dataset(ds, verify=True) as dataset:
        for view in dataset:
            view.check()
    with h5py.File(ds / "shards" / f"{SCENE}.h5", "r+") as f:
        f.attrs["config_hash"] = "another"
    _match_files(ds)
    with open_dataset(ds) as dataset, pytest.raises(ShardError, match="config hash another"):
        dataset.scene(SCENE).qa  # noqa: B018
