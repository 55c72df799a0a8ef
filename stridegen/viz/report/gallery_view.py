"""The gallery section's HTML: filter controls and one card per sample (images inline, turns listed).

Filtering happens in the page (``assets.SCRIPT``): every turn carries its category, predicate and class as data
attributes and every card its scene; a card is shown when its scene matches and at least one of its turns does.

A card lists its first ``TURNS_SHOWN`` turns; the others sit in a ``<details>`` whose summary says how many
("+N more questions"), so no text is ever cut off out of sight. Region labels are chips in the region's mark
colour with text in the contrasting colour of the marks (``text_color_on``) and an outline of that colour.
"""

from __future__ import annotations

from collections.abc import Iterable

from stridegen.pipeline.som import region_color, text_color_on
from stridegen.viz.report.gallery import Gallery, GalleryCard, GalleryTurn
from stridegen.viz.report.markup import esc, fmt_int, note, section

FILTERS = ("category", "predicate", "class", "scene")
TURNS_SHOWN = 4  # turns listed in full on a card; the rest behind "+N more questions"


def _select(name: str, values: Iterable[str]) -> str:
    options = "".join(f'<option value="{esc(v)}">{esc(v or "(none)")}</option>' for v in sorted(set(values)))
    return (
        f'<label>{esc(name)} <select data-filter="{esc(name)}" id="filter-{esc(name)}">'
        f'<option value="">all</option>{options}</select></label>'
    )


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _region_chip(region: dict) -> str:
    """``[id] label`` on the region's mark colour, text and outline black or white, whichever contrasts more."""
    fill = region_color(int(region["region_id"]))
    ink = _hex(text_color_on(fill))
    return (
        f'<span class="region" style="background:{_hex(fill)};color:{ink};border-color:{ink}">'
        f"[{region['region_id']}] {esc(region['label'])}</span>"
    )


def _turn(t: GalleryTurn) -> str:
    return (
        f'<li data-category="{esc(t.category)}" data-predicate="{esc(t.predicate)}" data-class="{esc(t.object_class)}"'
        f' title="{esc(t.question_id)}"><span class="tag">{esc(t.predicate)}</span> <span class="q">{esc(t.question)}'
        f'</span><span class="a">{esc(t.answer)}</span></li>'
    )


def _turns(turns: list[GalleryTurn]) -> str:
    """The first ``TURNS_SHOWN`` turns, then the rest inside ``<details>`` ("+N more questions")."""
    shown = "".join(_turn(t) for t in turns[:TURNS_SHOWN])
    out = f'<ol class="turns">{shown}</ol>'
    rest = turns[TURNS_SHOWN:]
    if rest:
        more = "".join(_turn(t) for t in rest)
        word = "question" if len(rest) == 1 else "questions"
        out += (
            f'<details class="more-turns"><summary>+{len(rest)} more {word}</summary>'
            f'<ol class="turns" start="{TURNS_SHOWN + 1}">{more}</ol></details>'
        )
    return out


def _card(card: GalleryCard) -> str:
    images = "".join(
        f'<img src="data:image/jpeg;base64,{data}" width="{card.image_size[0]}" height="{card.image_size[1]}" '
        f'alt="{esc(card.scene)} {esc(card.camera)} frame {frame}" loading="lazy">'
        for data, frame in zip(card.images, card.frames, strict=True)
    )
    strip = ' class="frames strip"' if len(card.images) > 1 else ' class="frames"'
    regions = " ".join(_region_chip(r) for r in card.regions)
    frames = "frames " + ", ".join(str(f) for f in card.frames) if len(card.frames) > 1 else f"frame {card.frames[0]}"
    head = (
        f"<header><b>{esc(card.scene)}</b> · {esc(card.camera)} · keyframe {card.keyframe_index} · {frames} · "
        f"{esc(card.kind)}</header>"
    )
    return (
        f'<article class="card {esc(card.kind)}" data-scene="{esc(card.scene)}" data-kind="{esc(card.kind)}" '
        f'data-id="{esc(card.id)}">{head}<div{strip}>{images}</div>'
        f'<p class="regions">regions: {regions or "none"}</p>{_turns(card.turns)}</article>'
    )


def gallery_section(gallery: Gallery, total_scenes: int) -> str:
    cards = gallery.cards
    values = {
        "category": [t.category for c in cards for t in c.turns],
        "predicate": [t.predicate for c in cards for t in c.turns],
        "class": [t.object_class for c in cards for t in c.turns],
        "scene": [c.scene for c in cards],
    }
    controls = "".join(_select(name, values[name]) for name in FILTERS)
    filters = (
        f'<form class="filters" id="gallery-filters">{controls}'
        '<button type="button" id="filter-reset">reset</button>'
        f'<output id="gallery-count">{len(cards)} of {len(cards)} samples</output></form>'
    )
    intro = (
        f"{fmt_int(len(cards))} samples drawn (seeded) from the {fmt_int(gallery.samples_seen)} samples of "
        f"{fmt_int(gallery.scenes_read)} of {fmt_int(total_scenes)} scenes: keyframe images with every region marked "
        "(Set-of-Mark) and their spatial questions; spatiotemporal groups as four-frame strips (oldest first). The "
        "filters keep the turns that match; the page address remembers them."
    )
    spatial = "".join(_card(c) for c in cards if len(c.images) == 1)
    strips = "".join(_card(c) for c in cards if len(c.images) > 1)
    body = filters + f'<div class="cards" id="gallery-cards">{spatial}</div>'
    body += f'<div class="cards strips" id="gallery-strips">{strips}</div>'
    if not cards:
        body += note("this dataset has no QA samples to show")
    return section("gallery", "Sample gallery", body, intro)
