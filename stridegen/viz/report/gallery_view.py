"""The gallery section's HTML: filter controls and one card per sample (images inline, turns listed).

Filtering happens in the page (``assets.SCRIPT``): every turn carries its category, predicate and class as data
attributes and every card its scene; a card is shown when its scene matches and at least one of its turns does.
"""

from __future__ import annotations

from collections.abc import Iterable

from stridegen.viz.report.gallery import Gallery, GalleryCard
from stridegen.viz.report.markup import esc, fmt_int, note, section

FILTERS = ("category", "predicate", "class", "scene")


def _select(name: str, values: Iterable[str]) -> str:
    options = "".join(f'<option value="{esc(v)}">{esc(v or "(none)")}</option>' for v in sorted(set(values)))
    return (
        f'<label>{esc(name)} <select data-filter="{esc(name)}" id="filter-{esc(name)}">'
        f'<option value="">all</option>{options}</select></label>'
    )


def _card(card: GalleryCard) -> str:
    images = "".join(
        f'<img src="data:image/jpeg;base64,{data}" width="{card.image_size[0]}" height="{card.image_size[1]}" '
        f'alt="{esc(card.scene)} {esc(card.camera)} frame {frame}" loading="lazy">'
        for data, frame in zip(card.images, card.frames, strict=True)
    )
    strip = ' class="frames strip"' if len(card.images) > 1 else ' class="frames"'
    turns = "".join(
        f'<li data-category="{esc(t.category)}" data-predicate="{esc(t.predicate)}" data-class="{esc(t.object_class)}"'
        f' title="{esc(t.question_id)}"><span class="tag">{esc(t.predicate)}</span> <span class="q">{esc(t.question)}'
        f'</span><span class="a">{esc(t.answer)}</span></li>'
        for t in card.turns
    )
    regions = ", ".join(f"[{r['region_id']}] {esc(r['label'])}" for r in card.regions)
    frames = "frames " + ", ".join(str(f) for f in card.frames) if len(card.frames) > 1 else f"frame {card.frames[0]}"
    head = (
        f"<header><b>{esc(card.scene)}</b> · {esc(card.camera)} · keyframe {card.keyframe_index} · {frames} · "
        f"{esc(card.kind)}</header>"
    )
    return (
        f'<article class="card {esc(card.kind)}" data-scene="{esc(card.scene)}" data-kind="{esc(card.kind)}" '
        f'data-id="{esc(card.id)}">{head}<div{strip}>{images}</div>'
        f'<p class="regions">regions: {regions or "none"}</p><ol class="turns">{turns}</ol></article>'
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
