"""`stridegen report`: the HTML page of a built dataset and its evaluations (stridegen.viz.report).

Content checks parse the page with the standard library's HTML parser and compare its numbers with the manifest
and with counts recomputed here from the shard tables; the evaluation inputs are written by the real commands
(`eval lsr`, `detect` + `eval detection`, `track` + `eval tracking`, `judge agreement`). The browser test opens
the page in headless Chromium (Debian package ``chromium``; skipped when it is not installed) and saves its
screenshot as test-output/report.png.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import subprocess
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.cli.report import report
from stridegen.core.errors import DataFormatError
from stridegen.shards.reader import open_dataset
from stridegen.viz.report import write_report
from stridegen.viz.report.gallery import build_gallery
from stridegen.viz.report.page import SECTIONS
from stridegen.viz.report.results import classify
from stridegen.viz.report.stats import DISTRIBUTIONS, Histogram
from stridegen.viz.report.svg import nice_ticks, polar_histogram
from tests.shared_data import REPO

# The page tests read the session's built dataset and evaluations made by the real commands.
pytestmark = pytest.mark.slow

TEST_OUTPUT = REPO / "test-output"
SAMPLES = 6
runner = CliRunner()


# ---------------------------------------------------------------------------------------------- a tiny HTML DOM
class Element:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Element | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Element | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Element):
                yield from c.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Element]:
        def ok(e: Element) -> bool:
            return (tag is None or e.tag == tag) and all(
                e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()
            )

        return [e for e in self.iter() if ok(e)]

    def by_id(self, element_id: str) -> Element:
        found = [e for e in self.iter() if e.attrs.get("id") == element_id]
        assert len(found) == 1, f"{len(found)} elements with id {element_id!r}"
        return found[0]


class _Parser(HTMLParser):
    VOID = frozenset({"img", "meta", "br", "hr", "input", "link", "source"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {}, None)
        self.node = self.root

    def handle_starttag(self, tag, attrs):
        el = Element(tag, {k: v or "" for k, v in attrs}, self.node)
        self.node.children.append(el)
        if tag not in self.VOID:
            self.node = el

    def handle_startendtag(self, tag, attrs):
        self.node.children.append(Element(tag, {k: v or "" for k, v in attrs}, self.node))

    def handle_endtag(self, tag):
        node = self.node
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.node = node.parent

    def handle_data(self, data):
        self.node.children.append(data)


def parse(html: str) -> Element:
    p = _Parser()
    p.feed(html)
    return p.root


def table_rows(page: Element, table_id: str) -> dict[str, list[str]]:
    """Body rows of a table by their first cell: {label: [other cells' text]}."""
    table = page.by_id(table_id)
    rows = {}
    for tr in table.find_all("tr"):
        cells = [c.text().strip() for c in tr.children if isinstance(c, Element) and c.tag == "td"]
        if cells:
            rows[cells[0]] = cells[1:]
    return rows


def number(text: str) -> int:
    return int(text.split()[0].replace(",", ""))


# ---------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def built(two_scene_log: Path, two_scene_dataset: Path) -> tuple[Path, Path]:
    """(log root, dataset): a two-scene synthetic log built with projected-box masks (the session's, in
    tests/conftest.py, which asserts the build ok with QA)."""
    return two_scene_log, two_scene_dataset


def _lsr_predictions(dataset: Path, path: Path) -> None:
    """The dataset's own spatiotemporal answers, every third one with its numbers doubled (so some fail)."""
    lines = []
    with open_dataset(dataset) as ds:
        for scene in ds:
            qa = scene.qa
            for i in np.flatnonzero(np.asarray(qa.category) == "spatiotemporal").tolist():
                answer = str(qa.answer[i])
                if i % 3 == 0:
                    answer = re.sub(r"\d+(\.\d+)?", lambda m: f"{2 * float(m.group()):.2f}", answer)
                lines.append(json.dumps({"question_id": str(qa.question_id[i]), "pred": answer}))
    path.write_text("\n".join(lines) + "\n")


def _judge_run(folder: Path) -> None:
    """summary.json (the runner's own summarise) and verdicts.jsonl of 60 scored items, plus human ratings."""
    from stridegen.eval.judges.runner import summarise

    folder.mkdir(parents=True)
    verdicts = []
    for i in range(60):
        category = ("object_spatial", "ego_spatial", "spatiotemporal")[i % 3]
        score = 1 + (i * 7) % 10  # 1..10
        verdicts.append(
            {
                "id": f"q{i}",
                "status": "ok",
                "category": category,
                "groups": [f"category:{category}"],
                "method": "codalm",
                "score": score,
                "score_100": (score - 1) / 9 * 100,
            }
        )
    summary = summarise(verdicts, ci_n_boot=200)
    summary.update({"method": "codalm", "mode": "robust", "model": "scripted"})
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "verdicts.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    human = [{"id": v["id"], "score": min(10, v["score"] + (i % 2))} for i, v in enumerate(verdicts)]
    (folder / "human.jsonl").write_text("".join(json.dumps(h) + "\n" for h in human))


def _metrics_details(log: Path, pred: Path, out: Path) -> None:
    """metrics_details.json in the devkit layout ("class:threshold" -> curves), from the library's metric data."""
    from stridegen.eval.detection.data import DetectionConfig
    from stridegen.eval.detection.evaluate import evaluate_detection
    from stridegen.eval.detection.gt import filter_eval_boxes, load_detection_gt
    from stridegen.formats.nuscenes_results import load_results

    cfg = DetectionConfig.cvpr_2019()
    gt, context = load_detection_gt(log, None)
    loaded = load_results(pred, known_sample_tokens=context.sample_tokens)
    _, md = evaluate_detection(
        filter_eval_boxes(gt, context, cfg.class_range)[0],
        filter_eval_boxes(loaded.boxes, context, cfg.class_range)[0],
        cfg,
    )

    def clean(values):
        return [None if isinstance(v, float) and math.isnan(v) else v for v in values]

    out.write_text(
        json.dumps({f"{c}:{th}": {k: clean(v) for k, v in m.to_dict().items()} for (c, th), m in md.items()})
    )


@pytest.fixture(scope="module")
def evals(built, tmp_path_factory) -> Path:
    """A folder of every kind of evaluation result, written by the real commands."""
    log, dataset = built
    root = tmp_path_factory.mktemp("evals")
    out = root / "results"
    pred = root / "pred.jsonl"
    _lsr_predictions(dataset, pred)
    steps = [
        ["eval", "lsr", "--dataset", str(dataset), "--pred", str(pred), "--out", str(out / "lsr")],
        ["detect", str(log), "--detector", "simulated", "--out", str(root / "det.json")],
        ["eval", "detection", "--gt", str(log), "--pred", str(root / "det.json"), "--out", str(out / "detection.json")],
        ["track", str(log), "--detector", "simulated", "--out", str(root / "trk.json")],
        ["eval", "tracking", "--gt", str(log), "--pred", str(root / "trk.json"), "--out", str(out / "tracking.json")],
    ]
    for args in steps:
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
    _metrics_details(log, root / "det.json", out / "metrics_details.json")
    _judge_run(out / "judge")
    result = runner.invoke(
        app,
        [
            "judge",
            "agreement",
            "--judge",
            str(out / "judge" / "verdicts.jsonl"),
            "--human",
            str(out / "judge" / "human.jsonl"),
            "--n-boot",
            "100",
            "--out",
            str(out / "agreement.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def page_file(built, evals, tmp_path_factory) -> Path:
    _, dataset = built
    out = tmp_path_factory.mktemp("page") / "report.html"
    result = write_report(dataset, out, [evals], samples=SAMPLES, seed=3)
    assert result.path == out and result.bytes == out.stat().st_size
    assert result.evaluations == ["lsr", "detection", "tracking", "judges", "agreement"]  # the page's order
    return out


@pytest.fixture(scope="module")
def page(page_file) -> Element:
    return parse(page_file.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def manifest(built) -> dict:
    return json.loads((built[1] / "manifest.json").read_text())


# ---------------------------------------------------------------------------------------------- content
def test_every_section_is_present_in_order(page):
    sections = [s.attrs["id"] for s in page.find_all("section")]
    assert sections == [sid for sid, _ in SECTIONS]
    links = [a.attrs["href"] for a in page.find_all("nav")[0].find_all("a")]
    assert links == [f"#{sid}" for sid, _ in SECTIONS]
    charts = {f.attrs["data-chart"] for f in page.find_all("figure")}
    for key in (
        "distance",
        "bearing",
        "clock",
        "speed",
        "length",
        "width",
        "height",
        "funnel",
        "funnel-class",
        "funnel-band",
    ):
        assert key in charts, key


def test_overview_numbers_equal_the_manifest(page, manifest, built):
    totals = manifest["totals"]
    tiles = {d.attrs["data-key"]: number(d.find_all("b")[0].text()) for d in page.find_all("div", **{"class": "stat"})}
    with open_dataset(built[1]) as ds:
        cameras = {str(c) for scene in ds for c in scene.cameras.channel}
    assert tiles == {
        "scenes": totals["scenes"],
        "frames": totals["frames"],
        "keyframes": totals["keyframes"],
        "cameras": len(cameras),
        "images": totals["images"],
        "tracks": totals["tracks"],
        "masks": totals["masks"],
        "visible masks": totals["visible_masks"],
        "regions": totals["regions"],
        "QA": totals["qa"],
    }
    scenes = table_rows(page, "table-scenes")
    headers = [th.text() for th in page.by_id("table-scenes").find_all("th")]
    keys = {
        "frames": "frames",
        "keyframes": "keyframes",
        "images": "images",
        "tracks": "tracks",
        "masks": "masks",
        "visible": "visible_masks",
        "regions": "regions",
        "QA": "qa",
    }
    for shard in manifest["shards"]:
        (name,) = shard["scenes"]
        row = dict(zip(headers[1:], scenes[name], strict=True))
        for header, key in keys.items():
            assert number(row[header]) == shard["counts"][key], (name, header)


def test_qa_tables_4_and_5_equal_the_manifest_and_the_shards(page, manifest, built):
    qa = manifest["qa"]
    by_category = table_rows(page, "table-qa-category")
    assert {k: number(v[0]) for k, v in by_category.items() if k != "total"} == qa["by_category"]
    assert number(by_category["total"][0]) == qa["total"]
    # samples: distinct keyframe images (spatial categories) and groups (spatiotemporal), recounted from the QA
    images: dict[str, set] = {}
    with open_dataset(built[1]) as ds:
        for scene in ds:
            t = scene.qa
            for i in range(len(t)):
                key = (
                    str(t.group_id[i])
                    if t.category[i] == "spatiotemporal"
                    else (scene.name, int(t.keyframe_index[i]), int(t.channel_index[i]))
                )
                images.setdefault(str(t.category[i]), set()).add(key)
    assert {k: number(v[2]) for k, v in by_category.items() if k != "total"} == {k: len(v) for k, v in images.items()}
    headers = [th.text() for th in page.by_id("table-qa-class").find_all("th")]
    by_class = table_rows(page, "table-qa-class")
    for cls, cells in by_class.items():
        row = dict(zip(headers[1:], cells, strict=True))
        if cls == "total":
            assert number(row["total"]) == qa["total"]
            continue
        for cat, per in qa["by_category_and_class"].items():
            assert number(row[cat]) == per.get(cls, 0), (cls, cat)
        assert number(row["total"]) == qa["by_class"][cls]


def test_yes_no_and_funnel_tables_equal_counts_of_the_tables(page, manifest, built):
    labels: dict[str, Counter] = {}
    depth_bands = Counter()
    with open_dataset(built[1]) as ds:
        for scene in ds:
            qa = scene.qa
            for p, lab in zip(qa.predicate.tolist(), qa.gt_label.tolist(), strict=True):
                if lab:
                    labels.setdefault(p, Counter())[lab] += 1
            depth = np.asarray(scene.masks.depth_m)
            depth_bands["0-10 m"] += int(((depth >= 0) & (depth < 10)).sum())
    rows = table_rows(page, "table-yes-no")
    assert set(rows) == set(labels)
    for pred, cells in rows.items():
        assert number(cells[1]) == sum(labels[pred].values())
        for lab, n in labels[pred].items():
            assert f"{lab} {n:,}" in cells[2], (pred, lab)
    totals = manifest["totals"]
    funnel = table_rows(page, "table-funnel-class")["all"]
    assert number(funnel[0]) == totals["masks"]
    assert number(funnel[1]) == totals["mask_pass_box_iou"]  # the first step is the box-IoU rule alone
    assert number(funnel[4]) == totals["visible_masks"]
    steps = [number(c) for c in funnel]
    assert steps == sorted(steps, reverse=True)  # cumulative steps never grow
    bands = table_rows(page, "table-funnel-band")
    assert number(bands["all"][0]) == totals["masks"]
    assert number(bands.get("0-10 m", ["0"])[0]) == depth_bands["0-10 m"]


def test_distribution_counts_equal_the_qa_of_their_predicate(page, built):
    counts = Counter()
    with open_dataset(built[1]) as ds:
        for scene in ds:
            qa = scene.qa
            ok = (np.asarray(qa.horizon_s) == 0) & np.isfinite(np.asarray(qa.gt_value, dtype=float))
            counts.update(np.asarray(qa.predicate)[ok].tolist())
    for spec in DISTRIBUTIONS:
        if not counts[spec.predicate]:
            continue
        caption = page.find_all("figure", data_chart=spec.key)[0].find_all("figcaption")[0].text()
        assert f"{counts[spec.predicate]:,} values" in caption, (spec.key, caption)


def test_gallery_images_decode_and_every_turn_is_a_dataset_question(page, built):
    cards = page.find_all("article")
    assert len(cards) == SAMPLES
    kinds = Counter(c.attrs["data-kind"] for c in cards)
    assert kinds == {"spatial": SAMPLES // 2, "spatiotemporal": SAMPLES // 2}
    questions = {}
    with open_dataset(built[1]) as ds:
        for scene in ds:
            qa = scene.qa
            for i in range(len(qa)):
                questions[str(qa.question_id[i])] = (
                    str(qa.question[i]),
                    str(qa.answer[i]),
                    str(qa.predicate[i]),
                    str(qa.object_class[i]),
                    scene.name,
                )
    for card in cards:
        images = card.find_all("img")
        assert len(images) == (4 if card.attrs["data-kind"] == "spatiotemporal" else 1)
        for img in images:
            prefix = "data:image/jpeg;base64,"
            assert img.attrs["src"].startswith(prefix)
            data = np.frombuffer(base64.b64decode(img.attrs["src"][len(prefix) :]), dtype=np.uint8)
            pixels = cv2.imdecode(data, cv2.IMREAD_COLOR)
            assert pixels is not None and pixels.shape[1] == int(img.attrs["width"]) <= 480
            assert pixels.std() > 5  # a picture, not a flat fill
        turns = card.find_all("li")
        assert turns
        for li in turns:
            question, answer, predicate, cls, scene = questions[li.attrs["title"]]
            assert li.find_all("span", **{"class": "q"})[0].text() == question
            assert li.find_all("span", **{"class": "a"})[0].text() == answer
            assert (li.attrs["data-predicate"], li.attrs["data-class"]) == (predicate, cls)
            assert card.attrs["data-scene"] == scene


def test_gallery_filters_offer_the_values_of_the_shown_turns(page):
    turns = page.by_id("gallery").find_all("li")
    expected = {
        "category": {t.attrs["data-category"] for t in turns},
        "predicate": {t.attrs["data-predicate"] for t in turns},
        "class": {t.attrs["data-class"] for t in turns},
        "scene": {c.attrs["data-scene"] for c in page.find_all("article")},
    }
    for name, values in expected.items():
        select = page.by_id(f"filter-{name}")
        options = [o.attrs["value"] for o in select.find_all("option")]
        assert options[0] == "" and set(options[1:]) == values, name
    assert page.by_id("gallery-count").text() == f"{SAMPLES} of {SAMPLES} samples"


def test_page_is_self_contained(page_file, page, built):
    html = page_file.read_text(encoding="utf-8")
    assert str(built[1].resolve()) not in html and f"{built[1].name} · " in html  # the header names the folder only
    csp = page.find_all("meta", http_equiv="Content-Security-Policy")
    assert csp and "default-src 'none'" in csp[0].attrs["content"]
    for el in page.iter():
        for attr in ("src", "href"):
            value = el.attrs.get(attr, "")
            assert not value or value.startswith(("data:", "#")), (el.tag, value[:80])
    assert "<link" not in html and "@import" not in html and "url(" not in html
    # every chart coordinate is a number (a NaN in an SVG attribute is a console error in the browser)
    assert not re.search(r'\b(points|d|x|y|cx|cy|r|width|height|x1|x2|y1|y2)="[^"]*\b(nan|inf)\b', html)


def test_evaluation_blocks_show_the_numbers_of_their_files(page, evals):
    blocks = {b.attrs["data-kind"]: b for b in page.find_all("div") if "eval" in b.attrs.get("class", "").split()}
    assert set(blocks) == {"lsr", "detection", "tracking", "judges", "agreement"}
    order = [b.attrs["data-kind"] for b in page.find_all("div") if "eval" in b.attrs.get("class", "").split()]
    assert order == ["lsr", "detection", "tracking", "judges", "agreement"]
    lsr = json.loads((evals / "lsr" / "metrics.json").read_text())
    key = blocks["lsr"].attrs["id"]
    avg = next(r for r in lsr["lsr"] if r["time"] == "avg")
    assert table_rows(page, f"{key}-rates")["lsr"][-1] == f"{100 * avg['success_rate']:.1f}% ({avg['sample_size']})"
    assert blocks["lsr"].find_all("figure", data_chart=f"{key}-polar")[0].find_all("img")  # lsr_polar.png inline
    det = json.loads((evals / "detection.json").read_text())
    key = blocks["detection"].attrs["id"]
    summary = dict(
        zip(
            [th.text() for th in page.by_id(f"{key}-summary").find_all("th")],
            [td.text() for td in page.by_id(f"{key}-summary").find_all("td")],
            strict=True,
        )
    )
    assert summary["mAP"] == f"{det['mean_ap']:.4f}" and summary["NDS"] == f"{det['nd_score']:.4f}"
    assert len([f for f in blocks["detection"].find_all("figure") if "-pr-" in f.attrs["data-chart"]]) == 4
    trk = json.loads((evals / "tracking.json").read_text())
    key = blocks["tracking"].attrs["id"]
    assert table_rows(page, f"{key}-classes")["all"][0] == f"{trk['amota']:.3f}"
    assert blocks["tracking"].find_all("figure", data_chart=f"{key}-mota")
    judges = json.loads((evals / "judge" / "summary.json").read_text())
    key = blocks["judges"].attrs["id"]
    groups = table_rows(page, f"{key}-groups")
    assert number(groups["overall"][0]) == judges["overall"]["n"] == 60
    assert groups["overall"][1] == f"{judges['overall']['mean_100']:.2f}"
    assert blocks["judges"].find_all("figure", data_chart=f"{key}-scores")
    agreement = json.loads((evals / "agreement.json").read_text())
    key = blocks["agreement"].attrs["id"]
    assert table_rows(page, f"{key}-metrics")["pearson"][0] == f"{agreement['metrics']['pearson']['value']:.4f}"


def test_same_inputs_give_the_same_bytes(built, tmp_path):
    a = write_report(built[1], tmp_path / "a.html", samples=4, seed=1)
    b = write_report(built[1], tmp_path / "b.html", samples=4, seed=1)
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()
    assert a.samples == 4 and a.bytes == b.bytes
    write_report(built[1], tmp_path / "c.html", samples=4, seed=2)
    assert (tmp_path / "c.html").read_bytes() != (tmp_path / "a.html").read_bytes()  # the seed picks the samples


def test_without_evaluations_or_gallery_the_sections_still_exist(built, tmp_path):
    write_report(built[1], tmp_path / "r.html", samples=0)
    page = parse((tmp_path / "r.html").read_text())
    assert [s.attrs["id"] for s in page.find_all("section")] == [sid for sid, _ in SECTIONS]
    assert not page.find_all("article")
    assert "no evaluation results given" in page.by_id("evaluations").text()


def test_gallery_sample_count_is_capped_by_the_dataset(built):
    with open_dataset(built[1]) as ds:
        gallery = build_gallery(ds, 10_000, seed=0, width=160)
    assert len(gallery.cards) == gallery.samples_seen  # every sample of every scene
    assert gallery.scenes_read == 2
    assert all(int(c.image_size[0]) <= 160 for c in gallery.cards)


# ---------------------------------------------------------------------------------------------- errors
def test_a_file_that_is_no_result_is_an_error_naming_it(built, tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text(json.dumps({"hello": 1}))
    with pytest.raises(DataFormatError, match=r"notes\.json: not an evaluation result"):
        write_report(built[1], tmp_path / "r.html", [bad])
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(DataFormatError, match=r"broken\.json: line 1: not valid JSON"):
        write_report(built[1], tmp_path / "r.html", [broken])
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "notes.json").write_text(bad.read_text())  # in a folder: skipped, and then nothing is left
    with pytest.raises(DataFormatError, match="folder: folder holds no evaluation result"):
        write_report(built[1], tmp_path / "r.html", [folder])
    assert not (tmp_path / "r.html").exists()


def test_cli_writes_the_report_and_says_what_is_in_it(built, evals, tmp_path):
    import typer

    cli = typer.Typer()
    cli.command("report")(report)
    cli.command("noop")(lambda: None)
    out = tmp_path / "r.html"
    result = runner.invoke(cli, ["report", str(built[1]), "--eval", str(evals / "lsr"), "--out", str(out), "-n", "2"])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.stdout and "2 gallery samples; evaluations: lsr" in result.stdout
    bad = runner.invoke(
        cli, ["report", str(built[1]), "--eval", str(tmp_path / "missing.json"), "--out", str(tmp_path / "x.html")]
    )
    assert bad.exit_code == 2  # bad input (stridegen.cli.errors)
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "missing.json: no such file" in lines[0]
    assert not (tmp_path / "x.html").exists()


# ---------------------------------------------------------------------------------------------- building blocks
def test_histogram_bins_overflow_and_moments():
    spec = DISTRIBUTIONS[0]  # distance, 2.5 m bins from 0 to 80 m
    hist = Histogram(spec)
    hist.add(np.array([0.0, 2.4, 2.5, 79.9, 250.0, np.nan]), np.array(["a", "a", "a", "b", "b", "b"], dtype=object))
    assert hist.counts["a"][:2].tolist() == [2, 1] and hist.counts["a"].sum() == 3
    assert hist.counts["b"][-1] == 2 and hist.counts["b"].sum() == 2  # 250 m lands in the last bin, NaN nowhere
    n, mean, sd = hist.mean_sd("a")
    assert n == 3 and mean == pytest.approx(4.9 / 3) and sd == pytest.approx(np.std([0.0, 2.4, 2.5], ddof=1))


def test_nice_ticks_and_the_polar_convention():
    assert nice_ticks(0, 1) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 1963) == [0.0, 500.0, 1000.0, 1500.0, 2000.0]
    assert nice_ticks(-180, 180, 4) == [-200.0, -100.0, 0.0, 100.0, 200.0]
    # one wedge at 60..90 degrees (left of ahead): all its points lie left of the centre and above it
    svg = polar_histogram("t", [60.0, 90.0], {"x": [5.0]})
    (path,) = re.findall(r'<path d="([^"]+)"', svg)
    points = re.findall(r"(?:[ML]|A[\d.]+,[\d.]+ 0 0 [01] )(-?[\d.]+),(-?[\d.]+)", path)
    assert len(points) == 4
    xs, ys = [float(x) for x, _ in points], [float(y) for _, y in points]
    cx, cy = 280.0, 48 + (340 - 48) / 2 - 4  # the chart's centre (svg._WIDTH / 2, below the legend)
    assert max(xs) <= cx + 0.1 and min(xs) < cx - 50
    assert max(ys) <= cy + 0.1


def test_results_are_recognised_by_their_keys():
    assert classify({"profile": "paper", "breakdowns": {}, "lsr": []}) == "lsr"
    assert classify({"label_aps": {}, "label_tp_errors": {}, "nd_score": 0.5}) == "detection"
    assert classify({"label_metrics": {}, "metrics_details": {}}) == "tracking"
    assert classify({"overall": {}, "groups": {}, "ci": {}}) == "judges"
    assert classify({"n_matched": 3, "scales": {}, "metrics": {}}) == "agreement"
    assert classify({"mean_ap": 1}) is None and classify([1, 2]) is None


# ---------------------------------------------------------------------------------------------- browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium; see Makefile)"
)


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"  # one per run: parallel tests never share
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "LANG": "C.UTF-8"})


def _console_lines(stderr: str) -> list[str]:
    """Chromium logs every console message and uncaught error of the page as ``...:CONSOLE(...)] "text"``; the page
    writes none of its own, so any such line is a failure."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@needs_chromium
def test_chromium_renders_the_page_without_console_errors(page_file, tmp_path):
    url = page_file.resolve().as_uri()
    dom = _chromium(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert not _console_lines(dom.stderr), _console_lines(dom.stderr)
    rendered = parse(dom.stdout)
    body = rendered.find_all("body")[0]
    assert body.attrs.get("data-ready") == "1"  # the page's script ran to its end
    assert [s.attrs["id"] for s in rendered.find_all("section")] == [sid for sid, _ in SECTIONS]
    assert rendered.find_all("svg") and len(rendered.find_all("article")) == SAMPLES
    assert rendered.by_id("gallery-count").text() == f"{SAMPLES} of {SAMPLES} samples"

    # a filter in the address: only the spatiotemporal turns (hence cards) stay
    filtered = _chromium(tmp_path, "--dump-dom", url + "#category=spatiotemporal")
    assert not _console_lines(filtered.stderr), _console_lines(filtered.stderr)
    shown = parse(filtered.stdout)
    visible = [c for c in shown.find_all("article") if "hidden" not in c.attrs]
    assert {c.attrs["data-kind"] for c in visible} == {"spatiotemporal"}
    assert shown.by_id("gallery-count").text() == f"{len(visible)} of {SAMPLES} samples"

    TEST_OUTPUT.mkdir(exist_ok=True)
    shot = TEST_OUTPUT / "report.png"
    shot.unlink(missing_ok=True)
    result = _chromium(tmp_path, "--window-size=1280,4000", f"--screenshot={shot}", url)
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    assert not _console_lines(result.stderr)
    image = cv2.imread(str(shot), cv2.IMREAD_COLOR)
    assert image.shape[:2] == (4000, 1280)
    background = np.median(image.reshape(-1, 3), axis=0)
    inked = np.abs(image.astype(int) - background).sum(axis=2) > 60
    assert inked.mean() > 0.03, f"only {inked.mean():.1%} of the screenshot differs from the background"
    assert image.std() > 20


# The probe runs after the page's own script and writes what the browser laid out into <pre id="layout-probe">:
# per chart row the width its figures span, per table its width, each over the content width of its section; the
# gallery's elements whose text is cut off (scrollHeight or scrollWidth beyond the box); the "+N more" summaries.
LAYOUT_PROBE = """<script>(function () {
  function inner(el) {
    var s = getComputedStyle(el);
    return el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
  }
  var out = {rows: [], tables: [], plots: [], clipped: [], cards: []};
  Array.prototype.forEach.call(document.querySelectorAll(".charts"), function (box) {
    var width = inner(box.closest("section")), rows = {};
    Array.prototype.forEach.call(box.querySelectorAll("figure.chart"), function (f) {
      var r = f.getBoundingClientRect(), top = Math.round(r.top);
      rows[top] = rows[top] || {left: r.left, right: r.right, charts: []};
      rows[top].left = Math.min(rows[top].left, r.left);
      rows[top].right = Math.max(rows[top].right, r.right);
      rows[top].charts.push(f.getAttribute("data-chart"));
      var plot = f.querySelector("svg, img");
      out.plots.push([f.getAttribute("data-chart"), plot.getBoundingClientRect().width / r.width]);
    });
    Object.keys(rows).forEach(function (k) {
      out.rows.push([rows[k].charts.join(" "), (rows[k].right - rows[k].left) / width]);
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll(".table-wrap > table"), function (t) {
    out.tables.push([t.id, t.getBoundingClientRect().width / inner(t.closest("section"))]);
  });
  Array.prototype.forEach.call(document.querySelectorAll("#gallery .card, #gallery .card *"), function (el) {
    if (el.closest("details:not([open]) > ol")) { return; }
    if (el.scrollHeight > el.clientHeight + 1 && getComputedStyle(el).overflowY !== "visible" ||
        el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible" && el.tagName !== "DIV") {
      out.clipped.push(el.tagName + "." + el.className + ": " + el.textContent.slice(0, 60));
    }
  });
  Array.prototype.forEach.call(document.querySelectorAll("#gallery .card"), function (card) {
    var hidden = card.querySelectorAll("details > ol.turns > li").length;
    var summary = card.querySelector("details > summary");
    out.cards.push([card.querySelectorAll("li").length, hidden, summary ? summary.textContent : ""]);
  });
  var pre = document.createElement("pre");
  pre.id = "layout-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();</script>"""


@needs_chromium
def test_at_1400_px_charts_and_tables_fill_the_width_no_text_is_cut_and_rates_are_percent(page_file, tmp_path):
    probed = tmp_path / "probed.html"
    html = page_file.read_text(encoding="utf-8")
    probed.write_text(html.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    dom = _chromium(tmp_path, "--window-size=1400,1000", "--dump-dom", probed.resolve().as_uri())
    assert dom.returncode == 0 and not _console_lines(dom.stderr), dom.stderr[-2000:]
    layout = json.loads(parse(dom.stdout).by_id("layout-probe").text())

    # every row of charts spans at least 90% of its section's content width, each chart's picture its whole figure
    assert layout["rows"] and all(share >= 0.9 for _, share in layout["rows"]), layout["rows"]
    assert all(share >= 0.99 for _, share in layout["plots"]), layout["plots"]
    assert layout["tables"] and all(share >= 0.9 for _, share in layout["tables"]), layout["tables"]

    # no gallery text is cut off out of sight; turns beyond the first few sit behind a "+N more questions" summary
    assert not layout["clipped"], layout["clipped"]
    assert any(hidden for _, hidden, _ in layout["cards"]), "no card has enough turns to need a 'more' control"
    for total, hidden, summary in layout["cards"]:
        assert summary == (f"+{hidden} more question{'s' if hidden != 1 else ''}" if hidden else ""), summary
        assert total - hidden <= 4

    # every LSR-family rate (success rates, TLC@k, TLC, MLSR) reads as a percentage with one decimal
    rendered = parse(dom.stdout)
    lsr = next(b for b in rendered.find_all("div") if b.attrs.get("data-kind") == "lsr")
    key = lsr.attrs["id"]
    cells = [
        cell
        for t in lsr.find_all("table")
        if t.attrs.get("id", "").startswith(key) and "-blind" not in t.attrs["id"]  # blind: a Δ (pp) column
        for cell in table_rows(rendered, t.attrs["id"]).values()
    ]
    tlc = list(table_rows(rendered, f"{key}-tlc").values())
    assert cells and tlc
    rate = re.compile(r"-|\d{1,3}\.\d%( \([\d,]+\))?")
    assert all(rate.fullmatch(c) for row in cells for c in row), cells
    assert all(re.fullmatch(r"\d{1,3}\.\d%", c) for row in tlc for c in row), tlc
