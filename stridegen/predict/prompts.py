"""Prompt profiles: how a question is shown to a model (frame size, marks, system prompt), versioned and shipped in
``stridegen/resources/prompts/<name>.yaml`` (``strideqa-bench``, the default, and ``plain``; docs/predict.md), or
a user's own YAML file of the same shape. A system prompt file given on the command line replaces the profile's
prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stridegen.core.errors import ConfigError
from stridegen.core.resources import resource_path
from stridegen.formats.textfile import config_error, load_yaml, read_text

PROFILES = ("strideqa-bench", "plain")
DEFAULT_PROFILE = "strideqa-bench"
# The official bench's context frames, oldest first (STRIDE-QA paper, section 3: keyframe t0 and three frames at
# 0.5 s steps before it), used in the prompt when a source does not say when its frames were taken.
DEFAULT_CONTEXT_TIMES_S = (-1.5, -1.0, -0.5, 0.0)


class ImageSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    width: int | None = Field(None, ge=16)  # None (with height None): the stored size
    height: int | None = Field(None, ge=16)
    jpeg_quality: int = Field(90, ge=1, le=100)

    def size(self) -> tuple[int, int] | None:
        """(width, height) to resize every frame to, or None to keep the stored size."""
        if (self.width is None) != (self.height is None):
            raise ConfigError("a prompt profile's image.width and image.height are both set or both null")
        return None if self.width is None or self.height is None else (self.width, self.height)


class MarkSettings(BaseModel):
    """Which regions are marked: ``all`` of the keyframe image's regions, or only the ``question``'s own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spatial: Literal["all", "question"] = "all"
    spatiotemporal: Literal["all", "question"] = "question"
    alpha: float = Field(0.2, ge=0.0, le=1.0)


class SystemPrompts(BaseModel):
    """One system prompt per question kind; ``{n_images}`` and ``{times}`` are filled per question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spatial: str
    spatiotemporal: str


class PromptProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    version: int
    image: ImageSettings = ImageSettings()
    marks: MarkSettings = MarkSettings()
    system: SystemPrompts

    def system_prompt(self, kind: str, times_s: tuple[float, ...] | None) -> str:
        """The system prompt of a question of ``kind`` showing frames taken at ``times_s`` (seconds relative to the
        keyframe, oldest first)."""
        times = tuple(times_s) if times_s else DEFAULT_CONTEXT_TIMES_S
        template = self.system.spatiotemporal if kind == "spatiotemporal" else self.system.spatial
        shown = ", ".join(f"{t:g} s" for t in times)
        return template.format(n_images=len(times), times=shown).strip()


def load_profile(name_or_path: str, system_prompt_file: str | Path | None = None) -> PromptProfile:
    """The profile ``name_or_path`` (a shipped name or a YAML file), with both system prompts replaced by the text
    of ``system_prompt_file`` when given."""
    path = resource_path("prompts", f"{name_or_path}.yaml") if name_or_path in PROFILES else Path(name_or_path)
    if not path.is_file():
        raise ConfigError(f"prompt profile {name_or_path!r}: neither one of {', '.join(PROFILES)} nor a YAML file")
    data = load_yaml(path, "prompt profile", config_error)
    try:
        profile = PromptProfile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
        raise config_error(path, f"not a prompt profile ({problems})") from None
    profile.image.size()
    if system_prompt_file is not None:
        text = read_text(system_prompt_file, "system prompt file", config_error)
        if not text.strip():
            raise config_error(Path(system_prompt_file), "the system prompt file is empty")
        profile = profile.model_copy(update={"system": SystemPrompts(spatial=text, spatiotemporal=text)})
    for kind in ("spatial", "spatiotemporal"):
        try:
            profile.system_prompt(kind, None)
        except (KeyError, IndexError, ValueError) as exc:
            where = Path(system_prompt_file) if system_prompt_file is not None else path
            raise config_error(
                where,
                f"the {kind} system prompt has a bad placeholder ({exc}); it may use {{n_images}} and {{times}};"
                " write literal braces as {{ and }}",
            ) from None
    return profile
