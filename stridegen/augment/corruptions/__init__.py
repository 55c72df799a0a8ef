"""Image corruptions by name: name -> Corruption (one image) or CameraSetCorruption (the cameras of a frame).

The built-in corruptions are the tables below; more come from the ``corruption`` kind of stridegen.core.registry
(run-time registrations, ``stridegen.corruption`` entry points, or a ``"package.module:OBJECT"`` name), whose target
is a Corruption / CameraSetCorruption, or a class making one.

Every corruption has five documented severity levels (docs/augment.md) and draws every random number from the
``numpy.random.Generator`` it is given::

    from stridegen.augment.corruptions import get_corruption
    rng = np.random.default_rng(0)
    foggy = get_corruption("fog").apply(image_rgb, severity=3, rng=rng)
"""

from __future__ import annotations

from stridegen.augment.corruptions.base import (
    SEVERITIES,
    CameraSetCorruption,
    Corruption,
    PixelMap,
    check_severity,
)
from stridegen.augment.corruptions.blur import BLUR
from stridegen.augment.corruptions.camera_set import CAMERA_SET
from stridegen.augment.corruptions.geometric import GEOMETRIC
from stridegen.augment.corruptions.noise import NOISE
from stridegen.augment.corruptions.photometric import PHOTOMETRIC
from stridegen.augment.corruptions.weather import WEATHER
from stridegen.core import registry
from stridegen.core.errors import ConfigError

CORRUPTIONS: dict[str, Corruption] = {c.name: c for c in (*PHOTOMETRIC, *NOISE, *BLUR, *WEATHER, *GEOMETRIC)}
CAMERA_CORRUPTIONS: dict[str, CameraSetCorruption] = {c.name: c for c in CAMERA_SET}
ALIASES: dict[str, str] = {alias: c.name for c in CORRUPTIONS.values() for alias in c.aliases}

# The suites the issue names (docs/augment.md lists their sources).
GROUPS: dict[str, tuple[str, ...]] = {
    # IntelliCockpitBench section 4.3: seven degradations ("snow / lens obstruction" is two corruptions here).
    "intellicockpit": (
        "reduced_brightness",
        "lens_distortion",
        "grayscale",
        "low_resolution",
        "motion_blur",
        "snow",
        "lens_obstruction",
        "overexposure",
    ),
    # nuScenes-C (RoboBEV) camera corruptions.
    "nuscenes_c": (
        "brightness",
        "low_light",
        "fog",
        "snow",
        "motion_blur",
        "color_quantization",
        "camera_crash",
        "frame_lost",
    ),
    # DriveBench camera set (JPEG stands in for its ffmpeg-based H.265 / bit-error corruptions).
    "drivebench": (
        "brightness",
        "low_light",
        "fog",
        "snow",
        "rain",
        "water_splash",
        "lens_obstacle",
        "saturation",
        "color_quantization",
        "motion_blur",
        "zoom_blur",
        "jpeg_compression",
        "camera_crash",
        "frame_lost",
    ),
    # ImageNet-C (Hendrycks & Dietterich) noises, blurs, weather and digital corruptions that need no image assets.
    "imagenet_c": (
        "gaussian_noise",
        "shot_noise",
        "impulse_noise",
        "defocus_blur",
        "glass_blur",
        "motion_blur",
        "zoom_blur",
        "snow",
        "fog",
        "brightness",
        "contrast",
        "elastic",
        "pixelate",
        "jpeg_compression",
    ),
}


def all_names() -> list[str]:
    """Every name: built-in image corruptions, built-in camera-set corruptions, then registered plugins."""
    return [*CORRUPTIONS, *CAMERA_CORRUPTIONS, *registry.names("corruption")]


def _plugin(name: str) -> Corruption | CameraSetCorruption | None:
    """The registered corruption ``name`` (None when the registry has none of that name)."""
    if name not in registry.names("corruption") and ":" not in name:
        return None
    obj = registry.resolve("corruption", name)
    obj = obj() if isinstance(obj, type) else obj
    if not isinstance(obj, Corruption | CameraSetCorruption):
        raise ConfigError(f"corruption {name!r} is a {type(obj).__name__}, not a Corruption or CameraSetCorruption")
    return obj


def lookup(name: str) -> Corruption | CameraSetCorruption:
    """The corruption ``name`` (canonical, an alias, or a registered plugin), of either kind."""
    key = canonical_name(name)
    found = CORRUPTIONS.get(key) or CAMERA_CORRUPTIONS.get(key) or _plugin(key)
    assert found is not None  # canonical_name checked it
    return found


def canonical_name(name: str) -> str:
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(key, key)
    if key not in CORRUPTIONS and key not in CAMERA_CORRUPTIONS:
        if _plugin(name.strip()) is not None:
            return name.strip()
        raise ConfigError(
            f"unknown corruption {name!r}; known: {', '.join(all_names())} (groups: {', '.join(GROUPS)}, all)"
        )
    return key


def get_corruption(name: str) -> Corruption:
    """The image corruption called ``name`` (or one of its aliases)."""
    found = lookup(name)
    if not isinstance(found, Corruption):
        raise ConfigError(f"{canonical_name(name)!r} acts on the cameras of a frame: use get_camera_corruption")
    return found


def get_camera_corruption(name: str) -> CameraSetCorruption:
    """The camera-set corruption called ``name`` (camera_crash, frame_lost)."""
    found = lookup(name)
    if not isinstance(found, CameraSetCorruption):
        raise ConfigError(f"{canonical_name(name)!r} is an image corruption: use get_corruption")
    return found


def resolve_names(spec: str) -> list[str]:
    """Parse a comma-separated list of corruption names, group names or ``all`` into canonical names (in order,
    without repeats)."""
    names: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        key = part.lower()
        expanded = all_names() if key == "all" else GROUPS.get(key) or (canonical_name(part),)
        names.extend(n for n in expanded if n not in names)
    if not names:
        raise ConfigError(f"no corruption named in {spec!r}")
    return names


def resolve_severities(spec: str) -> list[int]:
    """Parse ``all``, ``3``, ``1,3,5`` or ``2-4`` into a sorted list of severities."""
    spec = spec.strip().lower()
    if spec == "all":
        return list(SEVERITIES)
    levels: set[int] = set()
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        try:
            if "-" in part:
                lo, hi = (int(v) for v in part.split("-", 1))
                levels.update(range(lo, hi + 1))
                check_severity(lo), check_severity(hi)
            else:
                levels.add(check_severity(int(part)))
        except ValueError as exc:
            raise ConfigError(f"bad severity {part!r} in {spec!r}: use 1-5, a list or 'all'") from exc
    if not levels:
        raise ConfigError(f"no severity in {spec!r}")
    return sorted(levels)


__all__ = [
    "ALIASES",
    "CAMERA_CORRUPTIONS",
    "CORRUPTIONS",
    "GROUPS",
    "SEVERITIES",
    "CameraSetCorruption",
    "Corruption",
    "PixelMap",
    "all_names",
    "canonical_name",
    "check_severity",
    "get_camera_corruption",
    "get_corruption",
    "lookup",
    "resolve_names",
    "resolve_severities",
]
