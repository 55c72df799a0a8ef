"""Judge configuration files: <method>.yaml and pricing.yaml, by default those shipped in stridegen/resources/judges.

A method file has three optional sections: ``mode`` (faithful | robust), ``client`` (ClientSettings fields)
and ``settings`` (the method's own settings: dimension tables, sampling overrides, vote thresholds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stridegen.core.errors import ConfigError
from stridegen.core.resources import resource_path
from stridegen.formats.textfile import config_error, load_yaml, shown

# The judge configs shipped in the package (any install, any working directory).
DEFAULT_CONFIG_DIR = resource_path("judges")
METHOD_SECTIONS = ("mode", "client", "settings")


def _load_yaml(path: Path) -> dict[str, Any]:
    data = load_yaml(path, "judge config file", config_error) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def load_method_config(
    method: str, path: str | Path | None = None, config_dir: Path = DEFAULT_CONFIG_DIR
) -> dict[str, Any]:
    """The YAML config of a method: ``path`` if given, else ``<config_dir>/<method>.yaml``, else empty."""
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"{p}: judge config file does not exist")
    else:
        p = config_dir / f"{method}.yaml"
        if not p.exists():
            return {}
    data = _load_yaml(p)
    unknown = sorted(str(k) for k in data if k not in METHOD_SECTIONS)
    if unknown:
        raise ConfigError(
            f"{p}: unknown section(s) {shown(unknown[:5])}; a judge config has {', '.join(METHOD_SECTIONS)}"
        )
    return data


def load_pricing(path: str | Path | None = None, config_dir: Path = DEFAULT_CONFIG_DIR) -> dict[str, dict]:
    """Model -> {"input": $/1M tokens, "output": $/1M tokens}. A ``path`` given must exist; the packaged default
    may be absent (no prices: costs are not estimated)."""
    p = Path(path) if path is not None else config_dir / "pricing.yaml"
    if not p.exists():
        if path is not None:
            raise ConfigError(f"{p}: pricing file does not exist")
        return {}
    data = _load_yaml(p)
    unknown = sorted(str(k) for k in data if k != "models")
    if unknown:
        raise ConfigError(f"{p}: unknown section(s) {shown(unknown[:5])}; a pricing file has 'models'")
    models = data.get("models", {}) or {}
    if not isinstance(models, dict) or not all(isinstance(v, dict) for v in models.values()):
        raise ConfigError(f"{p}: 'models' must map each model name to {{input: ..., output: ...}}")
    return {str(k): dict(v) for k, v in models.items()}
