"""The report page: head (charset, Content-Security-Policy, inline style), navigation, sections, inline script."""

from __future__ import annotations

from stridegen.viz.report import validate_qa_section as validate_qa
from stridegen.viz.report.assets import CSP, SCRIPT, STYLE
from stridegen.viz.report.markup import esc

# (section id, navigation label), in page order; every report has all of them.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("overview", "Overview"),
    ("distributions", "Distributions"),
    ("visibility", "Visibility funnel"),
    ("gallery", "Gallery"),
    ("evaluations", "Evaluations"),
)
# Sections a report has only when their input exists, after those above: (section id, navigation label).
OPTIONAL_SECTIONS: tuple[tuple[str, str], ...] = ((validate_qa.SECTION_ID, validate_qa.SECTION_LABEL),)


def render_page(title: str, subtitle: str, sections: list[str], footer: str) -> str:
    """The whole HTML document. ``sections`` are complete ``<section>`` elements in ``SECTIONS`` order, then
    those of ``OPTIONAL_SECTIONS`` present."""
    shown = [*SECTIONS, *(s for s in OPTIONAL_SECTIONS if any(f'<section id="{s[0]}"' in x for x in sections))]
    nav = "".join(f'<a href="#{sid}">{esc(label)}</a>' for sid, label in shown)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n"
        f'<body><header class="page"><h1>{esc(title)}</h1><p>{subtitle}</p></header>'
        f"<nav>{nav}</nav><main>\n" + "\n".join(sections) + "\n</main>"
        f"<footer>{footer}</footer><script>{SCRIPT}</script></body></html>\n"
    )
