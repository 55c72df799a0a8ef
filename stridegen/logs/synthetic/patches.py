"""Privacy patches of the synthetic world (opt-in: ``generate_dataset(..., privacy_patches=True)``): licence plates
on the end faces of cars, trucks and buses and face-like patches on pedestrians' heads, drawn by the renderer as
``render.Decal`` textures, so the tests of the anonymization know where every plate and face is.

Placement (box frame, metres; ``PLATE_SIZE_M`` and the height band as in stridegen.pipeline.anonymize.plates'
sources: EU plate 520 x 110 mm, Regulation (EC) No 2411/98; edges 0.30-1.20 m above the ground, Regulation (EU)
No 1003/2010):

- plates, front and back: centre height drawn in ``PLATE_CENTRE_Z_M[class]``, the back plate set off the centre
  line by up to ``PLATE_MAX_OFFSET_M``; the front plate is centred;
- faces, front (the heading side) only: ``FACE_SIZE_M`` (an adult head's width x chin-to-crown height, about
  0.16 x 0.23 m), its top ``FACE_TOP_GAP_M`` below the box top, centred.

Every draw comes from ``default_rng([seed, scene_index, agent_id, PATCH_RNG_TAG])``: the scene's own random stream
is not touched, so the scene (agents, trajectories, LiDAR) is the same with or without patches; only the camera
pixels differ.
"""

from __future__ import annotations

import numpy as np

from stridegen.logs.synthetic.render import Decal

PATCH_RNG_TAG = 4049
PLATE_SIZE_M = (0.52, 0.11)
PLATE_CENTRE_Z_M = {"car": (0.45, 0.80), "truck": (0.50, 0.95), "bus": (0.50, 0.95)}
PLATE_MAX_OFFSET_M = 0.15
FACE_SIZE_M = (0.16, 0.23)
FACE_TOP_GAP_M = 0.02
PLATE_TEXTURE_HW = (22, 104)  # 5 mm texels
FACE_TEXTURE_HW = (32, 24)
_SKIN = np.array([[241, 194, 167], [224, 172, 138], [198, 134, 98], [141, 85, 54], [255, 219, 187]], np.uint8)
_HAIR = np.array([[30, 24, 20], [80, 50, 30], [150, 110, 60], [60, 60, 60]], np.uint8)


def plate_texture(rng: np.random.Generator) -> np.ndarray:
    """uint8 [22, 104, 3]: white plate, dark border, blue EU band on the left, seven blocky dark characters."""
    h, w = PLATE_TEXTURE_HW
    tex = np.full((h, w, 3), 236, np.uint8)
    tex[[0, -1], :] = tex[:, [0, -1]] = 20
    tex[1:-1, 1:10] = (0, 51, 153)
    for k in range(7):
        glyph = rng.random((5, 3)) < 0.6
        glyph[:, 0] |= k % 2 == 0  # a vertical stroke in every other character: letter-like shapes
        block = np.kron(glyph, np.ones((3, 3), bool))  # 15 x 9 px
        c0 = 13 + 13 * k
        tex[4:19, c0 : c0 + 9][block] = 15
    return tex


def face_texture(rng: np.random.Generator) -> np.ndarray:
    """uint8 [32, 24, 3]: hair around an oval face with eyebrows, eyes, nose shadow and mouth (a frontal face at
    the scale cameras see pedestrians)."""
    h, w = FACE_TEXTURE_HW
    skin = _SKIN[rng.integers(len(_SKIN))].astype(np.float64)
    tex = np.empty((h, w, 3), np.uint8)
    tex[:] = _HAIR[rng.integers(len(_HAIR))]
    rows, cols = np.mgrid[0:h, 0:w] + 0.5
    face = ((rows - 18.0) / 13.0) ** 2 + ((cols - 12.0) / 9.5) ** 2 <= 1.0
    face &= rows > 7
    tex[face] = skin.astype(np.uint8)
    dark = (skin * 0.35).astype(np.uint8)
    tex[12:13, 5:10] = tex[12:13, 14:19] = dark  # eyebrows
    tex[14:16, 6:9] = tex[14:16, 15:18] = (25, 25, 25)  # eyes
    tex[17:21, 11:13] = (skin * 0.8).astype(np.uint8)  # nose shadow
    tex[24:26, 8:16] = (150, 60, 60)  # mouth
    return tex


def privacy_decals(scene) -> list[Decal]:
    """The decals of a ``SyntheticScene``'s agents (decal ``box`` = the agent's index, which is its row in
    ``agent_states``), plates first per agent; agent k draws from ``default_rng([seed, scene_index, agent_id,
    PATCH_RNG_TAG])``."""
    decals: list[Decal] = []
    for index, agent in enumerate(scene.agents):
        rng = np.random.default_rng([scene.seed, scene.scene_index, int(agent.agent_id), PATCH_RNG_TAG])
        cls = agent.detection_class
        if cls in PLATE_CENTRE_Z_M:
            lo, hi = PLATE_CENTRE_Z_M[cls]
            for face, offset in ((0, 0.0), (1, float(rng.uniform(-PLATE_MAX_OFFSET_M, PLATE_MAX_OFFSET_M)))):
                z = float(rng.uniform(lo, hi))
                decals.append(Decal(index, face, offset, z, *PLATE_SIZE_M, plate_texture(rng), "plate"))
        elif cls == "pedestrian":
            height = float(agent.size_lwh[2])
            z = height - FACE_TOP_GAP_M - FACE_SIZE_M[1] / 2
            decals.append(Decal(index, 0, 0.0, z, *FACE_SIZE_M, face_texture(rng), "face"))
    return decals
