"""Question and answer phrasings of the spatial QA generator (``stridegen.pipeline.qa.spatial``), as data.

Slots: ``{a}`` and ``{b}`` are region names ("Region [3]"), ``{value}`` the canonical number string with its unit
("12.34 m", "-35 degrees", "11 o'clock"). Question templates of a two-region predicate name ``{a}`` before ``{b}``
(the item's ``region_ids`` are in naming order). Answer sets: ``"<predicate>:yes"`` / ``"<predicate>:no"`` for
yes/no predicates, ``"ego_left_right:left"`` / ``":right"`` for the direction word, ``"<predicate>"`` for numbers.
Answer templates hold no digits of their own, so the only number in an answer is ``{value}``.

Directions of the object-centric left/right predicates are the viewer's (camera image) left and right; front/behind
means nearer to / farther from the camera. Heading angles: 0 = straight ahead, positive counter-clockwise (to the
left). Clock directions: 12 o'clock = straight ahead, 3 o'clock = right.
"""

from __future__ import annotations

from stridegen.pipeline.qa.base import Phrasebook
from stridegen.pipeline.qa.templates_spatial_ego import EGO_ANSWERS, EGO_QUESTIONS
from stridegen.pipeline.qa.templates_spatial_object import OBJECT_ANSWERS, OBJECT_QUESTIONS

# The object-centric phrasings (templates_spatial_object), then the ego-centric ones (templates_spatial_ego).
QUESTIONS: dict[str, tuple[str, ...]] = {**OBJECT_QUESTIONS, **EGO_QUESTIONS}
ANSWERS: dict[str, tuple[str, ...]] = {**OBJECT_ANSWERS, **EGO_ANSWERS}

SPATIAL_PHRASEBOOK = Phrasebook(QUESTIONS, ANSWERS)
